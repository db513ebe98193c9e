import type { Config } from "../config/types.ts";
import { formatLine } from "../core/time.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir } from "../state/dir.ts";
import { after } from "../os/timer.ts";
import { runPass } from "./pass.ts";

export interface LoopOptions {
  config: Config;
  intervalMs: number;
  echo?: (line: string) => void;
  env?: Record<string, string | undefined>;
  /** Stop after this many passes (tests, benchmarks); default: until SIGTERM/SIGINT. */
  maxPasses?: number;
}

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
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  const logger = new Logger(config.watchdog.log, echo);
  try {
    for (let passes = 0; !stopping && passes < maxPasses; passes++) {
      const started = Date.now();
      try {
        await runPass({ config, echo, env, intervalMs });
      } catch (error) {
        const message = `pass failed: ${(error as Error).message}`;
        try {
          ensureStateDir(config.watchdog.stateDir); // never log through a state dir that is refused
          logger.write("ERROR", message);
        } catch {
          echo(formatLine("ERROR", message, new Date()));
        }
      }
      // A long-running loop must not drift upward: collect between passes (cheap at any real interval).
      Bun.gc(true);
      const wait = Math.max(0, started + intervalMs - Date.now());
      if (!stopping && passes + 1 < maxPasses)
        await new Promise<void>((resolve) => ((wake = resolve), after(wait, resolve)));
    }
  } finally {
    process.off("SIGTERM", stop);
    process.off("SIGINT", stop);
  }
  return 0;
}
