import { closeSync, existsSync, fstatSync, readSync } from "node:fs";
import type { Config } from "../config/types.ts";
import { TendError, usageError } from "../core/errors.ts";
import { escapeControls } from "../core/sanitize.ts";
import { inWords, openRegular } from "../os/files.ts";
import { launchdDomain } from "../os/launchd.ts";
import { runCommand, saidBy } from "../os/run.ts";
import { exactWindow, parseTarget, serverArgs } from "../os/tmux.ts";
import { outputOf } from "../restarts/index.ts";
import { serviceNamed } from "./operate.ts";

interface LogsOptions {
  lines: number;
  follow: boolean;
  /** Each line of the service's output, escaped (not cut). */
  out: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
  /** Ends --follow (tests); otherwise it follows until the process is stopped. */
  until?: () => boolean;
}

/** What this file reads: a file, a tmux pane's scrollback, a unit's journal (a launchd job's is its file). */
type Source = { file: string } | { pane: string; socket?: string | null } | { unit: string };

/** Where a service's own output is: its restart kind says (outputOf), else its pid source. */
async function sourceOf(config: Config, name: string): Promise<Source> {
  const source = outputOf(serviceNamed(config, name));
  if (!source)
    throw usageError(
      `${name} has no output tend knows of (restart.spawn output, a tmux pane, a unit or a launchd job)`,
    );
  // A pane's piped output (restart.tmux) keeps what a pane that died said; its scrollback until it exists.
  if ("pane" in source && source.file && existsSync(source.file)) return { file: source.file };
  if (!("launchd" in source)) return source;
  const label = source.launchd;
  const shown = await runCommand(["launchctl", "print", `${launchdDomain()}/${label}`], { timeoutMs: 10_000 });
  const path = /^\s*stdout path = (.+)$/m.exec(shown.stdout)?.[1]?.trim();
  if (!path)
    throw new TendError(`${name}: launchd job ${label} has no StandardOutPath (${saidBy(shown) || "none set"})`, 1);
  return { file: path };
}

const BLOCK = 64 * 1024;

/** At most this much of a file's end is read for `-n`: a 300 MB progress bar without a newline costs 8 MiB. */
const TAIL_LIMIT = 8 * 1024 * 1024;

/**
 * The last `count` lines of a file, reading backwards in blocks, counting newlines in the bytes (a
 * large log is not read whole, nor decoded twice); bounded by TAIL_LIMIT, where the oldest line shown
 * starts with "…" if it was cut.
 */
function tailOf(fd: number, size: number, count: number): { lines: string[]; offset: number } {
  const blocks: Buffer[] = [];
  let start = size;
  let newlines = 0;
  while (start > 0 && newlines <= count && size - start < TAIL_LIMIT) {
    const from = Math.max(0, start - BLOCK, size - TAIL_LIMIT);
    const buffer = Buffer.alloc(start - from);
    readSync(fd, buffer, 0, buffer.length, from);
    for (const byte of buffer) if (byte === 10) newlines++;
    blocks.unshift(buffer);
    start = from;
  }
  const lines = Buffer.concat(blocks).toString("utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const shown = lines.slice(-count);
  if (start > 0 && shown.length === lines.length && shown.length) shown[0] = `…${shown[0]}`;
  return { lines: shown, offset: size };
}

/** `watchdog logs NAME [-n N] [-f]` (supervisorctl tail): the service's own output. */
export async function serviceLogs(config: Config, name: string, options: LogsOptions): Promise<number> {
  const { lines, follow, out, sleep = Bun.sleep, until = () => false } = options;
  const source = await sourceOf(config, name);
  const say = (line: string) => out(escapeControls(line));

  if ("unit" in source) {
    const argv = ["journalctl", "-u", source.unit, "-n", String(lines), "--no-pager", "-o", "short-iso"];
    const child = Bun.spawn(follow ? [...argv, "-f"] : argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of child.stdout) {
      const parts = (rest + decoder.decode(chunk, { stream: true })).split("\n");
      rest = parts.pop() ?? "";
      parts.forEach(say);
      if (until()) child.kill();
    }
    if (rest) say(rest);
    const code = await child.exited;
    if (code !== 0 && !until())
      throw new TendError(`journalctl -u ${source.unit}: ${(await new Response(child.stderr).text()).trim()}`, 1);
    return 0;
  }

  if ("pane" in source) {
    const { pane } = parseTarget(source.pane);
    const target = pane === null ? exactWindow(source.pane) : `${exactWindow(source.pane)}.${pane}`;
    const capture = async (count: number) => {
      const server = serverArgs(source.socket ?? null);
      const argv = ["tmux", ...server, "capture-pane", "-p", "-J", "-S", `-${count}`, "-t", target];
      const result = await runCommand(argv, { timeoutMs: 10_000 });
      if (result.exitCode !== 0)
        throw new TendError(`${name}: tmux pane ${source.pane}: ${saidBy(result) || "not found"}`, 1);
      return result.stdout.replace(/\n+$/, "").split("\n");
    };
    let seen = await capture(lines);
    seen.slice(-lines).forEach(say);
    while (follow && !until()) {
      await sleep(1000);
      const now = await capture(1000);
      // New lines: those after the last line printed, found from the end of the fresh capture.
      const last = seen.at(-1);
      const at = last === undefined ? -1 : now.lastIndexOf(last);
      now.slice(at + 1).forEach(say);
      seen = now;
    }
    return 0;
  }

  let fd: number;
  try {
    // Never through a symlink, never blocking on a FIFO; a FIFO or device is refused below.
    fd = openRegular(source.file).fd;
  } catch (error) {
    throw new TendError(`${name}: ${source.file}: ${inWords(error)}`, 1);
  }
  try {
    const tail = tailOf(fd, fstatSync(fd).size, lines);
    tail.lines.forEach(say);
    let offset = tail.offset;
    let partial = "";
    while (follow && !until()) {
      await sleep(500);
      const size = fstatSync(fd).size;
      if (size < offset) offset = 0; // truncated or rotated in place
      if (size === offset) continue;
      const buffer = Buffer.alloc(Math.min(size - offset, 4 * BLOCK));
      const read = readSync(fd, buffer, 0, buffer.length, offset);
      offset += read;
      const parts = (partial + buffer.subarray(0, read).toString("utf8")).split("\n");
      partial = parts.pop() ?? "";
      parts.forEach(say);
    }
  } finally {
    closeSync(fd);
  }
  return 0;
}
