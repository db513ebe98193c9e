import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statfsSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { fsyncRegular, readRegularFile } from "./files.ts";

const EXT4 = 0xef53;
const BTRFS = 0x9123683e;
const TMPFS = 0x01021994;
const RAMFS = 0x858458f6;
const ordered = new Map<string, boolean>();

/** The super-block options of the mount holding `dir` (/proc/self/mountinfo), or null. */
function mountOptions(dir: string): string[] | null {
  let real: string;
  let info: string;
  try {
    real = realpathSync(dir);
    info = readRegularFile("/proc/self/mountinfo", 1024 * 1024);
  } catch {
    return null;
  }
  let best: { point: string; options: string[] } | null = null;
  for (const line of info.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!right) continue;
    const point = left.split(" ")[4]?.replace(/\\040/g, " ");
    if (!point || !(real === point || real.startsWith(point === "/" ? "/" : `${point}/`))) continue;
    if (best && best.point.length > point.length) continue;
    const [, , superOptions = ""] = right.split(" ");
    best = { point, options: [...left.split(" ")[5].split(","), ...superOptions.split(",")] };
  }
  return best?.options ?? null;
}

/**
 * Does a rename over a file on this directory's file system write the new data first, so that a
 * power cut leaves the old file or the new one even without an fsync? ext4's auto_da_alloc does
 * (not when mounted noauto_da_alloc, as Android mounts /data), btrfs does; f2fs, xfs, FAT and the
 * rest do not: a rename there can outlive its data (an empty file after the cut). tmpfs keeps nothing.
 */
export function renameOrdersData(dir: string): boolean {
  const known = ordered.get(dir);
  if (known !== undefined) return known;
  let answer = false;
  try {
    const type = Number(statfsSync(dir).type);
    if (type === TMPFS || type === RAMFS || type === BTRFS) answer = true;
    else if (type === EXT4) answer = !(mountOptions(dir) ?? ["noauto_da_alloc"]).includes("noauto_da_alloc");
  } catch {}
  ordered.set(dir, answer);
  return answer;
}

/**
 * Write a file so readers see the old content or the new, never a torn one: temp file beside
 * it, fsync, rename. A symlink at `path` is replaced, never written through. `durable: false`
 * skips the fsync where the file system writes a renamed file's data before the rename (ext4's
 * default, btrfs: a cut loses at most this write, never the file); elsewhere (f2fs, ext4
 * noauto_da_alloc: a phone's /data) it is fsynced all the same, or a cut leaves it empty.
 */
/**
 * Write all of `data`: write(2) may write less than asked (a disk that fills on the way) without an
 * error, and a temp file cut short then renamed over a state is a corrupt state (found by the
 * ground-truth harness's full disk). The rest is written again: ENOSPC, thrown.
 */
export function writeAll(fd: number, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  for (let written = 0; written < bytes.length;) {
    const wrote = writeSync(fd, bytes, written, bytes.length - written);
    if (wrote <= 0) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    written += wrote;
  }
}

/**
 * Append all of `text` at the end, or nothing: a line cut by a full disk is taken back (the file's
 * size before it), so a log never holds half a line followed by the next one.
 */
export function appendAll(fd: number, text: string): void {
  const before = fstatSync(fd).size;
  try {
    writeAll(fd, text);
  } catch (error) {
    try {
      ftruncateSync(fd, before);
    } catch {}
    throw error;
  }
}

export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600, { durable = true } = {}): void {
  if (!durable && !renameOrdersData(dirname(path))) durable = true;
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, "wx", mode);
    writeAll(fd, data);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
    // The rename is in the directory: fsynced too, or a power cut may bring back the old name (or none).
    if (durable) syncDirectory(dirname(path));
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Make a file another process wrote durable where it is: its data (never through a symlink: the
 * open does not follow one), then its directory entry. False when it cannot (then write it anew).
 */
export function syncFile(path: string): boolean {
  if (!fsyncRegular(path)) return false;
  syncDirectory(dirname(path));
  return true;
}

/** fsync a directory (its entries: a rename, a new file); best effort where a file system refuses it. */
function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(fd);
  } catch {
    // Some file systems (and macOS for directories) refuse it: the file itself was fsynced.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A temp file writeFileAtomic leaves only when it was interrupted: `.NAME.PID.RANDOM.tmp`. */
export const TEMP_FILE = /^\.(.+)\.(\d+)\.[0-9a-z]+\.tmp$/;

/**
 * Rewrite a small file in place, in the blocks it already has: for a full disk, where the temp file
 * of an atomic write cannot be made. Refused (false) when the new content is longer than the file
 * already holds in allocated blocks, or there is no such file. One write(2) from the start, padded
 * with `pad` to the old length and never truncated: a process killed at any moment leaves the old
 * content or the new one, never the new one on the old one's tail (JSON and the heartbeat's lines
 * read past trailing whitespace). A power cut inside the write may still tear it.
 */
export function overwriteInPlace(path: string, data: string, { durable = false, pad = " " } = {}): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);
    const stats = fstatSync(fd);
    const body = Buffer.from(data);
    const bytes = Buffer.concat([body, Buffer.alloc(Math.max(0, stats.size - body.length), pad)]);
    if (!stats.isFile() || bytes.length > stats.blocks * 512) return false;
    if (writeSync(fd, bytes, 0, bytes.length, 0) !== bytes.length) return false;
    if (durable) fsyncSync(fd);
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** fallocate(2)'s FALLOC_FL_KEEP_SIZE: the blocks are the file's, its size (what readers see) stays. */
const KEEP_SIZE = 1;

/**
 * Keep `bytes` of blocks for this file past its end (made, empty, when missing), so
 * overwriteInPlace can still grow it when the disk is full: the notify spool's ⚠️ must outlive a
 * full disk and the reboot after it, which /dev/shm would not. Best effort: false where fallocate
 * is missing (macOS) or refused (a full disk, a file system without it), or the path is no file.
 */
export function reserveTail(
  path: string,
  bytes: number,
  fallocate: ((fd: number, mode: number, offset: number, length: number) => number) | null,
): boolean {
  if (!fallocate) return false;
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    const stats = fstatSync(fd);
    if (!stats.isFile()) return false;
    if (stats.blocks * 512 >= stats.size + bytes) return true;
    return fallocate(fd, KEEP_SIZE, 0, stats.size + bytes) === 0;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
