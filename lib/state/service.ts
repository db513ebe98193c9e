import { chmodSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../os/atomic.ts";
import { TendError } from "../core/errors.ts";

export interface ProbeRecord {
  at: number;
  ok: boolean;
  detail: string;
  latencyMs: number;
}

export interface EventRecord {
  at: number;
  tag: string;
  message: string;
}

/** Everything tend remembers about one service between passes. */
export interface ServiceState {
  version: 1;
  strikes: number;
  /** The last start tend performed (epoch ms): grace counts from here. */
  startedAt: number | null;
  /** Identity of the process tend started: PID + start time, so a reused PID is never taken for it. */
  pid: number | null;
  pidStartTicks: string | null;
  /** Times of restarts still inside restart_window (for max_restarts). */
  restartTimes: number[];
  lastRestartAt: number | null;
  restartsTotal: number;
  recoveriesOk: number;
  recoveriesFailed: number;
  /** Failed recoveries in a row: the exponent of the backoff. */
  failedInRow: number;
  backoffUntil: number | null;
  givenUp: boolean;
  /** Paused by `watchdog pause`: until this time, or indefinitely (Infinity is stored as null with paused=true). */
  paused: boolean;
  pausedUntil: number | null;
  outage: { since: number; reason: string } | null;
  lastProbe: ProbeRecord | null;
  /** Bounded latency history: [at, latencyMs, ok ? 1 : 0, timed out ? 1 : 0]. */
  latencies: LatencySample[];
  /** Bounded history of restarts and their outcome, for `watchdog report`. */
  history: HistoryEntry[];
  /** When tend first watched this service (report: no data before). */
  firstSeenAt: number | null;
  lastEvent: EventRecord | null;
  /** First busy verdict of the current busy spell, and when BUSY was last logged. */
  busySince: number | null;
  busyLoggedAt: number | null;
  /** systemd: last ActiveState seen, NRestarts baseline, silent auto-restarts counted. */
  unitState: string | null;
  nRestarts: number | null;
  autoRestarts: number;
  /** Bounded RSS history: [at, bytes]. */
  rss: [number, number][];
  memoryWarnedAt: number | null;
}

export const LATENCY_HISTORY = 1000;
export const EVENT_HISTORY = 1000;

export type LatencySample = [at: number, latencyMs: number, ok: number, timedOut?: number];
export interface HistoryEntry {
  at: number;
  what: "restart" | "recovered" | "failed" | "auto-restart";
  count?: number;
}

/** Append to a bounded history. */
export function remember(state: ServiceState, entry: HistoryEntry): ServiceState {
  return { ...state, history: [...state.history, entry].slice(-EVENT_HISTORY) };
}

export function freshState(): ServiceState {
  return {
    version: 1,
    strikes: 0,
    startedAt: null,
    pid: null,
    pidStartTicks: null,
    restartTimes: [],
    lastRestartAt: null,
    restartsTotal: 0,
    recoveriesOk: 0,
    recoveriesFailed: 0,
    failedInRow: 0,
    backoffUntil: null,
    givenUp: false,
    paused: false,
    pausedUntil: null,
    outage: null,
    lastProbe: null,
    latencies: [],
    history: [],
    firstSeenAt: null,
    lastEvent: null,
    busySince: null,
    busyLoggedAt: null,
    unitState: null,
    nRestarts: null,
    autoRestarts: 0,
    rss: [],
    memoryWarnedAt: null,
  };
}

export type StateLoad = { state: ServiceState; problem: null | "missing" | string };

export const stateFile = (stateDir: string, name: string) => join(stateDir, `${name}.json`);

/** A missing file gives a fresh state ("missing"); a corrupt one is kept as NAME.json.corrupt (repair) and reset. */
export function readState(stateDir: string, name: string, { repair = true } = {}): StateLoad {
  const path = stateFile(stateDir, name);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { state: freshState(), problem: "missing" };
    return { state: freshState(), problem: `unreadable: ${(error as NodeJS.ErrnoException).code}` };
  }
  const problem = validate(text);
  if (problem === null) return { state: { ...freshState(), ...JSON.parse(text) }, problem: null };
  if (repair) {
    try {
      renameSync(path, path + ".corrupt");
    } catch {}
  }
  return { state: freshState(), problem };
}

function validate(text: string): string | null {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return text.trim() === "" ? "empty file" : `not JSON: ${(error as Error).message}`;
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return "not a JSON object";
  const record = data as Record<string, unknown>;
  if (record.version !== 1) return `unknown version ${JSON.stringify(record.version)}`;
  const counters = ["strikes", "restartsTotal", "recoveriesOk", "recoveriesFailed", "failedInRow", "autoRestarts"];
  for (const key of counters) {
    const value = record[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 0)) return `${key} is ${JSON.stringify(value)}`;
  }
  for (const key of ["restartTimes", "latencies", "rss", "history"]) {
    if (record[key] !== undefined && !Array.isArray(record[key])) return `${key} is not an array`;
  }
  return null;
}

export function writeState(stateDir: string, name: string, state: ServiceState): void {
  writeFileAtomic(stateFile(stateDir, name), JSON.stringify(state) + "\n");
}

/** A state file that is a symlink would be read and replaced through it: refuse it (the service is not judged). */
export function refuseSymlink(path: string): void {
  let link: string | null = null;
  try {
    if (lstatSync(path).isSymbolicLink()) link = readlinkSync(path);
  } catch {}
  if (link !== null) throw new TendError(`state file ${path} is a symlink (to ${link}): refused, nothing read or written through it`, 1);
}

/** Create the state dir 0700; refuse a symlink (state must not be written through to elsewhere). */
export function ensureStateDir(stateDir: string): void {
  try {
    const info = lstatSync(stateDir);
    if (info.isSymbolicLink()) throw new TendError(`state dir ${stateDir} is a symlink: refusing to write through it`, 1);
    if (!info.isDirectory()) throw new TendError(`state dir ${stateDir} is not a directory`, 1);
    return;
  } catch (error) {
    if (error instanceof TendError) throw error;
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new TendError(`state dir ${stateDir}: ${(error as Error).message}`, 1);
  }
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    chmodSync(stateDir, 0o700);
  } catch (error) {
    throw new TendError(`cannot create state dir ${stateDir}: ${(error as NodeJS.ErrnoException).code ?? error}`, 1);
  }
}
