import { oneLine } from "../core/sanitize.ts";
import type { Config, NotifyFormat } from "../config/types.ts";
import { usageError } from "../core/errors.ts";
import { httpUrlProblem, redactUrl, shownUrl, smtpUrlProblem } from "../core/redact.ts";
import { localStamp } from "../core/time.ts";
import { humanDuration } from "../core/duration.ts";
import { TELEGRAM_NEEDS_CHAT, TERMUX_DESTINATION } from "../config/types.ts";
import type { Channel, Message } from "./send.ts";
import { logDelivery } from "./log.ts";
import { Logger } from "../state/logger.ts";
import { BUILT_IN } from "../config/load.ts";
import { deliver, deliveryOptions, readDead, readSpool, spoolFile, type DeliverReport } from "./spool.ts";

/** What a `notify` run says: lines for stdout and stderr, and its exit code. */
export interface Said {
  out: string[];
  err: string[];
  code: number;
}

/** The destination of a new message: --url/--format, else [notify]; validated as the receiver needs it. */
export function channelFor(config: Config, url: string | null, format: NotifyFormat): Channel {
  if (format === "termux")
    return { url: TERMUX_DESTINATION, format, timeoutMs: config.notify.timeoutMs, retries: config.notify.retries };
  if (!url) throw usageError("no notification URL: pass --url, set [notify] url in the config, or TEND_NOTIFY_URL");
  if (format === "email")
    return {
      url: emailChannelUrl(config, url),
      format,
      timeoutMs: config.notify.timeoutMs,
      retries: config.notify.retries,
    };
  const problem = httpUrlProblem(url);
  if (problem) throw usageError(`--url: ${JSON.stringify(shownUrl(url))} ${problem}`);
  if (format === "telegram" && !new URL(url).searchParams.get("chat_id")) throw usageError(TELEGRAM_NEEDS_CHAT);
  return { url, format, timeoutMs: config.notify.timeoutMs, retries: config.notify.retries };
}

/** An email --url: smtp(s)://, its recipients and sender in its query, else those of [notify]. */
function emailChannelUrl(config: Config, given: string): string {
  const problem = smtpUrlProblem(given);
  if (problem) throw usageError(`--url: ${JSON.stringify(shownUrl(given))} ${problem} (format email)`);
  const url = new URL(given);
  const configured = config.notify.format === "email" && config.notify.url ? new URL(config.notify.url) : null;
  if (!url.searchParams.has("to"))
    for (const to of configured?.searchParams.getAll("to") ?? []) url.searchParams.append("to", to);
  if (!url.searchParams.has("from") && configured?.searchParams.get("from"))
    url.searchParams.set("from", configured.searchParams.get("from")!);
  if (!url.searchParams.has("to") || !url.searchParams.has("from"))
    throw usageError("format email needs a recipient and a sender: ?to=…&from=… in --url, or [notify] to and from");
  return url.toString();
}

/** With a configuration found, `notify` by hand says in the watchdog log what a pass would (NOTIFY). */
function logByHand(config: Config, report: DeliverReport, url: string | null, sentNew: boolean, now: () => number) {
  if (config.path === BUILT_IN) return;
  try {
    logDelivery(
      config,
      report,
      new Logger(config.watchdog.log, () => {}, now, config.watchdog.rotation),
      url,
      sentNew,
      now(),
    );
  } catch {} // the log is a courtesy here: notify says it all on stderr
}

/**
 * `notify --flush`: the spool, each message to its own destination (no configured URL needed).
 * `now`: tend's time (state/clock.ts), as for every notify by hand.
 */
export async function flush(
  config: Config,
  channel: Channel | null,
  now: () => number,
  { refusedFails = false }: { refusedFails?: boolean } = {},
): Promise<Said> {
  const report = await deliver([], deliveryOptions(config, channel, now));
  logByHand(config, report, channel?.url ?? null, false, now);
  // --retry-dead: a dead letter refused again is that operation failing (exit 1), not a flush that went well.
  const said: Said = { out: [], err: [], code: report.waiting || (refusedFails && report.buried) ? 1 : 0 };
  if (report.flushed) said.out.push(`flushed ${report.flushed} spooled message(s)`);
  if (report.buried) said.err.push(`notify: ${report.buried} refused for good, moved to the dead letters`);
  if (report.waiting) said.err.push(`notify: ${report.waiting} message(s) still spooled: ${report.failure}`);
  return said;
}

/** `notify --spool`: what waits in the spool and what lies in the dead letters, one line each. */
export function listLetters(stateDir: string, now: number): string[] {
  type Letter = { id: string; time: string; url: string; format: string; message: string; attempts?: number };
  const line = (kind: string, entry: Letter, why: string) =>
    // Spooled text is outside text: escaped (an ESC in a message must not recolour the terminal).
    `${kind} ${oneLine(entry.id, 40)}  ${localStamp(new Date(entry.time))} ` +
    `(${humanDuration(Math.max(0, now - Date.parse(entry.time)))} ago)  ${oneLine(entry.format, 20)} ` +
    `${redactUrl(entry.url)}  ${oneLine(entry.message.split("\n")[0], 80)}  (${why})`;
  const spooled = readSpool(stateDir).messages.map((entry) =>
    line(
      "spooled",
      entry,
      entry.attempts ? `${entry.attempts} attempt(s), last: ${oneLine(entry.lastError ?? "", 120)}` : "not tried yet",
    ),
  );
  const dead = readDead(stateDir).map((entry) => line("dead   ", entry, oneLine(String(entry.answer), 120)));
  return [`${spooled.length} spooled, ${dead.length} dead letters`, ...spooled, ...dead];
}

/** Deliver one new message through the spool and say how it went. */
export async function sendMessage(
  config: Config,
  channel: Channel,
  message: Message,
  now: () => number,
): Promise<Said> {
  const report: DeliverReport = await deliver([message], deliveryOptions(config, channel, now));
  logByHand(config, report, channel.url, true, now);
  const outcome = report.outcomes[0];
  const to = `notify: delivery to ${redactUrl(channel.url)}`;
  switch (outcome.result) {
    case "suppressed":
      return { out: [`notify: suppressed: ${outcome.detail}`], err: [], code: 0 };
    case "sent":
      return { out: [], err: report.spoolError ? [`notify: delivered; but ${report.spoolError}`] : [], code: 0 };
    case "lost":
      return { out: [], err: [`${to} failed: ${outcome.detail}`], code: 1 };
    case "dead":
      return {
        out: [],
        err: [`${to} refused for good: ${outcome.detail}; kept in the dead letters (notify --spool, --retry-dead)`],
        code: 1,
      };
    case "spooled": {
      const why = outcome.attempts
        ? `failed after ${outcome.attempts} attempt(s): ${outcome.detail}`
        : `not sent: ${outcome.detail} that could not be delivered (${report.failure})`;
      const where = `spooled (${report.waiting} waiting in ${spoolFile(config.watchdog.stateDir)})`;
      return { out: [], err: [`${to} ${why}; ${where}`], code: 1 };
    }
  }
}
