/**
 * `watchdog run` is a long-lived loop that is idle between passes: it does not need JSC's
 * optimizing JITs, whose compiled code made RSS climb ~4 MiB over the first thousands of passes
 * (bench P5). Re-exec the same binary, same PID (execve), with the baseline JIT only.
 */
const LEAN_ENV: Record<string, string> = {
  BUN_JSC_useDFGJIT: "0",
  BUN_JSC_useFTLJIT: "0",
  // Nor Bun's idle GC timer: it wakes the process every second for ~30 s after each burst of
  // allocation (a pass); the loop collects after each pass itself (bench battery: wake-ups a second).
  BUN_GC_TIMER_DISABLE: "1",
  // Nor mimalloc's scavenger thread, which wakes every 30 s to return freed pages: freed memory is
  // returned as it is freed (the loop's RSS is flat either way: bench P5).
  MIMALLOC_SCAVENGER: "0",
};
/** Names the variables the re-exec added, so that what the loop starts runs without them (os/run.ts childEnv). */
export const LEAN_MARK = "TEND_LEAN_ADDED";

/**
 * The binary starts with JSC's tier-up thresholds scaled up (Makefile: --compile-jit-policy), right
 * for one-shot commands; a long-running one (the loop, serve) goes back to the normal policy.
 */
export function normalJitPolicy(): void {
  Bun.unsafe?.setJITPolicy?.(1);
}

/** Replaces the process when it can; returns (and the loop runs as it is) when it cannot. */
export async function becomeLean(env: Record<string, string | undefined>): Promise<void> {
  const compiled = process.argv[1]?.startsWith("/$bunfs/");
  if (!compiled || env.BUN_JSC_useDFGJIT !== undefined || env.TEND_FULL_JIT) return;
  try {
    const { dlopen, FFIType, ptr } = await import("bun:ffi");
    const names = process.platform === "darwin" ? ["libSystem.B.dylib"] : ["libc.so.6", "libc.so"];
    type Execve = (path: unknown, argv: unknown, envp: unknown) => number;
    let execve: Execve | null = null;
    for (const name of names) {
      try {
        execve = dlopen(name, { execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } })
          .symbols.execve as unknown as Execve;
        break;
      } catch {}
    }
    if (!execve) return;
    const cString = (text: string) => Buffer.from(text + "\0");
    const keep: Buffer[] = []; // the strings must stay alive until execve
    const array = (items: string[]) => {
      const pointers = new BigUint64Array(items.length + 1);
      items.forEach((item, index) => {
        const buffer = cString(item);
        keep.push(buffer);
        pointers[index] = BigInt(ptr(buffer));
      });
      return pointers;
    };
    const argv = array([process.argv0, ...process.argv.slice(2)]);
    const added = Object.keys(LEAN_ENV).filter((key) => env[key] === undefined);
    const envp = array(
      Object.entries({ ...env, ...LEAN_ENV, [LEAN_MARK]: added.join(",") })
        .filter(([, value]) => value !== undefined)
        .map(([key, value]) => `${key}=${value}`),
    );
    const path = cString(process.execPath);
    execve(ptr(path), ptr(argv), ptr(envp)); // returns only on failure: run as we are
  } catch {}
}
