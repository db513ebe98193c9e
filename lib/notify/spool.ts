import { lstatSync, truncateSync } from "node:fs";
import { writeFileAtomic } from "../os/atomic.ts";
import { humanDuration } from "../core/duration.ts";
import { TendError } from "../core/errors.ts";
import { waitLock } from "../os/lock.ts";
import { buildRequest, send, type Channel, type Message, type SendOptions } from "./send.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { inWords, readRegularFile } from "../os/files.ts";

export const SPOOL_LIMIT = 1000;
/** 1000 messages of up to 64 KiB each, with room: a larger spool file is not tend's. */
const SPOOL_BYTES_LIMIT = 128 * 1024 * 1024;
const STATE_LIMIT = 4 * 1024 * 1024;
export const spoolFile = (stateDir: string) => statePaths(stateDir).spool;
const stateFile = (stateDir: string) => statePaths(stateDir).notifyState;
const lockFile = (stateDir: string) => statePaths(stateDir).notifyLock;

/** What notify remembers between runs, beside the spool itself. */
export interface NotifyState {
  /** Messages dropped from a full spool, not yet reported in a delivered message. */
  dropped: number;
  /** Per service+event: when one was last accepted, and how many were suppressed since. */
  dedup: Record<string, { lastAt: number; suppressed: number }>;
  lastError: { at: string; detail: string } | null;
}

export interface DeliverOptions extends SendOptions {
  stateDir: string;
  channel: Channel;
  minIntervalMs: number;
  now?: () => number;
  /** How long to wait for another notify (or pass) that holds the spool. */
  lockWaitMs?: number;
}

export interface Outcome {
  message: Message;
  /** lost: it failed and the spool could not take it (its `detail` says both). */
  result: "sent" | "spooled" | "suppressed" | "lost";
  detail: string;
  attempts: number;
}

export interface DeliverReport {
  outcomes: Outcome[];
  /** Spooled messages delivered first */
  flushed: number;
  /** Messages waiting in the spool afterwards */
  waiting: number;
  /** Why the first failure failed */
  failure: string | null;
  /** The spool could not be used or saved (state dir unwritable, disk full): what was sent still counts. */
  spoolError: string | null;
}

const dedupKey = (message: Message) => (message.event ? `${message.service ?? ""}\u0000${message.event}` : null);

export function readNotifyState(stateDir: string): NotifyState {
  try {
    const text = readRegularFile(stateFile(stateDir), STATE_LIMIT, { noFollow: true });
    return { dropped: 0, dedup: {}, lastError: null, ...JSON.parse(text) };
  } catch {
    return { dropped: 0, dedup: {}, lastError: null };
  }
}

export function readSpool(stateDir: string): { messages: Message[]; unreadable: number } {
  let text = "";
  try {
    text = readRegularFile(spoolFile(stateDir), SPOOL_BYTES_LIMIT, { noFollow: true });
  } catch {}
  const messages: Message[] = [];
  let unreadable = 0;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const parsed = JSON.parse(line);
      if (typeof parsed?.message === "string") messages.push(parsed);
      else unreadable++;
    } catch {
      unreadable++; // a torn or edited line: counted as dropped, never fatal
    }
  }
  return { messages, unreadable };
}

/**
 * Send the spool first, oldest first, stopping at the first that fails; then each new message,
 * unless suppressed (same service+event within min_interval) or queued behind a spool that is
 * still not empty. Whatever is not delivered is spooled (at most 1000, oldest dropped first).
 * Holds notify.lock throughout, so concurrent senders neither lose nor duplicate a message.
 */
