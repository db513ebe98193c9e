import { closeSync, constants, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { Config, NotifyFormat } from "../config/types.ts";
import { oneLine } from "../core/sanitize.ts";
import { lastStep, stepped, steppedIso, type ClockStep } from "../core/clock.ts";
import { humanDuration } from "../core/duration.ts";
import { isTendError, TendError } from "../core/errors.ts";
import { overwriteInPlace, reserveTail, writeFileAtomic } from "../os/atomic.ts";
import { inWords, openRegular, readRegularFile, readTail } from "../os/files.ts";
import { libc } from "../os/libc.ts";
import { waitLock } from "../os/lock.ts";
import { clockSteps, tendNow } from "../state/clock.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { isFullDisk, removeSpilled, spillDir } from "../state/spill.ts";
import { buildRequest, lateNote, send, type Channel, type Message, type SendOptions, type SendResult } from "./send.ts";

/** The spool and the dead letters keep at most this many messages each. */
const SPOOL_LIMIT = 1000;
/** Blocks kept past the spool's end for a full disk: 64 KiB, some 60 messages. */
const SPOOL_RESERVE = 64 * 1024;
/** 1000 messages of up to 64 KiB each, with room: a larger file is not tend's. */
const SPOOL_BYTES_LIMIT = 128 * 1024 * 1024;
const STATE_LIMIT = 4 * 1024 * 1024;
export const spoolFile = (stateDir: string) => statePaths(stateDir).spool;
const deadFile = (stateDir: string) => statePaths(stateDir).dead;
const stateFile = (stateDir: string) => statePaths(stateDir).notifyState;
const lockFile = (stateDir: string) => statePaths(stateDir).notifyLock;

/** A message waiting in the spool, with its own destination (so a flush needs no configured URL). */
export interface Spooled extends Message {
  id: string;
  url: string;
  format: NotifyFormat;
  /** Failed deliveries so far, and the last one's reason (spool_max_attempts; `notify --spool`). */
  attempts?: number;
  lastError?: string;
  /** The last clock step its times have taken (`time` is tend's time: spool_max_age is a real age). */
  clockStep?: number;
  /**
   * Spooled ahead of its first attempt (a restart's ⚠️, spooled as its action returned): its first
   * delivery is reported as a new message's is, and it is not late.
   */
  ahead?: boolean;
}

/** How a configuration delivers: its spool, its destination for new messages, its policy. */
export const deliveryOptions = (config: Config, channel: Channel | null, now?: () => number): DeliverOptions => ({
  now,
  stateDir: config.watchdog.stateDir,
  channel,
  timeoutMs: config.notify.timeoutMs,
  retries: config.notify.retries,
  minIntervalMs: config.notify.minIntervalMs,
  spoolMaxAgeMs: config.notify.spoolMaxAgeMs,
  spoolMaxAttempts: config.notify.spoolMaxAttempts,
});

/** What one run (a pass, a `notify`) spends on the spool in all, whatever the number of destinations. */
const SPOOL_BUDGET_MS = 15_000;

/** A message its receiver refused for good (a 3xx, a 4xx but 408/429): kept, never holding up others. */
interface DeadLetter extends Spooled {
  status: number | null;
  /** The first 200 characters of the answer, escaped. */
  answer: string;
  deadAt: string;
}

/** What notify remembers between runs, beside the spool itself. */
interface NotifyState {
  /** Messages dropped from a full spool, not yet reported in a delivered message. */
  dropped: number;
  /** Per service+event: when one was last accepted, and how many were suppressed since. */
  dedup: Record<string, { lastAt: number; suppressed: number }>;
  lastError: { at: string; detail: string } | null;
  /** Alertmanager alerts firing now, by alertname and service: a recovery resolves them. */
  firing: Record<string, FiringAlert>;
  /** Per service: when a ⚠️/🚨/⛔/🔔 was sent that no ✅ has answered yet (that ✅ is never suppressed). */
  unanswered: Record<string, number>;
  /** The last "N spooled notification(s) still not delivered" line: said again on change or hourly. */
  waitingSaid?: { count: number; at: number } | null;
  /** The last clock step its times have taken (min_interval and the hourly line count real time). */
  clockStep?: number;
}

/** The events a ✅ answers. */
const ALERTS = new Set(["restart", "failed", "held", "given-up", "reminder"]);

export interface FiringAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
}

