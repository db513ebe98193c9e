import { encodeSamples } from "./latency.ts";
import { oneLine } from "./sanitize.ts";
import { sameVerdict, STATE_WORDS, type Verdict } from "./verdict.ts";

export interface ProbeRecord {
  at: number;
  ok: boolean;
  detail: string;
  latencyMs: number;
  /** A plugin's perfdata items, as it gave them (status --nagios and /metrics pass them on). */
  perfdata?: { label: string; value: number; uom: string; warn: string; crit: string; min: string; max: string }[];
}

export interface EventRecord {
  at: number;
  tag: string;
  message: string;
  /** The notification event it was (its icon on the page), when it was one. */
  event?: string;
}

/**
 * Everything tend remembers about one service between passes, in three parts: what is true of it now
 * (what the next decision reads), what happened to it (bounded records the views read, and the samples
 * its trends are judged on), and when a line said again and again was last said. One file holds all
 * three (services/NAME.json; the SPEC's State: one file per service), written whole for every decision:
 * a decision changes what is current and what is history together (an outage that ends is `outage` null
 * and one more `outages` entry; a restart is `restarting` and one more in `restartsTotal`), and two files
 * would tear between them at a power cut.
 * What only grows (a probe's latency sample, an RSS look) is appended to the observations journal instead
 * (core/observed.ts).
 */
export interface ServiceState extends StateRecord, ServiceNow, ServiceHistory, SaidAt {}

/** The file's own bookkeeping. */
interface StateRecord {
  version: 1;
  /**
   * Stamped by each whole write of the state file: the observations appended after it (core/observed.ts)
   * name it, and apply to this write only.
   */
  writeId?: string;
  /** The last wall-clock step (core/clock.ts) this state's times have been moved by; absent: none. */
  clockStep?: number;
}

/** What is true of the service now: what the next decision reads, and what it changes. */
interface ServiceNow {
  strikes: number;
  /** The last FLAP_WINDOW probe results, oldest first: "1" answered, "0" failed (flapping, failures_within). */
  probes?: string;
  /** failures_within = M > N: the results since the last restart, at most M (a strike: N of them failed). */
  strikeWindow?: string;
  lastProbe: ProbeRecord | null;
  /** What the last pass decided, and why: every view reads this (null: no pass has judged it). */
  verdict: Verdict | null;
  /** The outage open now: since the first failed probe. */
  /** notified: a ⚠️/🚨/⛔ was sent for it; waited: it was WAIT on a dependency (both: an incident, not a blip). */
  outage: {
    since: number;
    reason: string;
    notified?: boolean;
    waited?: boolean;
    /** Down before a watchdog gap cut it (notified then): its ✅ tells that part too. */
    before?: { since: number; to: number; noDataMs: number };
  } | null;
  /**
   * An outage that was notified and then cut by a heartbeat gap (closed at its last failed probe):
   * the next healthy probe still owes its ✅.
   */
  owedRecovery?: { since: number; to: number; noDataMs: number } | null;
  /** The last start tend performed (epoch ms): grace counts from here. */
  startedAt: number | null;
  /** Identity of the process tend started: PID + start time, so a reused PID is never taken for it. */
  pid: number | null;
  pidStartTicks: string | null;
  /**
   * The boot that PID and start time belong to (its boot id): with it, the process tend started is
   * known for itself in this boot, whatever the wall clock did since its pidfile was written.
   */
  pidBootId?: string | null;
  /**
   * The service's process a pass verified (its PID and start tick), and the boot it was seen in: the
   * loop watches it; a pidfile naming it in the same boot is that process, whatever the wall clock did.
   */
  watch: { pid: number; ticks: string; bootId?: string | null } | null;
  /**
   * A counted restart, recorded durably before its action ran (decision step 4) and kept until its
   * verification is recorded. A pass killed meanwhile (SIGTERM, SIGKILL, a power cut) leaves it here,
   * and the next pass finishes its story: the ⚠️ it owes, the verification until the same deadline.
   */
  restarting?: PendingRestart | null;
  /** Times of restarts still inside restart_window (for max_restarts). */
  restartTimes: number[];
  lastRestartAt: number | null;
  /** Failed recoveries in a row: the exponent of the backoff. */
  failedInRow: number;
  backoffUntil: number | null;
  givenUp: boolean;
  /** When the service was given up (given_up_retry counts from it, then from each retry). */
  givenUpAt?: number | null;
  /** Paused by `watchdog pause`: until this time, or indefinitely (Infinity is stored as null with paused=true). */
  paused: boolean;
  pausedUntil: number | null;
  /** A flapping spell open now (6 or more changes in the last 20 probes): since when. */
  flappingSince?: number | null;
  /** First busy verdict of the current busy spell. */
  busySince: number | null;
  /** Slow since (slow_above). */
  slowSince?: number | null;
  /** systemd: last ActiveState seen, NRestarts baseline. */
  unitState: string | null;
  nRestarts: number | null;
  /** A TLS check's peer certificate, as last seen: when it expires (epoch ms). */
  certExpiresAt?: number | null;
  /** The last healthy probe's warning (a certificate that expires soon), or null. */
  checkWarning: string | null;
  /** The last and the first healthy probe: a service never started by tend nor seen healthy is new, not crashed. */
  lastHealthyAt: number | null;
  firstHealthyAt: number | null;
  /** Why the pid source could not be read (logged once while it lasts), or null. */
  sourceProblem: string | null;
  /** A service judged outside the configuration (blogtunnel): how to show it in status and report. */
  tunnel: TunnelRecord | null;
}

