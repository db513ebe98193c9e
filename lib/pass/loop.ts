import type { Config } from "../config/types.ts";
import { formatLine } from "../core/time.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { lockHolder, tryLock } from "../os/lock.ts";
import { after } from "../os/timer.ts";
import { judgeServices, runPass } from "./pass.ts";
import { LiveConfig } from "../config/live.ts";
import { sayBrokenConfig } from "./config-error.ts";
import { sendEvents, spoolEvents } from "../notify/alert.ts";
import { uptimeClock } from "../os/proc.ts";
import { watchedIsGone } from "../os/pidsource.ts";
import { stateReader } from "../state/service-state.ts";
import { systemClock, type ClockSource } from "../os/clock.ts";
import { tendClock, type TendClock } from "../state/clock.ts";

export interface LoopOptions {
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

/**
 * Between passes, every second: services whose watched process is gone (crashed: started again at
 * once, as a pass would), and services whose last probe failed at least retry_interval ago. No
 * probes here: a /proc read per watched process.
 */
export function dueBetweenPasses(
  config: Config,
  intervalMs: number,
  now: number,
  read = stateReader(config.watchdog.stateDir),
): string[] {
  const due: string[] = [];
  for (const service of config.services) {
    if (!service.enabled) continue;
    const state = read(service.name);
    if (state.paused) continue;
    const crashed = state.watch !== null && watchedIsGone(state.watch);
    const retry = service.retryIntervalMs > 0 && service.retryIntervalMs < intervalMs;
    const failedAt = state.lastProbe && !state.lastProbe.ok ? state.lastProbe.at : null;
    if (crashed || (retry && failedAt !== null && now - failedAt >= service.retryIntervalMs)) due.push(service.name);
  }
  return due;
}

const TICK_MS = 1000;

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
  const held = await tryLock(loopLock);
  if (!held) {
    // Two loops started together: the holder writes its PID a moment after it took the lock.
    let holder: string | undefined;
    for (let waited = 0; !(holder = /^pid (\d+)/.exec(lockHolder(loopLock))?.[1]) && waited < 1000; waited += 20)
      await Bun.sleep(20);
    holder ??= "unrecorded";
    logger.write("SKIP", `another loop watches (pid ${holder}): this one exits`);
    return 0;
  }
  held.record(`pid ${process.pid}\n`);
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
  // Read again only what a pass rewrote: a tick then costs a stat per service, not a JSON parse (bench battery).
  const read = stateReader(config.watchdog.stateDir, { unchanged: true });
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
    return inUse;
  };
  // Everything started here and not yet ended: full passes (with their verifications) and crash-watch starts.
  const running = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    running.add(work);
    void work.finally(() => running.delete(work));
  };
  try {
    for (let passes = 0; !stopping && passes < maxPasses; passes++) {
      const started = monotonic();
      config = await current();
      // The next full pass waits only for this one's pass lock: a restart it verifies holds its own
      // service's lock, never the schedule (its service is left to it by the passes meanwhile).
      let released!: () => void;
      const lockFree = new Promise<void>((resolve) => (released = resolve));
      track(
        runPass({ config, echo, env, intervalMs, inLoop: true, clock: source, released, stop: stopped.signal })
          .then(() => {})
          .catch((error) => failed("pass failed", error))
          .finally(released),
      );
      const next = started + intervalMs;
      let passDone = false;
      void lockFree.then(() => (passDone = true));
      while (!stopping && passes + 1 < maxPasses && (monotonic() < next || !passDone)) {
        // Every second; past the interval (the pass still judging), every second still: the crash watch goes on.
        const waitMs = monotonic() < next ? Math.min(TICK_MS, next - monotonic()) : TICK_MS;
        await new Promise<void>((resolve) => ((wake = resolve), after(waitMs, resolve)));
        if (stopping || (passDone && monotonic() >= next)) break;
        config = await current();
        const due = dueBetweenPasses(config, intervalMs, now(), read);
        // Each due service under its own lock only: one held (a verification, an operator, the full
        // pass judging it) is tried again next second.
        if (due.length)
          track(
            crashWatch(config, due, { echo, env, now, logger, stop: stopped.signal }).catch((error) =>
              failed(due.join(", "), error),
            ),
          );
      }
      await lockFree;
      clock = await tendClock(config.watchdog.stateDir, source);
      // A long-running loop must not drift upward: collect between passes (cheap at any real interval).
      Bun.gc(true);
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
 * as a pass judges it, under its own lock only (no heartbeat, gap or metrics: the full pass's), its
 * notifications sent once its verification ends.
 */
async function crashWatch(
  config: Config,
  due: string[],
  {
    echo,
    env,
    now,
    logger,
    stop,
  }: {
    echo: (line: string) => void;
    env?: Record<string, string | undefined>;
    now: () => number;
    logger: Logger;
    stop: AbortSignal;
  },
): Promise<void> {
  const services = config.services.filter((service) => due.includes(service.name));
  const { done } = judgeServices(config, services, {
    config,
    logger,
    dryRun: false,
    echo,
    now,
    env,
    uptime: uptimeClock(now),
    gap: null,
    holder: "loop",
    stop,
  });
  const outcomes = await done;
  const events = outcomes.flatMap((outcome) => outcome.events);
  // Stopped: said by the next pass (spooled), not sent now — unless it cannot be spooled (a full disk).
  const unsent = stop.aborted ? await spoolEvents(config, events, logger, now) : events;
  if (!stop.aborted || unsent.length) await sendEvents(config, unsent, logger, now);
}
