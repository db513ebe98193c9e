import { hostname } from "node:os";
import type { Config } from "../config/types.ts";
import { EVENTS, type LogLine } from "../core/decide.ts";
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
  return {
    message: `${EVENTS[line.event]} ${escapeControls(line.message)}`,
    title: `tend on ${hostname()}`,
    priority: line.event === "failed" || line.event === "given-up" ? "high" : null,
    tags: ["tend", line.event],
    event: line.event,
    service,
    time: at.toISOString(),
  };
}

/** Send the spool, then this pass's events; every message that fails is logged (NOTIFY) and stays spooled. */
export async function sendEvents(config: Config, events: Message[], logger: Logger): Promise<void> {
  const { url, format, timeoutMs, retries, minIntervalMs } = config.notify;
  if (!url) return;
  if (!events.length && readSpool(config.watchdog.stateDir).messages.length === 0) return;
  try {
    const report = await deliver(events, {
      stateDir: config.watchdog.stateDir,
      channel: { url, format, timeoutMs, retries },
      minIntervalMs,
    });
    if (report.flushed) logger.write("NOTIFY", `delivered ${report.flushed} spooled notification(s)`);
    for (const outcome of report.outcomes) {
      if (outcome.result !== "spooled" && outcome.result !== "lost") continue;
      const fate = outcome.result === "lost" ? "not spooled" : `spooled (${report.waiting} waiting)`;
      logger.write(
        "NOTIFY",
        `could not send "${outcome.message.message}" to ${redactUrl(url)}: ${outcome.detail}; ${fate}`,
      );
    }
    if (report.spoolError && !report.outcomes.some((outcome) => outcome.result === "lost")) {
      logger.write("NOTIFY", report.spoolError);
    }
    if (!events.length && report.waiting && report.failure) {
      logger.write(
        "NOTIFY",
        `${report.waiting} spooled notification(s) still not delivered to ${redactUrl(url)}: ${report.failure}`,
      );
    }
  } catch (error) {
    logger.write(
      "NOTIFY",
      `could not use the notification spool: ${errorMessage(error)}; ${events.length} notification(s) not sent`,
    );
  }
}

/** Dead-man switch: GET heartbeat_url after each pass, "/fail" appended while a service is down. */
export async function pingHeartbeat(
  config: Config,
  anyDown: boolean,
  logger: Logger,
  doFetch: typeof fetch = fetch,
): Promise<void> {
  const base = config.watchdog.heartbeatUrl;
  if (!base) return;
  const url = anyDown ? `${base.replace(/\/+$/, "")}/fail` : base;
  try {
    const response = await doFetch(url, { signal: AbortSignal.timeout(config.notify.timeoutMs) });
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
