import { bootId } from "./clock.ts";
import { statSync } from "node:fs";
import { join } from "node:path";
import { oneLine } from "../core/sanitize.ts";
import { inWords, readRegularFile } from "./files.ts";
import type { ServiceConfig } from "../config/types.ts";
import { bootTimeMs, isRunning, readProc, signalProbe, startedAtMs, type ProcInfo } from "./proc.ts";
import { findPane } from "./tmux.ts";
import { launchdPid } from "./launchd.ts";
import { showUnit } from "./systemd.ts";
import type { ServiceState } from "../core/state.ts";

/** Where a service's main PID came from and whether it is the process it should be. */
export interface MainProcess {
  source: string;
  /** systemd or launchd restart it themselves: tend does not start it when it is gone. */
  supervised: boolean;
  /** The verified process, or null (none, gone, zombie, or a reused PID). */
  info: ProcInfo | null;
  running: boolean;
  startedAt: number | null;
  detail: string;
  /**
   * The source cannot say (a pidfile that is not one line of digits, not a regular file, or
   * unreadable): not a gone process, so nothing is started beside what may still run.
   */
  unreadable?: boolean;
  /**
   * Alive but not visible: kill(pid, 0) answers EPERM where /proc shows nothing (another user's
   * process under hidepid=2, a service started with su on Android). Never gone, never started beside;
   * its identity cannot be checked, so it is never signalled.
   */
  hidden?: boolean;
}

/** A process started up to this long after its pidfile was written still counts as the one it names. */
const PIDFILE_SLACK_MS = 1000;
/** A clock that read the epoch at boot started within this of the boot-time clock's zero. */
const EPOCH_CLOCK_SLACK_MS = 60_000;
/** A pidfile is one line of decimal digits: a few bytes, never more than this. */
const PIDFILE_LIMIT = 64;

type PidfileRead = { pid: number; writtenAt: number } | { missing: true } | { problem: string };

/** A pidfile holds one line of decimal digits and nothing else (so `kill $(cat FILE)` works). */
export function readPidfile(path: string): PidfileRead {
  let text: string;
  let writtenAt: number;
  try {
    text = readRegularFile(path, PIDFILE_LIMIT + 1, { follow: true });
    writtenAt = statSync(path).mtimeMs;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { missing: true };
    return { problem: `${path}: ${inWords(error)}` };
  }
  if (!/^\d{1,10}\n?$/.test(text))
    return { problem: `${path} holds "${oneLine(text, 20)}", not a PID (one line of digits)` };
  return { pid: Number(text.trim()), writtenAt };
}

/**
 * Read a pidfile and verify the PID's identity: against the start time tend recorded when it
 * started that process, or else against the file's mtime (a newer process is not the one named).
 * `strict` (a configured service's pidfile): a PID other than the one tend recorded is not it.
 */
