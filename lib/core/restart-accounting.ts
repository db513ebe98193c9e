/**
 * Restart accounting: whether a restart that is due is held (watch only, a failed unit, given up,
 * backoff, cooldown), given up (max_restarts within restart_window) or made; a restart counted before its
 * action runs; its verification recorded (RECOVERED, or FAILED with the next backoff). Pure, as decide.ts is.
 */
import type { ProbeResult } from "../checks/kind.ts";
import type { ServiceConfig } from "../config/types.ts";
import { remember, type ServiceState } from "./state.ts";
import { humanDuration } from "./duration.ts";
import type { LogLine } from "./events.ts";
import { localStamp } from "./time.ts";
import type { StateWord, Verdict } from "./verdict.ts";
import type { Decision, Facts, Outcome, RestartReason } from "./decide.ts";
import {
  beforeGap,
  closeOutage,
  markNotified,
  openOutage,
  recordProbe,
  REASON_STRENGTH,
  strongest,
} from "./outage-ledger.ts";

const clock = (ms: number) => localStamp(new Date(ms)).slice(11);

/**
 * systemd gave up on a failed unit: its start limit was hit (Result=start-limit-hit), or its Restart=
 * would have restarted this result and it is failed all the same (its restarts hit the limit: systemd
 * 252 keeps the last run's Result, exit-code, as the real systemd test shows). tend respects that. A
 * unit that failed where its policy restarts nothing (a crash with Restart=no, as hand-written units
 * are) is restarted like any down service — nobody else will (#64). Facts without a Result (a test's)
 * count as given up, as before.
 */
export const systemdGaveUp = (unit: NonNullable<Facts["unit"]>) =>
  unit.activeState === "failed" &&
  (unit.result === undefined ||
    unit.result === "start-limit-hit" ||
    (RESTARTED_RESULTS[unit.restart ?? "no"] ?? []).includes(unit.result ?? ""));

/** Which Result= each Restart= policy restarts (systemd.service(5), its table of exit causes). */
const RESTARTED_RESULTS: Record<string, string[]> = {
  always: ["exit-code", "signal", "core-dump", "timeout", "watchdog", "oom-kill", "success"],
  "on-failure": ["exit-code", "signal", "core-dump", "timeout", "watchdog", "oom-kill"],
  "on-abnormal": ["signal", "core-dump", "timeout", "watchdog"],
  "on-abort": ["signal", "core-dump"],
  "on-watchdog": ["watchdog"],
};

interface RestartWanted {
  service: ServiceConfig;
  state: ServiceState;
  facts: Facts;
  reason: RestartReason;
  /** The sentence GIVEN-UP starts with. */
  why: string;
  /** Lines that come first whatever happens (the WARN k/N line). */
  before?: LogLine[];
  /** Lines for the restart itself (HUNG, MEMORY, RESTART). */
  lines: LogLine[];
  /** The last probe's detail, for a watch-only service's FAILED line. */
  detail?: string;
  /** The hold was already said in an earlier pass of this outage: do not say it again. */
  saidHeld?: boolean;
}

/** What holds a restart that is due, with the time it ends (null: until something changes). */
type Hold = { hold: string; until: number | null; word: StateWord };

/** What holds a restart that is due, with the time it ends (null: until something changes) and the state word. */
function holdOf({ service, state, facts, reason }: RestartWanted): Hold | null {
  const { now } = facts;
  // At N strikes with no restart coming now: down (the table's CRITICAL), whatever holds it.
  if (!service.restart) return { hold: "watch only", until: null, word: "down" };
  if (facts.unit && systemdGaveUp(facts.unit)) {
    return { hold: `${facts.unit.name} is failed (systemd's start limit is respected)`, until: null, word: "down" };
  }
  // A process tend cannot see cannot be stopped: a restart would start a second copy beside it. Not a
  // restart at all (not counted, no ⚠️): the service is down and tend says it cannot help.
  if (facts.process?.hidden) {
    return { hold: `cannot be restarted by tend (${facts.process.detail})`, until: null, word: "down" };
  }
  if (state.givenUp && !givenUpRetryDue(service, state, now)) {
    const retryAt = service.givenUpRetryMs ? givenUpFrom(state, now) + service.givenUpRetryMs : null;
    const hold = retryAt ? `given up (tried again at ${clock(retryAt)})` : "given up (watchdog reset to retry)";
    return { hold, until: retryAt, word: "given-up" };
  }
  // Never longer than backoff_max from now, whatever a state written across a clock step says.
  const backoffUntil = state.backoffUntil && Math.min(state.backoffUntil, now + service.backoffMaxMs);
  if (backoffUntil && now < backoffUntil) {
    return { hold: `backoff until ${clock(backoffUntil)}`, until: backoffUntil, word: "backoff" };
  }
  // A process that is gone is started without waiting out the cooldown: backoff and max_restarts bound a crash loop.
  const cooldownEnd = Math.min(state.lastRestartAt ?? 0, now) + service.cooldownMs;
  if (reason !== "crash" && state.lastRestartAt && now < cooldownEnd) {
    return { hold: `cooldown until ${clock(cooldownEnd)}`, until: cooldownEnd, word: "down" };
  }
  return null;
}

