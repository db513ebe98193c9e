import type { Config } from "../config/types.ts";
import type { ServiceState } from "../core/state.ts";
import { formatLine } from "../core/time.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { holderRecord, readHolder, takeLock } from "../os/lock.ts";
import { after } from "../os/timer.ts";
import { judgeServices, runPass } from "./pass.ts";
import { publishEvents, updatePassWideViews } from "../owner/pass-wide.ts";
import { LiveConfig } from "../config/live.ts";
import { sayBrokenConfig } from "./config-error.ts";
import { spoolEvents } from "../notify/alert.ts";
import { uptimeClock } from "../os/proc.ts";
import { watchedIsGone } from "../os/pidsource.ts";
import { exitOf } from "../os/children.ts";
import { stateReader } from "../state/service-state.ts";
import { systemClock, type ClockSource } from "../os/clock.ts";
import { clockSteps, tendClock, type TendClock } from "../state/clock.ts";
import { lastStep, stepped } from "../core/clock.ts";
import { heapSize } from "bun:jsc";
import {
  dueNow,
  EMPTY_SCHEDULE,
  rescheduled,
  scheduleOf,
  sleepFor,
  untilRetry,
  type Schedule,
} from "../core/schedule.ts";

/** What the heap held after the loop's last full collection (0: none yet). */
let heldAfterFull = 0;

/**
 * After each pass: a full collection once the heap outgrew what the last one left by a quarter, else
 * Bun's young-generation hint. A full one each pass cost a loop of 20 services ~4 ms of its ~20 ms pass
 * (make battery); the heap stays within a quarter of its working size all the same (bench P5).
 */
function collectAfterPass(): void {
  if (heldAfterFull === 0 || heapSize() > heldAfterFull * 1.25) {
    Bun.gc(true);
    heldAfterFull = heapSize();
  } else Bun.gc(false);
}

interface LoopOptions {
  config: Config;
  intervalMs: number;
  echo?: (line: string) => void;
  env?: Record<string, string | undefined>;
  /** Stop after this many passes (tests, benchmarks); default: until SIGTERM/SIGINT. */
  maxPasses?: number;
  /** The host's clocks (default), or a test's. */
  clock?: ClockSource;
  /** The configuration as its file says now (run --serve shares it with its server). */
  live?: LiveConfig;
}