export function fromPidfile(
  path: string,
  recorded?: {
    pid: number | null;
    pidStartTicks: string | null;
    pidBootId?: string | null;
    watch?: { pid: number; ticks: string; bootId?: string | null } | null;
  },
  { strict = false } = {},
): MainProcess {
  const source = `pidfile ${path}`;
  const gone = (detail: string, info: ProcInfo | null = null): MainProcess => ({
    source,
    supervised: false,
    info,
    running: false,
    startedAt: null,
    detail,
  });
  const read = readPidfile(path);
  if ("missing" in read) return gone(`${source}: missing`);
  if ("problem" in read) return { ...gone(read.problem), unreadable: true };
  const { pid, writtenAt } = read;
  if (pid <= 0) return { ...gone(`${path} holds pid ${pid}, not a process`), unreadable: true };
  // The very process tend started, in this boot (the boot id it was recorded with, its start tick):
  // known for itself, never by comparing the file's time with the wall clock's boot time (a
  // wall-clock step since it was written moves one and not the other: a live service taken for
  // the last boot's, and started again beside itself, forever).
  if (recorded?.pid === pid && recorded.pidStartTicks && recorded.pidBootId && recorded.pidBootId === bootId()) {
    const info = readProc(pid);
    if (info && isRunning(info) && info.startTicks === recorded.pidStartTicks)
      return { source, supervised: false, info, running: true, startedAt: startedAtMs(info), detail: `pid ${pid}` };
  }
  // The same for a process tend did not start but a pass of this boot verified behind this pidfile (a
  // service the user started while the phone's clock read 1970): after the clock is set, the file's
  // 1970 mtime says nothing of which boot it is from; the boot id and the start tick do (#61).
  const seen = recorded?.watch;
  if (seen?.pid === pid && seen.bootId && seen.bootId === bootId()) {
    const info = readProc(pid);
    if (info && isRunning(info) && info.startTicks === seen.ticks)
      return { source, supervised: false, info, running: true, startedAt: startedAtMs(info), detail: `pid ${pid}` };
  }
  // A stamp of a clock that read the epoch at this boot (a phone before network time: 1970 plus the
  // seconds since it booted), written before the clock was set and seen by no pass before the step:
  // dated by the boot-time clock, as that many seconds after the boot (#61). A stamp of a clock that
  // stopped elsewhere cannot be told from the last boot's.
  const bootedAt = bootTimeMs();
  const epochStamp =
    writtenAt >= 0 &&
    writtenAt <= Date.now() - bootedAt + EPOCH_CLOCK_SLACK_MS &&
    writtenAt < bootedAt - 2 * PIDFILE_SLACK_MS;
  // (Such a clock starts near the boot, not at it: a minute either way is the same boot's.)
  const stampedAt = epochStamp ? bootedAt + writtenAt + EPOCH_CLOCK_SLACK_MS : writtenAt;
  // Written before the host booted: its PID is the last boot's, whoever holds that number now (a
  // phone boots the same way every time: the same PID, even the same start tick, is no proof).
  if (stampedAt < bootedAt - 2 * PIDFILE_SLACK_MS) return gone(`pid ${pid} is from before the host booted`);
  const info = readProc(pid);
  if (!info) {
    const probe = signalProbe(pid);
    if (probe === "gone") return gone(`pid ${pid} is gone`);
    return {
      source,
      supervised: false,
      info: null,
      running: true,
      startedAt: null,
      detail: hiddenDetail(pid, probe),
      hidden: true,
    };
  }
  if (!isRunning(info)) return gone(`pid ${pid} is a zombie`, info);
  const startedAt = startedAtMs(info);
  if (recorded?.pid && recorded.pidStartTicks && (strict || recorded.pid === pid)) {
    if (recorded.pid !== pid) {
      return gone(`${path} names pid ${pid}, but tend started pid ${recorded.pid}: not the process it started`);
    }
    if (recorded.pidStartTicks !== info.startTicks) {
      return gone(`pid ${pid} now belongs to another process (start time differs: PID reused)`);
    }
  } else if (startedAt > stampedAt + PIDFILE_SLACK_MS) {
    return gone(`pid ${pid} started after ${path} was written: not the process it names (PID reused)`);
  }
  return { source, supervised: false, info, running: true, startedAt, detail: `pid ${pid}` };
}

/** What a probe is told of the service's main process (check.process reads it). */
export const probeContext = (main: MainProcess | null) => ({
  process: main?.info ?? null,
  hiddenProcess: main?.hidden ? main.detail : null,
});

/** What status and safe-kill say of a process that runs but /proc does not show. */
const hiddenDetail = (pid: number, probe: "alive" | "hidden" = "hidden") =>
  probe === "alive"
    ? // kill(pid, 0) allowed: the same user's, hidden by hidepid because it is not debuggable (#61).
      `pid ${pid} is hidden from tend (hidepid: a process of your own that is not debuggable; ` +
      "what works: a pidfile tend verifies by its start time, or restart.command)"
    : `pid ${pid} runs as another user (not visible)`;

/** A tmux pane's PID (the process tmux started for the pane). */
export async function fromTmux(target: string, socket: string | null = null): Promise<MainProcess> {
  const source = `tmux pane ${target}`;
  const gone = (detail: string): MainProcess => ({
    source,
    supervised: false,
    info: null,
    running: false,
    startedAt: null,
    detail,
  });
  const pane = await findPane(target, socket);
  if ("error" in pane) return gone(`${source}: ${pane.error}`);
  if (pane.dead) return gone(`${source}: its command exited`);
  const info = readProc(pane.pid);
  if (!isRunning(info)) return gone(`${source}: pid ${pane.pid} is gone`);
  return { source, supervised: false, info, running: true, startedAt: startedAtMs(info), detail: `pid ${info.pid}` };
}

