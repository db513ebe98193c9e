import { LEAN_MARK } from "./lean.ts";
import { oneLine } from "../core/sanitize.ts";
import { after } from "./timer.ts";
export interface RunOptions {
  timeoutMs: number;
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Written to the command's stdin (default: none). */
  input?: string;
  /** A check command: killed when the pass is stopped by a signal. */
  check?: boolean;
}

export interface RunResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** spawn itself failed (no such program, ...) */
  error: string | null;
}

/** Process groups of the check commands running now: a pass stopped by a signal kills them first. */
const running = new Set<number>();

/** Kill every check command still running (its whole group); returns how many there were. */
export function killRunningChecks(): number {
  const count = running.size;
  for (const pgid of running) killGroup(pgid, "SIGKILL");
  running.clear();
  return count;
}

/** Output a command writes after it exited (a background child holding the pipe) is waited for this long. */
const AFTER_EXIT_MS = 100;

/**
 * Run argv (no shell) in its own process group; on timeout the whole group is killed, so a
 * command's grandchildren cannot outlive it (Bun.spawn's own timeout kills only the child).
 * The command is judged by its exit, not by its output closing: a background child that keeps
 * the pipe open does not hold the result. `check`: killed by killRunningChecks().
 */
/** The environment a child gets: tend's own, less the notification URL (its token is tend's, not theirs). */
export function childEnv(env: Record<string, string | undefined> = process.env): Record<string, string> {
  const { TEND_NOTIFY_URL: _secret, [LEAN_MARK]: lean, ...rest } = env;
  // The JIT and GC settings the loop gave itself (os/lean.ts) are not the services': a Bun service
  // it starts runs with its full JIT, as it would started by hand.
  for (const key of lean?.split(",") ?? []) delete rest[key];
  return rest as Record<string, string>;
}

export async function runCommand(
  argv: string[],
  { timeoutMs, cwd, env, input, check = false }: RunOptions,
): Promise<RunResult> {
  let child;
  try {
    const stdin = input === undefined ? "ignore" : new TextEncoder().encode(input);
    child = Bun.spawn(argv, {
      cwd,
      env: childEnv(env),
      stdin,
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
  } catch (error) {
    return {
      exitCode: null,
      signal: null,
      timedOut: false,
      stdout: "",
      stderr: "",
      error: oneLine((error as Error).message),
    };
  }
  if (check) running.add(child.pid);
  let timedOut = false;
  const cancel = after(timeoutMs, () => {
    timedOut = true;
    killGroup(child.pid, "SIGKILL");
  });
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  await child.exited;
  cancel();
  if (check) {
    running.delete(child.pid);
    killGroup(child.pid, "SIGKILL"); // what the check left behind in its group is not the service
  }
  await Promise.race([Promise.all([stdout.done, stderr.done]), Bun.sleep(AFTER_EXIT_MS)]);
  return {
    exitCode: timedOut ? null : child.exitCode,
    signal: child.signalCode === null ? null : String(child.signalCode),
    timedOut,
    stdout: stdout.stop(),
    stderr: stderr.stop(),
    error: null,
  };
}

/** Signal a process group this process created; ESRCH (already gone) is not an error. */
export function killGroup(pgid: number, signal: NodeJS.Signals | number): boolean {
  if (pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Keep at most 64 KiB of a stream: a chatty command must not grow the watchdog. `stop` ends the reading. */
function collect(stream: ReadableStream<Uint8Array>, limit = 65_536) {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let text = "";
  const done = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        if (text.length < limit) text += decoder.decode(value, { stream: true });
      }
    } catch {}
  })();
  return {
    done,
    stop: () => {
      reader.cancel().catch(() => {});
      return text.slice(0, limit);
    },
  };
}

/**
 * What a command said about itself: its first non-empty line of stderr (or stdout), as one
 * escaped line of at most 200 characters (outside text); "" when it said nothing.
 */
export function saidBy(result: RunResult, { stdout = true } = {}): string {
  const text = result.stderr.trim() || (stdout ? result.stdout.trim() : "");
  return oneLine(text.split("\n").find((line) => line.trim()) ?? "");
}
