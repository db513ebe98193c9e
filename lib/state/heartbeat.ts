import { statSync } from "node:fs";
import type { Downtime } from "../core/events.ts";
import { formatDuration, parseDuration } from "../core/duration.ts";
import { classifyGap, isStale } from "../core/health.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { bootTimeMs } from "../os/proc.ts";
import { statePaths } from "./dir.ts";

export interface Heartbeat {
  /** ISO-8601 time of the last completed pass. */
  at: string;
  /** The interval that pass ran for (cron's period as configured, or `run --interval`); null: not recorded. */
  intervalMs: number | null;
}

/** `heartbeat`: the time of the last completed pass, then `interval D`; also its mtime. */
export function readHeartbeat(stateDir: string): Heartbeat | null {
  try {
    const [at, interval] = readRegularFile(statePaths(stateDir).heartbeat, 1024, { noFollow: true }).split("\n");
    if (!at?.trim()) return null;
    const intervalMs = parseDuration(interval?.replace(/^interval\s+/, "") ?? "");
    return { at: at.trim(), intervalMs: intervalMs || null };
  } catch {
    return null;
  }
}

/**
 * Not fsynced: its precision is the pass interval, and the journal commits the rename within
 * seconds (ext4: 5 s); a flush per pass would cost more than the whole pass's probes.
 */
export function writeHeartbeat(stateDir: string, passAt: number, intervalMs: number): void {
  const text = `${new Date(passAt).toISOString()}\ninterval ${formatDuration(intervalMs)}\n`;
  writeFileAtomic(statePaths(stateDir).heartbeat, text, 0o600, { durable: false });
}

/** The gap since the last pass, when it is longer than the recorded interval allows: host down or watchdog not run. */
export function findGap(
  stateDir: string,
  intervalMs: number,
  now: number,
  bootedAt: () => number = bootTimeMs,
): Downtime | null {
  let last: number;
  try {
    last = statSync(statePaths(stateDir).heartbeat).mtimeMs;
  } catch {
    return null;
  }
  const recordedMs = readHeartbeat(stateDir)?.intervalMs ?? intervalMs;
  // The boot time only when there is a gap to classify.
  return isStale(last, recordedMs, now) ? classifyGap(last, recordedMs, bootedAt(), now) : null;
}