/** `watchdog run`: a pass every interval until SIGTERM/SIGINT; a crash in one pass is logged, not fatal. */
export async function runLoop({
  config: initial,
  intervalMs,
  echo = () => {},
  env,
  maxPasses = Infinity,
  clock: source = systemClock,
  live: given,
}: LoopOptions): Promise<number> {
  let stopping = false;
  let wake: (() => void) | null = null;
  // Its passes and crash-watch starts stop too: what they did recorded, a verification left to the next run.
  const stopped = new AbortController();
  const stop = (signal: string) => {
    stopping = true;
    stopped.abort(signal);
    wake?.();
  };
  // tend's time (core/clock.ts), read again after every full pass (which follows a clock step);
  // the schedule itself runs on the monotonic clock: a step never delays nor hurries a pass.
  let config = initial;
  let clock: TendClock = await tendClock(config.watchdog.stateDir, source);
  const now = () => clock.now();
  const monotonic = () => source.monotonic();
  const logger = new Logger(config.watchdog.log, echo, now, config.watchdog.rotation);
  // One loop per state dir (Termux:Boot may start its script twice; users mix cron and a loop):
  // two loops would strike twice as fast. The kernel drops the lock when this process dies.
  ensureStateDir(config.watchdog.stateDir);
  const loopLock = statePaths(config.watchdog.stateDir).loopLock;
  const held = await takeLock(loopLock, holderRecord("loop"));
  if (!held) {
    // Two loops started together: the holder writes its PID a moment after it took the lock.
    let holder = readHolder(loopLock);
    for (let waited = 0; !holder && waited < 1000; waited += 20) {
      await Bun.sleep(20);
      holder = readHolder(loopLock);
    }
    logger.write("SKIP", `another loop watches (pid ${holder?.pid ?? "unrecorded"}): this one exits`);
    return 0;
  }
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  const failed = (what: string, error: unknown) => {
    const message = `${what}: ${(error as Error).message}`;
    try {
      ensureStateDir(config.watchdog.stateDir); // never log through a state dir that is refused
      logger.write("ERROR", message);
    } catch {
      echo(formatLine("ERROR", message, new Date()));
    }
  };
  // The configuration file is looked at again before every pass and tick: an edit takes effect at
  // once; an invalid one is said once and the loop goes on with the last good configuration.
  // (state_dir and log stay those this loop started with: its lock and log are there.)
  const live = given ?? new LiveConfig(initial, env ?? process.env, now());
  // Built again only when the file was read again (a tick costs a stat, not a copy of the configuration).
  let inUse = initial;
  const current = async () => {
    const { config: latest, broken, reloaded } = live.refresh(now());
    if (broken) await sayBrokenConfig(latest, logger, broken, live.loadedAt, now).catch(() => {});
    const { stateDir, log, rotation } = initial.watchdog;
    if (reloaded) inUse = { ...latest, watchdog: { ...latest.watchdog, stateDir, log, rotation } };
    if (reloaded) stale = "all"; // services added, removed, given or denied a pid source
    return inUse;
  };
  // Everything started here and not yet ended: full passes (with their verifications) and crash-watch starts.
  const running = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    running.add(work);
    void work.finally(() => running.delete(work));
  };
  // Between passes the loop sleeps until something can happen: the next pass, a retry's time, the
  // end of a process it started (an event: s6's way), or — only while a watched process was started
  // by someone else — the next second's look at it. Nothing watched: no timer but the next pass's.
  let poked = false;
  const poke = () => {
    poked = true;
    wake?.();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (poked || ms <= 0) return resolve();
      const cancel = ms === Infinity ? () => {} : after(ms, () => resolve());
      wake = () => (cancel(), resolve());
    }).finally(() => ((wake = null), (poked = false)));
  // The one scheduler's due times between ticks (core/schedule.ts): watched processes, retries.
  let plan: Schedule = EMPTY_SCHEDULE;
  // The services whose state changed since the plan was read (each judgement that ends says so): read
  // again, only those; every one after the configuration was read again.
  let stale = "all" as Set<string> | "all";
  let lastDue = -Infinity; // when something was last found due (monotonic)
  const awaited = new Set<number>(); // PIDs of children started here whose end wakes the loop
  // When each watched process was last seen alive: a child's exit as it is seen, another's last tick
  // (SPEC Downtime: a crash's outage begins there, never at the last pass's probe, seconds older).
  const seenAlive = new Map<string, number>();
  const aliveAt = (name: string) => seenAlive.get(name) ?? null;
  // tend's time follows a wall-clock step once a full pass has recorded it (core/clock.ts); the loop's
  // clock follows the records: after every full pass, and before the crash watch judges (a pass running
  // beside it may have recorded one since). Judged in an older frame than the states it loaded, a crash's
  // outage was recorded a step's length off, then moved again (ground truth, seed 308: 4.5 s early).
  // What the loop stamped meanwhile (when it last saw each process alive) moves with it.
  let taken = lastStep(clock.frame.steps);
  const inRecordsFrame = async (always = false) => {
    const steps = clockSteps(config.watchdog.stateDir);
    if (!always && lastStep(steps) === taken) return;
    const before = taken;
    clock = await tendClock(config.watchdog.stateDir, source);
    taken = lastStep(clock.frame.steps);
    if (taken > before) for (const [name, at] of seenAlive) seenAlive.set(name, stepped(at, clock.frame.steps, before));
  };
  // The services the last tick left to the owner that held them: due a period after their failed probe.
  let leftByTick = new Set<string>();
  const leftToOwner = (name: string) => {
    leftByTick.add(name);
    if (stale !== "all") stale.add(name);
  };
  // The states the loop's own judgements saved since the plan was read: what it would read back.
  const savedHere = new Map<string, ServiceState>();
  const replan = () => {
    const fromFile = stateReader(config.watchdog.stateDir);
    const read = (name: string) => savedHere.get(name) ?? fromFile(name);
    if (stale === "all") plan = scheduleOf(config.services, read, intervalMs, undefined, leftByTick);
    else plan = rescheduled(plan, scheduleOf(config.services, read, intervalMs, stale, leftByTick), stale);
    stale = new Set();
    savedHere.clear();
    for (const { pid, name } of plan.watched) {
      const exit = exitOf(pid);
      if (!exit || awaited.has(pid)) continue;
      awaited.add(pid);
      void exit.then(() => (awaited.delete(pid), seenAlive.set(name, now()), poke()));
    }
  };
  // Looked at each second: a watched process this loop is not woken by.
  const looked = () => plan.watched.filter(({ pid }) => !awaited.has(pid));
  // Nothing is started between passes before this loop's first pass has judged it: that pass says
  // the gap before it (a reboot, the loop down), which a start judged first would not know of.
  const judged = new Set<string>();
  // A service judged (its restart verified): what the loop watches of it may have changed.
  const settled = (name: string, saved?: ServiceState) => {
    judged.add(name);
    if (saved) savedHere.set(name, saved);
    else savedHere.delete(name);
    if (stale !== "all") stale.add(name);
    poke();
  };
  try {
    for (let passes = 0; !stopping && passes < maxPasses; passes++) {
      const started = monotonic();
      config = await current();
      // What the tick before left to another owner, it now judges itself.
      if (stale !== "all") for (const name of leftByTick) stale.add(name);
      leftByTick = new Set();
      // The next full pass waits only for this one's pass lock: a restart it verifies holds its own
      // service's lock, never the schedule (its service is left to it by the passes meanwhile).
      let released!: () => void;
      const lockFree = new Promise<void>((resolve) => (released = resolve));
      track(
        runPass({
          config,
          echo,
          env,
          intervalMs,
          inLoop: true,
          clock: source,
          released,
          settled,
          leftToOwner,
          aliveAt,
          stop: stopped.signal,
        })
          .then(() => {})
          .catch((error) => failed("pass failed", error))
          .finally(released),
      );
      const next = started + intervalMs;
      let passDone = false;
      void lockFree.then(() => {
        passDone = true;
        // A long-running loop must not drift upward: collect what the pass left, once, now (the loop
        // runs without Bun's idle GC timer, which would wake it every second for half a minute).
        collectAfterPass();
        poke();
      });
      while (!stopping && passes + 1 < maxPasses && (monotonic() < next || !passDone)) {
        if (stale === "all" || stale.size) replan();
        const at = monotonic();
        // Past the interval (the pass still judging), the watch goes on as between passes.
        const retry = untilRetry(plan, now(), at, lastDue);
        await sleep(sleepFor({ at, next, passDone, untilRetry: retry, looking: looked().length > 0 }));
        if (stopping || (passDone && monotonic() >= next)) break;
        const lookedAt = now();
        const due = dueNow({ watched: looked(), retries: plan.retries }, lookedAt, watchedIsGone);
        for (const { name } of looked()) if (!due.includes(name)) seenAlive.set(name, lookedAt);
        if (!due.length) continue;
        lastDue = monotonic();
        // Read again before acting: an operator's stop, pause or restart since the plan was read stands.
        config = await current();
        // In the frame of the states it will load: a full pass may have followed a clock step since.
        await inRecordsFrame();
        const confirmed = dueNow(
          scheduleOf(config.services, stateReader(config.watchdog.stateDir), intervalMs, new Set(due), leftByTick),
          now(),
          watchedIsGone,
        ).filter((name) => judged.has(name));
        // What was looked at is read again next time round, whatever the start does.
        if (stale !== "all") for (const name of due) stale.add(name);
        // Each due service under its own lock only: one held (a verification, an operator, the full
        // pass judging it) is looked at again next second.
        if (confirmed.length)
          track(
            crashWatch(config, confirmed, {
              echo,
              env,
              clock,
              now,
              logger,
              monotonic,
              settled,
              aliveAt,
              stop: stopped.signal,
              intervalMs,
            }).catch((error) => failed(confirmed.join(", "), error)),
          );
      }
      await lockFree;
      await inRecordsFrame(true);
    }
    while (running.size) await Promise.all(running);
  } finally {
    process.off("SIGTERM", stop);
    process.off("SIGINT", stop);
    held.release();
  }
  return 0;
}

