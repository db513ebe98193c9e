import { hostname } from "node:os";
import type { Config } from "../config/types.ts";
import { EVENTS, type LogLine } from "../core/decide.ts";
import { eventTitle } from "../core/events.ts";
import { errorMessage } from "../core/errors.ts";
import { escapeControls, oneLine } from "../core/sanitize.ts";
import type { Logger } from "../state/logger.ts";
import type { Message } from "./send.ts";
import { redactUrl, scrub } from "../core/redact.ts";
import { ANSWER_BODY_LIMIT, isTimeout, networkReason, readBounded } from "../os/net.ts";
import { deliver, readSpool } from "./spool.ts";

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
 * Send the spool, then this pass's events; a message that fails for a passing reason is logged
 * (NOTIFY) and stays spooled, one refused for good is logged and kept in the dead letters.
 */
export async function sendEvents(config: Config, events: Message[], logger: Logger): Promise<void> {
  const { url, format, timeoutMs, retries, minIntervalMs } = config.notify;
  if ((!events.length || !url) && readSpool(config.watchdog.stateDir).messages.length === 0) return;
  const stateDir = config.watchdog.stateDir;
  const channel = url ? { url, format, timeoutMs, retries } : null;
  try {
    const report = await deliver(channel ? events : [], { stateDir, channel, timeoutMs, retries, minIntervalMs });
    if (report.flushed) logger.write("NOTIFY", `delivered ${report.flushed} spooled notification(s)`);
    if (report.buried) {
      logger.write("NOTIFY", `${report.buried} spooled notification(s) refused for good: moved to notify-dead.jsonl`);
    }
    for (const outcome of report.outcomes) {
      const said = `could not send "${outcome.message.message}" to ${url && redactUrl(url)}: ${outcome.detail}`;
      if (outcome.result === "spooled") logger.write("NOTIFY", `${said}; spooled (${report.waiting} waiting)`);
      if (outcome.result === "lost") logger.write("NOTIFY", `${said}; not spooled`);
      if (outcome.result === "dead") {
        logger.write("NOTIFY", `${said}; refused for good: kept in notify-dead.jsonl (${report.dead})`);
      }
    }
    if (report.spoolError && !report.outcomes.some((outcome) => outcome.result === "lost")) {
      logger.write("NOTIFY", report.spoolError);
    }
    if (!events.length && report.waiting && report.failure) {
      logger.write("NOTIFY", `${report.waiting} spooled notification(s) still not delivered: ${report.failure}`);
    }
  } catch (error) {
    logger.write(
      "NOTIFY",
      `could not use the notification spool: ${errorMessage(error)}; ${events.length} notification(s) not sent`,
    );
  }
}

/**
 * The heartbeat URL for this pass. With `{status}` / `{msg}` placeholders (an Uptime Kuma push
 * URL) they are filled in; without, "/fail" goes on the path, never inside the query
 * (healthchecks.io).
 */
export function heartbeatTarget(base: string, down: boolean, message: string): string {
  if (/\{status\}|\{msg\}/.test(base)) {
    return base.replaceAll("{status}", down ? "down" : "up").replaceAll("{msg}", encodeURIComponent(message));
  }
  if (!down) return base;
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/fail`;
  return url.toString();
}

/** Dead-man switch: GET heartbeat_url after each pass; redirects are not followed (a 3xx is a failure). */
export async function pingHeartbeat(
  config: Config,
  down: string[],
  logger: Logger,
  doFetch: typeof fetch = fetch,
): Promise<void> {
  const base = config.watchdog.heartbeatUrl;
  if (!base) return;
  const message = down.length ? `down: ${down.join(", ")}` : "all services healthy";
  const url = heartbeatTarget(base, down.length > 0, message);
  try {
    const response = await doFetch(url, { redirect: "manual", signal: AbortSignal.timeout(config.notify.timeoutMs) });
    const body = oneLine(await readBounded(response, ANSWER_BODY_LIMIT));
    if (response.status < 200 || response.status > 299) {
      logger.write(
        "NOTIFY",
        `heartbeat ping to ${redactUrl(url)} failed: ` +
          scrub(`HTTP ${response.status}${body ? `: ${body}` : ""}`, url),
      );
    }
  } catch (error) {
    const reason = isTimeout(error) ? "no answer" : networkReason(error);
    logger.write("NOTIFY", `heartbeat ping to ${redactUrl(url)} failed: ${scrub(reason, url)}`);
  }
}
