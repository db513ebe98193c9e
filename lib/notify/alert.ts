import { hostname } from "node:os";
import type { Config } from "../config/types.ts";
import { EVENTS, type LogLine } from "../core/decide.ts";
import { eventTitle } from "../core/events.ts";
import { errorMessage } from "../core/errors.ts";
import { escapeControls } from "../core/sanitize.ts";
import type { Logger } from "../state/logger.ts";
import { messageKey, type Message } from "./send.ts";
import type { PendingRestart } from "../core/state.ts";
import { redactUrl, scrub, scrubbedLine } from "../core/redact.ts";
import { ANSWER_BODY_LIMIT, isTimeout, networkReason, readBounded } from "../os/net.ts";
import { deliver, deliveryOptions, keepSpoolRoom, readSpool, spoolNow } from "./spool.ts";
import { logDelivery } from "./log.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { lastStep, stepped } from "../core/clock.ts";
import { clockSteps } from "../state/clock.ts";
import { statePaths } from "../state/dir.ts";

/** A watchdog log line worth a notification, as a message that starts with its emoji and names the service. */
export function eventMessage(service: string, line: LogLine, at: Date): Message | null {
  if (!line.event) return null;
  const { emoji, priority } = EVENTS[line.event];
  return {
    message: `${emoji} ${escapeControls(line.message)}`,
    title: eventTitle(line.event, escapeControls(service), hostname()),
    priority,
    tags: ["tend", line.event],
    event: line.event,
    service,
    time: at.toISOString(),
  };
}

/**
 * Spool a pass's messages now, sent by the next delivery (a restart's ⚠️, the moment its action
 * returns). Alertmanager's path sends conditions, not messages: nothing to spool there. Returns
 * those it could not spool (a full disk): the caller keeps them to send with its own delivery.
 */
/**
 * The ⚠️ a restart owes, spooled now that its action returned (what was stopped, what was started): each
 * keyed by the restart itself, so a pass that finishes its story and says it again sends the same
 * message (a receiver that honours the key, and the spool, keep it once). What cannot be spooled (a full
 * disk) is returned, to be sent with the owner's own messages, never dropped.
 */
export async function spoolOwed(
  config: Config,
  name: string,
  owed: PendingRestart["owed"],
  detail: string,
  logger: Logger,
  now: () => number,
): Promise<Message[]> {
  const messages = owed.flatMap(({ at, line }, index) => {
    const said = { ...line, message: `${line.message} (${detail})` } as LogLine;
    const message = eventMessage(name, said, new Date(at));
    return message ? [{ ...message, key: messageKey(name, at, index) }] : [];
  });
  return spoolEvents(config, messages, logger, now);
}

export async function spoolEvents(
  config: Config,
  events: Message[],
  logger: Logger,
  now: () => number,
): Promise<Message[]> {
  const { url, format, timeoutMs, retries } = config.notify;
  if (!url || format === "alertmanager" || !events.length) return [];
  try {
    await spoolNow(events, deliveryOptions(config, { url, format, timeoutMs, retries }, now));
    return [];
  } catch (error) {
    logger.write("NOTIFY", `could not spool ${events.length} notification(s): ${errorMessage(error)}`);
    return events;
  }
}

/**
 * Send the spool, then this pass's events; a message that fails for a passing reason is logged
 * (NOTIFY) and stays spooled, one refused for good is logged and kept in the dead letters. `now`: tend's time.
 */
export async function sendEvents(config: Config, events: Message[], logger: Logger, now: () => number): Promise<void> {
  const { url, format, timeoutMs, retries } = config.notify;
  const stateDir = config.watchdog.stateDir;
  if ((!events.length || !url) && readSpool(stateDir).messages.length === 0) {
    if (url && format !== "alertmanager") await keepSpoolRoom(stateDir);
    return;
  }
  const channel = url ? { url, format, timeoutMs, retries } : null;
  try {
    const report = await deliver(channel ? events : [], deliveryOptions(config, channel, now));
    logDelivery(config, report, logger, url, events.length > 0, now());
  } catch (error) {
    logger.write(
      "NOTIFY",
      `could not use the notification spool: ${errorMessage(error)}; ${events.length} notification(s) not sent`,
    );
  }
}

/**
 * The heartbeat URL for this pass. With `{status}` / `{msg}` / `{ping}` placeholders (an Uptime
 * Kuma push URL) they are filled in (`{ping}`: the pass's duration in ms); without, "/fail" goes on
 * the path, never inside the query (healthchecks.io).
 */
