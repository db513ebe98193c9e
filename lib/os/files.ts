import { appendAll } from "./atomic.ts";
import { accessSync, closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from "node:fs";
import { join } from "node:path";

const WORDS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "is a directory",
  ENOTDIR: "a part of the path is not a directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ELOOP: "is a symlink (not followed)",
  ENOSPC: "no space left on the device",
  EROFS: "read-only file system",
  EEXIST: "already exists",
  ENXIO: "no such device",
  EPIPE: "broken pipe",
  EBADF: "closed",
};

/** A file error in words ("no such file"), never an errno code alone. */
export function inWords(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  return (code && WORDS[code]) ?? (error as Error)?.message ?? String(error);
}

const kindOf = (stats: Stats) =>
  stats.isFIFO()
    ? "a FIFO"
    : stats.isCharacterDevice() || stats.isBlockDevice()
      ? "a device"
      : stats.isDirectory()
        ? "a directory"
        : stats.isSocket()
          ? "a socket"
          : "not a regular file";

/** A file that is not what it should be: the message says what is wrong, in words. */
export class FileProblem extends Error {}

/**
 * Read a regular file, at most `limit` bytes. A FIFO, device or directory is an error, never a
 * hang or an endless read; with `noFollow` a symlink is refused too (files in the state dir).
 */
export function readRegularFile(path: string, limit: number, { noFollow = false } = {}): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (noFollow ? constants.O_NOFOLLOW : 0));
  } catch (error) {
    throw Object.assign(new FileProblem(inWords(error)), { code: (error as NodeJS.ErrnoException).code });
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new FileProblem(`is ${kindOf(stats)}, not a regular file`);
    // /proc files say size 0: read those up to the limit.
    const buffer = Buffer.alloc(stats.size > 0 ? Math.min(limit, stats.size) : limit);
    let size = 0;
    while (size < buffer.length) {
      const read = readSync(fd, buffer, size, buffer.length - size, null);
      if (read === 0) break;
      size += read;
    }
    return buffer.subarray(0, size).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

// O_NONBLOCK: a FIFO planted at a log or lock path fails at once (ENXIO, no reader) instead of hanging.
const APPEND =
  constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Open for appending, never through a symlink (logs, .out files, locks): ELOOP when PATH is one; a
 * FIFO, device or directory is an error that says what it is.
 */
export function openAppend(path: string, mode = 0o600): number {
  let fd: number;
  try {
    fd = openSync(path, APPEND, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENXIO")
      throw new FileProblem(`${path}: is a FIFO, not a regular file`);
    throw error;
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    throw new FileProblem(`${path}: is ${kindOf(stats)}, not a regular file`);
  }
  return fd;
}

/** Append text to a file, never through a symlink. */
export function appendNoFollow(path: string, text: string, mode = 0o600): void {
  const fd = openAppend(path, mode);
  try {
    appendAll(fd, text);
  } finally {
    closeSync(fd);
  }
}

/**
 * Bytes `from` (counted from the end when negative) up to `to` of a regular file, never through a
 * symlink, never a FIFO (none then), and where they began.
 */
export function readRange(path: string, from: number, to = Infinity): { bytes: Buffer; start: number } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return { bytes: Buffer.alloc(0), start: 0 };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { bytes: Buffer.alloc(0), start: 0 };
    const start = from < 0 ? Math.max(0, stats.size + from) : from;
    const buffer = Buffer.alloc(Math.max(0, Math.min(to, stats.size) - start));
    let size = 0;
    while (size < buffer.length) {
      const read = readSync(fd, buffer, size, buffer.length - size, start + size);
      if (read === 0) break;
      size += read;
    }
    return { bytes: buffer.subarray(0, size), start };
  } finally {
    closeSync(fd);
  }
}

/**
 * The last `limit` bytes of a regular file from its first whole line on (never through a symlink,
 * never a FIFO: "" then); `cut` when older bytes were left out.
 */
export function readTail(path: string, limit: number): { text: string; cut: boolean } {
  const { bytes, start } = readRange(path, -limit);
  const text = bytes.toString("utf8");
  if (start === 0) return { text, cut: false };
  const first = text.indexOf("\n"); // the first line was cut: not a line
  return { text: first < 0 ? "" : text.slice(first + 1), cut: true };
}

/** The last `count` lines of a regular file, reading at most its last `limit` bytes (never through a symlink). */
export function tailLines(path: string, count: number, limit = 65_536): string[] {
  return readTail(path, limit)
    .text.split("\n")
    .filter((line) => line !== "")
    .slice(-count);
}

/** File descriptor `fd` (1: stdout) is the file at `path`: the same device and inode. */
export function fdIsFile(fd: number, path: string): boolean {
  try {
    const [open, named] = [fstatSync(fd), statSync(path)];
    return open.dev === named.dev && open.ino === named.ino;
  } catch {
    return false;
  }
}

/**
 * The full path `program` resolves to on `path` as exec would find it (an absolute or relative path:
 * itself), if it is an executable regular file there; else null.
 */
export function resolveOnPath(program: string, path: string): string | null {
  const candidates = program.includes("/")
    ? [program]
    : path
        .split(":")
        .filter(Boolean)
        .map((dir) => join(dir, program));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {}
  }
  return null;
}