/** What happened to the service: counters and bounded records, oldest first (report, stats, the page, trends). */
interface ServiceHistory {
  restartsTotal: number;
  recoveriesOk: number;
  recoveriesFailed: number;
  /** systemd: its own restarts of the unit that tend counted (NRestarts over the baseline). */
  autoRestarts: number;
  /** Closed outages, newest last (report reads these). */
  outages: OutageRecord[];
  /** Gaps in the watchdog's heartbeat while this service was watched: no data, not downtime. */
  gaps: GapRecord[];
  /** Flapping spells that ended, newest last (report and the page show them). */
  flaps?: { from: number; to: number }[];
  /** Bounded history of restarts and their outcome, for `watchdog report`. */
  history: HistoryEntry[];
  /** Bounded latency history, "at,ms,ok[,1]" per sample, oldest first (lib/core/latency.ts). */
  latencyLog: string;
  /** How many samples latencyLog holds. */
  latencyCount: number;
  /** Bounded RSS history: [at, bytes]. */
  rss: [number, number][];
  /**
   * The service's output file's size as each pass saw it when it had grown: [at, bytes], oldest
   * first, bounded. A line with no time of its own was written between the two looks around its end
   * (watchdog incident places it so).
   */
  outputMarks?: [at: number, bytes: number][];
  lastEvent: EventRecord | null;
  /** The service's own recent events, newest last (RECENT_EVENTS): the page lists them as the pass wrote them. */
  events?: EventRecord[];
  /** When tend first watched this service (report: no data before). */
  firstSeenAt: number | null;
}

/** When a line that would be said at every pass while its cause lasts was last said (each said once a while). */
interface SaidAt {
  /** BUSY, while busySince's spell lasts. */
  busyLoggedAt: number | null;
  /** SLOW, while slowSince's spell lasts. */
  slowLoggedAt?: number | null;
  /** The last 🔔 (remind_every) of the open outage or given-up spell. */
  remindedAt?: number | null;
  memoryWarnedAt: number | null;
  /** When a healthy probe's warning (a certificate that expires soon) was last logged. */
  warnedAt: number | null;
  /** A capability this host denied (busy.port without /proc/net, memory without RSS): when it was last said. */
  degradedSaidAt: Record<string, number>;
}

export interface PendingRestart {
  /** When the restart began, and the verification's deadline (epoch ms). */
  at: number;
  until: number;
  reason: string;
  /** The action returned (its RESTART line and ⚠️ follow at once), and what it did. */
  acted: boolean;
  detail?: string;
  /** Its ⚠️ is in the spool (or sent): a pass finishing its story owes none. */
  announced?: boolean;
  /** The lines whose notifications (⚠️) the restart owes once its action returns, with their time. */
  owed: { at: number; line: { tag: string; message: string; event?: string } }[];
}

export const LATENCY_HISTORY = 1000;

/** What blogtunnel ran with, so status, stats and report can show it beside the configured services. */
export interface TunnelRecord {
  url: string;
  timeoutMs: number;
  strikes: number;
  failCodes: number[];
  /** socket: the tmux server (`--socket`: a name for -L, a path for -S), or tmux's default. */
  pane: { target: string; command: string; socket?: string | null } | null;
  requiresDns: string | null;
  /** `--depends-on`: configured services it waits on (WAIT while one is failing). */
  dependsOn?: string[];
  /** How long before this run the one before it ran (its cron period, as seen): how long its row stays shown. */
  everyMs?: number | null;
}
export const OUTAGE_HISTORY = 1000;

export interface OutageRecord {
  from: number;
  to: number;
  reason: string;
  /** It reached N strikes (notified) or waited on a dependency: an incident, whose probes stats leaves out. */
  incident?: boolean;
}
interface GapRecord {
  from: number;
  to: number;
  reason: string;
}
export const EVENT_HISTORY = 1000;