function heartbeatTarget(base: string, down: boolean, message: string, pingMs = 0): string {
  if (PLACEHOLDERS.test(base)) {
    return base
      .replaceAll("{status}", down ? "down" : "up")
      .replaceAll("{msg}", encodeURIComponent(message))
      .replaceAll("{ping}", String(Math.max(0, Math.round(pingMs))));
  }
  if (!down) return base;
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/fail`;
  return url.toString();
}

const PLACEHOLDERS = /\{status\}|\{msg\}|\{ping\}/;
/** Uptime Kuma's answer for a push token it does not know, or a paused monitor: it will not change by itself. */
const KUMA_GONE = /Monitor not found or not active/i;
const DAY_MS = 86_400_000;

interface PingState {
  /** The URL (hashed: it holds the push token) that was refused for good, and when it was said. */
  refused: { url: string; at: number } | null;
  /** What the last ping said (its one-line summary): a ping between passes goes only when this changed. */
  said?: string;
  /** The last clock step `refused.at` has taken ("once a day" is a real day). */
  clockStep?: number;
}

const pingStateFile = (stateDir: string) => statePaths(stateDir).heartbeatPing;
const urlKey = (url: string) => new Bun.CryptoHasher("sha256").update(url).digest("hex").slice(0, 16);

function readPingState(stateDir: string): PingState {
  try {
    const saved = JSON.parse(readRegularFile(pingStateFile(stateDir), 4096));
    const refused = saved?.refused;
    const said = typeof saved?.said === "string" ? { said: saved.said as string } : {};
    if (typeof refused?.url !== "string" || typeof refused?.at !== "number") return { refused: null, ...said };
    const taken = typeof saved.clockStep === "number" ? saved.clockStep : 0;
    return { refused: { url: refused.url, at: stepped(refused.at, clockSteps(stateDir), taken) }, ...said };
  } catch {
    return { refused: null };
  }
}

/**
 * Dead-man switch after each pass; redirects are not followed (a 3xx is a failure). A push URL
 * (placeholders) is a GET, as Uptime Kuma takes it; a plain one is a POST whose body is the pass's
 * one-line summary (healthchecks.io keeps it). Uptime Kuma's `Monitor not found or not active` is
 * refused for good: logged, then tried and said again once a day, not every pass. `ifChanged` (an
 * outcome recorded between passes: the crash watch, an operator): pinged only when what it would say
 * is not what the last ping said, so its status is never a pass behind, and nothing else between
 * passes keeps a dead-man switch quiet.
 */
export async function pingHeartbeat(
  config: Config,
  down: string[],
  logger: Logger,
  doFetch: typeof fetch = fetch,
  { pingMs = 0, now = Date.now(), ifChanged = false }: { pingMs?: number; now?: number; ifChanged?: boolean } = {},
): Promise<void> {
  const base = config.watchdog.heartbeatUrl;
  if (!base) return;
  const stateDir = config.watchdog.stateDir;
  const state = readPingState(stateDir);
  if (state.refused?.url === urlKey(base) && now - state.refused.at < DAY_MS) return;
  const message = down.length ? `down: ${down.join(", ")}` : "all services healthy";
  // Before any pass said anything, a pass's first ping is the one to say it.
  if (ifChanged && (state.said ?? "all services healthy") === message) return;
  const url = heartbeatTarget(base, down.length > 0, message, pingMs);
  const push = PLACEHOLDERS.test(base);
  const save = (next: PingState) => {
    try {
      const clockStep = lastStep(clockSteps(stateDir));
      writeFileAtomic(pingStateFile(stateDir), `${JSON.stringify({ ...next, clockStep })}\n`);
    } catch {}
  };
  try {
    const response = await doFetch(url, {
      method: push ? "GET" : "POST",
      ...(push ? {} : { body: message, headers: { "Content-Type": "text/plain; charset=utf-8" } }),
      redirect: "manual",
      signal: AbortSignal.timeout(config.notify.timeoutMs),
    });
    const body = scrubbedLine(await readBounded(response, ANSWER_BODY_LIMIT), url);
    if (response.status < 200 || response.status > 299) {
      const said = scrub(`HTTP ${response.status}${body ? `: ${body}` : ""}`, url);
      if (KUMA_GONE.test(body)) {
        logger.write(
          "NOTIFY",
          `heartbeat ping to ${redactUrl(url)} refused for good: ${said} ` +
            "(is the push monitor deleted or paused? tried again, and said, once a day)",
        );
        save({ refused: { url: urlKey(base), at: now }, said: state.said });
        return;
      }
      logger.write("NOTIFY", `heartbeat ping to ${redactUrl(url)} failed: ${said}`);
      if (state.refused) save({ refused: null, said: state.said });
      return;
    }
    // Written only when it says something new (a file write per pass otherwise).
    if (state.refused || (state.said ?? "all services healthy") !== message) save({ refused: null, said: message });
  } catch (error) {
    const reason = isTimeout(error) ? "no answer" : networkReason(error);
    logger.write("NOTIFY", `heartbeat ping to ${redactUrl(url)} failed: ${scrub(reason, url)}`);
  }
}
