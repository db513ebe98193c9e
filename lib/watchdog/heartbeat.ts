import { statSync } from "node:fs";
import { readRegularFile } from "../os/files.ts";
import type { Downtime } from "../core/events.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { statePaths } from "../state/dir.ts";

/** The time of the last completed pass (ISO-8601), or null before the first. */
export function readHeartbeat(stateDir: string): string | null {
  try {
    return readRegularFile(statePaths(stateDir).heartbeat, 1024, { noFollow: true }).trim() || null;
  } catch {
    return null;
  }
}

export function writeHeartbeat(stateDir: string, passAt: number): void {
  writeFileAtomic(statePaths(stateDir).heartbeat, new Date(passAt).toISOString() + "\n");
}

/** A heartbeat older than 2 x interval: the host (or tend) was down in between. */
export function findGap(stateDir: string, intervalMs: number, now: number): Downtime | null {
  let last: number;
  try {
    last = statSync(statePaths(stateDir).heartbeat).mtimeMs;
  } catch {
    return null;
  }
  if (now - last <= 2 * intervalMs) return null;
  return { name: "host", reason: "unexpected_shutdown_or_reboot", from: last, to: now };
}