/**
 * A restart is wanted: hold it (watch only, a failed unit, given-up, backoff, cooldown), give up
 * (max_restarts within restart_window), or restart. `before` lines come first in every case.
 */
export function restartOrHold(wanted: RestartWanted): Decision {
  const { service, state, facts, reason, why, before = [], lines, saidHeld = false } = wanted;
  const held = holdOf(wanted);
  if (held) {
    return { kind: "held", ...held, next: state, log: saidHeld ? before : heldLog(wanted, held) };
  }
  // given_up_retry: one restart, verified, every D; it stays given up unless that one recovers.
  if (state.givenUp && givenUpRetryDue(service, state, facts.now)) {
    const retry: LogLine = {
      tag: "HUNG",
      event: "restart", // a restart like any other: its ⚠️
      message: `${why}: given up, trying one restart again (given_up_retry ${humanDuration(service.givenUpRetryMs)})`,
    };
    const outage = state.outage && { ...state.outage, reason: strongest(state.outage.reason, reason) };
    return { kind: "restart", reason, next: { ...state, outage, givenUpAt: facts.now }, log: [...before, retry] };
  }
  if (windowRestarts(service, state, facts.now).length >= service.maxRestarts) {
    return {
      kind: "give-up",
      next: { ...state, givenUp: true, givenUpAt: facts.now },
      log: [...before, givenUpLine(service, why)],
    };
  }
  const outage = state.outage && { ...state.outage, reason: strongest(state.outage.reason, reason) };
  return { kind: "restart", reason, next: { ...state, outage }, log: [...before, ...lines] };
}

/**
 * The log of a held restart, said once per outage: a watch-only service is down (🚨); one whose
 * restart waits (cooldown, backoff, a failed unit) is down too, and never in silence — 🚨 `held`
 * once per outage, unless the outage was told already (a restart's ⚠️, a failed one's 🚨). A
 * given-up service keeps its ⛔ alone.
 */
function heldLog({ service, state, facts, before = [], detail, why, reason }: RestartWanted, held: Hold): LogLine[] {
  if (!service.restart) {
    const message = `${service.name} is down (${detail ?? "failing"}): watch only, not restarted`;
    return [...before, { tag: "FAILED", event: "failed", message }];
  }
  const said: LogLine[] = before.length
    ? [{ ...before[0], message: `${before[0].message}; not restarting: ${held.hold}` }, ...before.slice(1)]
    : [{ tag: "WARN", message: `${why}; not restarting: ${held.hold}` }];
  // A failed unit said its own 🚨 when it failed (observe).
  if (held.word === "given-up" || state.outage?.notified || (facts.unit && systemdGaveUp(facts.unit))) return said;
  if (facts.process?.hidden && held.hold.startsWith("cannot be restarted")) {
    const message = `${service.name} ${held.hold}`;
    return [...said, { tag: "FAILED", event: "failed", message }];
  }
  const what =
    reason === "crash"
      ? `not running: ${detail}`
      : reason === "hung_restart"
        ? `failure ${state.strikes}/${service.failures}, ${detail}`
        : why.slice(service.name.length + 1);
  const by = held.word === "down" && held.until === null ? `: ${held.hold}` : ` by ${held.hold}`;
  const message = `${service.name} is down (${what}): restart held${by}`;
  return [...said, { tag: "FAILED", event: "held", message }];
}

