import { lstatSync, readdirSync, renameSync } from "node:fs";
import { overwriteInPlace, writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { freshState, parseState, type ServiceState } from "../core/state.ts";
import { notJudged } from "../core/verdict.ts";
import { applySteps, latestRecorded } from "../core/clock.ts";
import { SERVICE_NAME, statePaths } from "./dir.ts";
import { clockSteps } from "./clock.ts";
import { isFullDisk, PRIVATE_MEMORY, spill, spilled, unspill } from "./spill.ts";
import { applyObservations, observationRecord } from "../core/observed.ts";
import { appendObservation, compactAt, journalOf, observationsAfter } from "./observed.ts";
import { holderRecord, tryLock, type Holder, type Lock } from "../os/lock.ts";

/** A state file is a few hundred KiB at most: never read more than this. */
const STATE_LIMIT = 16 * 1024 * 1024;

export type StateLoad = {
  state: ServiceState;
  problem: null | "missing" | string;
  /**
   * The write of its file this state is, with the observations appended after it: what a pass that only
   * observes records its own after (saveObservations). Null when the state is more than that (a clock
   * step applied since, a reset): then it is written whole.
   */
  base?: string | null;
};

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
    text ??= readRegularFile(path, STATE_LIMIT);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { state: fresh(), problem: "missing" };
    return { state: fresh(), problem: `unreadable: ${(error as Error).message}` };
  }
  const parsed = parseState(text);
  if (typeof parsed !== "string") {
    let state: ServiceState = { ...freshState(), ...parsed };
    const writeId = typeof parsed.writeId === "string" ? parsed.writeId : null;
    if (writeId) state = applyObservations(state, observationsAfter(stateDir, name, writeId));
    const stepped = applySteps(state, steps);
    return { state: stepped, problem: null, base: stepped === state ? writeId : null };
  }
  const problem = parsed;
  if (repair) {
    try {
      renameSync(path, path + ".corrupt");
    } catch {}
  }
  return { state: fresh(), problem };
}

/**
 * What tend saved of a service, read where it lies (tests, the ground-truth harness): its file as written,
 * with the observations appended after that write (state/observed.ts); no clock step applied, no defaults.
 */
export function savedState(stateDir: string, name: string): ServiceState {
  const saved = JSON.parse(readRegularFile(stateFile(stateDir, name), STATE_LIMIT));
  if (typeof saved?.writeId !== "string") return saved;
  // Without the write it follows: written back as it is (a test's edit), no observation applies twice.
  const { writeId, ...state } = applyObservations(saved, observationsAfter(stateDir, name, saved.writeId));
  return state as ServiceState;
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
 * same one (its inode, mtime and size, the clock steps taken since, and the observations journal), so a
 * page asked 20 times a second reads and parses a state only after a pass recorded something. Kept states
 * are frozen: no view changes one.
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
  // The observations appended since: any new one reads the states again (once a pass, not each request).
  const stepsTaken = `${steps.length}:${steps.at(-1)?.seq ?? 0}:${cache ? journalOf(stateDir).key : ""}`;
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
  // A new write: the observations appended after the last one are in `state` (or moot), never applied again.
  const json = JSON.stringify({ ...state, writeId: Math.random().toString(36).slice(2, 10) });
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

/**
 * Save a state that differs from the one loaded only in observations (onlyObservations): one line
 * appended to the journal (state/observed.ts) when it can say exactly that, else the file written whole,
 * without an fsync (see writeState).
 */
export function saveObservations(
  stateDir: string,
  name: string,
  loaded: StateLoad,
  next: ServiceState,
  services: number,
): SavedState {
  const record = loaded.base ? observationRecord(name, loaded.base, loaded.state, next) : null;
  if (record && appendObservation(stateDir, record, services))
    return { spilledTo: null, unspilled: false, shared: true };
  return writeState(stateDir, name, next, { durable: false });
}

/**
 * Once the journal has grown past compactAt, the pass (holding watchdog.lock) writes whole each state it
 * holds observations for, then empties it: holding every service's lock meanwhile, so no observation is
 * appended between a state's write and the journal's end. A lock its owner holds (a verification, an
 * operator) puts it off to a later pass. `names`: the configured services (the journal may name others).
 */
export async function compactObservations(stateDir: string, names: string[], holder: Holder): Promise<boolean> {
  const journal = journalOf(stateDir);
  if (journal.size < compactAt(names.length)) return false;
  const paths = statePaths(stateDir);
  const locks: Lock[] = [];
  try {
    for (const name of new Set([...names, ...journal.records.keys()])) {
      if (!SERVICE_NAME.test(name)) continue;
      const lock = await tryLock(paths.serviceLock(name));
      if (!lock) return false;
      locks.push(lock);
      lock.record(holderRecord(holder));
    }
    for (const name of journal.records.keys()) {
      if (!SERVICE_NAME.test(name)) continue;
      const { state, problem } = readState(stateDir, name, { repair: false });
      if (problem === null) writeState(stateDir, name, state, { durable: false });
    }
    writeFileAtomic(paths.observations, "", 0o600, { durable: false });
    return true;
  } finally {
    for (const lock of locks) lock.release();
  }
}

interface SavedState {
  /** Where a state that could not be written was kept (state/spill.ts's words), or null. */
  spilledTo: string | null;
  unspilled: boolean;
  inPlace?: boolean;
  /** Seen by the other processes (a loop, a pass, an operator): its file, or /dev/shm; not this one's memory. */
  shared: boolean;
}
