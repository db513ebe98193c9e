import { lstatSync, readdirSync, renameSync } from "node:fs";
import { overwriteInPlace, writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { freshState, parseState, type ServiceState } from "../core/state.ts";
import { notJudged } from "../core/verdict.ts";
import { applySteps, latestRecorded } from "../core/clock.ts";
import { statePaths } from "./dir.ts";
import { clockSteps } from "./clock.ts";
import { isFullDisk, PRIVATE_MEMORY, spill, spilled, unspill } from "./spill.ts";
import { TendError } from "../core/errors.ts";

/** A state file is a few hundred KiB at most: never read more than this. */
const STATE_LIMIT = 16 * 1024 * 1024;

export type StateLoad = { state: ServiceState; problem: null | "missing" | string };

const stateFile = (stateDir: string, name: string) => statePaths(stateDir).service(name);

/**
 * A missing file gives a fresh state ("missing"); a corrupt one is kept as NAME.json.corrupt (repair)
 * and reset. Every state comes with the clock steps it has not taken applied (core/clock.ts): its
 * times are in tend's time now, whoever wrote it last.
 */
export function readState(stateDir: string, name: string, { repair = true } = {}): StateLoad {
  const steps = clockSteps(stateDir);
  const fresh = () => ({ ...freshState(), clockStep: steps.at(-1)?.seq ?? 0 });
  const path = stateFile(stateDir, name);
  // Kept while its disk was full (state/spill.ts): newer than its file.
  let text: string | null = spilled(stateDir, name, path);
  try {
    text ??= readRegularFile(path, STATE_LIMIT, { noFollow: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { state: fresh(), problem: "missing" };
    return { state: fresh(), problem: `unreadable: ${(error as Error).message}` };
  }
  const parsed = parseState(text);
  if (typeof parsed !== "string") return { state: applySteps({ ...freshState(), ...parsed }, steps), problem: null };
  const problem = parsed;
  if (repair) {
    try {
      renameSync(path, path + ".corrupt");
    } catch {}
  }
  return { state: fresh(), problem };
}

/**
 * The latest time any service's state records as having happened (-Infinity: none): read once at a
 * new boot, where the boot before may have recorded after its last heartbeat (a verification's end).
 */
export function latestRecordedIn(stateDir: string): number {
  let names: string[] = [];
  try {
    names = readdirSync(statePaths(stateDir).services).filter((file) => file.endsWith(".json"));
  } catch {}
  return names.reduce(
    (latest, file) => Math.max(latest, latestRecorded(readState(stateDir, file.slice(0, -5), { repair: false }).state)),
    -Infinity,
  );
}

/** A service's state as what only reads it sees it (status, stats, report, serve, the loop): never repaired. */
export type StateReader = (name: string) => ServiceState;

/**
 * What a long-running reader (serve) keeps of the states it read: each file's state while the file is the
 * same one (its inode, mtime and size, and the clock steps taken since), so a page asked 20 times a second
 * reads and parses a state only after a pass wrote it. Kept states are frozen: no view changes one.
 */
export type StateCache = Map<string, { key: string; state: ServiceState }>;

/** An object and everything in it made read-only (a state shared by every request of a server). */
function frozen<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) frozen(inner);
  }
  return value;
}

/**
 * Reads states from `stateDir`; with `once`, each at most once (a page shows every state three ways);
 * with `cache`, a state whose file has not changed since it was kept is not read again (see StateCache).
 */