interface DeliverOptions extends SendOptions {
  stateDir: string;
  /** Where new messages go; null: only the spool is sent (`notify --flush` without a URL). */
  channel: Channel | null;
  /** For spooled messages: their destination's timeout and retries. */
  timeoutMs: number;
  retries: number;
  minIntervalMs: number;
  /** spool_max_age, spool_max_attempts: past either, a spooled message is a dead letter. */
  spoolMaxAgeMs?: number;
  spoolMaxAttempts?: number;
  /** The spool's time in this run (SPOOL_BUDGET_MS). */
  spoolBudgetMs?: number;
  /** tend's time (default: read from the state dir's heartbeat and the host's clocks). */
  now?: () => number;
  /** How long to wait for another notify (or pass) that holds the spool. */
  lockWaitMs?: number;
}

export interface Outcome {
  message: Message;
  /** lost: it failed and the spool could not take it; dead: refused for good (dead letters). */
  result: "sent" | "spooled" | "suppressed" | "lost" | "dead";
  detail: string;
  attempts: number;
}

export interface DeliverReport {
  outcomes: Outcome[];
  /** Spooled messages delivered first */
  flushed: number;
  /** Spooled messages refused for good this time, moved to the dead letters */
  buried: number;
  /** Spooled messages past spool_max_age or spool_max_attempts, moved to the dead letters */
  expired: number;
  /** Messages waiting in the spool afterwards, and in the dead letters */
  waiting: number;
  dead: number;
  /** Why the first failure failed */
  failure: string | null;
  /** The spool could not be used or saved (state dir unwritable, disk full): what was sent still counts. */
  spoolError: string | null;
}

const dedupKey = (message: Message) =>
  message.event && !message.alerts ? `${message.service ?? ""}\u0000${message.event}` : null;
const destination = ({ url, format }: { url: string; format: string }) => `${format} ${url}`;
const newId = () => Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString("hex");
/** An idempotency key: 128 random bits, "tend-" and 32 hex digits (ntfy's sequence ids take [-_A-Za-z0-9]{1,64}). */
const newKey = () => `tend-${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex")}`;

/**
 * The notify state (dedup, the last error): on a full disk rewritten in the blocks its file has,
 * else left as it was (it only thins repeats: the spool, which holds the messages, is what matters).
 */
export const writeNotifyState = (stateDir: string, state: NotifyState) => {
  const text = JSON.stringify(state) + "\n";
  try {
    writeFileAtomic(stateFile(stateDir), text);
  } catch (error) {
    if (!isFullDisk(error)) throw error;
    overwriteInPlace(stateFile(stateDir), text, { durable: true });
  }
};

export function readNotifyState(stateDir: string): NotifyState {
  const steps = clockSteps(stateDir);
  const empty: NotifyState = { dropped: 0, dedup: {}, lastError: null, firing: {}, unanswered: {} };
  try {
    const saved = JSON.parse(readRegularFile(stateFile(stateDir), STATE_LIMIT));
    const unanswered = typeof saved?.unanswered === "object" && saved.unanswered !== null ? saved.unanswered : {};
    return stepNotifyState({ ...empty, ...saved, unanswered }, steps);
  } catch {
    return { ...empty, clockStep: lastStep(steps) };
  }
}

/** The notify state with the clock steps it has not taken applied (as a service's state is). */
function stepNotifyState(state: NotifyState, steps: ClockStep[]): NotifyState {
  const taken = state.clockStep ?? 0;
  const clockStep = lastStep(steps);
  if (taken >= clockStep) return state;
  const at = (value: unknown) => (typeof value === "number" ? stepped(value, steps, taken) : value);
  const each = <T>(record: Record<string, T>, move: (value: T) => T) =>
    Object.fromEntries(Object.entries(record).map(([key, value]) => [key, move(value)]));
  return {
    ...state,
    clockStep,
    dedup: each(state.dedup, (entry) => ({ ...entry, lastAt: at(entry?.lastAt) as number })),
    unanswered: each(state.unanswered, (since) => at(since) as number),
    firing: each(state.firing, (alert) => ({ ...alert, startsAt: steppedIso(String(alert?.startsAt), steps, taken) })),
    waitingSaid: state.waitingSaid && { ...state.waitingSaid, at: at(state.waitingSaid.at) as number },
    lastError: state.lastError && { ...state.lastError, at: steppedIso(String(state.lastError.at), steps, taken) },
  };
}

