import type { Config } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { redactUrl } from "../core/redact.ts";
import type { Logger } from "../state/logger.ts";
import { readNotifyState, writeNotifyState, type DeliverReport } from "./spool.ts";

const HOUR_MS = 3_600_000;

/**
 * What a delivery says in the watchdog log (a pass's, or `notify` run by hand with a configuration):
 * each message not sent, what was flushed, buried or expired, and — when nothing new was sent — how
 * many still wait, only when that count changed or an hour after it was last said (cron mails
 * every line a pass prints).
 */
export function logDelivery(
  config: Config,
  report: DeliverReport,
  logger: Logger,
  url: string | null,
  sentNew: boolean,
  /** tend's time (the hourly line counts real time across clock steps). */
  now: number,
): void {
  if (report.flushed) logger.write("NOTIFY", `delivered ${report.flushed} spooled notification(s)`);
  if (report.buried) {
    logger.write("NOTIFY", `${report.buried} spooled notification(s) refused for good: moved to notify-dead.jsonl`);
  }
  if (report.expired) {
    const { spoolMaxAgeMs, spoolMaxAttempts } = config.notify;
    logger.write(
      "NOTIFY",
      `${report.expired} spooled notification(s) older than ${humanDuration(spoolMaxAgeMs)} or failed ` +
        `${spoolMaxAttempts} times: moved to notify-dead.jsonl (notify --spool, --retry-dead)`,
    );
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
  if (!sentNew && report.waiting && report.failure) {
    const stateDir = config.watchdog.stateDir;
    const state = readNotifyState(stateDir);
    const last = state.waitingSaid;
    if (!last || last.count !== report.waiting || now - last.at >= HOUR_MS) {
      logger.write("NOTIFY", `${report.waiting} spooled notification(s) still not delivered: ${report.failure}`);
      try {
        writeNotifyState(stateDir, { ...state, waitingSaid: { count: report.waiting, at: now } });
      } catch {}
    }
  }
}
