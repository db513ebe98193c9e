import { appendAll, writeAll } from "./atomic.ts";
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  statSync,
  type Stats,
} from "node:fs";
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
class FileProblem extends Error {}

/**
 * The one reader of files others may have made (SPEC: "one reader"). Every read of a file by its path
 * goes through here — test/one-reader.test.ts fails on any other module that reads by path: opened
 * non-blocking (a FIFO planted there fails or is refused, never waited on), without following a final
 * symlink unless the caller asks (`follow`: a path the user named), checked on the descriptor to be a
 * regular file (a FIFO, device or directory said in words), and read up to a stated bound.
 */
interface ReadOptions {
  /** Follow a final symlink: only for a path the user named (the config, a script to import). */
  follow?: boolean;
}

/** Open PATH for reading as the one reader does; the descriptor and its fstat (a regular file). */
export function openRegular(path: string, { follow = false }: ReadOptions = {}): { fd: number; stats: Stats } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (follow ? 0 : constants.O_NOFOLLOW));
  } catch (error) {
    throw Object.assign(new FileProblem(inWords(error)), { code: (error as NodeJS.ErrnoException).code });
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    throw Object.assign(new FileProblem(`is ${kindOf(stats)}, not a regular file`), { code: "EFTYPE" });
  }
  return { fd, stats };
}

/**
 * At most `limit` bytes of a regular file from its start; `more` when it holds more than that (said
 * by the caller in its words: "more than 1 MiB"). /proc files say size 0: read up to the limit.
 * `first`: as readBoundedOf's.
 */
export function readBounded(
  path: string,
  limit: number,
  options: ReadOptions = {},
  first?: Buffer,
): { bytes: Buffer; more: boolean; stats: Stats } {
  const { fd, stats } = openRegular(path, options);
  try {
    return { ...readBoundedOf(fd, stats, limit, first), stats };
  } finally {
    closeSync(fd);
  }
}

/** The blocks a file whose size is not said (/proc) is read in; the first fits readRegularFile's kept buffer. */
const BLOCK_BYTES = 64 * 1024;

/**
 * The same, from a descriptor the one reader opened (its fstat given). `first`: a buffer to read the
 * first block into when it is big enough (the bytes returned may then be in it: the caller's to copy).
 */
export function readBoundedOf(
  fd: number,
  stats: Stats,
  limit: number,
  first?: Buffer,
): { bytes: Buffer; more: boolean } {
  // A size said (a file): one buffer of it. None said (/proc files say 0): blocks as they come, so a
  // bound of 16 MiB costs what the file holds, not 16 MiB on every read of a 150-byte table.
  const blocks: Buffer[] = [];
  let size = 0;
  const wanted = stats.size > 0 ? Math.min(limit, stats.size) + 1 : Math.min(limit + 1, BLOCK_BYTES);
  for (let block = first && first.length >= wanted ? first.subarray(0, wanted) : Buffer.alloc(wanted); ;) {
    let filled = 0;
    while (filled < block.length) {
      const read = readSync(fd, block, filled, block.length - filled, null);
      if (read === 0) break;
      filled += read;
    }
    blocks.push(block.subarray(0, filled));
    size += filled;
    if (filled < block.length || size > limit) break;
    block = Buffer.alloc(Math.min(limit + 1 - size, BLOCK_BYTES));
    if (block.length === 0) break;
  }
  const bytes = blocks.length === 1 ? blocks[0] : Buffer.concat(blocks);
  return { bytes: bytes.subarray(0, Math.min(size, limit)), more: size > limit };
}

/**
 * Where readRegularFile reads a file of up to 64 KiB: one buffer for the process, never new memory for
 * each read. A pass reads ~20 state files of 4–12 KiB, and in a process that lives 50 ms every new page
 * is a page fault (no garbage is collected before it exits): 4–12 KiB of fresh memory a service (#60).
 */
let scratch: Buffer | undefined;

/** A regular file's text, at most `limit` bytes (what is past the bound is not read). */
export function readRegularFile(path: string, limit: number, options: ReadOptions = {}): string {
  // Decoded before anything else can read into it (all of this is synchronous): the text is a copy.
  return readBounded(path, limit, options, (scratch ??= Buffer.allocUnsafe(BLOCK_BYTES))).bytes.toString("utf8");
}

/** Read a whole regular file through `each` in blocks (a hash, a count), never more than `limit` bytes. */
export function readBlocks(
  path: string,
  limit: number,
  each: (block: Buffer) => void,
  options: ReadOptions = {},
): { size: number; more: boolean } {
  const { fd } = openRegular(path, options);
  try {
    return readBlocksOf(fd, limit, each);
  } finally {
    closeSync(fd);
  }
}

/** The same, from a descriptor the one reader opened. */
function readBlocksOf(fd: number, limit: number, each: (block: Buffer) => void): { size: number; more: boolean } {
  const block = Buffer.alloc(256 * 1024);
  let size = 0;
  for (let read; (read = readSync(fd, block, 0, block.length, null)) > 0;) {
    if (size + read > limit) return { size, more: true };
    size += read;
    each(block.subarray(0, read));
  }
  return { size, more: false };
}

/**
 * Copy a regular file (never through a final symlink) into a new file made exclusively at `to`
 * (mode 0600, no symlink followed): a log's rotation, a backup. Bytes copied.
 */
export function copyRegular(from: string, to: string, { follow = false, mode = 0o600 } = {}): number {
  const { fd } = openRegular(from, { follow });
  try {
    const out = openSync(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    try {
      return readBlocksOf(fd, Number.MAX_SAFE_INTEGER, (block) => writeAll(out, block)).size;
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(fd);
  }
}

/** fsync a regular file another process wrote, by path (never through a symlink); false when it cannot. */
export function fsyncRegular(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openRegular(path).fd;
    fsyncSync(fd);
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
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
  let opened: { fd: number; stats: Stats };
  try {
    opened = openRegular(path);
  } catch {
    return { bytes: Buffer.alloc(0), start: 0 };
  }
  const { fd, stats } = opened;
  try {
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
