import { parseSamples, encodeSamples } from "./latency.ts";
import type { ServiceState } from "./state.ts";

/**
 * tend's time. Every interval it acts on and every duration it reports is a difference of two
 * readings of one clock that does not jump: within a boot that is the boot-time clock
 * (CLOCK_BOOTTIME, asleep included), carried across processes by the heartbeat's reading of it.
 * The wall clock only dates events: when it steps (a phone that booted at 1970 gets network time,
 * an NTP step), tend's time follows it once, and every time this boot recorded moves with it
 * (`ClockStep`), so the distances between them — grace, backoff, restart_window, an outage — stay
 * what they were. Pure: readings in, frame out.
 */

/** One reading of the host's clocks. bootMs/bootId null: not readable here (then the wall clock is all there is). */
export interface ClockReading {
  wallMs: number;
  bootMs: number | null;
  bootId: string | null;
}

/** A wall-clock step tend followed: every time of this boot at or after `fromMs` moved by `byMs`. */
export interface ClockStep {
  /** Steps are numbered from 1; a state records the last it has taken (`clockStep`). */
  seq: number;
  fromMs: number;
  byMs: number;
}

/** What the heartbeat keeps of the clock: the last pass, in tend's time, and this boot's frame. */
export interface ClockRecord {
  /** The last completed pass, in tend's time. */
  atMs: number;
  bootMs: number | null;
  bootId: string | null;
  /** tend's time minus the wall clock: 0 unless the wall clock was behind the records (below). */
  offsetMs: number;
  /** Where this boot's times begin (its first pass): a step moves the times from here on. */
  startMs: number;
  /** The last pass of the boot before: this boot's times never go below it. */
  floorMs: number;
  steps: ClockStep[];
  /** A reboot found while the wall clock read before the last pass: its gap, said when the clock is set. */
  owedGap?: Span | null;
}

/** A reboot's gap: from the boot before's last pass to this boot's first, in tend's time. */
interface Span {
  fromMs: number;
  toMs: number;
}

export interface Frame {
  /** tend's time at the reading. */
  nowMs: number;
  offsetMs: number;
  startMs: number;
  floorMs: number;
  steps: ClockStep[];
  /** Another boot than the record's (told by boot id, or the boot-time clock going back): a reboot. */
  newBoot: boolean;
  /** The wall clock stepped since the record, by this much (its line says so once). */
  steppedMs: number | null;
  /** At a new boot, the wall clock read earlier than the last pass (a phone's clock before network time). */
  behindMs: number | null;
  /**
   * The reboot's gap, while the clock is not set: how long the host was down is not known yet (tend's
   * time went on from the last pass). Carried from pass to pass until a step sets the clock.
   */
  owedGap: Span | null;
  /** The owed gap, now that the clock stepped: its end moved with this boot's times (said once, this pass). */
  settledGap: Span | null;
}

const HOUR_MS = 3_600_000;

/** Steps kept in the heartbeat: a state older than all of them is older than any clock step matters for. */
const STEPS_KEPT = 20;

/**
 * How far the two clocks may drift apart and still be no step: NTP slews at most 500 ppm, and
 * sysinfo(2) counts whole seconds where the boot-time clock cannot be read.
 */
const stepTolerance = (elapsedMs: number) => Math.max(2000, Math.abs(elapsedMs) * 0.001);

/** Is this reading of the same boot as the record? null: cannot tell (then the wall clock decides). */
function sameBoot(record: ClockRecord, reading: ClockReading): boolean | null {
  if (record.bootId && reading.bootId) return record.bootId === reading.bootId;
  if (record.bootMs !== null && reading.bootMs !== null) return reading.bootMs >= record.bootMs;
  return null;
}

/**
 * tend's time at a reading, given the last pass's record: what a pass adopts (and records), and
 * what a view reads the records with. `follow`: a step is followed (the pass, which then moves
 * the times); a view only reads, so it stays in the records' frame until a pass has moved them.
 */
