/**
 * The one scheduler of per-service due times, for the pass and the loop (SPEC "One owner is one
 * module"). A service is due:
 *
 * - at every tick of the watchdog's period (cron's line, `run --interval`): a full pass, in which every
 *   service is due (`dueInPass`);
 * - between ticks, in the loop only: when the process tend verified for it is gone (a crash: started
 *   again at once, as rule 0 would at the next tick), or when its failed probe's retry comes
 *   (`retry_interval`, shorter than the period) — or, for a service the last tick left to another owner
 *   (a verification held it), a period after its failed probe: that tick did not look at it, and the
 *   next one may be late (a tick waits for the pass before it, which may wait on a probe's timeout).
 *
 * Pure: the states are read, and a process looked at, by functions the caller gives. The loop sleeps
 * until the earliest due time (`sleepFor`), or until a process it started wakes it by its end.
 */
import type { ServiceConfig } from "../config/types.ts";
import type { ServiceState } from "./state.ts";

/** A process tend verified for a service, by its PID and its start time (never by a PID alone). */
interface Watched {
  name: string;
  pid: number;
  ticks: string;
}

/** A service whose last probe failed: due again at `at` (tend's time), `everyMs` (retry_interval) after it. */
interface Retry {
  name: string;
  at: number;
  everyMs: number;
}

/** What is due between ticks, read from the services' states once (after each judgement that changed one). */
export interface Schedule {
  watched: Watched[];
  retries: Retry[];
}

export const EMPTY_SCHEDULE: Schedule = { watched: [], retries: [] };

/** The services a tick judges: every one (disabled and paused ones are skipped by the decision, saying so). */
export const dueInPass = (services: ServiceConfig[]): ServiceConfig[] => services;

/**
 * What is due between ticks for these services (those in `only`, when given), as their states say:
 * none for a disabled or paused service; a watched process's end; a failed probe's retry when
 * retry_interval is shorter than the period (else the next tick is as soon) — for a service the last
 * tick left to its owner (`leftByTick`), a period after it: judged only at a late tick, its recovery
 * was seen 4 s after the stopwatch saw it (ground truth, seed 350). Only those: a tick on time judges
 * the others itself, and a retry beside it would judge them twice where a state cannot be read back
 * (a full disk keeps it in the loop's memory only).
 */
export function scheduleOf(
  services: ServiceConfig[],
  read: (name: string) => ServiceState,
  intervalMs: number,
  only?: ReadonlySet<string>,
  leftByTick: ReadonlySet<string> = new Set(),
): Schedule {
  const schedule: Schedule = { watched: [], retries: [] };
  for (const service of services) {
    if (!service.enabled || (only && !only.has(service.name))) continue;
    const state = read(service.name);
    if (state.paused) continue;
    if (state.watch) schedule.watched.push({ name: service.name, pid: state.watch.pid, ticks: state.watch.ticks });
    const retry = service.retryIntervalMs > 0 && service.retryIntervalMs < intervalMs;
    const everyMs = retry ? service.retryIntervalMs : leftByTick.has(service.name) ? intervalMs : null;
    if (everyMs !== null && state.lastProbe && !state.lastProbe.ok)
      schedule.retries.push({ name: service.name, at: state.lastProbe.at + everyMs, everyMs });
  }
  return schedule;
}

/** A schedule with the `changed` services' entries replaced by those of `fresh` (read again, only those). */
export function rescheduled(schedule: Schedule, fresh: Schedule, changed: ReadonlySet<string>): Schedule {
  return {
    watched: [...schedule.watched.filter(({ name }) => !changed.has(name)), ...fresh.watched],
    retries: [...schedule.retries.filter(({ name }) => !changed.has(name)), ...fresh.retries],
  };
}

/** The services due now between ticks: a watched process gone, or a retry's time come. No probe here. */
export function dueNow(
  schedule: Schedule,
  now: number,
  gone: (watch: { pid: number; ticks: string }) => boolean,
): string[] {
  const due = new Set<string>();
  for (const entry of schedule.watched) if (gone(entry)) due.add(entry.name);
  for (const retry of schedule.retries) if (retry.at <= now) due.add(retry.name);
  return [...due];
}

/** How often a watched process the loop cannot be woken by (another's child) is looked at. */
export const TICK_MS = 1000;

/**
 * How long until the earliest retry (tend's time `now`): never longer than its retry_interval (a wall
 * clock stepped back would make it the step), and a retry found due and not yet done (its lock held)
 * not before a second after it was found (`lastDueAt`, on the monotonic clock `at`).
 */
export function untilRetry(schedule: Schedule, now: number, at: number, lastDueAt: number): number {
  return Math.max(
    Math.min(...schedule.retries.map((retry) => Math.min(retry.at - now, retry.everyMs))),
    lastDueAt + TICK_MS - at,
  );
}

/**
 * How long the loop sleeps before it looks again, from ONE reading of the monotonic clock (`at`): until
 * the next tick is due at `next` (at once once it is due and the last pass is done; while that pass still
 * judges, until its end wakes the loop), a retry is due, or the next look at a process it is not woken
 * by. One reading: read twice, a condition read just before `next` and a wait read just after it made a
 * wait for nothing (no timer at all), and the loop stopped passing (seen on a loaded machine).
 */
export function sleepFor({
  at,
  next,
  passDone,
  untilRetry,
  looking,
}: {
  at: number;
  next: number;
  passDone: boolean;
  untilRetry: number;
  looking: boolean;
}): number {
  const untilPass = at < next ? next - at : passDone ? 0 : Infinity;
  return Math.max(0, Math.min(untilPass, untilRetry, looking ? TICK_MS : Infinity));
}
