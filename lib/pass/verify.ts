import { probe, type ProbeResult } from "../checks/index.ts";
import type { ServiceConfig } from "../config/types.ts";
import type { LogLine, RestartReason } from "../core/decide.ts";
import { beginRestart, recordRestart, recordStart, type Verified } from "../core/restart-accounting.ts";
import { mainProcess, probeContext, watchOf, type MainProcess } from "../os/pidsource.ts";
import { restartService } from "../restarts/index.ts";
import type { ServiceState } from "../core/state.ts";
import type { RestartHooks, ServiceOwner } from "../owner/owner.ts";
import { STOPPED, stoppableSleep, untilStopped } from "./stopping.ts";
import { bootId } from "../os/clock.ts";

/** How long after its start a process tend started must still run to count as recovered. */
const SETTLE_MS = 1000;

interface VerifyOptions {
  now: () => number;
  /** The host's monotonic clock (a ClockSource's): a restart and its verification are timed on it from their start. */
  monotonic?: () => number;
  sleep: (ms: number) => Promise<void>;
  env?: Record<string, string | undefined>;
  /** The pass is stopped (SIGTERM/SIGINT): a verification in flight is left to the next pass. */
  stop?: AbortSignal;
}

/** What a restart's story says as it goes: its owner's (lib/owner/), the only one that records the service. */
type Recorder = Pick<ServiceOwner, "record" | "say">;

type How = RestartReason | "manual" | "operator-start";

/**
 * Restart through the service's action, then probe every second until healthy or
 * verify_timeout: a restart that is never verified is a guess. A process that exits meanwhile has failed.
 * A counted restart is recorded (hooks.persist) before its action runs, and its ⚠️ (`owed`) spooled as
 * soon as the action returns, so a pass killed while it verifies loses neither.
 */
export async function restartAndVerify(
  service: ServiceConfig,
  state: ServiceState,
  main: MainProcess | null,
  owner: Recorder,
  options: VerifyOptions,
  how: How,
  hooks: RestartHooks | null = null,
  owed: LogLine[] = [],
): Promise<Verified> {
  // One frame for the restart and its verification: tend's time at its start, then the monotonic
  // clock's, so a wall clock stepped meanwhile never puts its end before its start (an outage then
  // lost its beginning: ground truth, seed 204).
  options = { ...options, now: fromStart(options.now, options.monotonic) };
  const { now, sleep, env } = options;
  // A new service's first start (and an operator's start) is logged START and not counted; every
  // other start is a restart; an operator's restart is not counted toward max_restarts.
  const first = how === "start" || how === "boot" || how === "operator-start";
  const manual = how === "manual" ? "manual restart: " : how === "operator-start" ? "started by the operator: " : "";
  // After a reboot: `[START] NAME: started after reboot (what was done)`.
  const said = (detail: string) => (how === "boot" ? `started after reboot (${detail})` : `${manual}${detail}`);
  const startedAt = now();
  let next = state;
  if (!first) {
    next = beginRestart(service, state, how, startedAt, owed, { towardLimit: how !== "manual" });
    hooks?.persist(next);
  }
  const restart = await restartService(service, main, { sleep, env });
  if (restart.pid) {
    const pidStartTicks = restart.pidStartTicks ?? null;
    next = { ...next, pid: restart.pid, pidStartTicks, pidBootId: pidStartTicks ? bootId() : null };
  }
  if (restart.issued) {
    // Its ⚠️ is the one the restart owes (announced below), not this line's.
    const line: LogLine = {
      tag: first ? "START" : "RESTART",
      message: `${service.name}: ${said(restart.detail)}`,
      ...(restart.full ? { full: `${service.name}: ${said(restart.full)}` } : {}),
      ...(first ? {} : { event: "restart" as const }),
    };
    next = owner.record(next, [line], () => false);
  }
  // The action returned: its RESTART line first, then `acted` recorded with it, then its ⚠️. A pass
  // killed after the record leaves `acted` for the next, which sends the ⚠️ again under the same key
  // (kept once) and writes no second line. Recorded before the line, a pass killed between the two
  // (the record's fsync: ms) left a counted restart with no RESTART line (seen under a loaded CI);
  // killed between the line and the record, the next says what it finds: one more line, both true.
  if (next.restarting) {
    next = { ...next, restarting: { ...next.restarting, acted: true, detail: restart.detail } };
    hooks?.persist(next);
  }
  if (next.restarting && hooks) {
    await hooks.announce(next.restarting.owed, restart.detail);
    next = { ...next, restarting: { ...next.restarting, announced: true } };
    hooks.persist(next);
  }
  const deadline = startedAt + service.verifyTimeoutMs;
  const verdict = { first, how, startedAt, restart };
  hooks?.verifying?.();
  if (!restart.issued)
    return settle(service, next, verdict, now, { issued: false, detail: restart.detail, last: null });
  const seen = await verify(service, next, startedAt, deadline, options);
  return seen.stopped ? leftToNextPass(next, owner) : settle(service, next, verdict, now, seen);
}

