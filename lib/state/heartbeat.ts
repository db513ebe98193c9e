import { isFullDisk } from "./spill.ts";
import { statSync } from "node:fs";
import type { Downtime } from "../core/events.ts";
import { formatDuration, parseDuration } from "../core/duration.ts";
import { asleepBetween, classifyGap } from "../core/health.ts";
import { overwriteInPlace, writeFileAtomic } from "../os/atomic.ts";
import { readRegularFile } from "../os/files.ts";
import { bootTimeMs } from "../os/proc.ts";
import type { ClockRecord, ClockStep, Frame } from "../core/clock.ts";
import { statePaths } from "./dir.ts";

type Clocks = { bootMs: number; awakeMs: number };

interface Heartbeat {
  /** ISO-8601 time of the last completed pass. */
  at: string;
  /** The interval that pass ran for (cron's period as configured, or `run --interval`); null: not recorded. */
  intervalMs: number | null;
  /** The boot-time and awake clocks at that pass (null: not recorded, or not readable there). */
  clocks: Clocks | null;
  /** tend's time and its frame at that pass (core/clock.ts); null: a heartbeat of an earlier version. */
  clock: ClockRecord | null;
  /** The gap since this pass was said (its DOWNTIME line) by a pass that did not finish: not said again. */
  gapSaidFrom: number | null;
}

/**
 * `heartbeat`: the time of the last completed pass (tend's time), `interval D`, `clocks boot=MS
 * awake=MS`, `boot id=ID clock=MS` (the boot and its boot-time clock), `frame offset=MS start=MS
 * floor=MS`, a `step seq=N from=MS by=MS` line per clock step followed (core/clock.ts), and `gap owed
 * from=MS to=MS` while a reboot's gap waits for the clock to be set.
 */
export function readHeartbeat(stateDir: string): Heartbeat | null {
  try {
    const lines = readRegularFile(statePaths(stateDir).heartbeat, 4096).split("\n");
    const [at, interval, clockLine] = lines;
    if (!at?.trim()) return null;
    const intervalMs = parseDuration(interval?.replace(/^interval\s+/, "") ?? "");
    const clock = /^clocks boot=(\d+(?:\.\d+)?) awake=(\d+(?:\.\d+)?)$/.exec(clockLine?.trim() ?? "");
    const clocks = clock ? { bootMs: Number(clock[1]), awakeMs: Number(clock[2]) } : null;
    const said = field(lines, new RegExp(`^gap said from=${NUMBER}$`));
    return {
      at: at.trim(),
      intervalMs: intervalMs || null,
      clocks,
      clock: clockRecordOf(at.trim(), lines, clocks),
      gapSaidFrom: said ? Number(said[1]) : null,
    };
  } catch {
    return null;
  }
}

const NUMBER = "(-?\\d+(?:\\.\\d+)?)";
const field = (lines: string[], pattern: RegExp) => lines.map((line) => pattern.exec(line.trim())).find(Boolean);

function clockRecordOf(at: string, lines: string[], clocks: Clocks | null): ClockRecord | null {
  const atMs = Date.parse(at);
  if (!Number.isFinite(atMs)) return null;
  const boot = field(lines, new RegExp(`^boot id=(\\S+) clock=${NUMBER}$`));
  const frame = field(lines, new RegExp(`^frame offset=${NUMBER} start=${NUMBER} floor=${NUMBER}$`));
  const bootMs = boot ? Number(boot[2]) : (clocks?.bootMs ?? null);
  const steps: ClockStep[] = [];
  const stepPattern = new RegExp(`^step seq=(\\d+) from=${NUMBER} by=${NUMBER}$`);
  const owed = field(lines, new RegExp(`^gap owed from=${NUMBER} to=${NUMBER}$`));
  for (const line of lines) {
    const step = stepPattern.exec(line.trim());
    if (step) steps.push({ seq: Number(step[1]), fromMs: Number(step[2]), byMs: Number(step[3]) });
  }
  return {
    atMs,
    bootMs,
    bootId: boot && boot[1] !== "-" ? boot[1] : null,
    offsetMs: frame ? Number(frame[1]) : 0,
    // An earlier version's heartbeat: this boot began at the pass minus the boot-time clock.
    startMs: frame ? Number(frame[2]) : atMs - (bootMs ?? 0),
    floorMs: frame ? Number(frame[3]) : 0,
    steps,
    owedGap: owed ? { fromMs: Number(owed[1]), toMs: Number(owed[2]) } : null,
  };
}