/** A spooled message or dead letter with the clock steps it has not taken applied. */
function stepEntry<T extends Spooled & { deadAt?: string }>(entry: T, steps: ClockStep[]): T {
  const taken = entry.clockStep ?? 0;
  const clockStep = lastStep(steps);
  if (taken >= clockStep) return entry;
  const time = steppedIso(entry.time, steps, taken);
  return { ...entry, clockStep, time, ...(entry.deadAt ? { deadAt: steppedIso(entry.deadAt, steps, taken) } : {}) };
}

/**
 * What is wrong with a spool line, field by field (a hand edit, another program, an older tend): a
 * line with a wrong type must never stop the spool (`tags: "x"` once wedged it for good).
 */
function spooledProblem(entry: Record<string, unknown>): string | null {
  const optionalString = (key: string) =>
    entry[key] === undefined || entry[key] === null || typeof entry[key] === "string";
  if (typeof entry.message !== "string") return "message is not a string";
  for (const key of ["title", "priority", "event", "service", "key", "lastError"])
    if (!optionalString(key)) return `${key} is not a string`;
  if (entry.tags !== undefined && (!Array.isArray(entry.tags) || !entry.tags.every((tag) => typeof tag === "string")))
    return "tags is not a list of strings";
  if (typeof entry.time !== "string" || Number.isNaN(Date.parse(entry.time))) return "time is not a date";
  if (entry.id !== undefined && typeof entry.id !== "string") return "id is not a string"; // older spools had none
  if (entry.url !== undefined && typeof entry.url !== "string") return "url is not a string";
  if (entry.format !== undefined && typeof entry.format !== "string") return "format is not a string";
  if (entry.attempts !== undefined && (typeof entry.attempts !== "number" || !Number.isFinite(entry.attempts)))
    return "attempts is not a number";
  if (entry.alerts !== undefined && !Array.isArray(entry.alerts)) return "alerts is not a list";
  return null;
}

/** JSON lines; a torn line is counted as unreadable, a line of wrong types kept apart, never fatal. */
function readLines<T>(path: string): {
  entries: T[];
  unreadable: number;
  invalid: { entry: Record<string, unknown>; problem: string }[];
} {
  const { text, cut } = readTail(path, SPOOL_BYTES_LIMIT);
  const entries: T[] = [];
  const invalid: { entry: Record<string, unknown>; problem: string }[] = [];
  // Over its bound, the oldest are what is lost (the newest are what is read): counted as unreadable.
  let unreadable = cut ? 1 : 0;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const parsed = JSON.parse(line);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) unreadable++;
      else {
        const problem = spooledProblem(parsed);
        // What an older tend left out reads as empty; only a field of the wrong type is a problem.
        if (problem) invalid.push({ entry: parsed, problem });
        else entries.push({ title: null, priority: null, tags: [], event: null, service: null, ...parsed });
      }
    } catch {
      unreadable++;
    }
  }
  return { entries, unreadable, invalid };
}

/** A spool line of wrong types as a dead letter that reads: what could be kept, and why it is dead. */
function deadOfInvalid(
  { entry, problem }: { entry: Record<string, unknown>; problem: string },
  now: number,
): DeadLetter {
  const text = (key: string) => (typeof entry[key] === "string" ? (entry[key] as string) : null);
  return {
    message: text("message") ?? oneLine(JSON.stringify(entry), 200),
    title: text("title"),
    priority: null,
    tags: [],
    event: text("event"),
    service: text("service"),
    time: text("time") && !Number.isNaN(Date.parse(text("time")!)) ? text("time")! : new Date(now).toISOString(),
    id: text("id") ?? newId(),
    url: text("url") ?? "",
    format: (text("format") ?? "text") as NotifyFormat,
    status: null,
    answer: `unreadable spool line: ${problem}`,
    deadAt: new Date(now).toISOString(),
  };
}

