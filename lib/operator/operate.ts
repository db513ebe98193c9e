import type { Config, ServiceConfig } from "../config/types.ts";
import { withEvent } from "../core/state.ts";
import { usageError } from "../core/errors.ts";
import type { LogLine } from "../core/events.ts";
import { eventMessage, sendEvents, spoolOwed } from "../notify/alert.ts";
import type { Message } from "../notify/send.ts";
import { serviceLock } from "./maintenance.ts";
import { mainProcess } from "../os/pidsource.ts";
import { restartKind } from "../restarts/index.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { Logger } from "../state/logger.ts";
import { readState, saveForOperator, writeState } from "../state/service-state.ts";
import { restartAndVerify, type RestartHooks } from "../pass/verify.ts";
import { pausedVerdict } from "../core/verdict.ts";
import { tendNow } from "../state/clock.ts";

export type Operation = "restart" | "stop" | "start";

interface OperateOptions {
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
  // tend's time (core/clock.ts): the records' frame, whatever the wall clock did since the last pass.
  const now = options.now ?? (await tendNow(config.watchdog.stateDir));
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
  const lock = await serviceLock(stateDir, name, lockWaitMs, sleep);
  const logger = new Logger(config.watchdog.log, echo, now, config.watchdog.rotation);
  const events: Message[] = [];
  const notify = (line: LogLine) => {
    const message = eventMessage(name, line, new Date(now()));
    if (message) events.push(message);
  };
  try {
    let state = readState(stateDir, name).state;
    // Where what it does will be seen (its file, or /dev/shm), or it does nothing: a stop the loop
    // never learns of would be undone by it (a full disk on a phone, which has no /dev/shm).
    saveForOperator(stateDir, name, state, `${operation} ${name}`);
    const main = await mainProcess(service, state);
    let code = 0;
    if (operation === "stop") {
      const stopped = await kind.stop!(service, action, { current: main, sleep, env: env ?? process.env });
      if (!stopped.issued) {
        logger.write("ERROR", `${name}: could not stop it: ${stopped.detail}`);
        return 1;
      }
      state = {
        ...state,
        ...{ paused: true, pausedUntil: null, strikes: 0, outage: null, busySince: null },
        verdict: pausedVerdict(null, now()),
      };
      logger.write(
        "SKIP",
        `${name}: stopped by the operator (${stopped.detail}); paused until \`watchdog start ${name}\``,
      );
    } else if (operation === "start" && main?.running) {
      state = { ...state, paused: false, pausedUntil: null, verdict: null }; // judged again by the next pass
      logger.write("START", `${name}: resumed (already running: ${main.detail})`);
    } else {
      if (operation === "start") state = { ...state, paused: false, pausedUntil: null };
      const how = operation === "start" ? "operator-start" : "manual";
      // Recorded before it acts, as a pass's restart is: killed while it verifies, the next pass finishes
      // its story (the ⚠️ spooled once its action returned, the outcome, the ✅), counted once.
      const owed: LogLine[] =
        operation === "restart" ? [{ tag: "RESTART", event: "restart", message: `${name}: manual restart` }] : [];
      const hooks: RestartHooks = {
        persist: (next) => writeState(stateDir, name, next),
        announce: async (lines, detail) =>
          void events.push(...(await spoolOwed(config, name, lines, detail, logger, now))),
      };
      const verified = await restartAndVerify(service, state, main, logger, { now, sleep, env }, how, hooks, owed);
      state = verified.next;
      for (const line of verified.log) {
        logger.write(line.tag, line.message, {
          downtime: line.downtime ? statePaths(stateDir).downtime : undefined,
          full: line.full,
        });
        // The service's last event is what happened last (RECOVERED or FAILED), as a pass records it.
        const at = logger.entries.at(-1)!.at.getTime();
        if (!line.downtime) state = withEvent(state, { at, tag: line.tag, message: line.message, event: line.event });
        notify(line);
      }
      code = verified.recovered ? 0 : 1;
    }
    writeState(stateDir, name, state);
    await sendEvents(config, events, logger, now);
    return code;
  } finally {
    lock.release();
  }
}
