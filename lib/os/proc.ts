import { readFileSync } from "node:fs";
import { oneLine } from "../core/sanitize.ts";
import { readRegularFile } from "./files.ts";

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
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
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

/** When the system booted, epoch ms: /proc/stat btime (Linux, Termux); now - uptime elsewhere. */
export function bootTimeMs(): number {
  if (process.platform === "darwin") return Date.now() - uptimeMs();
  const match = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"));
  return match ? Number(match[1]) * 1000 : 0;
}

/** Wall-clock start of a process, epoch ms (for grace after a start tend did not perform). */
export function startedAtMs(info: ProcInfo): number {
  if (process.platform === "darwin") return Number(info.startTicks) * 1000;
  return bootTimeMs() + (Number(info.startTicks) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** System uptime in ms (boot_delay). */
export function uptimeMs(): number {
  if (process.platform === "darwin") {
    const out = Bun.spawnSync(["sysctl", "-n", "kern.boottime"]).stdout.toString();
    const seconds = Number(/sec = (\d+)/.exec(out)?.[1] ?? 0);
    return Date.now() - seconds * 1000;
  }
  return Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
}

/**
 * The host's uptime read once (at the first call), then advanced by the clock: a pass reads
 * /proc/uptime (spawns sysctl on macOS) once, not once per service.
 */
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
