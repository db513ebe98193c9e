import { probe, type ProbeResult } from "../checks/index.ts";
import type { ServiceConfig } from "../config/types.ts";
import { recordRestart, recordStart, type RestartReason, type Verified } from "../core/decide.ts";
import { mainProcess, probeContext, watchOf, type MainProcess } from "../os/pidsource.ts";
import { restartService } from "../restarts/index.ts";
import type { Logger } from "../state/logger.ts";
import { withEvent, type ServiceState } from "../core/state.ts";

/** How long after its start a process tend started must still run to count as recovered. */
const SETTLE_MS = 1000;

export interface VerifyOptions {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  env?: Record<string, string | undefined>;
}

/**
 * Restart through the service's action, then probe every second until healthy or
 * verify_timeout: a restart that is never verified is a guess. A process that exits meanwhile has failed.
 */
export async function restartAndVerify(
  service: ServiceConfig,
  state: ServiceState,
  main: MainProcess | null,
  logger: Logger,
  { now, sleep, env }: VerifyOptions,
  how: RestartReason | "manual" | "operator-start",
): Promise<Verified> {
  // A new service's first start (and an operator's start) is logged START and not counted; every
  // other start is a restart; an operator's restart is not counted toward max_restarts.
  const first = how === "start" || how === "boot" || how === "operator-start";
  const manual = how === "manual" ? "manual restart: " : how === "operator-start" ? "started by the operator: " : "";
  // After a reboot: `[START] NAME: started after reboot (what was done)`.
  const said = (detail: string) => (how === "boot" ? `started after reboot (${detail})` : `${manual}${detail}`);
  const startedAt = now();
  const restart = await restartService(service, main, { sleep, env });
  let next = state;
  if (restart.pid) next = { ...next, pid: restart.pid, pidStartTicks: restart.pidStartTicks ?? null };
  let exitedAfterMs: number | undefined;
  const outcome = (
    issued: boolean,
    recovered: boolean,
    detail: string,
    lastProbe: ProbeResult | null,
    full?: string,
  ) => {
    const result = { issued, recovered, elapsedMs: now() - startedAt, detail, full, lastProbe, exitedAfterMs };
    return first
      ? recordStart(service, next, result, startedAt, now(), { afterReboot: how === "boot" })
      : recordRestart(service, next, result, startedAt, now(), { towardLimit: how !== "manual" });
  };
  if (!restart.issued) return outcome(false, false, restart.detail, null, restart.full);
  const tag = first ? "START" : "RESTART";
  logger.write(tag, `${service.name}: ${said(restart.detail)}`, {
    full: restart.full && `${service.name}: ${said(restart.full)}`,
  });
  const written = logger.entries.at(-1)!;
  next = withEvent(next, {
    at: written.at.getTime(),
    tag,
    message: written.message,
    event: first ? undefined : "restart",
  });

  const deadline = startedAt + service.verifyTimeoutMs;
  let last: ProbeResult | null = null;
  let detail = "";
  // The process tend started itself (a pidfile or pane, not a manager's MainPID, which may be 0 while
  // the unit activates) that is gone has failed, from the first look on.
  const gone = (current: MainProcess | null, probed: boolean) =>
    current !== null && !current.running && (probed || !current.supervised);
  while (true) {
    const current = await mainProcess(service, next);
    if (gone(current, last !== null)) {
      // Gone before it answered: FAILED now, saying when, not at a deadline it never reached.
      exitedAfterMs = now() - startedAt;
      detail = current!.detail;
      break;
    }
    const attemptAt = now();
    // Only evidence produced after the restart counts: a log the old process wrote is not an answer.
    last = await probe(service.check, { ...probeContext(current), since: startedAt });
    if (last.ok) {
      // ... and from a process that is still there: one that answered and died at once did not recover.
      // A process tend started is looked at again a second after its start: `sh -c 'exit 3'` is
      // "running" for the first milliseconds.
      const settle = startedAt + SETTLE_MS - now();
      if (current && !current.supervised && settle > 0) await sleep(Math.min(settle, Math.max(0, deadline - now())));
      const after = await mainProcess(service, next);
      if (gone(after, true)) {
        exitedAfterMs = now() - startedAt;
        detail = after!.detail;
        break;
      }
      next = { ...next, watch: watchOf(after ?? current) }; // the loop watches the new process from now on
      return outcome(true, true, last.detail, last);
    }
    detail = `last probe: ${last.detail}`;
    if (now() >= deadline) break;
    await sleep(Math.max(0, Math.min(1000 - (now() - attemptAt), deadline - now())));
  }
  return outcome(true, false, detail, last);
}
