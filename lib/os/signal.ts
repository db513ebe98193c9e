import { refused } from "../core/errors.ts";
import { ancestry, waitForExit, type ProcInfo } from "./proc.ts";

/** Never PID <= 1, never this process or one of its ancestors (the shell that runs it). */
export function refuseUnsafe(pid: number, self = process.pid, who = "safe-kill"): void {
  if (pid <= 1) throw refused(`refusing to signal pid ${pid}: init or the kernel`);
  if (pid === self) throw refused(`refusing to signal pid ${pid}: that is ${who} itself`);
  const chain = ancestry(self);
  if (chain.includes(pid)) {
    throw refused(`refusing to signal pid ${pid}: an ancestor of ${who} (${chain.join(" <- ")})`);
  }
}

/**
 * Stop a verified process: TERM (plus CONT, so a frozen process can act on it), wait up to
 * stopTimeout, then KILL. Its whole process group when it leads one (groups tend created),
 * otherwise the process alone. Never PID <= 1, this process or an ancestor.
 */
export async function stopProcess(
  info: ProcInfo,
  stopTimeoutMs: number,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<{ forced: boolean }> {
  refuseUnsafe(info.pid, process.pid, "the watchdog");
  const target = info.pgid === info.pid && !ancestry().includes(info.pgid) ? -info.pid : info.pid;
  const send = (signal: NodeJS.Signals) => {
    try {
      process.kill(target, signal);
    } catch {}
  };
  send("SIGTERM");
  send("SIGCONT");
  if (await waitForExit(info, stopTimeoutMs, sleep)) {
    if (target < 0) send("SIGKILL"); // leftovers of the group that ignored TERM
    return { forced: false };
  }
  send("SIGKILL");
  await waitForExit(info, 5000, sleep);
  return { forced: true };
}
