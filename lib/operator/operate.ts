import type { Config, ServiceConfig } from "../config/types.ts";
import { usageError } from "../core/errors.ts";
import type { LogLine } from "../core/events.ts";
import { OwnerClock, ServiceOwner } from "../owner/owner.ts";
import { publishEvents, updatePassWideViews } from "../owner/pass-wide.ts";
import { mainProcess } from "../os/pidsource.ts";
import { uptimeMs } from "../os/proc.ts";
import { restartKind } from "../restarts/index.ts";
import { ensureStateDir } from "../state/dir.ts";
import { Logger } from "../state/logger.ts";
import { restartAndVerify } from "../pass/verify.ts";
import { operatorDecision } from "../core/operator-action.ts";
import type { ClockSource } from "../os/clock.ts";

export type Operation = "restart" | "stop" | "start";

interface OperateOptions {
  /** The host's clocks (default), or a test's: tend's time is read from them. */
  clock?: ClockSource;
  echo: (line: string) => void;
  env?: Record<string, string | undefined>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** How long to wait for a running pass (the lock). */
  lockWaitMs?: number;
}

/** The configured service, or a usage error naming the configured ones. */
export function serviceNamed(config: Config, name: string): ServiceConfig {
  const service = config.services.find((candidate) => candidate.name === name);
  if (service) return service;
  const known = config.services.map((candidate) => candidate.name).join(", ") || "none";
  throw usageError(`no such service: ${name} (configured: ${known})`);
}

/**
 * `watchdog restart|stop|start NAME`, what an operator asks for (monit restart, supervisorctl stop):
 * restart through the service's action, verified, ignoring cooldown, backoff and given-up, not
 * counted toward max_restarts; stop its backend's way and pause it; start: resume, and start it
 * now when it is not running. Waits for a running pass (the lock) up to 30 s. Returns the exit code.
 */
export async function operate(
  config: Config,
  name: string,
  operation: Operation,
  options: OperateOptions,
): Promise<number> {
  const { echo, env, sleep = Bun.sleep, lockWaitMs = 30_000 } = options;
  // tend's time (core/clock.ts): the records' frame, whatever the wall clock did since the last pass (read
  // again with the state, once the lock is held: the frame it is in).
  const clock = await OwnerClock.of(config.watchdog.stateDir, { clock: options.clock, fixed: options.now });
  const { now } = clock;
  const service = serviceNamed(config, name);
  const action = service.restart;
  if (!action) throw usageError(`${name} is watch only (no [service.restart]): tend cannot ${operation} it`);
  const kind = restartKind(action);
  if (operation === "stop" && !kind.stop) {
    throw usageError(
      `${name}: restart.${action.kind} has no way to stop a service: stop it yourself, then watchdog pause ${name}`,
    );
  }
  const { stateDir } = config.watchdog;
  ensureStateDir(stateDir);
  const logger = new Logger(config.watchdog.log, echo, now, config.watchdog.rotation);
  const owner = await ServiceOwner.forOperator(config, name, { logger, now, waitMs: lockWaitMs, sleep });
  try {
    let { state } = await clock.load(owner);
    // Where what it does will be seen (its file, or /dev/shm), or it does nothing: a stop the loop
    // never learns of would be undone by it (a full disk on a phone, which has no /dev/shm).
    owner.saveShared(state, `${operation} ${name}`);
    const main = await mainProcess(service, state);
    let code = 0;
    if (operation === "stop") {
      const stopped = await kind.stop!(service, action, { current: main, sleep, env: env ?? process.env });
      if (!stopped.issued) {
        logger.write("ERROR", `${name}: could not stop it: ${stopped.detail}`);
        return 1;
      }
      const stop = operatorDecision(name, state, { kind: "stop", detail: stopped.detail }, now());
      state = owner.record(stop.next, stop.log, () => false);
    } else if (operation === "start" && main?.running) {
      // Judged again by the next pass.
      const resume = operatorDecision(name, state, { kind: "resume-running", detail: main.detail }, now());
      state = owner.record(resume.next, resume.log, () => false);
    } else {
      if (operation === "start") state = { ...state, paused: false, pausedUntil: null };
      else if (main && !main.running && !main.supervised && !main.unreadable)
        state = operatorDecision(name, state, { kind: "restart-gone", bootAt: now() - uptimeMs() }, now()).next;
      const how = operation === "start" ? "operator-start" : "manual";
      // Recorded before it acts, as a pass's restart is: killed while it verifies, the next pass finishes
      // its story (the ⚠️ spooled once its action returned, the outcome, the ✅), counted once.
      const owed: LogLine[] =
        operation === "restart" ? [{ tag: "RESTART", event: "restart", message: `${name}: manual restart` }] : [];
      const hooks = owner.restartHooks();
      const verified = await restartAndVerify(service, state, main, owner, { now, sleep, env }, how, hooks, owed);
      // The service's last event is what happened last (RECOVERED or FAILED), as a pass records it.
      state = owner.record(verified.next, verified.log);
      code = verified.recovered ? 0 : 1;
    }
    owner.save(state);
    await publishEvents(config, owner.events, logger, now);
    return code;
  } finally {
    owner.release();
    // What it recorded, in the pass-wide views before it exits (metrics_file, alerts, the heartbeat's status).
    await updatePassWideViews(config, { logger, now, gap: "as-found", ping: "if-changed" }).catch((error) =>
      logger.write("ERROR", `the pass-wide views were not brought up to date: ${(error as Error).message}`),
    );
  }
}
