import type { Config } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { TendError, usageError } from "../core/errors.ts";
import { holderWords, readHolder, waitLock, type Lock } from "../os/lock.ts";
import { Logger } from "../state/logger.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { readState, saveForOperator } from "../state/service-state.ts";
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

/** pause / resume / reset one service's state, under the pass lock so no pass overwrites it. */
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
  const lock = await serviceLock(stateDir, name, lockWaitMs, sleep);
  try {
    const { state } = readState(stateDir, name);
    const [next, said] = apply(state, action, now());
    saveForOperator(stateDir, name, next, `${action.kind} ${name}`);
    // pause: SKIP (the pass skips it from now on); resume: START (watched again); reset: WARN (a crash-loop
    // stop was lifted by hand).
    const tag = action.kind === "pause" ? "SKIP" : action.kind === "resume" ? "START" : "WARN";
    new Logger(config.watchdog.log, () => {}, now, config.watchdog.rotation).write(tag, `${name}: ${said}`);
    return said;
  } finally {
    lock.release();
  }
}

/**
 * An operator's hold on one service (services/NAME.lock): waited for up to `waitMs` while its owner
 * judges, restarts or verifies it; then exit 1 naming who holds it. Other services are never waited on.
 */
export async function serviceLock(
  stateDir: string,
  name: string,
  waitMs: number,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<Lock> {
  const path = statePaths(stateDir).serviceLock(name);
  const lock = await waitLock(path, waitMs, sleep, "operator");
  if (lock) return lock;
  const holder = holderWords(readHolder(path));
  throw new TendError(`${name} is being judged by another (${holder}) for ${humanDuration(waitMs)}: try again`, 1);
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
