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
    return { exitCode: null, signal: null, timedOut: false, stdout: "", stderr: "", error: (error as Error).message };
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