export function readSpool(
  stateDir: string,
  now = Date.now(),
): { messages: Spooled[]; unreadable: number; invalid: DeadLetter[] } {
  // Kept on /dev/shm while the disk was full: the whole queue as it was last saved, newer than the file.
  const spare = spilledSpool(stateDir);
  const { entries, unreadable, invalid } = readLines<Spooled>(spare && existsSync(spare) ? spare : spoolFile(stateDir));
  const steps = clockSteps(stateDir);
  return {
    messages: entries.map((entry) => stepEntry(entry, steps)),
    unreadable,
    invalid: invalid.map((line) => deadOfInvalid(line, now)),
  };
}

export function readDead(stateDir: string): DeadLetter[] {
  const steps = clockSteps(stateDir);
  return readLines<DeadLetter>(deadFile(stateDir)).entries.map((entry) => stepEntry(entry, steps));
}

/**
 * How many messages a spool file holds, counted without parsing it (status and /api/status ask on
 * every request): its lines, read in 64 KiB blocks, never the whole file at once.
 */
function countLines(path: string): number {
  let fd: number;
  try {
    fd = openRegular(path).fd;
  } catch {
    return 0;
  }
  try {
    const block = Buffer.alloc(64 * 1024);
    let lines = 0;
    let last = 10;
    // A newline ends a line unless it follows another: the blank lines a full disk's in-place save
    // pads with are no messages.
    for (let read; (read = readSync(fd, block, 0, block.length, null)) > 0;) {
      for (let at = block.indexOf(10); at !== -1 && at < read; at = block.indexOf(10, at + 1)) {
        if ((at === 0 ? last : block[at - 1]) !== 10) lines++;
      }
      last = block[read - 1];
    }
    return lines + (last === 10 ? 0 : 1); // a last line without its newline
  } finally {
    closeSync(fd);
  }
}

export const spoolCount = (stateDir: string) => {
  const spare = spilledSpool(stateDir);
  return countLines(spare && existsSync(spare) ? spare : spoolFile(stateDir));
};
export const deadCount = (stateDir: string) => countLines(deadFile(stateDir));

/**
 * Keep the spool's room for a full disk (see withSpool) on a pass that sends nothing: the first
 * ⚠️ spooled after the disk fills has blocks on disk to go to. A cheap fstat once they are there.
 */
export async function keepSpoolRoom(stateDir: string): Promise<boolean> {
  return reserveTail(spoolFile(stateDir), SPOOL_RESERVE, (await libc())?.fallocate ?? null);
}

/** Run `work` holding notify.lock, so concurrent senders neither lose nor duplicate a message. */
export async function withSpool<T>(
  options: Pick<DeliverOptions, "stateDir" | "lockWaitMs" | "sleep">,
  work: () => Promise<T>,
): Promise<T> {
  const { stateDir, lockWaitMs = 120_000 } = options;
  ensureStateDir(stateDir);
  const lock = await waitLock(lockFile(stateDir), lockWaitMs, options.sleep);
  if (!lock) {
    throw new TendError(
      `${lockFile(stateDir)} stayed locked for ${humanDuration(lockWaitMs)}: another notify is stuck`,
      1,
      "locked",
    );
  }
  // Blocks kept past the spool's end, before and after (a save is a new file, without them): a
  // message spooled while the disk is full is written there, on disk, and outlives a reboot.
  await keepSpoolRoom(stateDir);
  try {
    return await work();
  } finally {
    await keepSpoolRoom(stateDir);
    lock.release();
  }
}

/**
 * Send the spool first, oldest first: a message that fails for a passing reason holds up the
 * rest of its own destination only; one refused for good goes to the dead letters. Then each new
 * message, unless suppressed (same service+event within min_interval) or queued behind its
 * destination's spooled messages. Whatever is not delivered is spooled with its destination (at
 * most 1000, oldest dropped first).
 */
export async function deliver(messages: Message[], options: DeliverOptions): Promise<DeliverReport> {
  try {
    return await withSpool(options, () => deliverLocked(messages, options));
  } catch (error) {
    if (isTendError(error, "locked")) throw error;
    // A state dir that cannot be used does not stop a delivery: send without the spool, and say so.
    return deliverUnspooled(messages, options, `the spool in ${options.stateDir} cannot be used: ${inWords(error)}`);
  }
}