/** timedOut 1: no answer within `cutMs`, the timeout in force then (older samples: their latency). */
export type LatencySample = [at: number, latencyMs: number, ok: number, timedOut?: number, cutMs?: number];
interface HistoryEntry {
  at: number;
  what: "restart" | "recovered" | "failed" | "auto-restart";
  count?: number;
}

const RECENT_EVENTS = 20;

/** An event the pass wrote for the service: its last, and one of its recent ones. */
export const withEvent = (state: ServiceState, event: EventRecord): ServiceState => ({
  ...state,
  lastEvent: event,
  events: [...(state.events ?? []), event].slice(-RECENT_EVENTS),
});

/** Append to a bounded history. */
export function remember(state: ServiceState, entry: HistoryEntry): ServiceState {
  return { ...state, history: [...state.history, entry].slice(-EVENT_HISTORY) };
}

export function freshState(): ServiceState {
  return {
    version: 1,
    strikes: 0,
    startedAt: null,
    pid: null,
    pidStartTicks: null,
    pidBootId: null,
    restartTimes: [],
    lastRestartAt: null,
    restartsTotal: 0,
    recoveriesOk: 0,
    recoveriesFailed: 0,
    failedInRow: 0,
    backoffUntil: null,
    givenUp: false,
    paused: false,
    pausedUntil: null,
    outage: null,
    outages: [],
    gaps: [],
    lastProbe: null,
    latencyLog: "",
    latencyCount: 0,
    history: [],
    firstSeenAt: null,
    lastEvent: null,
    busySince: null,
    busyLoggedAt: null,
    unitState: null,
    nRestarts: null,
    autoRestarts: 0,
    rss: [],
    memoryWarnedAt: null,
    warnedAt: null,
    sourceProblem: null,
    lastHealthyAt: null,
    checkWarning: null,
    watch: null,
    tunnel: null,
    verdict: null,
    degradedSaidAt: {},

    firstHealthyAt: null,
  };
}

/** The state a file holds, or what is wrong with it. */
export function parseState(text: string): Partial<ServiceState> | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return text.trim() === "" ? "empty file" : `not JSON: ${oneLine((error as Error).message)}`;
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return "not a JSON object";
  const record = data as Record<string, unknown>;
  if (record.version !== 1) return `unknown version ${JSON.stringify(record.version)}`;
  const counters = ["strikes", "restartsTotal", "recoveriesOk", "recoveriesFailed", "failedInRow", "autoRestarts"];
  for (const key of counters) {
    const value = record[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 0))
      return `${key} is ${JSON.stringify(value)}`;
  }
  for (const key of ["restartTimes", "latencies", "rss", "history", "outages", "gaps"]) {
    if (record[key] !== undefined && !Array.isArray(record[key])) return `${key} is not an array`;
  }
  const wrong = wrongShape(record);
  if (wrong) return wrong;
  const said = record.degradedSaidAt;
  if (said !== undefined && (typeof said !== "object" || said === null || Array.isArray(said)))
    return "degradedSaidAt is not an object";
  const verdict = record.verdict as Partial<Verdict> | null | undefined;
  if (verdict !== undefined && verdict !== null && !validVerdict(verdict))
    return `verdict is ${oneLine(JSON.stringify(verdict), 80)}`;
  if (record.latencyLog !== undefined && typeof record.latencyLog !== "string") return "latencyLog is not a string";
  const count = record.latencyCount;
  if (count !== undefined && (typeof count !== "number" || !Number.isInteger(count) || count < 0))
    return `latencyCount is ${JSON.stringify(count)}`;
  if (Array.isArray(record.latencies)) {
    // An earlier version's [at, ms, ok, timedOut] arrays: into the log.
    const samples = (record.latencies as LatencySample[]).slice(-LATENCY_HISTORY);
    record.latencyLog = encodeSamples(samples);
    record.latencyCount = samples.length;
    delete record.latencies;
  }
  return record as Partial<ServiceState>;
}

/** A time (epoch ms) or null, as every `...At`/`...Until` field holds. */
const TIMES = [
  "startedAt",
  "lastRestartAt",
  "backoffUntil",
  "pausedUntil",
  "firstSeenAt",
  "firstHealthyAt",
  "lastHealthyAt",
  "busySince",
  "busyLoggedAt",
  "memoryWarnedAt",
  "warnedAt",
  "slowSince",
  "slowLoggedAt",
  "remindedAt",
  "givenUpAt",
  "certExpiresAt",
  "flappingSince",
];
const isTime = (value: unknown) => typeof value === "number" && Number.isFinite(value);
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Valid JSON of the wrong inner types (a hand edit, another program) is corrupt too, said and reset,
 * not an "Invalid Date" in status and a page that fails: every time, the probe, the event, the outage.
 */