/**
 * The crash watch's start of the services found gone (or due a retry) between passes: each judged
 * as a pass judges it, under its own lock only (the gap and the heartbeat file are the full pass's),
 * its notifications sent once its verification ends, and the pass-wide views brought up to its outcome.
 */
async function crashWatch(
  config: Config,
  due: string[],
  {
    echo,
    env,
    clock,
    now,
    logger,
    settled,
    monotonic,
    stop,
    aliveAt,
    intervalMs,
  }: {
    aliveAt: (name: string) => number | null;
    settled: (name: string, saved?: ServiceState) => void;
    monotonic: () => number;
    echo: (line: string) => void;
    env?: Record<string, string | undefined>;
    /** tend's time as the loop read it just now: this start's one frame, whatever a full pass follows meanwhile. */
    clock: TendClock;
    /** The loop's time and log, in the records' frame: its notifications and the pass-wide views. */
    now: () => number;
    logger: Logger;
    stop: AbortSignal;
    intervalMs: number;
  },
): Promise<void> {
  // Its verification may outlive a full pass that follows a clock step (the loop's clock then moves on):
  // everything it records is in the frame of the states it loaded, its log lines' stamps too (a state
  // saved with a recovery in the step's frame and a step not taken was moved by it again: 175 s ahead,
  // the next reboot's downtime counted from there; ground truth, seed 372).
  const framed = new Logger(config.watchdog.log, echo, clock.now, config.watchdog.rotation);
  const services = config.services.filter((service) => due.includes(service.name));
  const { done } = judgeServices(config, services, {
    settled,
    monotonic,
    config,
    logger: framed,
    echo,
    now: clock.now,
    env,
    uptime: uptimeClock(clock.now),
    gap: null,
    holder: "loop",
    frameStep: lastStep(clock.frame.steps),
    stop,
    aliveAt,
  });
  const outcomes = await done;
  const events = outcomes.flatMap((outcome) => outcome.events);
  // Stopped: said by the next pass (spooled), not sent now — unless it cannot be spooled (a full disk).
  const unsent = stop.aborted ? await spoolEvents(config, events, logger, now) : events;
  if (!stop.aborted || unsent.length) await publishEvents(config, unsent, logger, now);
  await updatePassWideViews(config, {
    logger,
    now,
    intervalMs,
    gap: "as-found",
    ping: "if-changed",
    offline: stop.aborted,
  });
}