const emptyReport = (spoolError: string | null): DeliverReport => ({
  outcomes: [],
  flushed: 0,
  buried: 0,
  expired: 0,
  waiting: 0,
  dead: 0,
  failure: null,
  spoolError,
});

async function deliverLocked(messages: Message[], options: DeliverOptions): Promise<DeliverReport> {
  const { stateDir, channel, minIntervalMs } = options;
  // tend's time, not the wall clock: a step must neither age the spool nor stretch min_interval.
  const now = options.now ?? (await tendNow(stateDir));
  const clockStep = lastStep(clockSteps(stateDir));
  const maxAgeMs = options.spoolMaxAgeMs ?? 86_400_000;
  const maxAttempts = options.spoolMaxAttempts ?? 100;
  const state = readNotifyState(stateDir);
  const spool = readSpool(stateDir, now());
  // A line of wrong types is a dead letter with its reason, never a reason for the spool to stop.
  const dead = [...readDead(stateDir), ...spool.invalid];
  state.dropped += spool.unreadable;
  const report = emptyReport(null);
  report.buried += spool.invalid.length;
  // The spool's share of this run, whatever the number of destinations (they go side by side).
  const budgetEnd = performance.now() + (options.spoolBudgetMs ?? SPOOL_BUDGET_MS);
  const attempt = async (message: Message, to: Channel, late = false) => {
    const note = state.dropped
      ? ` (${state.dropped} older message${state.dropped === 1 ? " was" : "s were"} dropped from a full spool)`
      : "";
    // Late: the live message, byte for byte, and when it was first to be sent (alerts carry their own times).
    const text = message.message + note + (late && !message.alerts ? lateNote(message.time) : "");
    const result = await send(buildRequest({ ...message, message: text }, to), to, options);
    if (result.ok) state.dropped = 0;
    else {
      report.failure ??= result.detail;
      state.lastError = { at: new Date(now()).toISOString(), detail: result.detail };
    }
    return result;
  };
  const bury = (entry: Spooled, result: Pick<SendResult, "status" | "detail">): DeadLetter => ({
    ...entry,
    status: result.status,
    answer: result.detail,
    deadAt: new Date(now()).toISOString(),
  });

  // Too old, or failed too often: a dead letter now (said once by the caller), never sent again by itself.
  const current: Spooled[] = [];
  for (const entry of spool.messages) {
    const spooled = channel && !entry.url ? { ...entry, url: channel.url, format: channel.format } : entry;
    const ageMs = now() - Date.parse(spooled.time);
    const why =
      ageMs > maxAgeMs
        ? `expired: spooled ${humanDuration(ageMs)} ago (spool_max_age ${humanDuration(maxAgeMs)})`
        : (spooled.attempts ?? 0) >= maxAttempts
          ? `expired: failed ${spooled.attempts} times (spool_max_attempts ${maxAttempts})`
          : null;
    if (why) {
      dead.push(bury(spooled, { status: null, detail: `${why}; last: ${spooled.lastError ?? "no answer"}` }));
      report.expired++;
    } else current.push(spooled);
  }

  const fresh = admit(messages, state, channel, minIntervalMs, now, clockStep, report);
  // Written ahead, durably, before any is sent: a power cut while sending loses none of them. One
  // delivered just before the cut is sent again after it, with the same key (receivers that honour
  // one keep it once).
  let spooledAhead = false;
  if (fresh.length) {
    try {
      saveSpool(stateDir, [...current, ...fresh.map(({ entry }) => entry)]);
      spooledAhead = true;
    } catch (error) {
      report.spoolError = `cannot spool ahead in ${stateDir} (sent all the same): ${inWords(error)}`;
    }
  }
  return sendLocked(current, fresh, dead, spooledAhead, { state, report, attempt, bury, now, budgetEnd }, options);
}

/**
 * The new messages: suppressed as repeats (same service+event within min_interval), or each an entry
 * for its destination, keyed, after its spool.
 */
