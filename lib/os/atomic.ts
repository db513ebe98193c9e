import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * Write a file so readers see the old content or the new, never a torn one: temp file beside
 * it, fsync, rename. A symlink at `path` is replaced, never written through. `durable: false`
 * skips the fsync (the caller accepts that a power cut may lose this write: see writeState).
 */
export function writeFileAtomic(path: string, data: string, mode = 0o600, { durable = true } = {}): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, "wx", mode);
    writeSync(fd, data);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
}
