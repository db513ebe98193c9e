import type { Downtime } from "./events.ts";

/** The heartbeat is older than this: the watchdog did not run (or the host was down). */
const staleAfter = (intervalMs: number) => 2 * intervalMs + 30_000;

/** The watchdog itself is not running: its last pass is older than 2 x interval + 30 s. */
export const isStale = (lastPassAt: number | null, intervalMs: number, now: number) =>
  lastPassAt !== null && now - lastPassAt > staleAfter(intervalMs);

const DAY = 24 * 3600_000;

/**
 * A service judged outside the configuration (blogtunnel) is watched while it keeps being judged: its
 * last judgement no older than the watchdog's own staleness, at its own period as last seen (at most
 * a day) or the watchdog's interval. A blogtunnel run once by hand, or one whose crontab line is gone,
 * is then no longer shown as if something watched it.
 */
export const externalIsWatched = (
  judgedAt: number | null | undefined,
  everyMs: number | null | undefined,
  intervalMs: number,
  now: number,
) =>
  judgedAt !== null &&
  judgedAt !== undefined &&
  !isStale(judgedAt, Math.max(Math.min(everyMs ?? 0, DAY), intervalMs), now);

/**
 * A gap in the heartbeat, found by the first pass after it: booted after the last heartbeat, the
 * host was down; up all along but asleep for most of it (a phone without a wake lock: the boot-time
 * clock ran on while the awake clock stood still), the device was suspended — not a 💤, not a
 * reboot — when what was left awake is no stale gap itself; else the watchdog did not run (cron
 * stopped, the loop died). `asleepMs`: how long the device slept since the last heartbeat, if known.
 */
export function classifyGap(
  lastPassAt: number | null,
  intervalMs: number,
  bootedAt: number,
  now: number,
  asleepMs: number | null = null,
  bootClockReset = false,
): Downtime | null {
  // A boot after the last heartbeat is a reboot whatever the gap's length: a phone reboots in 2-3
  // minutes, inside one cron period. The boot-time clock going back says so without the wall clock.
  if (lastPassAt !== null && (bootedAt > lastPassAt || bootClockReset))
    return { name: "host", reason: "unexpected_shutdown_or_reboot", from: lastPassAt, to: now };
  if (!isStale(lastPassAt, intervalMs, now)) return null;
  const from = lastPassAt!;
  const awakeMs = now - from - Math.max(0, asleepMs ?? 0);
  if (asleepMs !== null && asleepMs > 0 && awakeMs <= staleAfter(intervalMs))
    return { name: "device", reason: "device_suspended", from, to: now };
  return { name: "watchdog", reason: "watchdog_not_running", from, to: now };
}

/**
 * How long the device slept between two readings of its clocks: the boot-time clock counts
 * suspend, the awake clock does not. null when either reading is missing or they are of two boots.
 */
export function asleepBetween(
  then: { bootMs: number; awakeMs: number } | null,
  now: { bootMs: number; awakeMs: number } | null,
): number | null {
  if (!then || !now || now.bootMs < then.bootMs || now.awakeMs < then.awakeMs) return null;
  return Math.max(0, now.bootMs - then.bootMs - (now.awakeMs - then.awakeMs));
}
