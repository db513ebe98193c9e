// After a power cut the next pass repairs what it can and says so once: temp files an interrupted
// write left (writeFileAtomic's `.NAME.PID.RANDOM.tmp`, whose writer is gone), and a run of NUL
// bytes in a log (ext4's delayed allocation, Android's noauto_da_alloc: the size was saved, the
// data was not) — `grep '\[RESTART\]'` would say "binary file matches".
import { readdirSync, rmSync, statSync } from "node:fs";
import { readRange } from "../os/files.ts";
import { join } from "node:path";
import { TEMP_FILE, writeFileAtomic } from "../os/atomic.ts";
import { statePaths } from "./dir.ts";

/** A log's tail this long is searched for NUL runs (a cut damages the end, where it was writing). */
const TAIL_BYTES = 1024 * 1024;
/** A temp file younger than this may be a write in flight (another process's): left alone. */
const TEMP_AGE_MS = 60_000;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Remove the temp files of writes that were cut off; how many. */
export function removeStaleTemps(stateDir: string, now = Date.now()): number {
  let removed = 0;
  for (const dir of [stateDir, statePaths(stateDir).services]) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = TEMP_FILE.exec(name);
      if (!match) continue;
      const path = join(dir, name);
      try {
        const info = statSync(path);
        if (!info.isFile() || now - info.mtimeMs < TEMP_AGE_MS) continue;
        if (Number(match[2]) !== process.pid && alive(Number(match[2])) && now - info.mtimeMs < 3_600_000) continue;
        rmSync(path, { force: true });
        removed++;
      } catch {}
    }
  }
  return removed;
}

/** Take the NUL runs out of a log's tail (rewritten atomically); how many bytes were NUL. */
export function removeNulRuns(path: string): number {
  const { bytes: text, start } = readRange(path, -TAIL_BYTES);
  const nuls = text.reduce((count, byte) => count + (byte === 0 ? 1 : 0), 0);
  if (nuls === 0) return 0;
  // Rewrite the whole file: the head as it was, the tail without its NULs (and a line break where
  // a run cut a line off, so the next line starts at the start of a line).
  const head = readRange(path, 0, start).bytes;
  const kept: number[] = [];
  for (let index = 0; index < text.length; index++) {
    if (text[index] !== 0) {
      kept.push(text[index]);
      continue;
    }
    while (index + 1 < text.length && text[index + 1] === 0) index++;
    if (kept.length && kept[kept.length - 1] !== 0x0a) kept.push(0x0a);
  }
  writeFileAtomic(path, Buffer.concat([head, Buffer.from(kept)]), 0o600);
  return nuls;
}
