// Shared by bench.ts and faults.ts.

/** Poll until `condition` holds or the deadline passes. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  error: new (message: string) => Error = Error,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await Bun.sleep(20);
  }
  throw new error(`timed out waiting for ${what}`);
}

/** The local service on `port` answers 200 within 500 ms. */
export const answers = async (port: number) =>
  (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) }).catch(() => null))?.status === 200;

/** SIGKILL a process group the harness started (and the process itself, if it leads none). */
export function killGroup(pid: number) {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {}
  }
}
