import { statSync } from "node:fs";
import type { Downtime } from "../core/events.ts";
import { formatDuration, parseDuration } from "../core/duration.ts";
import { asleepBetween, classifyGap } from "../core/health.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { bootTimeMs } from "../os/proc.ts";
import { statePaths } from "./dir.ts";

export type Clocks = { bootMs: number; awakeMs: number };

export interface Heartbeat {
  /** ISO-8601 time of the last completed pass. */
  at: string;
  /** The interval that pass ran for (cron's period as configured, or `run --interval`); null: not recorded. */
  intervalMs: number | null;
  /** The boot-time and awake clocks at that pass (null: not recorded, or not readable there). */
  clocks: Clocks | null;
}

/** `heartbeat`: the time of the last completed pass, `interval D`, `clocks boot=MS awake=MS`; also its mtime. */
export function readHeartbeat(stateDir: string): Heartbeat | null {
  try {
    const [at, interval, clockLine] = readRegularFile(statePaths(stateDir).heartbeat, 1024, { noFollow: true }).split(
      "\n",
    );
    if (!at?.trim()) return null;
    const intervalMs = parseDuration(interval?.replace(/^interval\s+/, "") ?? "");
    const clock = /^clocks boot=(\d+(?:\.\d+)?) awake=(\d+(?:\.\d+)?)$/.exec(clockLine?.trim() ?? "");
    const clocks = clock ? { bootMs: Number(clock[1]), awakeMs: Number(clock[2]) } : null;
    return { at: at.trim(), intervalMs: intervalMs || null, clocks };
  } catch {
    return null;
  }
}

/**
 * Not fsynced: its precision is the pass interval, and the journal commits the rename within
 * seconds (ext4: 5 s); a flush per pass would cost more than the whole pass's probes.
 */
export function writeHeartbeat(stateDir: string, passAt: number, intervalMs: number, clocks: Clocks | null): void {
  const clockLine = clocks ? `clocks boot=${Math.round(clocks.bootMs)} awake=${Math.round(clocks.awakeMs)}\n` : "";
  const text = `${new Date(passAt).toISOString()}\ninterval ${formatDuration(intervalMs)}\n${clockLine}`;
  writeFileAtomic(statePaths(stateDir).heartbeat, text, 0o600, { durable: false });
}

/**
 * The gap since the last pass, when it is longer than the recorded interval allows: host down,
 * device asleep, or watchdog not run. `clocksNow`: this pass's reading of the boot-time and awake clocks.
 */
export function findGap(
  stateDir: string,
  intervalMs: number,
  now: number,
  clocksNow: Clocks | null = null,
  bootedAt: () => number = bootTimeMs,
): Downtime | null {
  let last: number;
  try {
    last = statSync(statePaths(stateDir).heartbeat).mtimeMs;
  } catch {
    return null;
  }
  const heartbeat = readHeartbeat(stateDir);
  const recordedMs = heartbeat?.intervalMs ?? intervalMs;
  const then = heartbeat?.clocks ?? null;
  const bootClockReset = then !== null && clocksNow !== null && clocksNow.bootMs < then.bootMs;
  // Every pass compares the boot with the last heartbeat's (sysinfo(2): a syscall, no file).
  return classifyGap(last, recordedMs, bootedAt(), now, asleepBetween(then, clocksNow), bootClockReset);
}
