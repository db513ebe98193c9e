import type { Config } from "../config/types.ts";
import { usageError } from "../core/errors.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir } from "../state/dir.ts";
import { OwnerClock, ServiceOwner } from "../owner/owner.ts";
import { updatePassWideViews } from "../owner/pass-wide.ts";
import { operatorDecision, type OperatorAction } from "../core/operator-action.ts";
import type { ClockSource } from "../os/clock.ts";

type MaintenanceAction = Extract<OperatorAction, { kind: "pause" | "resume" | "reset" }>;

interface MaintenanceOptions {
  /** The host's clocks (default), or a test's: tend's time is read from them. */
  clock?: ClockSource;
  now?: () => number;
  /** How long to wait for a running pass to finish (its verify can take verify_timeout). */
  lockWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** pause / resume / reset one service's state, as its owner (its lock held: no pass overwrites it meanwhile). */
export async function maintain(
  config: Config,
  name: string,
  action: MaintenanceAction,
  options: MaintenanceOptions = {},
): Promise<string> {
  const { lockWaitMs = 30_000, sleep = Bun.sleep } = options;
  // tend's time (core/clock.ts), read again with the state once the lock is held: the frame it is in.
  const clock = await OwnerClock.of(config.watchdog.stateDir, { clock: options.clock, fixed: options.now });
  const { now } = clock;
  const service = config.services.find((candidate) => candidate.name === name);
  if (!service)
    throw usageError(
      `no such service: ${name} (configured: ${config.services.map((s) => s.name).join(", ") || "none"})`,
    );
  const { stateDir } = config.watchdog;
  ensureStateDir(stateDir);
  const logger = new Logger(config.watchdog.log, () => {}, now, config.watchdog.rotation);
  const owner = await ServiceOwner.forOperator(config, name, { logger, now, waitMs: lockWaitMs, sleep });
  try {
    const { state } = await clock.load(owner);
    const decided = operatorDecision(name, state, action, now());
    owner.saveShared(decided.next, `${action.kind} ${name}`);
    // pause: SKIP (the pass skips it from now on); resume: START (watched again); reset: WARN (a crash-loop
    // stop was lifted by hand). Said and recorded as its last event; an outage a pause ended, in downtime.log.
    owner.save(owner.record(decided.next, decided.log, () => false));
    return decided.said;
  } finally {
    owner.release();
    // A pause resolves its alerts at once; a reset or resume shows the service new until the next pass.
    await updatePassWideViews(config, { logger, now, gap: "as-found", ping: "if-changed" }).catch((error) =>
      logger.write("ERROR", `the pass-wide views were not brought up to date: ${(error as Error).message}`),
    );
  }
}
