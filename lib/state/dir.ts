import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  statfsSync,
  type Stats,
} from "node:fs";
import { dirname, join } from "node:path";
import { TendError } from "../core/errors.ts";
import { inWords } from "../os/files.ts";

const pathsCache = new Map<string, ReturnType<typeof makePaths>>();

/** Every path in the state dir (computed once per dir: a pass asks for them per service). */
export function statePaths(stateDir: string) {
  let paths = pathsCache.get(stateDir);
  if (!paths) pathsCache.set(stateDir, (paths = Object.freeze(makePaths(stateDir))));
  return paths;
}

/** 1-64 of [A-Za-z0-9_.@-], not starting with - or . (never an option, never a hidden file). */
export const SERVICE_NAME = /^[A-Za-z0-9_@][A-Za-z0-9_.@-]{0,63}$/;

/** Every file tend keeps in its state dir, in one place. */
function makePaths(stateDir: string) {
  const at = (name: string) => join(stateDir, name);
  return {
    dir: stateDir,
    /** The default watchdog log (`[watchdog] log` may put it elsewhere). */
    log: at("watchdog.log"),
    downtime: at("downtime.log"),
    heartbeat: at("heartbeat"),
    /** The heartbeat URL's standing: refused for good (Uptime Kuma's unknown monitor), and since when. */
    heartbeatPing: at("heartbeat-ping.json"),
    lock: at("watchdog.lock"),
    /** Held by a `watchdog run` loop for its life: one loop per state dir, and no cron pass beside it. */
    loopLock: at("loop.lock"),
    notifyLock: at("notify.lock"),
    spool: at("notify-spool.jsonl"),
    /** Messages refused for good by their receiver. */
    dead: at("notify-dead.jsonl"),
    notifyState: at("notify-state.json"),
    /** What passes that only observed a service appended since its state file was written (state/observed.ts). */
    observations: at("observations.jsonl"),
    /** Where the installed crontab line appends its output when cron cannot mail. */
    cronLog: at("cron.log"),
    /** Per-service files live apart, so no service name can collide with tend's own files. */
    services: at("services"),
    /** One service's state: strikes, timestamps, counters, histories. */
    service: (name: string) => join(stateDir, "services", `${name}.json`),
    /** A spawned service's output, unless `restart.output` says otherwise. */
    serviceOutput: (name: string) => join(stateDir, "services", `${name}.out`),
    /**
     * One owner per service: held by whoever judges, restarts or verifies it (a pass, the loop's
     * crash watch, blogtunnel for its service, an operator's command), through the whole verification.
     */
    serviceLock: (name: string) => join(stateDir, "services", `${name}.lock`),
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
    throw new TendError(
      `state file ${path} is a symlink (to ${link}): refused, nothing read or written through it`,
      1,
      "symlink",
    );
  }
}

/**
 * The state dir must be tend's own: this user's, not writable by group or others, not a
 * symlink. Created 0700 (with services/) when missing.
 */
export function ensureStateDir(stateDir: string): void {
  refuseSharedStorage(stateDir);
  for (const path of [stateDir, statePaths(stateDir).services]) {
    let info;
    try {
      info = lstatSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT")
        throw new TendError(`state dir ${path}: ${inWords(error)}`, 1);
    }
    if (info) refuseForeign(path, info);
    else makeDir(path);
  }
}

/** Android's shared storage: paths, and the file systems it is served by (statfs f_type). */
const SHARED_PATHS = ["/sdcard", "/storage/", "/mnt/sdcard", "/mnt/media_rw/", "/data/media/"];
const SHARED_TYPES: Record<number, string> = {
  0x4d44: "FAT",
  0x2011bab0: "exFAT",
  0x5dca2df5: "sdcardfs",
  0x6e736673: "NTFS",
};

/** statfs f_type of the nearest existing directory at or above `path`, or null. */
export function fileSystemType(path: string): number | null {
  for (let dir = path; ; dir = dirname(dir)) {
    try {
      return Number(statfsSync(dir).type);
    } catch {
      if (dir === dirname(dir)) return null;
    }
  }
}

/** Why `stateDir` is on Android's shared storage (its path, or a file system without modes), or null. */
export function sharedStorage(stateDir: string): string | null {
  if (SHARED_PATHS.some((prefix) => `${stateDir}/`.startsWith(prefix))) return "Android's shared storage";
  const type = fileSystemType(stateDir);
  return type === null ? null : (SHARED_TYPES[type] ?? null);
}

/**
 * A state dir on Android's shared storage (/sdcard, /storage/…: FAT or FUSE) would have no modes,
 * no symlinks to refuse and perhaps no flock(2): refused, with a place that works.
 */
function refuseSharedStorage(stateDir: string) {
  const why = sharedStorage(stateDir);
  if (why)
    throw new TendError(
      `state dir ${stateDir} is on shared storage (${why}): no file modes, no symlink checks, and locks may ` +
        `not work there; use a place under $HOME (the default ~/.local/state/tend, or state_dir = "~/tend-state")`,
      1,
      "state-dir",
    );
}

/** Per-service files of earlier versions (`NAME.json`, `NAME.out` beside tend's own files) move into services/. */
export function moveLegacyFiles(stateDir: string, serviceNames: string[]): void {
  const paths = statePaths(stateDir);
  const present = new Set(readdirSync(stateDir)); // one read of the dir, not two failed lstats per service
  for (const name of serviceNames) {
    for (const [file, now] of [
      [`${name}.json`, paths.service(name)],
      [`${name}.out`, paths.serviceOutput(name)],
    ]) {
      if (!present.has(file)) continue;
      const old = join(stateDir, file);
      try {
        if (lstatSync(old).isFile() && !existsSync(now)) renameSync(old, now);
      } catch {}
    }
  }
}

function makeDir(path: string) {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    chmodSync(path, 0o700);
  } catch (error) {
    throw new TendError(`cannot create state dir ${path}: ${inWords(error)}`, 1);
  }
}

/** A directory that another user owns, or that group or others may write, is not tend's to write in. */
function refuseForeign(path: string, info: Stats) {
  if (info.isSymbolicLink()) throw new TendError(`state dir ${path} is a symlink: refusing to write through it`, 1);
  if (!info.isDirectory()) throw new TendError(`state dir ${path} is not a directory`, 1);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new TendError(
      `state dir ${path} belongs to uid ${info.uid}, not to this user (uid ${uid}): refusing to write there; ` +
        `run tend as its owner, or give it to this user: chown ${uid} ${path}`,
      1,
    );
  }
  if (info.mode & 0o022) {
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    throw new TendError(
      `state dir ${path} is writable by group or others (mode ${mode}): refusing to write there; ` +
        `fix: chmod go-w ${path}`,
      1,
    );
  }
}
