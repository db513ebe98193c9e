import type { ClockReading } from "../core/clock.ts";
import { readRegularFile } from "./files.ts";
import { clocks } from "./libc.ts";
import { uptimeMs } from "./proc.ts";

/** Where tend reads the time: the host's clocks, or a test's. */
export interface ClockSource {
  read(): Promise<ClockReading>;
  /** A clock that never jumps, for intervals within this process (ms). */
  monotonic(): number;
}

const BOOT_ID = "/proc/sys/kernel/random/boot_id";

/** This boot's identity (Linux, Android), or null where it cannot be read (macOS: the boot-time clock tells). */
export function bootId(): string | null {
  // Read once: a process lives within one boot (every pass asks, for each process it verifies).
  if (knownBootId !== undefined) return knownBootId;
  try {
    const id = readRegularFile(BOOT_ID, 64).trim();
    knownBootId = /^[0-9a-f-]{8,40}$/.test(id) ? id : null;
  } catch {
    knownBootId = null;
  }
  return knownBootId;
}
let knownBootId: string | null | undefined;

/**
 * The host: the wall clock; the boot-time clock (CLOCK_BOOTTIME through libc, else sysinfo(2)'s
 * whole seconds behind os.uptime(): Android denies /proc/uptime, never these); the boot id.
 */
export const systemClock: ClockSource = {
  async read() {
    const boot = await clocks();
    return { wallMs: Date.now(), bootMs: boot?.bootMs ?? uptimeMs(), bootId: bootId() };
  },
  monotonic: () => performance.now(),
};

/**
 * A time a caller sets (tests, benchmarks, `now` options): one frame, never a step, never a boot.
 * Everything measures with it, as it did before tend had a clock of its own.
 */
export const nowSource = (now: () => number): ClockSource => ({
  read: async () => ({ wallMs: now(), bootMs: null, bootId: null }),
  monotonic: now,
});
