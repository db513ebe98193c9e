import { statSync } from "node:fs";
import type { Downtime } from "../core/events.ts";
import { formatDuration, parseDuration } from "../core/duration.ts";
import { classifyGap } from "../core/health.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { bootTimeMs } from "../os/proc.ts";
import { statePaths } from "../state/dir.ts";

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

export function writeHeartbeat(stateDir: string, passAt: number, intervalMs: number): void {
  writeFileAtomic(
    statePaths(stateDir).heartbeat,
    `${new Date(passAt).toISOString()}\ninterval ${formatDuration(intervalMs)}\n`,
  );
}

/** The gap since the last pass, when it is longer than the recorded interval allows: host down or watchdog not run. */
export function findGap(stateDir: string, intervalMs: number, now: number, bootedAt = bootTimeMs()): Downtime | null {
  let last: number;
  try {
    last = statSync(statePaths(stateDir).heartbeat).mtimeMs;
  } catch {
    return null;
  }
  return classifyGap(last, readHeartbeat(stateDir)?.intervalMs ?? intervalMs, bootedAt, now);
}
