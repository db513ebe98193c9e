import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { openAppend, readRegularFile } from "./files.ts";
import { isRunning, readProc } from "./proc.ts";

export interface Lock {
  release(): void;
}

const LOCK_EX = 2;
const LOCK_NB = 4;
const LIBC: Record<string, string[]> = {
  linux: ["libc.so.6", "libc.so"], // glibc; Android's bionic
  android: ["libc.so"],
  darwin: ["libSystem.B.dylib"],
};

type Flock = (fd: number, operation: number) => number;
let flockFn: Flock | null | undefined;

async function loadFlock(): Promise<Flock | null> {
  if (flockFn !== undefined) return flockFn;
  flockFn = null;
  try {
    const { dlopen, FFIType } = await import("bun:ffi");
    for (const name of LIBC[process.platform] ?? []) {
      try {
        const lib = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
        flockFn = lib.symbols.flock as Flock;
        break;
      } catch {}
    }
  } catch {}
  return flockFn;
}

/**
 * Take an exclusive lock without waiting: flock(2), which the kernel drops if this process dies;
 * where flock cannot be loaded, an O_EXCL file holding PID + start time (stale when that
 * process is gone). Returns null when another holder has it.
 */
export async function tryLock(path: string, { useFlock = true } = {}): Promise<Lock | null> {
  const flock = useFlock ? await loadFlock() : null;
  if (flock) {
    const fd = openAppend(path); // never through a symlink
    if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
      closeSync(fd);
      return null;
    }
    return { release: () => closeSync(fd) };
  }
  return tryLockFile(path + ".pid");
}

/** Wait for the lock, polling, up to waitMs; null if it stayed held. */
export async function waitLock(
  path: string,
  waitMs: number,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<Lock | null> {
  const deadline = Date.now() + waitMs;
  let lock = await tryLock(path);
  while (!lock && Date.now() < deadline) {
    await sleep(50);
    lock = await tryLock(path);
  }
  return lock;
}

function tryLockFile(path: string): Lock | null {
  const me = readProc(process.pid);
  const identity = `${process.pid} ${me?.startTicks ?? "?"}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, identity);
      closeSync(fd);
      return { release: () => rmSync(path, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder = "";
      try {
        holder = readRegularFile(path, 256, { noFollow: true });
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
export const flockAvailable = async () => (await loadFlock()) !== null;
