import type { Config } from "../config/types.ts";
import { formatLine } from "../core/time.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { lockHolder, tryLock } from "../os/lock.ts";
import { after } from "../os/timer.ts";
import { runPass } from "./pass.ts";
import { watchedIsGone } from "../os/pidsource.ts";
import { stateReader } from "../state/service.ts";

export interface LoopOptions {
  config: Config;
  intervalMs: number;
  echo?: (line: string) => void;
  env?: Record<string, string | undefined>;
  /** Stop after this many passes (tests, benchmarks); default: until SIGTERM/SIGINT. */
  maxPasses?: number;
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
  config,
  intervalMs,
  echo = () => {},
  env,
  maxPasses = Infinity,
}: LoopOptions): Promise<number> {
  let stopping = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    stopping = true;
    wake?.();
  };
  const logger = new Logger(config.watchdog.log, echo, Date.now, config.watchdog.rotation);
  // One loop per state dir (Termux:Boot may start its script twice; users mix cron and a loop):
  // two loops would strike twice as fast. The kernel drops the lock when this process dies.
  ensureStateDir(config.watchdog.stateDir);
  const loopLock = statePaths(config.watchdog.stateDir).loopLock;
  const held = await tryLock(loopLock);
  if (!held) {
    const holder = /^pid (\d+)/.exec(lockHolder(loopLock))?.[1] ?? "?";
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
  try {
    for (let passes = 0; !stopping && passes < maxPasses; passes++) {
      const started = Date.now();
      await runPass({ config, echo, env, intervalMs, inLoop: true }).catch((error) => failed("pass failed", error));
      // A long-running loop must not drift upward: collect between passes (cheap at any real interval).
      Bun.gc(true);
      const next = started + intervalMs;
      while (!stopping && passes + 1 < maxPasses && Date.now() < next) {
        await new Promise<void>((resolve) => ((wake = resolve), after(Math.min(TICK_MS, next - Date.now()), resolve)));
        if (stopping || Date.now() >= next) break;
        const due = dueBetweenPasses(config, intervalMs, Date.now(), read);
        // Takes the lock without waiting: a pass or an operator holds it, so try again next second.
        if (due.length) {
          await runPass({ config, echo, env, intervalMs, only: due, inLoop: true }).catch((error) =>
            failed(`${due.join(", ")}`, error),
          );
        }
      }
    }
  } finally {
    process.off("SIGTERM", stop);
    process.off("SIGINT", stop);
    held.release();
  }
  return 0;
}
