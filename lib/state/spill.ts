import { lstatSync, mkdirSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";

/**
 * Where a service's state goes while its state dir's disk is full (a chatty `.out`, a full /data):
 * memory. Within a process, a map; across processes (cron's passes), a directory of this user's
 * on /dev/shm, a tmpfs: a strike counted while the disk is full still counts at the next pass, so
 * a frozen service is still restarted. A state is written back (and its spilled copy removed) as
 * soon as its own file can be written again. Where there is no /dev/shm (Android), the map only:
 * a loop keeps its strikes, a pass from cron says it cannot.
 */

/** A full disk, or a full quota: what spilling answers (anything else is the operator's to fix). */
export const isFullDisk = (error: unknown) =>
  ["ENOSPC", "EDQUOT"].includes((error as NodeJS.ErrnoException)?.code ?? "");

const held = new Map<string, string>();

const SHM = "/dev/shm";

const spillNames = new Map<string, string>();
/** The spill dir's name: hashed once per state dir (every readState asks). */
function spillName(stateDir: string, uid: number): string {
  const key = `${uid}:${stateDir}`;
  let name = spillNames.get(key);
  if (!name) {
    name = join(SHM, `tend-${uid}-${createHash("sha256").update(stateDir).digest("hex").slice(0, 16)}`);
    spillNames.set(key, name);
  }
  return name;
}

/** This user's spill directory for a state dir, made 0700 (another user's or a symlink: none). */
export function spillDir(stateDir: string, { create = false } = {}): string | null {
  const uid = process.getuid?.() ?? 0;
  const dir = spillName(stateDir, uid);
  try {
    if (create) mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") return null;
  }
  try {
    const info = lstatSync(dir);
    // /dev/shm is everyone's: only a real directory of this user's, closed to others, is used.
    return info.isDirectory() && info.uid === uid && (info.mode & 0o077) === 0 ? dir : null;
  } catch {
    return null;
  }
}

/** Keep a state that cannot be written: in memory, and on /dev/shm where there is one. Where it went. */
export function spill(stateDir: string, name: string, text: string): string {
  held.set(`${stateDir}\0${name}`, text);
  const dir = spillDir(stateDir, { create: true });
  if (!dir) return "in this process's memory only (no /dev/shm)";
  try {
    writeFileAtomic(join(dir, `${name}.json`), text, 0o600, { durable: false });
    return `in memory (${dir})`;
  } catch {
    return "in this process's memory only";
  }
}

/** A spilled state of this service, newest first: this process's, else /dev/shm's; null when none. */
export function spilled(stateDir: string, name: string): string | null {
  const mine = held.get(`${stateDir}\0${name}`);
  if (mine !== undefined) return mine;
  const dir = spillDir(stateDir);
  if (!dir) return null;
  try {
    return readRegularFile(join(dir, `${name}.json`), 16 * 1024 * 1024, { noFollow: true });
  } catch {
    return null;
  }
}

/** Its own file was written: the spilled copy is no longer the state. true when there was one. */
export function unspill(stateDir: string, name: string): boolean {
  const had = held.delete(`${stateDir}\0${name}`);
  const dir = spillDir(stateDir);
  if (!dir) return had;
  const path = join(dir, `${name}.json`);
  try {
    lstatSync(path);
  } catch {
    return had;
  }
  rmSync(path, { force: true });
  return true;
}