export async function deliver(messages: Message[], options: DeliverOptions): Promise<DeliverReport> {
  const { stateDir, channel, minIntervalMs, now = Date.now, lockWaitMs = 120_000 } = options;
  let lock;
  try {
    ensureStateDir(stateDir);
    lock = await waitLock(lockFile(stateDir), lockWaitMs, options.sleep);
  } catch (error) {
    // A state dir that cannot be used does not stop a delivery: send without the spool, and say so.
    return deliverUnspooled(messages, options, `the spool in ${stateDir} cannot be used: ${inWords(error)}`);
  }
  if (!lock)
    throw new TendError(
      `${lockFile(stateDir)} stayed locked for ${humanDuration(lockWaitMs)}: another notify is stuck`,
      1,
    );
  try {
    const state = readNotifyState(stateDir);
    const spool = readSpool(stateDir);
    state.dropped += spool.unreadable;
    const queue = spool.messages;
    const report: DeliverReport = { outcomes: [], flushed: 0, waiting: 0, failure: null, spoolError: null };

    const attempt = async (message: Message) => {
      const note = state.dropped
        ? ` (${state.dropped} older message${state.dropped === 1 ? " was" : "s were"} dropped from a full spool)`
        : "";
      const result = await send(
        buildRequest({ ...message, message: message.message + note }, channel),
        channel,
        options,
      );
      if (result.ok) state.dropped = 0;
      else {
        report.failure ??= result.detail;
        state.lastError = { at: new Date(now()).toISOString(), detail: result.detail };
      }
      return result;
    };

    while (queue.length) {
      const result = await attempt(queue[0]);
      if (!result.ok) break;
      queue.shift();
      report.flushed++;
    }

    for (const original of messages) {
      const key = dedupKey(original);
      const seen = key ? state.dedup[key] : undefined;
      if (key && seen && now() - seen.lastAt < minIntervalMs) {
        seen.suppressed++;
        report.outcomes.push({
          message: original,
          result: "suppressed",
          detail:
            `same ${original.service ? "service+" : ""}event within ${humanDuration(minIntervalMs)} ` +
            `(${seen.suppressed} suppressed)`,
          attempts: 0,
        });
        continue;
      }
      const message = seen?.suppressed
        ? { ...original, message: `${original.message} (+${seen.suppressed} similar suppressed)` }
        : original;
      if (key) state.dedup[key] = { lastAt: now(), suppressed: 0 };
      if (queue.length) {
        queue.push(message);
        report.outcomes.push({
          message,
          result: "spooled",
          detail: `queued behind ${queue.length - 1} spooled message(s)`,
          attempts: 0,
        });
        continue;
      }
      const result = await attempt(message);
      if (result.ok)
        report.outcomes.push({ message, result: "sent", detail: result.detail, attempts: result.attempts });
      else {
        queue.push(message);
        report.outcomes.push({ message, result: "spooled", detail: result.detail, attempts: result.attempts });
      }
    }

    if (queue.length > SPOOL_LIMIT) state.dropped += queue.splice(0, queue.length - SPOOL_LIMIT).length;
    report.waiting = queue.length;
    // Forget dedup entries long past their interval, so the state file stays small.
    for (const [key, entry] of Object.entries(state.dedup))
      if (now() - entry.lastAt > minIntervalMs && !entry.suppressed) delete state.dedup[key];
    if (!report.failure && report.waiting === 0) state.lastError = null;
    try {
      saveSpool(stateDir, queue);
      writeFileAtomic(stateFile(stateDir), JSON.stringify(state) + "\n");
    } catch (error) {
      // What the receiver accepted stays sent (a retry would send it twice); what was to be spooled is lost, and said.
      report.spoolError = `cannot save the spool in ${stateDir}: ${inWords(error)}`;
      for (const outcome of report.outcomes) {
        if (outcome.result === "spooled")
          Object.assign(outcome, { result: "lost", detail: `${outcome.detail}; ${report.spoolError}` });
      }
    }
    return report;
  } finally {
    lock.release();
  }
}

/** Send once, without touching spool or dedup (--no-spool). */
export async function sendDirect(message: Message, channel: Channel, options: SendOptions = {}) {
  return send(buildRequest(message, channel), channel, options);
}

/**
 * Write the spool atomically. An empty spool is truncated in place instead: that needs no free
 * block, so messages delivered from it are not sent again after a disk-full.
 */
function saveSpool(stateDir: string, queue: Message[]) {
  if (queue.length === 0) {
    try {
      if (lstatSync(spoolFile(stateDir)).isFile()) return truncateSync(spoolFile(stateDir), 0);
    } catch {}
  }
  writeFileAtomic(spoolFile(stateDir), queue.map((message) => JSON.stringify(message) + "\n").join(""));
}

/** No usable spool: send each message once (no dedup); what fails is lost, and the report says why. */
async function deliverUnspooled(
  messages: Message[],
  options: DeliverOptions,
  spoolError: string,
): Promise<DeliverReport> {
  const report: DeliverReport = { outcomes: [], flushed: 0, waiting: 0, failure: null, spoolError };
  for (const message of messages) {
    const result = await send(buildRequest(message, options.channel), options.channel, options);
    if (!result.ok) report.failure ??= result.detail;
    report.outcomes.push({
      message,
      result: result.ok ? "sent" : "lost",
      detail: result.ok ? result.detail : `${result.detail}; ${spoolError}`,
      attempts: result.attempts,
    });
  }
  return report;
}