const givenUpLine = (service: ServiceConfig, why: string): LogLine => ({
  tag: "GIVEN-UP",
  event: "given-up",
  message:
    `${why} but was restarted ${service.maxRestarts} times within ${humanDuration(service.restartWindowMs)}: ` +
    `giving up until it is healthy again or \`watchdog reset ${service.name}\``,
});

interface RestartOutcome {
  /** The restart action itself ran (false: it failed; detail says why). */
  issued: boolean;
  recovered: boolean;
  /** ms from the restart to the first healthy probe, or to giving up verifying */
  elapsedMs: number;
  detail: string;
  /** The log's version of `detail` (a command's whole argv, secrets redacted). */
  full?: string;
  lastProbe: ProbeResult | null;
  /** The restarted process exited during verification, this long after the restart: FAILED at once. */
  exitedAfterMs?: number;
  /**
   * When the probe that answered was made: the outage ends there, not when the verification
   * finished looking (a process tend started is looked at again a second after its start).
   */
  answeredAt?: number;
}

export interface Verified extends Outcome {
  recovered: boolean;
}

/**
 * A counted restart, recorded before its action runs (decision step 4): toward max_restarts and the
 * window (an operator's `watchdog restart` is counted, but not toward max_restarts: an operator
 * asked), the start grace counts from, and the pending record a killed pass's successor finishes.
 * `owed`: the lines whose ⚠️ is spooled once the action returns.
 */
export function beginRestart(
  service: ServiceConfig,
  state: ServiceState,
  reason: string,
  at: number,
  owed: LogLine[],
  { towardLimit = true } = {},
): ServiceState {
  const windowed = windowRestarts(service, state, at);
  return {
    ...remember(state, { at, what: "restart" }),
    restartsTotal: state.restartsTotal + 1,
    restartTimes: towardLimit ? [...windowed, at] : windowed,
    lastRestartAt: at,
    startedAt: at,
    strikeWindow: "", // failures before a restart never count toward the next one
    restarting: {
      at,
      until: at + service.verifyTimeoutMs,
      reason,
      acted: false,
      owed: owed.map((line) => ({ at, line: { tag: line.tag, message: line.message, event: line.event } })),
    },
  };
}

/** Count a restart (unless beginRestart did) and its verification: RECOVERED or FAILED, backoff after a failure. */
export function recordRestart(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  startedAt: number,
  now: number,
  { towardLimit = true } = {},
): Verified {
  // Counted once: before its action ran (beginRestart), or here for a caller that did not.
  let next: ServiceState = {
    ...(state.restarting ? state : beginRestart(service, state, "restart", startedAt, [], { towardLimit })),
    restarting: null,
  };
  const answeredAt = Math.min(outcome.answeredAt ?? now, now);
  if (outcome.lastProbe)
    next = recordProbe(next, outcome.lastProbe, outcome.recovered ? answeredAt : now, service.check.timeoutMs);
  if (outcome.recovered) {
    const ok = {
      ...remember(next, { at: now, what: "recovered" }),
      strikes: 0,
      recoveriesOk: next.recoveriesOk + 1,
      failedInRow: 0,
      backoffUntil: null,
    };
    const closed = closeOutage(service, ok, outcome.lastProbe!, answeredAt, false);
    // An outage a watchdog gap cut, its 🚨 sent: this ✅ answers it, and tells that part too, once (an
    // operator's restart after a reboot answered it, then the next pass said it again: ground truth, seed 301).
    const before = next.outage?.before ?? next.owedRecovery ?? null;
    const story = before ? ` (earlier: ${beforeGap(before)})` : "";
    const after = `after restart${story} (${outcome.detail})`;
    const message = `${service.name} recovered ${humanDuration(outcome.elapsedMs)} ${after}`;
    return {
      recovered: true,
      // Healthy again, unless its results still flap (the spell is the state's, whatever answered last).
      next: {
        ...closed.next,
        owedRecovery: null,
        verdict: verified(answeredWord(closed.next), "recovered", null, now),
      },
      log: [{ tag: "RECOVERED", event: "recovered", message }, ...closed.log],
    };
  }
  // An outage opens at the first failed probe: for a restart made while it answered (memory, busy,
  // an operator's), its verification's first probe, right after the action stopped it (found by the
  // ground-truth harness, seed 151: a failed memory restart's outage opened 4 s late, at a later strike).
  const reason = state.restarting?.reason;
  const opened =
    outcome.issued && !next.outage
      ? openOutage(next, startedAt, reason && REASON_STRENGTH.includes(reason) ? reason : "check_failed")
      : next;
  const failed = {
    ...remember(opened, { at: now, what: "failed" }),
    recoveriesFailed: next.recoveriesFailed + 1,
  };
  // The time really waited: a process that exited early is said so, never "within verify_timeout".
  const what = !outcome.issued
    ? "could not be restarted"
    : outcome.exitedAfterMs !== undefined
      ? `exited ${humanDuration(outcome.exitedAfterMs)} after the restart`
      : `did not recover within ${humanDuration(Math.max(outcome.elapsedMs, 0))} after restart`;
  return failedVerification(service, failed, outcome, what, now);
}

