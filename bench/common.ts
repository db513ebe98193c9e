// Shared by bench.ts, battery.ts and faults.ts.

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

/**
 * Let a binary be read back from disk as an installed one is: written back, then its pages dropped from
 * the page cache (`dd iflag=nocache count=0`, posix_fadvise DONTNEED). A file just written by a build
 * keeps the pages its writes made, and a start-up mapped from those was ~2.5 ms slower here (ext4,
 * Linux 6.18): `tend --version` 18.6–19.2 ms from the freshly built build/tend, 16.1–16.4 ms from a copy
 * of it or after this. That is the build's state, not the binary's, and it fell on tend or its floor
 * depending on which was built last (#60's P4c: 1.39–1.61× against 1.20–1.31× for the same bytes).
 */
export function asInstalled(path: string) {
  for (const argv of [
    ["sync", path],
    ["dd", `if=${path}`, "iflag=nocache", "count=0", "status=none"],
  ]) {
    const done = Bun.spawnSync(argv, { stderr: "pipe" });
    if (done.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${done.stderr.toString().trim()}`);
  }
}
