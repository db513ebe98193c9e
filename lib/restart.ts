import { closeSync, openSync, readFileSync } from "node:fs";
import type { RestartAction, ServiceConfig } from "./config.ts";
import { humanDuration } from "./duration.ts";
import { writeFileAtomic } from "./atomic.ts";
import { refuseUnsafe } from "./kill.ts";
import { ancestry, readProc, waitForExit, type ProcInfo } from "./proc.ts";
import { runCommand } from "./run.ts";
import type { MainProcess } from "./pidsource.ts";
import { respawnPane } from "./tmux.ts";

export interface RestartResult {
  issued: boolean;
  detail: string;
  /** For spawn: the identity of the new process, kept in state. */
  pid?: number;
  pidStartTicks?: string;
}

export interface RestartOptions {
  sleep?: (ms: number) => Promise<void>;
  env?: Record<string, string | undefined>;
}

/** What a restart action does, in words, for logs and dry runs. */
export function describeRestart(action: RestartAction): string {
  switch (action.kind) {
    case "spawn":
      return `spawn ${action.argv.join(" ")}`;
    case "tmux":
      return `tmux respawn-pane ${action.target}`;
    case "command":
      return `command ${action.argv.join(" ")}`;
    case "systemd":
      return `systemctl restart ${action.unit}`;
    case "launchd":
      return `launchctl kickstart -k ${launchdDomain()}/${action.label}`;
  }
}

/** launchd's domain: system/ as root, gui/UID for a user's agents. */
export const launchdDomain = (uid = process.getuid?.() ?? 0) => (uid === 0 ? "system" : `gui/${uid}`);

/** The argv a restart action runs (command, systemd, launchd). */
function actionArgv(action: RestartAction): string[] | null {
  switch (action.kind) {
    case "command":
      return action.argv;
    case "systemd":
      return ["systemctl", "restart", "--", action.unit];
    case "launchd":
      return ["launchctl", "kickstart", "-k", `${launchdDomain()}/${action.label}`];
    default:
      return null;
  }
}

/** Run the service's restart action. Never throws: a failure is a result with issued=false. */
export async function restartService(service: ServiceConfig, current: MainProcess | null, options: RestartOptions = {}): Promise<RestartResult> {
  const action = service.restart;
  if (!action) return { issued: false, detail: "no restart action configured" };
  try {
    switch (action.kind) {
      case "spawn":
        return await respawn(service, action, current, options);
      case "tmux":
        return await respawnPane(action.target, action.run);
      case "command":
      case "systemd":
      case "launchd": {
        const result = await runCommand(actionArgv(action)!, { timeoutMs: service.verifyTimeoutMs });
        if (result.exitCode === 0) return { issued: true, detail: describeRestart(action) };
        const why = result.error ?? (result.timedOut ? `did not finish within ${humanDuration(service.verifyTimeoutMs)}` : `exit ${result.exitCode}`);
        return { issued: false, detail: `${describeRestart(action)}: ${why}${result.stderr.trim() ? `: ${result.stderr.trim().split("\n")[0]}` : ""}` };
      }
    }
  } catch (error) {
    return { issued: false, detail: `${describeRestart(action)}: ${(error as Error).message}` };
  }
}

/**
 * Stop a verified process: TERM (plus CONT, so a frozen process can act on it), wait up to
 * stopTimeout, then KILL. Its whole process group when it leads one (groups tend created),
 * otherwise the process alone. Never PID <= 1, this process or an ancestor.
 */
export async function stopProcess(info: ProcInfo, stopTimeoutMs: number, sleep: (ms: number) => Promise<void> = Bun.sleep): Promise<{ forced: boolean }> {
  refuseUnsafe(info.pid); // the same guard safe-kill uses: never PID <= 1, self or an ancestor
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

async function respawn(
  service: ServiceConfig,
  action: Extract<RestartAction, { kind: "spawn" }>,
  current: MainProcess | null,
  { env = process.env, sleep = Bun.sleep }: RestartOptions,
): Promise<RestartResult> {
  let stopped = "";
  if (current?.info && current.running) {
    const { forced } = await stopProcess(current.info, service.stopTimeoutMs, sleep);
    stopped = `stopped pid ${current.info.pid}${forced ? " with SIGKILL" : ""}; `;
  }
  // Output goes to a file, never to the watchdog's stdout (cron would mail it, a closed pipe would kill it).
  const output = openSync(action.output, "a", 0o600);
  let child;
  try {
    // The child records its own PID (atomically) before it becomes the service: if the watchdog
    // is killed right after the spawn, the pidfile still names the process, never an orphan.
    child = Bun.spawn(["/bin/sh", "-c", RECORD_SELF, service.pidfile!, ...action.argv], {
      cwd: action.cwd ?? undefined,
      env: { ...env, ...action.env } as Record<string, string>,
      stdin: "ignore",
      stdout: output,
      stderr: output,
      detached: true, // new session: survives the watchdog and its process group
    });
  } finally {
    closeSync(output);
  }
  child.unref();
  const info = readProc(child.pid);
  const deadline = Date.now() + 5000;
  while (readPid(service.pidfile!) !== child.pid && child.exitCode === null && Date.now() < deadline) await sleep(5);
  if (readPid(service.pidfile!) !== child.pid) writeFileAtomic(service.pidfile!, `${child.pid}\n`, 0o644); // it exited at once
  return { issued: true, detail: `${stopped}started pid ${child.pid}`, pid: child.pid, pidStartTicks: info?.startTicks };
}

/** sh -c RECORD_SELF PIDFILE ARGV...: write $$ to PIDFILE (temp + rename), then exec ARGV in place. */
const RECORD_SELF = 'umask 022; echo $$ > "$0.tmp.$$" && mv -f "$0.tmp.$$" "$0" && exec "$@"';

function readPid(path: string): number | null {
  try {
    return Number(readFileSync(path, "utf8").trim()) || null;
  } catch {
    return null;
  }
}