/** `now` as it reads at the first call, advanced from then on by `monotonic` (when there is one). */
function fromStart(now: () => number, monotonic?: () => number): () => number {
  if (!monotonic) return now;
  const [startedAt, startedMono] = [now(), monotonic()];
  return () => startedAt + (monotonic() - startedMono);
}

/**
 * The pass was stopped while it verified: the restart stays recorded (counted, its ⚠️ spooled), and
 * the next pass finishes verifying it until its original deadline (finishRestart).
 */
function leftToNextPass(state: ServiceState, owner: Recorder): Verified {
  const what = state.restarting ? "restart" : "start";
  owner.say("WARN", `the pass was stopped: its ${what}'s verification is left to the next pass`);
  return { next: state, log: [], recovered: false };
}

/**
 * A restart recorded but unfinished: the pass that made it was killed (SIGTERM, SIGKILL, a power
 * cut). Its story is finished: what the action left is looked at and said, the ⚠️ it owes is
 * spooled, and it is verified until its original deadline (one probe, if that has passed) — so it
 * is neither lost from the count, the window and the notifications, nor counted twice.
 */
export async function finishRestart(
  service: ServiceConfig,
  state: ServiceState,
  owner: Recorder,
  options: VerifyOptions,
  hooks: RestartHooks,
): Promise<Verified> {
  const pending = state.restarting!;
  let next = state;
  if (!pending.acted) {
    const current = await mainProcess(service, state);
    const left = !current
      ? "the pass that restarted it was stopped during its action: verifying it now"
      : current.running
        ? `${current.detail} found after the pass that restarted it was stopped`
        : `the pass that restarted it was stopped before it started it (${current.detail})`;
    next = owner.record(next, [{ tag: "RESTART", message: `${service.name}: ${left}`, event: "restart" }], () => false);
    if (current?.running && current.info) next = { ...next, watch: watchOf(current) };
    next = { ...next, restarting: { ...pending, acted: true, detail: left } };
    hooks.persist(next);
  }
  // Owed still (the pass was killed between its action and its ⚠️): sent under the restart's own key,
  // so a ⚠️ that did leave in that instant is kept once by a receiver that honours it.
  if (!pending.announced) {
    await hooks.announce(pending.owed, next.restarting!.detail ?? "");
    next = { ...next, restarting: { ...next.restarting!, announced: true } };
    hooks.persist(next);
  }
  const verdict = { first: false, how: pending.reason as How, startedAt: pending.at, restart: null };
  hooks.verifying?.();
  const seen = await verify(service, next, pending.at, pending.until, options);
  return seen.stopped ? leftToNextPass(next, owner) : settle(service, next, verdict, options.now, seen);
}

/**
 * A restart recorded but unfinished when the host went down (its pass died with it): nothing of
 * what it started runs now. It stays counted and its ⚠️ is sent if it was owed; no FAILED (the
 * restart was not judged), and the service is judged as after any reboot.
 */
export async function cutByReboot(
  service: ServiceConfig,
  state: ServiceState,
  owner: Recorder,
  hooks: RestartHooks,
): Promise<ServiceState> {
  const pending = state.restarting!;
  let next: ServiceState = { ...state, restarting: null };
  // Counted before its action ran: its RESTART line too, as every counted restart has one (its pass
  // died with the host before its action returned).
  if (!pending.acted) {
    const line: LogLine = {
      tag: "RESTART",
      message: `${service.name}: the host went down during its action`,
      event: "restart",
    };
    next = owner.record(next, [line], () => false);
  }
  if (!pending.announced) await hooks.announce(pending.owed, pending.detail ?? "the host went down during its action");
  owner.say("WARN", "the host rebooted while its restart was verified: judged as after a reboot");
  hooks.persist(next);
  return next;
}

