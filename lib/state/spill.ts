import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
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

const held = new Map<string, { text: string; at: number }>();

export const SHM = "/dev/shm";

const spillPrefixes = new Map<string, string>();
/** The spill dir this process found or made, by prefix. */
const found = new Map<string, string>();
/** /dev/shm's mtime when it was last listed and held no spill dir of this prefix. */
const noneAt = new Map<string, number>();
/** The spill dirs' common prefix for a state dir: hashed once per state dir (every readState asks). */
function spillPrefix(stateDir: string, uid: number): string {
  const key = `${uid}:${stateDir}`;
  let prefix = spillPrefixes.get(key);
  if (!prefix) {
    // Bun's own hasher: node:crypto (and the streams it loads) cost a pass ~3 ms to load (bench battery).
    prefix = `tend-${uid}-${new Bun.CryptoHasher("sha256").update(stateDir).digest("hex").slice(0, 16)}-`;
    spillPrefixes.set(key, prefix);
  }
  return prefix;
}

/** A real directory of this user's, closed to others: never a squatter's (/dev/shm is everyone's). */
function ours(path: string, uid: number): boolean {
  try {
    const info = lstatSync(path);
    return info.isDirectory() && info.uid === uid && (info.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/**
 * This user's spill directory for a state dir: `/dev/shm/tend-UID-HASH-RANDOM`, made by mkdtemp
 * (exclusive, a name nobody can guess ahead), found again by the next process by its prefix, its
 * owner and its mode: another user's entry there, whatever its name, is never used, so squatting the
 * name cannot turn the fallback off. null where there is none (and `create` is false, or it fails).
 */
export function spillDir(stateDir: string, { create = false } = {}): string | null {
  const uid = process.getuid?.() ?? 0;
  const prefix = spillPrefix(stateDir, uid);
  const known = found.get(prefix);
  if (known && ours(known, uid)) return known;
  // Every readState asks (a pass: each service's): /dev/shm is listed again only
  // when its own mtime moved (an entry made or removed there), not on every call.
  let listedAt: number | null = null;
  try {
    listedAt = statSync(SHM).mtimeMs;
  } catch {}
  if (!create && listedAt !== null && noneAt.get(prefix) === listedAt) return null;
  let names: string[] = [];
  try {
    names = readdirSync(SHM).filter((name) => name.startsWith(prefix));
  } catch {}
  const mine = names.map((name) => join(SHM, name)).find((path) => ours(path, uid));
  if (mine) return (found.set(prefix, mine), noneAt.delete(prefix), mine);
  if (listedAt !== null) noneAt.set(prefix, listedAt);
  if (!create) return null;
  try {
    const made = mkdtempSync(join(SHM, prefix));
    chmodSync(made, 0o700);
    return ours(made, uid) ? (found.set(prefix, made), made) : null;
  } catch {
    return null;
  }
}
/** Where a spilled state is seen by this process alone (`spill`'s words for it begin so). */
export const PRIVATE_MEMORY = "in this process's memory only";

/** Keep a state that cannot be written: in memory, and on /dev/shm where there is one. Where it went. */
export function spill(stateDir: string, name: string, text: string): string {
  held.set(`${stateDir}\0${name}`, { text, at: Date.now() });
  // Twice: another process may remove the directory it found empty between our finding and writing.
  for (let attempt = 0; attempt < 2; attempt++) {
    const dir = spillDir(stateDir, { create: true });
    if (!dir) return `${PRIVATE_MEMORY} (no /dev/shm)`;
    try {
      writeFileAtomic(join(dir, `${name}.json`), text, 0o600, { durable: false });
      return `in memory (${dir})`;
    } catch {}
  }
  return PRIVATE_MEMORY;
}

/**
 * A spilled state of this service: /dev/shm's (shared by every process: a pass, the loop, an
 * operator's `stop` or `pause`), else this process's own; null when none. /dev/shm's first: a loop
 * that kept its own copy would otherwise undo what an operator wrote there since. This process's own
 * yields to its `file` written after it (by an operator, once there was room): never older state.
 */
export function spilled(stateDir: string, name: string, file?: string): string | null {
  const dir = spillDir(stateDir);
  if (dir) {
    try {
      return readRegularFile(join(dir, `${name}.json`), 16 * 1024 * 1024);
    } catch {}
  }
  const own = held.get(`${stateDir}\0${name}`);
  if (!own) return null;
  try {
    if (file && lstatSync(file).mtimeMs > own.at) {
      held.delete(`${stateDir}\0${name}`);
      return null;
    }
  } catch {}
  return own.text;
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
  removeSpilled(path);
  return true;
}

/**
 * A spilled copy is no longer needed: removed, and its directory with it once it holds nothing (a
 * host whose disk filled once keeps no empty directory on /dev/shm until its next reboot). A copy
 * another process spills meanwhile makes the directory again (spillDir lists /dev/shm anew).
 */
export function removeSpilled(path: string) {
  rmSync(path, { force: true });
  try {
    rmdirSync(dirname(path)); // only when empty: ENOTEMPTY otherwise, and the directory stays
  } catch {}
}