function admit(
  messages: Message[],
  state: NotifyState,
  channel: Channel | null,
  minIntervalMs: number,
  now: () => number,
  clockStep: number,
  report: DeliverReport,
): { entry: Spooled; message: Message }[] {
  const fresh: { entry: Spooled; message: Message }[] = [];
  // Within min_interval of the last one: a last one ahead of now (recorded in a clock's wrong frame,
  // truth seed 174) is not, or min_interval 0 would suppress a restart's ⚠️ until the clock caught up.
  const within = (seen: { lastAt: number } | undefined) => {
    const since = seen ? now() - seen.lastAt : -1;
    return since >= 0 && since < minIntervalMs;
  };
  for (const original of messages) {
    if (!channel) throw new TendError("no destination for a new message", 2);
    const key = dedupKey(original);
    const seen = key ? state.dedup[key] : undefined;
    // A ✅ that answers an alert sent in this outage is never suppressed: the operator was told it
    // is down, and another ✅ minutes earlier (a blip's, a flap's) does not say it is up again.
    const answers = original.event === "recovered" && original.service !== null && original.service in state.unanswered;
    if (original.service !== null && (original.event === "recovered" || ALERTS.has(original.event ?? ""))) {
      if (ALERTS.has(original.event!) && !(key && within(seen))) state.unanswered[original.service] = now();
      if (answers) delete state.unanswered[original.service];
    }
    if (key && seen && !answers && within(seen)) {
      seen.suppressed++;
      const detail =
        `same ${original.service ? "service+" : ""}event within ${humanDuration(minIntervalMs)} ` +
        `(${seen.suppressed} suppressed)`;
      report.outcomes.push({ message: original, result: "suppressed", detail, attempts: 0 });
      continue;
    }
    const message = seen?.suppressed
      ? { ...original, message: `${original.message} (+${seen.suppressed} similar suppressed)` }
      : original;
    if (key) state.dedup[key] = { lastAt: now(), suppressed: 0 };
    const keyed = { ...message, key: message.key ?? newKey() };
    fresh.push({
      message: keyed,
      entry: { ...keyed, id: newId(), url: channel.url, format: channel.format, clockStep },
    });
  }
  return fresh;
}

/**
 * Spool these messages now, durably, without sending them (dedup applies as for a delivery): a
 * restart's ⚠️ the moment its action returns, so a pass killed while it verifies still owes none.
 * The next delivery (the end of this pass, or the next pass) sends the spool first.
 */
export async function spoolNow(messages: Message[], options: DeliverOptions): Promise<void> {
  if (!messages.length || !options.channel) return;
  const { stateDir, channel, minIntervalMs } = options;
  await withSpool(options, async () => {
    const now = options.now ?? (await tendNow(stateDir));
    const state = readNotifyState(stateDir);
    const spool = readSpool(stateDir, now());
    state.dropped += spool.unreadable;
    if (spool.invalid.length) saveLines(deadFile(stateDir), [...readDead(stateDir), ...spool.invalid]);
    // A message spooled once already (the same key: a restart's ⚠️ said again by the pass that
    // finishes its story) is not spooled twice.
    const waiting = new Set(spool.messages.map((entry) => entry.key));
    const fresh = admit(
      messages.filter((message) => !message.key || !waiting.has(message.key)),
      state,
      channel,
      minIntervalMs,
      now,
      lastStep(clockSteps(stateDir)),
      emptyReport(null),
    );
    const queue = [...spool.messages, ...fresh.map(({ entry }) => ({ ...entry, ahead: true }))];
    if (queue.length > SPOOL_LIMIT) state.dropped += queue.splice(0, queue.length - SPOOL_LIMIT).length;
    if (fresh.length || spool.unreadable || spool.invalid.length) saveSpool(stateDir, queue);
    writeNotifyState(stateDir, state);
  });
}

type Sending = {
  state: NotifyState;
  report: DeliverReport;
  attempt: (message: Message, to: Channel, late?: boolean) => Promise<SendResult>;
  bury: (entry: Spooled, result: Pick<SendResult, "status" | "detail">) => DeadLetter;
  now: () => number;
  budgetEnd: number;
};