/** A PID that a manager (systemd, launchd) reports: trusted as the main PID, checked to be running. */
function supervisedProcess(source: string, pid: number | null, why: string): MainProcess {
  const info = pid ? readProc(pid) : null;
  const probe = pid && !info ? signalProbe(pid) : "gone";
  // (kill(pid, 0) allowed with /proc silent is hidepid on Linux; on macOS it is a failed ps: not hidden.)
  if (pid && (probe === "hidden" || (probe === "alive" && process.platform !== "darwin")))
    return {
      source,
      supervised: true,
      info: null,
      running: true,
      startedAt: null,
      detail: hiddenDetail(pid, probe),
      hidden: true,
    };
  const running = isRunning(info);
  const detail = running ? `pid ${pid}` : pid ? `pid ${pid} is gone` : why;
  return {
    source,
    supervised: true,
    info: running ? info : null,
    running,
    startedAt: running ? startedAtMs(info) : null,
    detail,
  };
}

/** Properties a pass reads from systemd once per service: the pid source and the unit facts share them. */
export const UNIT_PROPERTIES = ["MainPID", "ActiveState", "NRestarts", "Result", "Restart"];
/** What `systemctl show` answered, or why it could not. */
export type UnitShown = Record<string, string> | Error;

/** systemd's MainPID (0: no main process); `shown` when the caller has read the unit already. */
export async function fromUnit(unit: string, shown?: UnitShown): Promise<MainProcess> {
  const source = `unit ${unit}`;
  const props = shown ?? (await showUnit(unit, UNIT_PROPERTIES).catch((error: Error) => error));
  if (props instanceof Error) return supervisedProcess(source, null, props.message);
  return supervisedProcess(
    source,
    Number(props.MainPID) || null,
    `${source} has no main process (${props.ActiveState || "unknown"})`,
  );
}

async function fromLaunchd(label: string): Promise<MainProcess> {
  const found = await launchdPid(label);
  return supervisedProcess(
    `launchd job ${label}`,
    "pid" in found ? found.pid : null,
    "error" in found ? found.error : "",
  );
}

/** runsv's supervise/pid (what `sv status` reads): runsv restarts its process itself, as systemd does. */
function fromRunit(serviceDir: string): MainProcess {
  const source = `runit service ${serviceDir}`;
  let text = "";
  try {
    text = readRegularFile(join(serviceDir, "supervise", "pid"), 64).trim();
  } catch (error) {
    return supervisedProcess(source, null, `${source}: ${inWords(error)} (is runsv supervising it?)`);
  }
  const pid = /^\d+$/.test(text) ? Number(text) : null;
  return supervisedProcess(source, pid, `${source} has no process (down)`);
}

/** The service's main process from its pid source; null when it has none. */
export async function mainProcess(
  service: ServiceConfig,
  state: ServiceState,
  unitShown?: UnitShown,
): Promise<MainProcess | null> {
  if (service.pidfile) return fromPidfile(service.pidfile, state);
  if (service.tmux) return fromTmux(service.tmux, service.tmuxSocket ?? null);
  if (service.unit) return fromUnit(service.unit, unitShown);
  if (service.launchd) return fromLaunchd(service.launchd);
  if (service.runit) return fromRunit(service.runit);
  return null;
}

/** What the loop watches between passes: a verified process tend would start again (not systemd's or launchd's). */
export const watchOf = (main: MainProcess | null) =>
  main?.running && main.info && !main.supervised
    ? { pid: main.info.pid, ticks: main.info.startTicks, bootId: bootId() }
    : null;

/** The watched process is gone: no such PID, a zombie, or another process under its PID. */
export function watchedIsGone(watch: { pid: number; ticks: string }): boolean {
  const info = readProc(watch.pid);
  return !isRunning(info) || info.startTicks !== watch.ticks;
}
