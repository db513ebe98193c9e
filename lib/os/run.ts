import { oneLine } from "../core/sanitize.ts";
export interface RunOptions {
  timeoutMs: number;
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Written to the command's stdin (default: none). */
  input?: string;
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

/**
 * Run argv (no shell) in its own process group; on timeout the whole group is killed, so a
 * command's grandchildren cannot outlive it (Bun.spawn's own timeout kills only the child).
 */
export async function runCommand(argv: string[], { timeoutMs, cwd, env, input }: RunOptions): Promise<RunResult> {
  let child;
  try {
    const stdin = input === undefined ? "ignore" : new TextEncoder().encode(input);
    child = Bun.spawn(argv, {
      cwd,
      env: env as Record<string, string>,
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
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid, "SIGKILL");
  }, timeoutMs);
  const [stdout, stderr] = await Promise.all([readCapped(child.stdout), readCapped(child.stderr), child.exited]);
  clearTimeout(timer);
  return {
    exitCode: timedOut ? null : child.exitCode,
    signal: child.signalCode === null ? null : String(child.signalCode),
    timedOut,
    stdout,
    stderr,
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

/** Keep at most 64 KiB of a stream: a chatty command must not grow the watchdog. */
async function readCapped(stream: ReadableStream<Uint8Array>, limit = 65_536): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) if (text.length < limit) text += decoder.decode(chunk, { stream: true });
  return text.slice(0, limit);
}

/**
 * What a command said about itself: its first non-empty line of stderr (or stdout), as one
 * escaped line of at most 200 characters (outside text); "" when it said nothing.
 */
export function saidBy(result: RunResult, { stdout = true } = {}): string {
  const text = result.stderr.trim() || (stdout ? result.stdout.trim() : "");
  return oneLine(text.split("\n").find((line) => line.trim()) ?? "");
}