interface Seen {
  issued: boolean;
  /** Recovered: the probe that said so. */
  recovered?: boolean;
  detail: string;
  last: ProbeResult | null;
  /** The restarted process exited during verification, this long after the restart. */
  exitedAfterMs?: number;
  /** When the probe that answered was made. */
  answeredAt?: number;
  current?: MainProcess | null;
  /** The pass was stopped before the verification ended: nothing to settle. */
  stopped?: boolean;
}

/** Probe every second until healthy or the deadline (at least once); a process that exits has failed. */
async function verify(
  service: ServiceConfig,
  state: ServiceState,
  startedAt: number,
  deadline: number,
  { now, sleep: sleepFully, stop }: VerifyOptions,
): Promise<Seen> {
  const sleep = stoppableSleep(sleepFully, stop);
  const stopped: Seen = { issued: true, detail: "the pass was stopped", last: null, stopped: true };
  let last: ProbeResult | null = null;
  let detail = "";
  // The process tend started itself (a pidfile or pane, not a manager's MainPID, which may be 0 while
  // the unit activates) that is gone has failed, from the first look on.
  const gone = (current: MainProcess | null, probed: boolean) =>
    current !== null && !current.running && (probed || !current.supervised);
  while (true) {
    if (stop?.aborted) return stopped;
    const current = await mainProcess(service, state);
    if (gone(current, last !== null)) {
      // Gone before it answered: FAILED now, saying when, not at a deadline it never reached.
      return { issued: true, detail: current!.detail, last, exitedAfterMs: now() - startedAt };
    }
    const attemptAt = now();
    // Only evidence produced after the restart counts: a log the old process wrote is not an answer.
    const answer = await untilStopped(probe(service.check, { ...probeContext(current), since: startedAt }), stop);
    if (answer === STOPPED) return stopped;
    last = answer;
    if (last.ok) {
      const answeredAt = now();
      // ... and from a process that is still there: one that answered and died at once did not recover.
      // A process tend started is looked at again a second after its start: `sh -c 'exit 3'` is
      // "running" for the first milliseconds.
      const settleMs = startedAt + SETTLE_MS - now();
      if (current && !current.supervised && settleMs > 0)
        await sleep(Math.min(settleMs, SETTLE_MS, Math.max(0, deadline - now())));
      if (stop?.aborted) return stopped;
      const after = await mainProcess(service, state);
      if (gone(after, true)) return { issued: true, detail: after!.detail, last, exitedAfterMs: now() - startedAt };
      return { issued: true, recovered: true, detail: last.detail, last, current: after ?? current, answeredAt };
    }
    detail = `last probe: ${last.detail}`;
    if (now() >= deadline) return { issued: true, detail, last };
    // Never more than a second: a wall clock stepped back meanwhile (tend's time with it) made this
    // wait its step long — a verification that slept 32 s past the recovery (ground truth, seed 204).
    await sleep(Math.max(0, Math.min(1000 - (now() - attemptAt), 1000, deadline - now())));
  }
}

/** The verification's outcome, recorded: RECOVERED or FAILED, counted (a first start is not). */
function settle(
  service: ServiceConfig,
  state: ServiceState,
  {
    first,
    how,
    startedAt,
    restart,
  }: { first: boolean; how: How; startedAt: number; restart: { full?: string } | null },
  now: () => number,
  seen: Seen,
): Verified {
  // The loop watches the new process from now on.
  const next = seen.recovered ? { ...state, watch: watchOf(seen.current ?? null) } : state;
  const result = {
    issued: seen.issued,
    recovered: seen.recovered === true,
    elapsedMs: (seen.answeredAt ?? now()) - startedAt,
    detail: seen.detail,
    full: seen.issued ? undefined : restart?.full,
    lastProbe: seen.last,
    exitedAfterMs: seen.exitedAfterMs,
    answeredAt: seen.answeredAt,
  };
  return first
    ? recordStart(service, next, result, startedAt, now(), { afterReboot: how === "boot" })
    : recordRestart(service, next, result, startedAt, now(), { towardLimit: how !== "manual" });
}
