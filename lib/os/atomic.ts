import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * Write a file so readers see the old content or the new, never a torn one: temp file beside
 * it, fsync, rename. A symlink at `path` is replaced, never written through. `durable: false`
 * skips the fsync (the caller accepts that a power cut may lose this write: see writeState).
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600, { durable = true } = {}): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, "wx", mode);
    if (typeof data === "string") writeSync(fd, data);
    else writeSync(fd, data);
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

/** fsync a directory (its entries: a rename, a new file); best effort where a file system refuses it. */
export function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    fsyncSync(fd);
  } catch {
    // Some file systems (and macOS for directories) refuse it: the file itself was fsynced.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A temp file writeFileAtomic leaves only when it was interrupted: `.NAME.PID.RANDOM.tmp`. */
export const TEMP_FILE = /^\.(.+)\.(\d+)\.[0-9a-z]+\.tmp$/;