async function sendLocked(
  current: Spooled[],
  fresh: { entry: Spooled; message: Message }[],
  dead: DeadLetter[],
  spooledAhead: boolean,
  { state, report, attempt, bury, now, budgetEnd }: Sending,
  options: DeliverOptions,
): Promise<DeliverReport> {
  const { stateDir, channel, minIntervalMs } = options;

  // Each destination on its own, side by side: its spool oldest first, then its new messages. A
  // passing failure holds up only the rest of its own destination; a receiver that answers is never
  // behind another's spooled messages or its timeouts.
  const kept = new Set<Spooled>();
  const destinations = [...new Set([...current, ...fresh.map(({ entry }) => entry)].map(destination))];
  await Promise.all(
    destinations.map(async (to) => {
      let blocked: string | null = null;
      // Kept behind one that failed (`blocked`), untried: said as spooled, with how many wait before it.
      const queued = (message: Message) => {
        const waiting = [...kept].filter((other) => destination(other) === to).length - 1;
        const detail = `queued behind ${waiting} spooled message(s)`;
        report.outcomes.push({ message, result: "spooled", detail, attempts: 0 });
      };
      for (const entry of current.filter((spooled) => destination(spooled) === to)) {
        const left = budgetEnd - performance.now();
        // No destination of its own and none configured (an older spool's entry): kept, not tried.
        if (blocked || left < 1 || !entry.url) {
          kept.add(entry);
          // Spooled ahead by its owner (a verification's outcome), behind one that failed: said as a new one is.
          if (entry.ahead === true && blocked) {
            delete entry.ahead;
            queued(entry);
          }
          continue;
        }
        // One attempt each (no in-run retries for what is already spooled), within the budget left.
        const ahead = entry.ahead === true;
        delete entry.ahead;
        const result = await attempt(
          entry,
          {
            url: entry.url,
            format: entry.format,
            timeoutMs: Math.max(1, Math.min(options.timeoutMs, left)),
            retries: 0,
          },
          !ahead,
        );
        const said = (outcome: Outcome["result"]) =>
          ahead && report.outcomes.push({ message: entry, result: outcome, detail: result.detail, attempts: 1 });
        if (result.ok) {
          if (ahead) said("sent");
          else report.flushed++;
        } else if (result.forGood) {
          dead.push(bury(entry, result));
          if (ahead) said("dead");
          else report.buried++;
        } else {
          blocked = result.detail;
          Object.assign(entry, { attempts: (entry.attempts ?? 0) + 1, lastError: result.detail });
          kept.add(entry);
          said("spooled");
        }
      }
      for (const { entry, message } of fresh.filter(({ entry }) => destination(entry) === to)) {
        if (blocked) {
          kept.add(entry);
          queued(message);
          continue;
        }
        const result = await attempt(message, channel!);
        if (result.ok)
          report.outcomes.push({ message, result: "sent", detail: result.detail, attempts: result.attempts });
        else if (result.forGood) {
          dead.push(bury(entry, result));
          report.outcomes.push({ message, result: "dead", detail: result.detail, attempts: result.attempts });
        } else {
          blocked = result.detail;
          Object.assign(entry, { attempts: result.attempts, lastError: result.detail });
          kept.add(entry);
          report.outcomes.push({ message, result: "spooled", detail: result.detail, attempts: result.attempts });
        }
      }
    }),
  );
  // The spool in its order: what was there, then what is new (order is kept per destination).
  const queue = [...current, ...fresh.map(({ entry }) => entry)].filter((entry) => kept.has(entry));
  if (queue.length > SPOOL_LIMIT) state.dropped += queue.splice(0, queue.length - SPOOL_LIMIT).length;
  if (dead.length > SPOOL_LIMIT) dead.splice(0, dead.length - SPOOL_LIMIT);
  report.waiting = queue.length;
  report.dead = dead.length;
  // Forget dedup entries long past their interval, so the state file stays small.
  for (const [key, entry] of Object.entries(state.dedup)) {
    if (now() - entry.lastAt > minIntervalMs && !entry.suppressed) delete state.dedup[key];
  }
  if (!report.failure && report.waiting === 0) state.lastError = null;
  try {
    saveSpool(stateDir, queue);
    if (report.buried || report.expired || report.outcomes.some((outcome) => outcome.result === "dead"))
      saveLines(deadFile(stateDir), dead);
    writeNotifyState(stateDir, state);
  } catch (error) {
    report.spoolError = `cannot save the spool in ${stateDir}: ${inWords(error)}`;
    // Spooled ahead: nothing is lost; what was delivered is sent again next run, with its key.
    if (spooledAhead) {
      report.spoolError += "; the messages of this run stay spooled (the delivered ones go again, with their keys)";
      return report;
    }
    // What the receiver accepted stays sent (a retry would send it twice); what was to be spooled is lost, and said.
    for (const outcome of report.outcomes) {
      if (outcome.result === "spooled") {
        Object.assign(outcome, { result: "lost", detail: `${outcome.detail}; ${report.spoolError}` });
      }
    }
  }
  return report;
}

