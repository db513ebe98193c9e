/**
 * The few libc calls Bun does not expose, through bun:ffi: flock(2) (a lock the kernel drops when
 * the process dies), errno after it, clock_gettime(2) for the two clocks a heartbeat records, and
 * fallocate(2) (blocks kept for a file past its end, so it can still grow when the disk is full).
 * Loaded once per process, only where a lock or a clock is needed; null where it cannot be loaded.
 */
export interface Libc {
  flock(fd: number, operation: number): number;
  /** errno after a failed call (0 when it cannot be read). */
  errno(): number;
  /** clock_gettime(id) in ms, or null when it failed. */
  clock(id: number): number | null;
  /** fallocate(fd, mode, offset, length): 0 or -1 (-1 too where libc has none); null on macOS, which has none. */
  fallocate: ((fd: number, mode: number, offset: number, length: number) => number) | null;
}

const NAMES: Record<string, string[]> = {
  linux: ["libc.so.6", "libc.so"], // glibc; Android's bionic
  android: ["libc.so"],
  darwin: ["libSystem.B.dylib"],
};
/** errno's location: glibc's __errno_location, bionic's __errno, macOS's __error. */
const ERRNO: Record<string, string[]> = {
  linux: ["__errno_location", "__errno"],
  android: ["__errno"],
  darwin: ["__error"],
};

let loaded: Libc | null | undefined;

export async function libc(): Promise<Libc | null> {
  if (loaded !== undefined) return loaded;
  loaded = null;
  try {
    const { dlopen, FFIType, read } = await import("bun:ffi");
    for (const name of NAMES[process.platform] ?? []) {
      let lib;
      try {
        lib = dlopen(name, {
          flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
          clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
        });
      } catch {
        continue;
      }
      let errno = () => 0;
      for (const symbol of ERRNO[process.platform] ?? []) {
        try {
          const location = dlopen(name, { [symbol]: { args: [], returns: FFIType.ptr } }).symbols[symbol];
          errno = () => read.i32(location() as never);
          break;
        } catch {}
      }
      // Compiled on its first call, not here: a pass calls it only when the spool's reserve is short, and
      // compiling it (bun:ffi's TinyCC, 64-bit arguments) took ~1.7 ms of every pass's CPU (perf, 150 runs each).
      let fallocateSymbol: ((fd: number, mode: number, offset: number, length: number) => number) | null | undefined;
      const fallocate: Libc["fallocate"] =
        process.platform === "darwin"
          ? null
          : (fd, mode, offset, length) => {
              if (fallocateSymbol === undefined) {
                fallocateSymbol = null;
                try {
                  const { symbols } = dlopen(name, {
                    fallocate: { args: [FFIType.i32, FFIType.i32, FFIType.i64, FFIType.i64], returns: FFIType.i32 },
                  });
                  fallocateSymbol = (...args) => symbols.fallocate(...args) as number;
                } catch {}
              }
              return fallocateSymbol ? fallocateSymbol(fd, mode, offset, length) : -1;
            };
      const timespec = new BigInt64Array(2);
      const { flock, clock_gettime } = lib.symbols;
      loaded = {
        flock: (fd, operation) => flock(fd, operation) as number,
        errno,
        fallocate,
        clock(id) {
          if (clock_gettime(id, timespec) !== 0) return null;
          return Number(timespec[0]) * 1000 + Number(timespec[1]) / 1e6;
        },
      };
      break;
    }
  } catch {}
  return loaded;
}

/** CLOCK_BOOTTIME on Linux and Android; CLOCK_MONOTONIC on macOS (which counts sleep there). */
const BOOT_CLOCK = process.platform === "darwin" ? 6 : 7;

/** The boot-time clock, ms, where this process has loaded libc already (a lock did); else null: never loads it. */
export const bootClockNow = (): number | null => loaded?.clock(BOOT_CLOCK) ?? null;

/**
 * The boot-time clock (counts suspend) and the awake clock (stops while the device sleeps), ms:
 * CLOCK_BOOTTIME and CLOCK_MONOTONIC on Linux and Android; CLOCK_MONOTONIC and CLOCK_UPTIME_RAW on
 * macOS. Their difference grows by the time the device was asleep.
 */
export async function clocks(): Promise<{ bootMs: number; awakeMs: number } | null> {
  const c = await libc();
  if (!c) return null;
  const [boot, awake] = [BOOT_CLOCK, process.platform === "darwin" ? 8 : 1];
  const bootMs = c.clock(boot);
  const awakeMs = c.clock(awake);
  return bootMs === null || awakeMs === null ? null : { bootMs, awakeMs };
}
