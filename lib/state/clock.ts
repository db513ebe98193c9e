import { statSync } from "node:fs";
import { frameOf, type ClockReading, type ClockStep, type Frame } from "../core/clock.ts";
import { systemClock, type ClockSource } from "../os/clock.ts";
import { statePaths } from "./dir.ts";
import { readHeartbeat, writeHeartbeat } from "./heartbeat.ts";
import { isFullDisk } from "./spill.ts";

/** tend's time for one run: the frame it read, and a clock that goes on from it without jumping. */
export interface TendClock {
  frame: Frame;
  reading: ClockReading;
  /** tend's time now: the frame's, advanced by the monotonic clock (a wall-clock step inside a run is no jump). */
  now: () => number;
  /**
   * The same reading (advanced by the monotonic clock), now followed: a full pass, once it holds the
   * lock. The heartbeat is read again (another pass may have followed the step meanwhile); the clocks are not.
   * `recordedUntil`: at a new boot, the latest time the boot before recorded (core/clock.ts frameOf).
   */
  follow: (recordedUntil?: () => number) => TendClock;
}

/**
 * tend's time now, from the last pass's record and the host's clocks. `follow` (a full pass, under
 * the lock): a wall-clock step is followed, and recorded at once (durably: every state's times
 * are moved by it as they are read). Without it (views, operators, partial passes) the records'
 * frame is kept until a pass has followed the step.
 */
export async function tendClock(stateDir: string, source: ClockSource, { follow = false } = {}): Promise<TendClock> {
  return clockFrom(stateDir, source, await source.read(), source.monotonic(), follow);
}

function clockFrom(
  stateDir: string,
  source: ClockSource,
  reading: ClockReading,
  monotonicAt: number,
  follow: boolean,
  recordedUntil?: () => number,
): TendClock {
  const heartbeat = readHeartbeat(stateDir);
  const frame = frameOf(heartbeat?.clock ?? null, reading, { follow, recordedUntil });
  if (follow && frame.steppedMs !== null && heartbeat?.clock) {
    const step = frame.steps.at(-1)!;
    const record = { ...heartbeat.clock, ...frame, atMs: movedBy(heartbeat.clock.atMs, step) };
    try {
      writeHeartbeat(stateDir, record.atMs, heartbeat.intervalMs ?? 60_000, heartbeat.clocks, record, {
        durable: true,
      });
    } catch (error) {
      // A full disk: followed in this pass all the same; the next pass finds the same step again.
      if (!isFullDisk(error)) throw error;
    }
  }
  return {
    frame,
    reading,
    now: () => frame.nowMs + (source.monotonic() - monotonicAt),
    follow: (recordedUntil) => {
      const monotonic = source.monotonic();
      const elapsed = monotonic - monotonicAt;
      const advanced = {
        ...reading,
        wallMs: reading.wallMs + elapsed,
        bootMs: reading.bootMs === null ? null : reading.bootMs + elapsed,
      };
      return clockFrom(stateDir, source, advanced, monotonic, true, recordedUntil);
    },
  };
}

const movedBy = (at: number, step: ClockStep) => (at >= step.fromMs ? at + step.byMs : at);

let cached: { key: string; steps: ClockStep[] } | null = null;

/** The clock steps the heartbeat records (read again only when it changed: every write is a rename). */
export function clockSteps(stateDir: string): ClockStep[] {
  const path = statePaths(stateDir).heartbeat;
  let key = "";
  try {
    const info = statSync(path);
    key = `${path}:${info.ino}:${info.mtimeMs}:${info.size}`;
  } catch {
    return [];
  }
  if (cached?.key === key) return cached.steps;
  const steps = readHeartbeat(stateDir)?.clock?.steps ?? [];
  cached = { key, steps };
  return steps;
}

/** tend's time for a command that only reads or acts between passes (views, operators, blogtunnel). */
export async function tendNow(stateDir: string, source: ClockSource = systemClock): Promise<() => number> {
  return (await tendClock(stateDir, source)).now;
}
