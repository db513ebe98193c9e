// The state dir's observations.jsonl (core/observed.ts): what passes that only observed a service
// appended, read back by everything that reads a state (service-state.ts's readState).
import { lstatSync, type Stats } from "node:fs";
import { appendNoFollow, readRange } from "../os/files.ts";
import { parseObservations, type ObservationRecord } from "../core/observed.ts";
import { statePaths } from "./dir.ts";

/**
 * A pass that finds the journal this big first writes the states it holds whole, then empties it:
 * 64 KiB, or 3.5 KiB a service. Every cron pass reads the whole journal and a compaction writes every
 * state, so the best size grows with the services: at 100, 64 KiB was a compaction every other pass
 * (a pass 81 ms of CPU; 350 KiB: 75 ms). At 20 it is ~11 passes either way.
 */
export const compactAt = (services: number) => Math.max(64 * 1024, services * 3584);
/** Past this (compaction put off: a service's owner held it), observations are written whole again. */
const mostFor = (services: number) => 4 * compactAt(services);
/** What a reader reads of it at most (outside text is bounded): beyond any journal appends leave. */
const READ_BOUND = 16 * 1024 * 1024;

interface Journal {
  /** Its inode, birth and size: the same key, the same records (a long-running reader keeps them). */
  key: string;
  size: number;
  records: ReadonlyMap<string, ObservationRecord[]>;
}

interface Kept extends Journal {
  /** The file these records were read from: its inode and birth time (compaction makes a new one). */
  identity: string;
  /** How far it was read: past its last whole line (a line being appended is read once it is whole). */
  readTo: number;
  records: Map<string, ObservationRecord[]>;
}

const NONE: Journal = { key: "none", size: 0, records: new Map() };
const journals = new Map<string, Kept>();

/**
 * The journal's records by service. A process that read it before reads only what was appended since
 * (the loop and serve, after each pass: one pass's lines, not the whole journal again).
 */
export function journalOf(stateDir: string): Journal {
  const path = statePaths(stateDir).observations;
  let info: Stats;
  try {
    info = lstatSync(path);
  } catch {
    return NONE;
  }
  if (!info.isFile()) return NONE; // a symlink planted there is never read
  const identity = `${info.ino}:${info.birthtimeMs}`;
  const key = `${identity}:${info.size}:${info.mtimeMs}`;
  let kept = journals.get(stateDir);
  if (kept?.key === key) return kept;
  if (!kept || kept.identity !== identity || info.size < kept.readTo)
    kept = { key, identity, size: 0, readTo: 0, records: new Map() };
  let tail: Buffer = Buffer.alloc(0);
  try {
    tail = readRange(path, kept.readTo, Math.min(info.size, READ_BOUND)).bytes;
  } catch {} // unreadable: nothing new this time
  // Up to its last newline (a byte no UTF-8 sequence holds): a line still being appended is read next time.
  const whole = tail.lastIndexOf(10) + 1;
  for (const [name, records] of parseObservations(tail.toString("utf8", 0, whole))) {
    const list = kept.records.get(name);
    if (list) list.push(...records);
    else kept.records.set(name, records);
  }
  kept = { ...kept, key, size: info.size, readTo: kept.readTo + whole };
  journals.set(stateDir, kept);
  return kept;
}

/** The records that follow this write of a service's state file, oldest first. */
export function observationsAfter(stateDir: string, name: string, writeId: string): ObservationRecord[] {
  const records = journalOf(stateDir).records.get(name);
  return records ? records.filter((record) => record.w === writeId) : [];
}

/**
 * Append one record; false when it was not (a full disk, a planted symlink, a journal whose compaction is
 * overdue): then the state is written whole, as before there was a journal.
 */
export function appendObservation(stateDir: string, record: ObservationRecord, services: number): boolean {
  const path = statePaths(stateDir).observations;
  try {
    const info = lstatSync(path, { throwIfNoEntry: false });
    if (info && (!info.isFile() || info.size > mostFor(services))) return false;
    // A line of its own even after a power cut's torn one: the newline before it ends that (cost: one byte).
    appendNoFollow(path, "\n" + JSON.stringify(record) + "\n");
    return true;
  } catch {
    return false;
  }
}
