import { chmodSync, lstatSync, mkdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { TendError } from "../core/errors.ts";

/** Every file tend keeps in its state dir, in one place. */
export function statePaths(stateDir: string) {
  const at = (name: string) => join(stateDir, name);
  return {
    dir: stateDir,
    /** The default watchdog log (`[watchdog] log` may put it elsewhere). */
    log: at("watchdog.log"),
    downtime: at("downtime.log"),
    heartbeat: at("heartbeat"),
    lock: at("watchdog.lock"),
    notifyLock: at("notify.lock"),
    spool: at("notify-spool.jsonl"),
    notifyState: at("notify-state.json"),
    /** One service's state: strikes, timestamps, counters, histories. */
    service: (name: string) => at(`${name}.json`),
    /** A spawned service's output, unless `restart.output` says otherwise. */
    serviceOutput: (name: string) => at(`${name}.out`),
  };
}
export type StatePaths = ReturnType<typeof statePaths>;

/** A state file that is a symlink would be read and replaced through it: refuse it (the service is not judged). */
export function refuseSymlink(path: string): void {
  let link: string | null = null;
  try {
    if (lstatSync(path).isSymbolicLink()) link = readlinkSync(path);
  } catch {}
  if (link !== null) {
    throw new TendError(`state file ${path} is a symlink (to ${link}): refused, nothing read or written through it`, 1);
  }
}

/** Create the state dir 0700; refuse a symlink (state must not be written through to elsewhere). */
export function ensureStateDir(stateDir: string): void {
  try {
    const info = lstatSync(stateDir);
    if (info.isSymbolicLink())
      throw new TendError(`state dir ${stateDir} is a symlink: refusing to write through it`, 1);
    if (!info.isDirectory()) throw new TendError(`state dir ${stateDir} is not a directory`, 1);
    return;
  } catch (error) {
    if (error instanceof TendError) throw error;
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new TendError(`state dir ${stateDir}: ${(error as Error).message}`, 1);
    }
  }
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    chmodSync(stateDir, 0o700);
  } catch (error) {
    throw new TendError(`cannot create state dir ${stateDir}: ${(error as NodeJS.ErrnoException).code ?? error}`, 1);
  }
}
