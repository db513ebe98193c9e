import type { Config } from "../config/types.ts";
import { explain, type Decision } from "../core/decide.ts";
import { limiter } from "../core/limiter.ts";
import { fittingConcurrency } from "../os/fdlimit.ts";
import { uptimeMs } from "../os/proc.ts";
import { describeRestart } from "../restarts/index.ts";
import { tendNow } from "../state/clock.ts";
import { Logger } from "../state/logger.ts";
import { stateReader } from "../state/service-state.ts";
import { assess, DependencyBoard } from "./assess.ts";
import { STOPPED } from "./stopping.ts";

/**
 * `watchdog pass --dry-run`: every service assessed as a pass assesses it — dependencies first, the one
 * assess() (pass/assess.ts) over its state as recorded — and its decision printed, with what a restart
 * would do. It takes no lock, owns no service, writes no state or log line, restarts and sends nothing:
 * its own driver, so the pass and its owners know nothing of it.
 */
export async function dryRunPass(config: Config, echo: (line: string) => void): Promise<void> {
  const { stateDir } = config.watchdog;
  const now = await tendNow(stateDir); // tend's time, read only (no clock step followed)
  const read = stateReader(stateDir);
  const limit = limiter(fittingConcurrency(config.watchdog.concurrency)); // the bound a pass has
  // Every service is in the round: its dependents wait on what it is decided now.
  const board = new DependencyBoard(
    config.services.map((service) => service.name),
    () => false,
  );
  // Said on stdout only, in the log's words (no file: nothing is written).
  const logger = new Logger(null, echo, now);
  const assessing = { now, uptimeMs: uptimeMs(), bootDelayMs: config.watchdog.bootDelayMs, gap: null, logger };
  await Promise.all(
    config.services.map(async (service) => {
      const failingDependencies = await board.failingFor(service);
      await limit(async () => {
        const state = read(service.name);
        try {
          const assessed = await assess(service, state, { ...assessing, failingDependencies });
          if (assessed === STOPPED) return; // no stop signal is given: never
          const decision = assessed.step as Decision;
          board.sayFrom(service.name, decision.next);
          const { result } = assessed;
          const would = decision.kind === "restart" ? ` -> would ${describeRestart(service.restart!)}` : "";
          const seen = result ? `${result.detail} in ${result.latencyMs}ms; ` : "";
          echo(`${service.name}: ${decision.kind} (${seen}${explain(decision)})${would}`);
        } catch (error) {
          board.say(service.name, true);
          logger.write("ERROR", `${service.name}: ${(error as Error).message}`);
        }
      });
    }),
  );
}
