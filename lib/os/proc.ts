import { readdirSync } from "node:fs";
import { uptime } from "node:os";
import { oneLine } from "../core/sanitize.ts";
import { readRegularFile } from "./files.ts";
import { bootClockNow } from "./libc.ts";

/** What /proc (or ps on macOS) says about one process. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** One letter: R S D T t Z X ... */
  state: string;
  /** Start time in clock ticks since boot (field 22 of /proc/PID/stat): the process's identity with its PID. */
  startTicks: string;
  comm: string;
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux ABI tend targets

export function readProc(pid: number): ProcInfo | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (process.platform === "darwin") return readProcDarwin(pid);
  let stat: string;
  try {
    stat = readRegularFile(`/proc/${pid}/stat`, 4096);
  } catch {
    return null;
  }
  // comm may hold spaces and parentheses: split after the last ")".
  const close = stat.lastIndexOf(")");
  const fields = stat.slice(close + 2).split(" ");
  return {
    pid,
    comm: stat.slice(stat.indexOf("(") + 1, close),
    state: fields[0],
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    startTicks: fields[19],
  };
}

function readProcDarwin(pid: number): ProcInfo | null {
  const result = Bun.spawnSync(["ps", "-o", "ppid=,pgid=,stat=,lstart=,comm=", "-p", String(pid)]);
  const line = result.stdout.toString().trim();
  const match = /^(\d+)\s+(\d+)\s+(\S)\S*\s+(\w+ \w+ +\d+ [\d:]+ \d+)\s+(.*)$/.exec(line);
  if (!match) return null;
  return {
    pid,
    ppid: Number(match[1]),
    pgid: Number(match[2]),
    state: match[3],
    startTicks: String(Date.parse(match[4]) / 1000),
    comm: match[5],
  };
}

/**
 * What kill(pid, 0) says of a PID /proc does not show: `hidden` (EPERM: it runs as another user,
 * and /proc is mounted hidepid=2, as on Android), `alive`, or `gone` (ESRCH).
 */
export function signalProbe(pid: number): "alive" | "hidden" | "gone" {
  try {
    process.kill(pid, 0);
    return "alive";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM" ? "hidden" : "gone";
  }
}

/**
 * The process is no more: not running (a zombie counts as ended), and not one /proc hides
 * (hidepid=2: another user's process answers kill(pid, 0) with EPERM).
 */
export function processGone(pid: number): boolean {
  const info = readProc(pid);
  return info ? !isRunning(info) : signalProbe(pid) === "gone";
}

/** The command name of a process this user can see whose name matches, or null (doctor: is cron running?). */
export function runningNamed(names: RegExp): string | null {
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const comm = readProc(Number(entry))?.comm ?? "";
      if (names.test(comm)) return comm;
    }
  } catch {}
  return null;
}

/** Running = exists and is neither a zombie nor dead. */
export const isRunning = (info: ProcInfo | null): info is ProcInfo => info !== null && !isZombie(info);
/** Exited but not reaped (Z), or dead (X). */
export const isZombie = (info: ProcInfo) => "ZXx".includes(info.state);
/** Stopped by a signal (SIGSTOP) or a tracer. */
export const isStopped = (info: ProcInfo) => info.state === "T" || info.state === "t";

/** A process's command line as one escaped line of at most 200 characters (its argv is outside text). */
export function commandLine(pid: number): string {
  let raw = "";
  try {
    raw = readRegularFile(`/proc/${pid}/cmdline`, 4096).split("\0").filter(Boolean).join(" ");
  } catch {}
  return oneLine(raw || readProc(pid)?.comm || "?");
}

/**
 * When the system booted, epoch ms: now - uptime. Never /proc/stat's btime: Android 8+ denies an
 * app /proc/stat (and /proc/uptime); sysinfo(2), behind os.uptime(), is always allowed.
 */
export function bootTimeMs(): number {
  return Date.now() - uptimeMs();
}

/** Wall-clock start of a process, epoch ms (for grace after a start tend did not perform). */
export function startedAtMs(info: ProcInfo): number {
  if (process.platform === "darwin") return Number(info.startTicks) * 1000;
  return bootTimeMs() + (Number(info.startTicks) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/**
 * System uptime in ms (boot_delay, when the host booted), time asleep included: the boot-time clock
 * where this process has libc loaded (every owner of a service has: its lock), else sysinfo(2) on Linux
 * and Android, kern.boottime on macOS, both behind os.uptime(); never /proc/uptime (Android denies it).
 * sysinfo(2) rounds up to the whole second: a boot dated up to a second early, and an operator's restart
 * just after a reboot counted that second of the host's downtime in its service's outage (ground truth,
 * seed 310).
 */
export function uptimeMs(): number {
  return bootClockNow() ?? uptime() * 1000;
}

/** The host's uptime read once (at the first call), then advanced by the clock: once a pass, not once per service. */
export function uptimeClock(now: () => number = Date.now, read: () => number = uptimeMs): () => number {
  let base: { uptime: number; at: number } | null = null;
  return () => {
    base ??= { uptime: read(), at: now() };
    return base.uptime + (now() - base.at);
  };
}

/** PIDs from `pid` up to 1 (inclusive): the ancestors a signal must never reach. */
export function ancestry(pid: number = process.pid): number[] {
  const chain: number[] = [];
  let current: number | undefined = pid;
  while (current && current > 0 && !chain.includes(current)) {
    chain.push(current);
    current = readProc(current)?.ppid;
  }
  return chain;
}

/** The process with this identity has exited (gone, zombie, or its PID now names another process). */
export function hasExited(info: ProcInfo): boolean {
  const now = readProc(info.pid);
  return !isRunning(now) || now.startTicks !== info.startTicks;
}

/** Poll until the process exits or the timeout passes; true if it exited. */
export async function waitForExit(
  info: ProcInfo,
  timeoutMs: number,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!hasExited(info)) {
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(20, Math.max(1, deadline - Date.now())));
  }
  return true;
}