export function stateReader(
  stateDir: string,
  { once = false, cache }: { once?: boolean; cache?: StateCache } = {},
): StateReader {
  const read: StateReader = (name) => {
    const { state, problem } = readState(stateDir, name, { repair: false });
    if (problem === null || problem === "missing") return state;
    // A file the next pass will reset (or refuses, a symlink): shown as not judged, saying why.
    return { ...state, verdict: notJudged(null, `state file ${problem}`, Date.now()) };
  };
  const steps = cache ? clockSteps(stateDir) : [];
  const stepsTaken = `${steps.length}:${steps.at(-1)?.seq ?? 0}`;
  const cached: StateReader = !cache
    ? read
    : (name) => {
        const path = stateFile(stateDir, name);
        let key: string | null = null;
        try {
          const info = lstatSync(path);
          if (info.isFile()) key = `${info.ino}:${info.mtimeMs}:${info.size}:${stepsTaken}`;
        } catch {}
        const kept = cache.get(name);
        // A copy kept while the disk was full is newer than the file: never the cache's.
        if (key !== null && kept?.key === key && spilled(stateDir, name, path) === null) return kept.state;
        const state = read(name);
        if (key === null) cache.delete(name);
        else cache.set(name, { key, state: frozen(state) });
        return state;
      };
  if (!once) return cached;
  const seen = new Map<string, ServiceState>();
  return (name: string) => {
    let state = seen.get(name);
    if (!state) seen.set(name, (state = cached(name)));
    return state;
  };
}

/**
 * Save a service's state (temp file + rename). `durable` (the default) fsyncs it first: every
 * write that records a decision. A pass that only observed a service answering as before skips
 * it (see onlyObservations), sparing a phone a flash flush per service every pass: on ext4 and
 * btrfs a rename over the old file writes the new data first, so a power cut leaves the old file
 * or the new one; on a file system that does not, a cut within the journal's commit interval can
 * leave it empty, and the next pass logs and resets it like any corrupt state file.
 */
/**
 * The state's text, padded with spaces (JSON reads past them) to a whole number of 4 KiB blocks with
 * at least 2 KiB spare: on a full disk the next states are rewritten in those blocks (durable across
 * a reboot) rather than kept in RAM, which a reboot loses (found by the ground-truth harness: a
 * restart made on a full disk, the host rebooted before the disk freed, its count gone).
 */
function withSlack(json: string): string {
  const bytes = Buffer.byteLength(json) + 1;
  const blocks = Math.ceil((bytes + 2048) / 4096);
  return json + " ".repeat(blocks * 4096 - bytes) + "\n";
}

export function writeState(stateDir: string, name: string, state: ServiceState, { durable = true } = {}): SavedState {
  const json = JSON.stringify(state);
  const text = withSlack(json);
  try {
    writeFileAtomic(stateFile(stateDir, name), text, 0o600, { durable });
  } catch (error) {
    // A full disk still lets a pass judge and restart: the state is rewritten in the blocks its file
    // has (it outlives a reboot, as memory does not), else kept in memory (state/spill.ts).
    if (!isFullDisk(error)) throw error;
    if (overwriteInPlace(stateFile(stateDir, name), json + "\n", { durable }))
      return { spilledTo: null, unspilled: unspill(stateDir, name), inPlace: true, shared: true };
    const spilledTo = spill(stateDir, name, text);
    return { spilledTo, unspilled: false, shared: !spilledTo.startsWith(PRIVATE_MEMORY) };
  }
  return { spilledTo: null, unspilled: unspill(stateDir, name), shared: true };
}

export interface SavedState {
  /** Where a state that could not be written was kept (state/spill.ts's words), or null. */
  spilledTo: string | null;
  unspilled: boolean;
  inPlace?: boolean;
  /** Seen by the other processes (a loop, a pass, an operator): its file, or /dev/shm; not this one's memory. */
  shared: boolean;
}

/**
 * Save what an operator did, or refuse it: kept in the operator's own process only (a full disk where
 * there is no /dev/shm, as on Android), a loop would never see it and undo it — a pause said done that
 * is not. Exit 1, nothing changed that anyone else sees.
 */
export function saveForOperator(stateDir: string, name: string, state: ServiceState, doing: string): void {
  const saved = writeState(stateDir, name, state);
  if (saved.shared) return;
  throw new TendError(
    `cannot ${doing}: its state cannot be saved (no space left on the device) and would be kept ` +
      `${saved.spilledTo}, which the watchdog never sees: nothing done; free space in ${stateDir}, then try again`,
    1,
  );
}
