/** The process's standard streams and environment, as the commands use them (tests pass their own). */
export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Record<string, string | undefined>;
  /** stdout is a terminal (colour, pictures) */
  tty: boolean;
  /** stdout is the file at this path (the installed line's cron.log). */
  stdoutIs?: (path: string) => Promise<boolean>;
}

/**
 * stdout and stderr through Bun's file sinks, flushed at every line: touching `process.stdout`
 * or loading node:tty costs more than the whole start-up of a command (measured in bench/), so
 * neither happens unless a command asks whether it writes to a terminal; nor does node:fs. Each sink
 * is made by the first line it takes: a cron pass where nothing happens says nothing (#60: a binary that
 * made both, wrote a line and ended them took 15.4 ms of CPU against 12.7 for one that does nothing, 12.9
 * with console.log; a whole pass measured 0.4 ms less, within the noise).
 */
export function processIo(): Io & { close: () => Promise<void> } {
  const sinks: { stdout?: Bun.FileSink; stderr?: Bun.FileSink } = {};
  // A stream that failed once (EPIPE, ENOSPC, EBADF) throws that once, to whoever says it (the
  // Logger logs it), and takes nothing more: a command never fails twice on its stdout.
  // The error carries which stream failed (`stream`): said as such, never as an internal error.
  const writer = (stream: "stdout" | "stderr") => {
    let failed = false;
    return (text: string) => {
      if (failed) return;
      try {
        const sink = (sinks[stream] ??= (stream === "stdout" ? Bun.stdout : Bun.stderr).writer());
        sink.write(text.endsWith("\n") ? text : text + "\n");
        sink.flush();
      } catch (error) {
        failed = true;
        throw Object.assign(error as Error, { stream });
      }
    };
  };
  let tty: boolean | undefined;
  return {
    out: writer("stdout"),
    err: writer("stderr"),
    env: process.env,
    get tty() {
      tty ??= (require("node:tty") as typeof import("node:tty")).isatty(1);
      return tty;
    },
    // Loaded when asked: node:fs at start-up costs `tend --version` ~1 ms (bench P4c).
    stdoutIs: async (path: string) => (await import("./os/files.ts")).fdIsFile(1, path),
    /** Everything written reaches its file before the process exits. */
    close: async () => void (await Promise.all(Object.values(sinks).map((sink) => sink.end()))),
  };
}

declare const TEND_VERSION: string | undefined;
/** Embedded by `bun build --define`; "dev" when run from source. */
export const VERSION = typeof TEND_VERSION === "string" ? TEND_VERSION : "0.0.0-dev";
declare const TEND_RELEASE_KEY: string | undefined;
/** The release key a release binary trusts for `self-update --channel` (`make release` builds it in). */
export const RELEASE_KEY = typeof TEND_RELEASE_KEY === "string" && TEND_RELEASE_KEY ? TEND_RELEASE_KEY : null;
