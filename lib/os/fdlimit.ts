// The watchdog's own file descriptors: its soft limit (RLIMIT_NOFILE, from /proc/self/limits — a
// process may always read its own, Android included) and how many it has open (/proc/self/fd).
// A pass bounds its concurrency by what is left, and a probe that fails while tend is out of
// descriptors is tend's failure, not the service's: Bun.connect even reports EMFILE as a refused
// connection, so the error's words alone cannot tell.
import { readdirSync } from "node:fs";
import { readRegularFile } from "./files.ts";

/** The soft limit on open files, or null where it cannot be read (macOS: no /proc). */
export function openFileLimit(): number | null {
  try {
    const limits = readRegularFile("/proc/self/limits", 8192);
    const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1];
    return soft === undefined ? null : soft === "unlimited" ? Infinity : Number(soft);
  } catch {
    return null;
  }
}

/** How many descriptors this process has open now, or null. */
export function openFiles(): number | null {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return null;
  }
}

/** Descriptors a probe may hold at once (a socket, a pipe pair and a pidfd for a command check). */
const PER_PROBE = 4;
/** Kept for the rest of a pass: its lock, logs, state files, a restart's pipes. */
const RESERVE = 24;

/** The concurrency that fits the descriptors left: at most `configured`, at least 1. */
export function fittingConcurrency(configured: number, limit = openFileLimit(), open = openFiles()): number {
  if (limit === null || open === null || limit === Infinity) return configured;
  return Math.max(1, Math.min(configured, Math.floor((limit - open - RESERVE) / PER_PROBE)));
}

/** This process is (nearly) out of descriptors: what failed now may have failed for that alone. */
export function outOfDescriptors(limit = openFileLimit(), open = openFiles()): boolean {
  return limit !== null && open !== null && limit !== Infinity && open >= limit - PER_PROBE;
}