export function frameOf(
  record: ClockRecord | null,
  reading: ClockReading,
  { follow = true, recordedUntil = () => -Infinity }: { follow?: boolean; recordedUntil?: () => number } = {},
): Frame {
  // The boot before ended at its last pass, or later where it recorded later (a restart's verification
  // outlives its pass's heartbeat): this boot's times begin after both, so no step of this boot can
  // move one of that boot's (ground-truth harness, seed 165). Read only at a new boot.
  let lastOfBootBefore = record?.atMs ?? 0;
  const fresh = (nowMs: number, extra: Partial<Frame> = {}): Frame => ({
    nowMs,
    offsetMs: nowMs - reading.wallMs,
    startMs: nowMs,
    // The end of the boot before: this boot's times never go below it (none before the first pass).
    floorMs: lastOfBootBefore,
    steps: record?.steps ?? [],
    newBoot: record !== null,
    steppedMs: null,
    behindMs: null,
    owedGap: null,
    settledGap: null,
    ...extra,
  });
  if (!record) return { ...fresh(reading.wallMs), newBoot: false };
  const same = sameBoot(record, reading);
  const kept = { offsetMs: record.offsetMs, startMs: record.startMs, floorMs: record.floorMs, steps: record.steps };
  const owedGap = record.owedGap ?? null;
  const unchanged = (nowMs: number): Frame => ({
    ...kept,
    nowMs,
    newBoot: false,
    steppedMs: null,
    behindMs: null,
    owedGap,
    settledGap: null,
  });
  // Neither the boot id nor the boot-time clock: the wall clock is all there is (as before).
  if (same === null) return { ...unchanged(reading.wallMs), offsetMs: 0 };
  if (!same) {
    // A new boot. A wall clock behind the last pass cannot be trusted (a phone before network
    // time, or a dead RTC): tend's time goes on from the last pass until the clock is set.
    // (A clock a second or two behind, an RTC's drift over a quick reboot, just goes on from the last pass.)
    // (Within an hour of it: a time further ahead was written by a clock set wrong, not by a verification.)
    if (follow) lastOfBootBefore = Math.max(record.atMs, Math.min(recordedUntil(), record.atMs + HOUR_MS));
    if (reading.wallMs < record.atMs - stepTolerance(0))
      return fresh(lastOfBootBefore, {
        behindMs: record.atMs - reading.wallMs,
        owedGap: { fromMs: record.atMs, toMs: lastOfBootBefore },
      });
    return fresh(Math.max(reading.wallMs, lastOfBootBefore));
  }
  const expected = record.atMs + (reading.bootMs! - record.bootMs!);
  const candidate = reading.wallMs + record.offsetMs;
  if (Math.abs(candidate - expected) <= stepTolerance(reading.bootMs! - record.bootMs!)) return unchanged(candidate);
  if (!follow) return unchanged(expected);
  // A step: follow the wall clock, but never below the boot before (its times would then be ahead).
  // (Strictly above it: the boot before ended at floorMs exactly — its last outage and the reboot's gap
  // begin there — and a later step moves the times at or after this boot's start, never those.)
  const byMs = Math.max(reading.wallMs - expected, record.floorMs + 1 - record.startMs);
  const seq = (record.steps.at(-1)?.seq ?? 0) + 1;
  const steps = [...record.steps, { seq, fromMs: record.startMs, byMs }].slice(-STEPS_KEPT);
  const nowMs = expected + byMs;
  return {
    nowMs,
    offsetMs: nowMs - reading.wallMs,
    startMs: record.startMs + byMs,
    floorMs: record.floorMs,
    steps,
    newBoot: false,
    steppedMs: candidate - expected,
    behindMs: null,
    owedGap: null,
    // The boot's first pass moves with its times; the boot before's last pass does not.
    settledGap: owedGap && { fromMs: owedGap.fromMs, toMs: owedGap.toMs + byMs },
  };
}

/** The record a pass leaves for the next: its time and reading, in the frame it adopted. */
export const recordOf = (frame: Frame, atMs: number, reading: ClockReading): ClockRecord => ({
  atMs,
  bootMs: reading.bootMs === null ? null : reading.bootMs + (atMs - frame.nowMs),
  bootId: reading.bootId,
  offsetMs: frame.offsetMs,
  startMs: frame.startMs,
  floorMs: frame.floorMs,
  steps: frame.steps,
  owedGap: frame.owedGap,
});

/** A time moved by a step when it is one of this boot's (at or after the step's start). */
const moved = (at: number, step: ClockStep) => (at >= step.fromMs ? at + step.byMs : at);

/** The last step recorded (0: none): a record written now has taken every step up to it. */
export const lastStep = (steps: ClockStep[]) => steps.at(-1)?.seq ?? 0;

/** A time this boot recorded, moved by the steps its record has not taken (those after `taken`). */
export const stepped = (at: number, steps: ClockStep[], taken = 0) =>
  steps.reduce((value, step) => (step.seq > taken ? moved(value, step) : value), at);

/** The same for a time written as ISO text (a message's date); one that does not parse is kept. */
export function steppedIso(iso: string, steps: ClockStep[], taken = 0): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const moved = stepped(at, steps, taken);
  return moved === at ? iso : new Date(moved).toISOString();
}

