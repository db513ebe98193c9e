import { OBSERVATIONS, type ServiceState } from "./state.ts";

// What a pass that only observed a service (it answered as before: a new probe, a latency sample, an RSS
// look) changed in its state, as one line of the state dir's observations.jsonl instead of a new state
// file. Rewriting 20 state files a pass (temp file, rename: on ext4 a rename over a file starts writing
// its data; on a phone's /data, an fsync each) was ~4 ms of a ~22 ms cron pass here and 505 KiB written
// to a phone-like /data a pass (make battery); one appended line a service is not. A record applies to
// the state file it follows (its `writeId`, stamped by each whole write); a whole write (any decision,
// or the journal's compaction) makes the records before it moot.

/** Arrays that grow at the end and lose their oldest: a record carries the items added, not the array. */
const GROWING = new Set<string>(["rss", "outputMarks"]);
/** How many new items (latency entries, array items) one record may carry before a whole write is simpler. */
const MOST_ADDED = 8;

export interface ObservationRecord {
  /** The service. */
  s: string;
  /** The write of its state file these observations follow (ServiceState.writeId). */
  w: string;
  /** Keys set to these values. */
  p: Record<string, unknown>;
  /** Latency entries appended to latencyLog, before the oldest are dropped down to latencyCount. */
  l?: string;
  /** Arrays grown: key → [length kept, ...items appended]. */
  a?: Record<string, [number, ...unknown[]]>;
}

/** The state with these records' observations applied, in order (one copy of the state, whatever their number). */
export function applyObservations(state: ServiceState, records: readonly ObservationRecord[]): ServiceState {
  if (records.length === 0) return state;
  const next = { ...state } as ServiceState & Record<string, unknown>;
  // The latency entries of every record, appended at once: the oldest dropped down to the last count is
  // what dropping after each would leave (a log never keeps more than it had plus what was added).
  let [log, count] = [state.latencyLog, state.latencyCount];
  let added: string[] = [];
  for (const record of records) {
    Object.assign(next, record.p);
    // A log carried whole (not grown from the one before) is where the entries after it are added.
    if (typeof record.p.latencyLog === "string") [log, count, added] = [next.latencyLog, next.latencyCount, []];
    if (typeof record.l === "string" && record.l !== "") added.push(record.l);
    if (record.a)
      for (const [key, [kept, ...items]] of Object.entries(record.a)) {
        const before = next[key];
        next[key] = kept > 0 ? [...(Array.isArray(before) ? before : []), ...items].slice(-kept) : [];
      }
  }
  if (added.length) next.latencyLog = grownLog(log, count, added.join(" "), next.latencyCount);
  return next;
}

/** `log` (of `count` entries) with `added` appended, then its oldest dropped down to `kept` entries. */
function grownLog(log: string, count: number, added: string, kept: number): string {
  const whole = log === "" ? added : `${log} ${added}`;
  let cut = 0;
  for (let drop = count + entries(added) - kept; drop > 0; drop--) {
    const space = whole.indexOf(" ", cut);
    if (space === -1) return "";
    cut = space + 1;
  }
  return cut === 0 ? whole : whole.slice(cut);
}

const entries = (log: string) => {
  if (log === "") return 0;
  let count = 1;
  for (let at = log.indexOf(" "); at !== -1; at = log.indexOf(" ", at + 1)) count++;
  return count;
};

/** The last `count` space-separated entries of `log`, or null when it has fewer. */
function lastEntries(log: string, count: number): string | null {
  let at = log.length;
  for (let found = 0; found < count; found++) {
    if (at <= 0) return null;
    at = log.lastIndexOf(" ", at - 1);
    if (at === -1) return found === count - 1 ? log : null;
  }
  return log.slice(at + 1);
}

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/**
 * The record that turns `previous` into `next` (a state that differs only in observations), or null when
 * none does exactly: then the state is written whole. Checked by applying it.
 */
export function observationRecord(
  name: string,
  writeId: string,
  previous: ServiceState,
  next: ServiceState,
): ObservationRecord | null {
  const record: ObservationRecord = { s: name, w: writeId, p: {} };
  const before = previous as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(next)) {
    const old = before[key];
    if (value === old || (key !== "latencyLog" && same(value, old))) continue;
    if (key === "latencyLog" && typeof value === "string") {
      const added = addedEntries(previous, next);
      if (added !== null) record.l = added;
      else record.p[key] = value;
    } else if (GROWING.has(key) && Array.isArray(value) && Array.isArray(old)) {
      const added = addedItems(old, value);
      if (added !== null) (record.a ??= {})[key] = [value.length, ...added];
      else record.p[key] = value;
    } else record.p[key] = value;
  }
  for (const key of Object.keys(before)) if (!(key in next)) return null; // a key taken away: written whole
  // What a reader rebuilds is what a whole write would have saved: checked where the record says anything.
  const rebuilt = applyObservations(previous, [record]) as unknown as Record<string, unknown>;
  const after = next as unknown as Record<string, unknown>;
  for (const key of [...Object.keys(record.p), ...Object.keys(record.a ?? {})])
    if (!same(rebuilt[key], after[key])) return null;
  return record.l === undefined || rebuilt.latencyLog === next.latencyLog ? record : null;
}

function addedEntries(previous: ServiceState, next: ServiceState): string | null {
  for (let count = 1; count <= MOST_ADDED; count++) {
    const added = lastEntries(next.latencyLog, count);
    if (added === null) return null;
    if (grownLog(previous.latencyLog, previous.latencyCount, added, next.latencyCount) === next.latencyLog)
      return added;
  }
  return null;
}

function addedItems(old: unknown[], value: unknown[]): unknown[] | null {
  for (let count = 0; count <= Math.min(MOST_ADDED, value.length); count++) {
    const added = value.slice(value.length - count);
    const grown = [...old, ...added].slice(-value.length);
    if (value.length > 0 ? same(grown, value) : old.length === 0 && count === 0) return added;
  }
  return null;
}

/**
 * The records of a journal's text, by service, in the order written. A line that does not parse (a
 * power cut's torn tail, a run of NULs where the size was saved and the data was not) is skipped: it
 * costs that look's observations, never a state.
 */
export function parseObservations(text: string): Map<string, ObservationRecord[]> {
  const byService = new Map<string, ObservationRecord[]>();
  for (let start = 0; start < text.length;) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.charCodeAt(0) !== 123) continue; // "{": NULs, a blank
    let record: ObservationRecord;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    if (!wellFormed(record)) continue;
    const list = byService.get(record.s);
    if (list) list.push(record);
    else byService.set(record.s, [record]);
  }
  return byService;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function wellFormed(record: unknown): record is ObservationRecord {
  if (!isObject(record) || typeof record.s !== "string" || typeof record.w !== "string" || !isObject(record.p))
    return false;
  if (record.l !== undefined && typeof record.l !== "string") return false;
  // Only observations: a record can never change a decision (strikes, outages, restarts, a pause).
  if (!Object.keys(record.p).every((key) => OBSERVATIONS.has(key) || key === "verdict")) return false;
  if (record.a === undefined) return true;
  if (!isObject(record.a)) return false;
  return Object.entries(record.a).every(
    ([key, grown]) => GROWING.has(key) && Array.isArray(grown) && Number.isInteger(grown[0]),
  );
}
