/**
 * An operator's command as an event of a service's life: what `watchdog pause`, `resume`, `reset`, `stop`
 * and `start` (of a service already running) do to its state, and the lines they say. Pure, as decide.ts
 * is; its owner (lib/owner/) records the outcome. (A restart or a start that runs the service's action is
 * the restart's own accounting: restart-accounting.ts.)
 */
import { humanDuration } from "./duration.ts";
import { downtimeLine, type LogLine } from "./events.ts";
import { OUTAGE_HISTORY, type ServiceState } from "./state.ts";
import { pausedVerdict } from "./verdict.ts";
import { crashSince, openOutage } from "./outage-ledger.ts";

export type OperatorAction =
  | { kind: "pause"; forMs: number | null }
  | { kind: "resume" }
  | { kind: "reset" }
  /** Its process stopped, its backend's way: `detail` says how. */
  | { kind: "stop"; detail: string }
  /** `watchdog start` of a service found running: resumed only. */
  | { kind: "resume-running"; detail: string }
  /**
   * `watchdog restart` of a service whose process was found gone (not stopped by the operator: a pass
   * would start it as a crash): down since it was last seen alive, a crash, before the restart acts.
   */
  | { kind: "restart-gone"; bootAt: number };

interface OperatorOutcome {
  next: ServiceState;
  /** What the log says (the service's name first), an open outage's DOWNTIME line first. */
  log: LogLine[];
  /** What the command says on the operator's terminal. */
  said: string;
}

/**
 * The state after the operator's command. A pause or a stop ends an open outage (at its last failed
 * probe): from then on the service is down on purpose, watched by nobody (no data, never downtime),
 * so a pause of an hour never counts an hour of downtime, and a stop never loses the outage before
 * it. Resume and reset change what the pass decided, so its verdict is cleared: `new` until the next
 * pass judges it.
 */
export function operatorDecision(
  name: string,
  state: ServiceState,
  action: OperatorAction,
  now: number,
): OperatorOutcome {
  const line = (tag: LogLine["tag"], said: string, before: LogLine[] = []): [LogLine[], string] => [
    [...before, { tag, message: `${name}: ${said}` }],
    said,
  ];
  switch (action.kind) {
    case "pause":
    case "stop": {
      const ended = endOutage(name, state, now);
      const pausedUntil = action.kind === "pause" && action.forMs !== null ? now + action.forMs : null;
      const next: ServiceState = {
        ...ended.next,
        paused: true,
        pausedUntil,
        verdict: pausedVerdict(pausedUntil, now),
        // Stopped: its strikes and busy spell were its process's, which is gone.
        ...(action.kind === "stop" ? { strikes: 0, busySince: null } : {}),
      };
      const said =
        action.kind === "stop"
          ? `stopped by the operator (${action.detail}); paused until \`watchdog start ${name}\``
          : action.forMs === null
            ? "paused until `watchdog resume`"
            : `paused for ${humanDuration(action.forMs)}`;
      const [log] = line("SKIP", said, ended.log);
      return { next, log, said };
    }
    case "resume":
    case "resume-running": {
      const next: ServiceState = { ...state, paused: false, pausedUntil: null, verdict: null };
      const [log, said] = line(
        "START",
        action.kind === "resume" ? "resumed" : `resumed (already running: ${action.detail})`,
      );
      return { next, log, said };
    }
    case "restart-gone": {
      // Its RESTART line ("manual restart") says the rest; a failed restart keeps the reason, a
      // recovered one ends it with a DOWNTIME line as a crash's (ground truth, seed 365: check_failed).
      if (state.paused) return { next: state, log: [], said: "" };
      const since = crashSince(state, now, { bootAt: action.bootAt });
      return { next: openOutage(state, since, "crash"), log: [], said: "" };
    }
    case "reset": {
      const next: ServiceState = {
        ...state,
        strikes: 0,
        restartTimes: [],
        failedInRow: 0,
        backoffUntil: null,
        givenUp: false,
        lastRestartAt: null,
        verdict: null,
      };
      const [log, said] = line("WARN", "reset by the operator: strikes, backoff, restart history and given-up cleared");
      return { next, log, said };
    }
  }
}

/**
 * An open outage ends where the operator took the service over, as measured: at its last failed probe
 * (tend saw no more of it), never at the command's time — a `watchdog stop` run after a reboot no pass
 * has seen yet would count the host's downtime in it (ground truth, seed 332). Recorded, with its
 * DOWNTIME line.
 */
function endOutage(name: string, state: ServiceState, now: number): { next: ServiceState; log: LogLine[] } {
  if (!state.outage) return { next: state, log: [] };
  // Never before it began (a since recorded ahead of now, across a clock step), nor after now.
  const from = Math.min(state.outage.since, now);
  const failedAt = state.lastProbe && !state.lastProbe.ok ? state.lastProbe.at : from;
  const to = Math.max(from, Math.min(failedAt, now));
  const { reason } = state.outage;
  const incident = Boolean(state.outage.notified || state.outage.waited);
  const record = { from, to, reason, ...(incident ? { incident } : {}) };
  return {
    next: { ...state, outage: null, outages: [...state.outages, record].slice(-OUTAGE_HISTORY) },
    log: [downtimeLine({ name, from, to, reason })],
  };
}
