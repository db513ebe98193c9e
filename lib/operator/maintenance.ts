import type { Config } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { usageError } from "../core/errors.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir } from "../state/dir.ts";
import { ServiceOwner } from "../owner/owner.ts";
import { updatePassWideViews } from "../owner/pass-wide.ts";
import type { ServiceState } from "../core/state.ts";
import { pausedVerdict } from "../core/verdict.ts";
import { tendNow } from "../state/clock.ts";

type MaintenanceAction = { kind: "pause"; forMs: number | null } | { kind: "resume" } | { kind: "reset" };

interface MaintenanceOptions {
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
  const now = options.now ?? (await tendNow(config.watchdog.stateDir)); // tend's time (core/clock.ts)
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
    const { state } = owner.load();
    const [next, said] = apply(state, action, now());
    owner.saveShared(next, `${action.kind} ${name}`);
    // pause: SKIP (the pass skips it from now on); resume: START (watched again); reset: WARN (a crash-loop
    // stop was lifted by hand).
    owner.say(action.kind === "pause" ? "SKIP" : action.kind === "resume" ? "START" : "WARN", said);
    return said;
  } finally {
    owner.release();
    // A pause resolves its alerts at once; a reset or resume shows the service new until the next pass.
    await updatePassWideViews(config, { logger, now, gap: "as-found", ping: "if-changed" }).catch((error) =>
      logger.write("ERROR", `the pass-wide views were not brought up to date: ${(error as Error).message}`),
    );
  }
}

/**
 * The state after the operator's action. A pause is recorded as the pass records a pause; resume and
 * reset change what the pass decided, so its verdict is cleared: `new` until the next pass judges it.
 */
function apply(state: ServiceState, action: MaintenanceAction, now: number): [ServiceState, string] {
  switch (action.kind) {
    case "pause": {
      const pausedUntil = action.forMs === null ? null : now + action.forMs;
      return [
        { ...state, paused: true, pausedUntil, verdict: pausedVerdict(pausedUntil, now) },
        action.forMs === null ? "paused until `watchdog resume`" : `paused for ${humanDuration(action.forMs)}`,
      ];
    }
    case "resume":
      return [{ ...state, paused: false, pausedUntil: null, verdict: null }, "resumed"];
    case "reset":
      return [
        {
          ...state,
          strikes: 0,
          restartTimes: [],
          failedInRow: 0,
          backoffUntil: null,
          givenUp: false,
          lastRestartAt: null,
          verdict: null,
        },
        "reset by the operator: strikes, backoff, restart history and given-up cleared",
      ];
  }
}