/**
 * Write a JSON-lines file atomically. An empty one is truncated in place instead: that needs no
 * free block, so messages delivered from the spool are not sent again after a disk-full.
 */
/** The spool's copy on /dev/shm (state/spill.ts's directory), for a disk that is full. */
function spilledSpool(stateDir: string, create = false): string | null {
  const dir = spillDir(stateDir, { create });
  return dir ? join(dir, "notify-spool.jsonl") : null;
}

/**
 * Save the whole queue: in the state dir; while its disk is full, over the file in the blocks it
 * has and those withSpool keeps past its end (padded with blank lines, which readers skip); when
 * even those are too few, on /dev/shm (a message that can be neither delivered nor spooled was
 * lost: a ⚠️ whose receiver answered 500 on a full disk), which a reboot empties. The /dev/shm copy
 * goes as soon as the file takes the queue again.
 */
function saveSpool(stateDir: string, entries: Spooled[]) {
  const spare = spilledSpool(stateDir);
  try {
    saveLines(spoolFile(stateDir), entries);
  } catch (error) {
    if (!isFullDisk(error)) throw error;
    const text = entries.map((entry) => JSON.stringify(entry) + "\n").join(""); // only here: saveLines made its own
    if (!overwriteInPlace(spoolFile(stateDir), text, { durable: true, pad: "\n" })) {
      const spill = spilledSpool(stateDir, true);
      if (!spill) throw error;
      writeFileAtomic(spill, text, 0o600, { durable: false });
      return;
    }
  }
  if (spare) removeSpilled(spare);
}

function saveLines(path: string, entries: object[]) {
  if (entries.length === 0) {
    // Emptied durably: a power cut must not bring back (and send again) what was delivered.
    let fd: number | undefined;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      if (fstatSync(fd).isFile()) {
        ftruncateSync(fd, 0);
        fsyncSync(fd);
      }
    } catch {
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    return; // none there, none to write
  }
  writeFileAtomic(path, entries.map((entry) => JSON.stringify(entry) + "\n").join(""));
}

/** No usable spool: send each message once (no dedup); what fails is lost, and the report says why. */
async function deliverUnspooled(
  messages: Message[],
  options: DeliverOptions,
  spoolError: string,
): Promise<DeliverReport> {
  const report = emptyReport(spoolError);
  for (const message of messages) {
    if (!options.channel) break;
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

/** Send once, without touching spool or dedup (--no-spool). */
export async function sendDirect(message: Message, channel: Channel, options: SendOptions = {}) {
  return send(buildRequest(message, channel), channel, options);
}

/** `notify --drop ID|all`: remove from the spool and the dead letters; returns how many. */
export function dropLetters(options: Pick<DeliverOptions, "stateDir" | "lockWaitMs" | "sleep">, id: string) {
  return withSpool(options, async () => {
    const keep = <T extends Spooled>(entries: T[]) => entries.filter((entry) => id !== "all" && entry.id !== id);
    const read = readSpool(options.stateDir);
    const spool = read.messages;
    const dead = [...readDead(options.stateDir), ...read.invalid];
    const [spoolKept, deadKept] = [keep(spool), keep(dead)];
    saveSpool(options.stateDir, spoolKept);
    saveLines(deadFile(options.stateDir), deadKept);
    return spool.length - spoolKept.length + dead.length - deadKept.length;
  });
}

/** `notify --retry-dead`: move the dead letters back to the end of the spool; returns how many. */
export function reviveDead(options: Pick<DeliverOptions, "stateDir" | "lockWaitMs" | "sleep">) {
  return withSpool(options, async () => {
    const dead = readDead(options.stateDir);
    const revived: Spooled[] = dead.map(({ status: _status, answer: _answer, deadAt: _deadAt, ...entry }) => entry);
    const spool = readSpool(options.stateDir);
    saveSpool(options.stateDir, [...spool.messages, ...revived]);
    saveLines(deadFile(options.stateDir), spool.invalid); // a line of wrong types stays dead, with why
    return revived.length;
  });
}