/**
 * A service's state with the steps it has not taken applied: every time it holds that this boot
 * recorded, moved as tend's time moved. A certificate's expiry is the world's time, not tend's: kept.
 */
export function applySteps(state: ServiceState, steps: ClockStep[]): ServiceState {
  let next = state;
  for (const step of steps) {
    if (step.seq <= (next.clockStep ?? 0)) continue;
    next = shiftState(next, step);
  }
  return next;
}

function shiftState(state: ServiceState, step: ClockStep): ServiceState {
  const at = (value: number) => moved(value, step);
  return { ...mapTimes(state, at, at), clockStep: step.seq };
}

/**
 * The latest time a state records as having happened (a deadline — backoff, pause, grace — is not):
 * at a new boot, the boot before ended no earlier (a verification can outlive its pass's heartbeat).
 */
export function latestRecorded(state: ServiceState): number {
  let latest = -Infinity;
  mapTimes(
    state,
    (value) => ((latest = Math.max(latest, value)), value),
    (value) => value,
  );
  return latest;
}

/** The state with `at` applied to every time it records, and `until` to every deadline. */
function mapTimes(state: ServiceState, at: (value: number) => number, until: (value: number) => number): ServiceState {
  const maybe = <T extends number | null | undefined>(value: T, map = at) =>
    (value === null || value === undefined ? value : map(value)) as T;
  const samples = state.latencyLog ? parseSamples(state.latencyLog) : [];
  const degradedSaidAt = Object.fromEntries(Object.entries(state.degradedSaidAt).map(([key, when]) => [key, at(when)]));
  return {
    ...state,
    startedAt: maybe(state.startedAt),
    restartTimes: state.restartTimes.map((when) => at(when)),
    outputMarks: state.outputMarks?.map(([when, bytes]) => [at(when), bytes] as [number, number]),
    lastRestartAt: maybe(state.lastRestartAt),
    backoffUntil: maybe(state.backoffUntil, until),
    pausedUntil: maybe(state.pausedUntil, until),
    outage: state.outage && {
      ...state.outage,
      since: at(state.outage.since),
      ...(state.outage.before
        ? { before: { ...state.outage.before, since: at(state.outage.before.since), to: at(state.outage.before.to) } }
        : {}),
    },
    restarting: state.restarting && {
      ...state.restarting,
      at: at(state.restarting.at),
      until: until(state.restarting.until),
      owed: state.restarting.owed.map((owed) => ({ ...owed, at: at(owed.at) })),
    },
    owedRecovery: state.owedRecovery && {
      ...state.owedRecovery,
      since: at(state.owedRecovery.since),
      to: at(state.owedRecovery.to),
    },
    outages: state.outages.map((span) => ({ ...span, from: at(span.from), to: at(span.to) })),
    gaps: state.gaps.map((span) => ({ ...span, from: at(span.from), to: at(span.to) })),
    flappingSince: maybe(state.flappingSince),
    flaps: state.flaps?.map((span) => ({ from: at(span.from), to: at(span.to) })),
    lastProbe: state.lastProbe && { ...state.lastProbe, at: at(state.lastProbe.at) },
    latencyLog: samples.length
      ? encodeSamples(samples.map(([when, ...rest]) => [at(when), ...rest] as (typeof samples)[0]))
      : state.latencyLog,
    history: state.history.map((entry) => ({ ...entry, at: at(entry.at) })),
    firstSeenAt: maybe(state.firstSeenAt),
    lastEvent: state.lastEvent && { ...state.lastEvent, at: at(state.lastEvent.at) },
    events: state.events?.map((event) => ({ ...event, at: at(event.at) })),
    busySince: maybe(state.busySince),
    busyLoggedAt: maybe(state.busyLoggedAt),
    slowSince: maybe(state.slowSince),
    slowLoggedAt: maybe(state.slowLoggedAt),
    remindedAt: maybe(state.remindedAt),
    givenUpAt: maybe(state.givenUpAt),
    rss: state.rss.map(([when, bytes]) => [at(when), bytes] as [number, number]),
    memoryWarnedAt: maybe(state.memoryWarnedAt),
    warnedAt: maybe(state.warnedAt),
    lastHealthyAt: maybe(state.lastHealthyAt),
    firstHealthyAt: maybe(state.firstHealthyAt),
    verdict: state.verdict && { ...state.verdict, at: at(state.verdict.at), until: maybe(state.verdict.until, until) },
    degradedSaidAt,
  };
}

/** "+86400s", "-3600s": a step as its log line says it. */
export const stepWords = (ms: number) => `${ms >= 0 ? "+" : "-"}${Math.round(Math.abs(ms) / 1000)}s`;
