import { runCommand, saidBy } from "./run.ts";

/** The PID launchd reports for LABEL (`launchctl list LABEL`: `"PID" = 123;`), or why there is none. */
export async function launchdPid(label: string): Promise<{ pid: number } | { error: string }> {
  const result = await runCommand(["launchctl", "list", label], { timeoutMs: 10_000 });
  if (result.error) return { error: `launchctl: ${result.error}` };
  if (result.exitCode !== 0) return { error: `launchd job ${label}: ${saidBy(result) || "not loaded"}` };
  const match = /"PID"\s*=\s*(\d+);/.exec(result.stdout);
  return match ? { pid: Number(match[1]) } : { error: `launchd job ${label} has no running process` };
}

/** launchd's domain: system/ as root, gui/UID for a user's agents. */
export const launchdDomain = (uid = process.getuid?.() ?? 0) => (uid === 0 ? "system" : `gui/${uid}`);
