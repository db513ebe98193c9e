import type { ServiceConfig } from "../config/types.ts";
import type { ServiceState } from "./state.ts";
import type { Downtime } from "./events.ts";

/** The words `status`, the metrics and the page use for a service's state. */
export type StateWord =
  | "healthy"
  | "failing"
  | "busy"
  | "restarting"
  | "backoff"
  | "given-up"
  | "paused"
  | "stopped"
  | "waiting"
  | "disabled"
  | "new";

/** States that need nobody: status exits 0 when every service is in one of these (and the watchdog is fresh). */
export const CALM: ReadonlySet<StateWord> = new Set(["healthy", "busy", "paused", "stopped", "disabled", "new"]);

/**
 * A service's state from its config, its state file and (for status) a probe just made; the
 * last recorded probe otherwise. `new`: no pass has judged it yet.
 */
export function stateWord(
  service: ServiceConfig,
  state: ServiceState,
  probeOk: boolean | null,
  now: number,
): StateWord {
  if (!service.enabled) return "disabled";
  if (state.paused && (state.pausedUntil === null || state.pausedUntil > now)) return "paused";
  if (state.unitState === "inactive") return "stopped";
  if (state.firstSeenAt === null) return "new";
  if (probeOk ?? state.lastProbe?.ok) return "healthy";
  if (state.busySince !== null) return "busy";
  if (state.givenUp) return "given-up";
  if (state.backoffUntil && now < state.backoffUntil) return "backoff";
  if (state.startedAt && now < state.startedAt + service.graceMs) return "restarting";
  if (state.lastEvent?.tag === "WAIT" && state.strikes === 0) return "waiting";
  return "failing";
}

/** Watched: probed and judged each pass (not disabled, paused or stopped on purpose). */
export const isWatched = (word: StateWord) => word !== "disabled" && word !== "paused" && word !== "stopped";

/** The heartbeat is older than this: the watchdog did not run (or the host was down). */
export const staleAfter = (intervalMs: number) => 2 * intervalMs + 30_000;

/** The watchdog itself is not running: its last pass is older than 2 x interval + 30 s. */
export const isStale = (lastPassAt: number | null, intervalMs: number, now: number) =>
  lastPassAt !== null && now - lastPassAt > staleAfter(intervalMs);

/**
 * A gap in the heartbeat, found by the first pass after it: booted after the last heartbeat, the
 * host was down; up all along, the watchdog did not run (cron stopped, the loop died).
 */
export function classifyGap(
  lastPassAt: number | null,
  intervalMs: number,
  bootedAt: number,
  now: number,
): Downtime | null {
  if (!isStale(lastPassAt, intervalMs, now)) return null;
  const from = lastPassAt!;
  return bootedAt > from
    ? { name: "host", reason: "unexpected_shutdown_or_reboot", from, to: now }
    : { name: "watchdog", reason: "watchdog_not_running", from, to: now };
}
