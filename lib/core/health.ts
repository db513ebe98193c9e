import type { Downtime } from "./events.ts";

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
