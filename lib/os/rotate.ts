import { appendAll } from "./atomic.ts";
// Logs that stay bounded (SPEC: log_max_size, log_keep). tend's own logs (watchdog.log, downtime.log)
// rotate by rename, as logrotate does without copytruncate: NAME -> NAME.1 -> ... -> NAME.KEEP, then a
// new NAME; a concurrent writer keeps its line (it appended before, or appends to the new file).
// A spawned service's .out (or a pane's piped output) is held open by a process tend cannot ask to
// reopen it: that file is copied to NAME.1 and truncated in place. Its writer's fd has O_APPEND, so
// its next write lands at the new end: the fd keeps working, the size stays bounded; a line written
// between the copy and the truncate is lost (the window is one copy of at most log_max_size).
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { copyRegular, openAppend } from "./files.ts";

export interface Rotation {
  maxBytes: number;
  keep: number;
}

export const DEFAULT_ROTATION: Rotation = { maxBytes: 10 * 1024 * 1024, keep: 3 };

/** NAME.(keep-1) -> NAME.keep, ..., NAME.1 -> NAME.2; the oldest beyond `keep` is dropped. */
function shift(path: string, keep: number) {
  rmSync(`${path}.${keep}`, { force: true });
  for (let index = keep - 1; index >= 1; index--) {
    try {
      renameSync(`${path}.${index}`, `${path}.${index + 1}`);
    } catch {}
  }
}

/**
 * One rotation at a time per file: an exclusively created NAME.rotating (stale after 10 s: its
 * maker died). Two writers that both find the file full must not shift the chain twice.
 */
function withRotationMark(path: string, work: () => void) {
  const mark = `${path}.rotating`;
  let fd: number;
  try {
    fd = openSync(mark, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    try {
      if (Date.now() - lstatSync(mark).mtimeMs > 10_000) rmSync(mark, { force: true });
    } catch {}
    return; // another writer rotates it now
  }
  try {
    work();
  } finally {
    closeSync(fd);
    rmSync(mark, { force: true });
  }
}

/** Append `text` to a log tend owns, rotating it first when it has reached the size (never through a symlink). */
export function appendRotating(path: string, text: string, rotation: Rotation = DEFAULT_ROTATION, mode = 0o600) {
  let fd = openAppend(path, mode);
  try {
    const { size, ino: inode } = fstatSync(fd);
    if (size > 0 && size + Buffer.byteLength(text) > rotation.maxBytes) {
      withRotationMark(path, () => {
        // Still the file this writer opened (nobody rotated it meanwhile).
        if (statSync(path).ino !== inode) return;
        if (rotation.keep === 0) return ftruncateSync(fd, 0);
        shift(path, rotation.keep);
        renameSync(path, `${path}.1`);
      });
      closeSync(fd);
      fd = openAppend(path, mode);
    }
    appendAll(fd, text);
  } finally {
    closeSync(fd);
  }
}

/**
 * Bound a file another process writes with O_APPEND (a spawned service's .out): above the size,
 * copied to NAME.1 (the chain shifted) and truncated to 0 in place. Returns whether it rotated.
 */
export function rotateInPlace(path: string, rotation: Rotation = DEFAULT_ROTATION): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false; // missing, or a symlink: not ours to touch
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size <= rotation.maxBytes) return false;
    let rotated = false;
    withRotationMark(path, () => {
      if (rotation.keep > 0) {
        shift(path, rotation.keep);
        copyRegular(path, `${path}.1`);
      }
      ftruncateSync(fd, 0);
      rotated = true;
    });
    return rotated;
  } finally {
    closeSync(fd);
  }
}