/**
 * The first start of a new service: verified like a restart, but not counted. Quiet when it
 * answers; FAILED (🚨) with backoff when not, and from then on it is judged like any other.
 */
export function recordStart(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  startedAt: number,
  now: number,
  { afterReboot = false } = {},
): Verified {
  let next: ServiceState = { ...state, startedAt };
  const start = afterReboot ? "its start after the reboot" : "its first start";
  if (outcome.lastProbe) next = recordProbe(next, outcome.lastProbe, now, service.check.timeoutMs);
  if (outcome.recovered)
    return { recovered: true, next: { ...next, verdict: verified(answeredWord(next), "started", null, now) }, log: [] };
  const what = !outcome.issued
    ? "could not be started"
    : outcome.exitedAfterMs !== undefined
      ? `exited ${humanDuration(outcome.exitedAfterMs)} after ${start}`
      : `did not become healthy within ${humanDuration(Math.max(outcome.elapsedMs, 0))} after ${start}`;
  return failedVerification(service, next, outcome, what, now);
}

/** FAILED (🚨) and the next backoff, doubling up to backoff_max. */
function failedVerification(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  what: string,
  now: number,
): Verified {
  const failedInRow = state.failedInRow + 1;
  const backoffMs = Math.min(service.backoffMs * 2 ** (failedInRow - 1), service.backoffMaxMs);
  const say = (detail: string) => `${service.name} ${what} (${detail}); backoff ${humanDuration(backoffMs)}`;
  const line: LogLine = { tag: "FAILED", event: "failed", message: say(outcome.detail) };
  if (outcome.full) line.full = say(outcome.full);
  const backoffUntil = now + backoffMs;
  const verdict = verified("backoff", `${outcome.issued ? "did not recover" : "not restarted"}`, backoffUntil, now);
  // A start that did not recover leaves the strikes at N, whatever led to it (a hang, a crash, a
  // boot): the service is failing now, and its next failed probe after the backoff restarts it,
  // not the Nth fresh one (2 x 5 min lost under cron for a crash start that came up hung).
  const strikes = Math.max(state.strikes, service.failures);
  const next = markNotified({ ...state, strikes, failedInRow, backoffUntil, verdict }, [line], now);
  return { recovered: false, next, log: [line] };
}

/** A verified start's word: healthy, or flapping while a flapping spell is open. */
const answeredWord = (state: ServiceState): StateWord => (state.flappingSince ? "flapping" : "healthy");

/** The verdict after a restart or a first start was verified. */
const verified = (word: StateWord, reason: string, until: number | null, at: number): Verdict => ({
  kind: "verified",
  word,
  reason,
  until,
  at,
});

const givenUpRetryDue = (service: ServiceConfig, state: ServiceState, now: number) =>
  service.givenUpRetryMs > 0 && now >= givenUpFrom(state, now) + service.givenUpRetryMs;

/** When it was given up (an older state without the time: its last restart). */
const givenUpFrom = (state: ServiceState, now: number) => Math.min(state.givenUpAt ?? state.lastRestartAt ?? now, now);

/** Restarts inside restart_window (one recorded ahead of now, across a clock step, is not: it is no evidence). */
const windowRestarts = (service: ServiceConfig, state: ServiceState, now: number) =>
  state.restartTimes.filter((at) => at > now - service.restartWindowMs && at <= now);