function wrongShape(record: Record<string, unknown>): string | null {
  const bad = (key: string) => `${key} is ${oneLine(JSON.stringify(record[key]) ?? "?", 60)}`;
  for (const key of TIMES)
    if (record[key] !== undefined && record[key] !== null && !isTime(record[key])) return bad(key);
  for (const key of ["givenUp", "paused"])
    if (record[key] !== undefined && typeof record[key] !== "boolean") return bad(key);
  const probe = record.lastProbe;
  if (probe !== undefined && probe !== null) {
    if (!isRecord(probe) || !isTime(probe.at) || typeof probe.ok !== "boolean" || typeof probe.detail !== "string")
      return bad("lastProbe");
  }
  const event = record.lastEvent;
  if (event !== undefined && event !== null) {
    if (!isRecord(event) || !isTime(event.at) || typeof event.tag !== "string" || typeof event.message !== "string")
      return bad("lastEvent");
  }
  const outage = record.outage;
  if (outage !== undefined && outage !== null && (!isRecord(outage) || !isTime(outage.since))) return bad("outage");
  const pending = record.restarting;
  if (
    pending !== undefined &&
    pending !== null &&
    (!isRecord(pending) ||
      !isTime(pending.at) ||
      !isTime(pending.until) ||
      typeof pending.acted !== "boolean" ||
      !Array.isArray(pending.owed))
  )
    return bad("restarting");
  for (const key of ["probes", "strikeWindow"])
    if (record[key] !== undefined && (typeof record[key] !== "string" || !/^[01]*$/.test(record[key] as string)))
      return bad(key);
  for (const key of ["outages", "gaps", "flaps"]) {
    const spans = record[key];
    if (Array.isArray(spans) && !spans.every((span) => isRecord(span) && isTime(span.from) && isTime(span.to)))
      return `${key} holds an entry that is not {from, to}`;
  }
  if (Array.isArray(record.restartTimes) && !record.restartTimes.every(isTime)) return "restartTimes holds a non-time";
  return null;
}

const validVerdict = (verdict: Partial<Verdict>) =>
  typeof verdict === "object" &&
  typeof verdict.word === "string" &&
  STATE_WORDS.has(verdict.word) &&
  typeof verdict.kind === "string" &&
  typeof verdict.reason === "string" &&
  typeof verdict.at === "number" &&
  (verdict.until === null || typeof verdict.until === "number");

/** What every probe records: a state that differs from the last only in these holds no new decision. */
export const OBSERVATIONS: ReadonlySet<string> = new Set<string>([
  "outputMarks",
  "latencyLog",
  "latencyCount",
  "lastProbe",
  "lastHealthyAt",
  "firstHealthyAt",
  "checkWarning",
  "certExpiresAt",
  "rss",
  "watch",
  "probes",
  "strikeWindow",
]);

/** Whether `next` differs from `previous` only in observations (strikes, outages, restarts, events: no). */
/** How many looks at the output file a state keeps: a pass each, while the file grows. */
const OUTPUT_MARKS = 64;

/** The marks with this look added: unchanged when the size is; restarted when the file shrank (rotated, cut). */
export function markOutput(
  marks: [number, number][] | undefined,
  bytes: number | null,
  at: number,
): [number, number][] | undefined {
  const last = marks?.at(-1);
  if (bytes === null || (last && last[1] === bytes) || (!last && bytes === 0)) return marks;
  if (last && bytes < last[1]) return [[at, bytes]];
  return [...(marks ?? []), [at, bytes] as [number, number]].slice(-OUTPUT_MARKS);
}

/**
 * A look at the output file just before a restart or start acts, kept even when its size is the last
 * look's: what the new process writes is then placed after the action, not after the look that first
 * saw the size before it. A file not made yet (a first start) is 0 bytes: whatever it holds later
 * was written after this.
 */
export function markBeforeAction(
  marks: [number, number][] | undefined,
  bytes: number | null,
  at: number,
): [number, number][] {
  const size = bytes ?? 0;
  const last = marks?.at(-1);
  if (last && size < last[1]) return [[at, size]];
  return [...(marks ?? []), [at, size] as [number, number]].slice(-OUTPUT_MARKS);
}

export function onlyObservations(previous: ServiceState, next: ServiceState): boolean {
  for (const key of Object.keys(next) as (keyof ServiceState)[]) {
    if (key === "verdict") {
      if (!sameVerdict(previous.verdict, next.verdict)) return false; // a new decision; its time alone is not
    } else if (!OBSERVATIONS.has(key) && next[key] !== previous[key]) return false;
  }
  return true;
}
