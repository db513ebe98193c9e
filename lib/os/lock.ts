import { closeSync, ftruncateSync, openSync, rmSync, writeSync } from "node:fs";
import { TendError } from "../core/errors.ts";
import { openAppend, readRegularFile } from "./files.ts";
import { libc, type Libc } from "./libc.ts";
import { isRunning, processGone, readProc } from "./proc.ts";

export interface Lock {
  release(): void;
  /** Say who holds it (a loop's PID), for the one that finds it held. */
  record(text: string): void;
}

const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = process.platform === "darwin" ? 35 : 11;
/** errno numbers flock(2) may leave, in words (Linux and Android; macOS's EWOULDBLOCK and ENOTSUP differ). */
const FLOCK_ERRORS: Record<number, string> = {
  4: "interrupted",
  9: "bad file descriptor",
  22: "invalid argument",
  37: "no locks available (ENOLCK)",
  38: "function not implemented (ENOSYS: shared storage such as /sdcard cannot lock)",
  45: "operation not supported",
  95: "operation not supported (EOPNOTSUPP)",
};

/**
 * Take an exclusive lock without waiting: flock(2), which the kernel drops if this process dies;
 * where flock cannot be loaded, an O_EXCL file holding PID + start time (stale when that
 * process is gone). Returns null when another holder has it.
 */
export async function tryLock(
  path: string,
  { useFlock = true, lib }: { useFlock?: boolean; lib?: Libc | null } = {},
): Promise<Lock | null> {
  const loaded = useFlock ? (lib ?? (await libc())) : null;
  if (loaded) {
    const fd = openAppend(path); // never through a symlink
    if (loaded.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
      const errno = loaded.errno();
      closeSync(fd);
      if (errno === EWOULDBLOCK || errno === 0) return null; // held by another
      // Never read as "another pass runs": that would skip every pass, silently.
      const said = FLOCK_ERRORS[errno] ?? `errno ${errno}`;
      throw new TendError(`cannot lock ${path}: flock(2) failed: ${said}`, 1, "lock-failed");
    }
    return {
      // The record goes with the lock: one read while the next holder has not written its own says nothing.
      release: () => {
        try {
          ftruncateSync(fd, 0);
        } catch {}
        closeSync(fd);
      },
      // Best effort: a full disk leaves no record (a pass then takes the holder for a pass, as before).
      record(text) {
        try {
          ftruncateSync(fd, 0);
          writeSync(fd, text);
        } catch {}
      },
    };
  }
  return tryLockFile(path + ".pid");
}

/**
 * Who holds a lock, as its holder records it: a pass (watchdog.lock, or a service's lock while it
 * judges it), the loop, blogtunnel, an operator's command.
 */
export type Holder = "pass" | "loop" | "blogtunnel" | "operator";
const HOLDERS: readonly Holder[] = ["pass", "loop", "blogtunnel", "operator"];

/** A lock's record: who holds it and its PID. */
export interface LockHolder {
  who: Holder;
  pid: number;
}

/** The record a holder writes in its lock: `WHO pid N`, one line. */
export const holderRecord = (who: Holder) => `${who} pid ${process.pid}\n`;

/**
 * The one reader of a lock's record (the file, or the O_EXCL lock file beside it): null when there is
 * none or it is not one. A bare `pid N` is a loop's record as tend wrote it before the record named
 * its holder (a loop still running the old binary after a self-update).
 */
export function readHolder(path: string): LockHolder | null {
  for (const file of [path, path + ".pid"]) {
    let text = "";
    try {
      text = readRegularFile(file, 256).trim();
    } catch {}
    const record = /^(?:(\w+) )?pid (\d+)$/.exec(text);
    if (!record) continue;
    const who = (record[1] ?? "loop") as Holder;
    if (HOLDERS.includes(who)) return { who, pid: Number(record[2]) };
  }
  return null;
}

/** A lock's holder in words, for the one that finds it held. */
export const holderWords = (holder: LockHolder | null) =>
  holder ? `${holder.who} pid ${holder.pid}` : "its holder unrecorded";

/** How long a lock whose recorded holder is gone is waited for (see takeLock). */
const ORPHAN_WAIT_MS = 1000;

/**
 * tryLock, then its record written (`record`, e.g. holderRecord("pass")). A lock found held while the
 * process its record names is gone is waited for a moment: that holder was killed (SIGKILL, the OOM
 * killer) while a child it was starting sat between vfork and exec, and that child holds a copy of
 * the lock's descriptor until its exec closes it. Without the wait, the next pass skipped (and left
 * the killed pass's restart unfinished), or the next loop said "another loop watches" and exited.
 * A holder alive, or no record: null at once, as before.
 */
export async function takeLock(path: string, record: string, sleep = Bun.sleep): Promise<Lock | null> {
  let lock = await tryLock(path);
  if (!lock) {
    const holder = readHolder(path);
    if (holder && processGone(holder.pid)) lock = await waitLock(path, ORPHAN_WAIT_MS, sleep);
  }
  lock?.record(record);
  return lock;
}

/** Wait for the lock, polling, up to waitMs; null if it stayed held. `who`, if given, is recorded in it. */
export async function waitLock(
  path: string,
  waitMs: number,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
  who?: Holder,
): Promise<Lock | null> {
  const deadline = performance.now() + waitMs;
  let lock = await tryLock(path);
  while (!lock && performance.now() < deadline) {
    await sleep(50);
    lock = await tryLock(path);
  }
  if (who) lock?.record(holderRecord(who));
  return lock;
}

/**
 * A `watchdog run` loop holds this lock (and says `loop pid N` in it). Another pass that is only looking,
 * as this one does, holds it for a moment and says nothing: that is no loop (five passes started at
 * once must not take each other for loops).
 */
export async function loopRuns(path: string, sleep: (ms: number) => Promise<void> = Bun.sleep): Promise<boolean> {
  const started = performance.now();
  for (;;) {
    const lock = await tryLock(path);
    if (lock) {
      lock.release();
      return false;
    }
    // A loop's record names a live process (a loop killed as it started a child leaves its record
    // with the lock in that child's hands for a moment: the second below covers it).
    const holder = readHolder(path);
    if (holder?.who === "loop" && !processGone(holder.pid)) return true;
    if (performance.now() - started > 1000) return true; // held a second without a word: a loop starting up
    await sleep(5);
  }
}

function tryLockFile(path: string): Lock | null {
  const me = readProc(process.pid);
  const identity = `${process.pid} ${me?.startTicks ?? "?"}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, identity);
      closeSync(fd);
      return { release: () => rmSync(path, { force: true }), record: () => {} }; // it holds the PID already
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder = "";
      try {
        holder = readRegularFile(path, 256);
      } catch {}
      const [pid, startTicks] = holder.trim().split(" ");
      const info = readProc(Number(pid));
      if (isRunning(info) && info.startTicks === startTicks) return null;
      rmSync(path, { force: true }); // stale: its holder is gone
    }
  }
  return null;
}

/** flock(2) can be loaded here (else the O_EXCL lock file stands in). */
export const flockAvailable = async () => (await libc()) !== null;