/**
 * Not fsynced: its precision is the pass interval, and the journal commits the rename within
 * seconds (ext4: 5 s); a flush per pass would cost more than the whole pass's probes. A clock
 * step's record is the exception (`durable`): states are moved by it, so it must not be lost.
 */
export function writeHeartbeat(
  stateDir: string,
  passAt: number,
  intervalMs: number,
  clocks: Clocks | null,
  clock: ClockRecord | null = null,
  { durable = false } = {},
): void {
  const clockLine = clocks ? `clocks boot=${Math.round(clocks.bootMs)} awake=${Math.round(clocks.awakeMs)}\n` : "";
  const whole = (ms: number) => String(Math.round(ms));
  const frameLines = clock
    ? [
        clock.bootMs === null ? "" : `boot id=${clock.bootId ?? "-"} clock=${whole(clock.bootMs)}\n`,
        `frame offset=${whole(clock.offsetMs)} start=${whole(clock.startMs)} floor=${whole(clock.floorMs)}\n`,
        ...clock.steps.map((step) => `step seq=${step.seq} from=${whole(step.fromMs)} by=${whole(step.byMs)}\n`),
        clock.owedGap ? `gap owed from=${whole(clock.owedGap.fromMs)} to=${whole(clock.owedGap.toMs)}\n` : "",
      ].join("")
    : "";
  const text = `${new Date(passAt).toISOString()}\ninterval ${formatDuration(intervalMs)}\n${clockLine}${frameLines}`;
  const path = statePaths(stateDir).heartbeat;
  try {
    writeFileAtomic(path, text, 0o600, { durable });
  } catch (error) {
    // A full disk: rewritten in the block it has. Else the last pass before a reboot would be the
    // last before the disk filled, and the host's downtime would count every pass since.
    if (!(isFullDisk(error) && overwriteInPlace(path, text, { pad: "\n" }))) throw error;
  }
}

/**
 * The gap since the last pass is said (its DOWNTIME line written): marked in the heartbeat, which
 * is otherwise kept as it is, so a pass that finds the same gap again — this one was killed before
 * it wrote its own heartbeat (a power cut in the new boot's first second) — does not say it twice.
 * The pass's own heartbeat drops the mark. Durable: it is what keeps downtime.log from counting twice.
 */
export function markGapSaid(stateDir: string, fromMs: number): void {
  const path = statePaths(stateDir).heartbeat;
  let text: string;
  try {
    text = readRegularFile(path, 4096);
  } catch {
    return;
  }
  const kept = text.split("\n").filter((line) => line && !line.startsWith("gap said "));
  try {
    writeFileAtomic(path, [...kept, `gap said from=${Math.round(fromMs)}`, ""].join("\n"), 0o600, { durable: true });
  } catch (error) {
    // A full disk: the gap may be said twice after a second cut, never lost.
    if (!isFullDisk(error)) throw error;
  }
}

/**
 * The gap since the last pass, when it is longer than the recorded interval allows: host down,
 * device asleep, or watchdog not run. `clocksNow`: this pass's reading of the boot-time and awake
 * clocks; `frame`: tend's time now, and whether this is another boot than the last pass's (told
 * by the boot id or the boot-time clock, never by the wall clock, which may have stepped).
 */
export function findGap(
  stateDir: string,
  intervalMs: number,
  now: number,
  clocksNow: Clocks | null = null,
  frame: Pick<Frame, "newBoot"> | null = null,
  bootedAt: () => number = bootTimeMs,
): Downtime | null {
  const heartbeat = readHeartbeat(stateDir);
  let last = heartbeat?.clock?.atMs ?? null;
  if (last === null) {
    try {
      last = statSync(statePaths(stateDir).heartbeat).mtimeMs;
    } catch {
      return null;
    }
  }
  const recordedMs = heartbeat?.intervalMs ?? intervalMs;
  const then = heartbeat?.clocks ?? null;
  const bootClockReset = then !== null && clocksNow !== null && clocksNow.bootMs < then.bootMs;
  const known = frame !== null && heartbeat?.clock?.bootMs != null;
  // Every pass compares the boot with the last heartbeat's. Where neither the boot id nor the
  // boot-time clock was recorded (an earlier version), the boot time on the wall clock decides.
  const booted = known ? (frame.newBoot ? Infinity : -Infinity) : bootedAt();
  const reset = known ? false : bootClockReset;
  return classifyGap(last, recordedMs, booted, Math.max(now, last), asleepBetween(then, clocksNow), reset);
}
