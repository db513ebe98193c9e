import { readdirSync } from "node:fs";
import { readRegularFile } from "./files.ts";

/** A process's resident set in bytes: VmRSS of /proc/PID/status (kB), right on 16 KiB-page kernels too. */
export function processRss(pid: number): number | null {
  try {
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readRegularFile(`/proc/${pid}/status`, 16_384))?.[1];
    return kib === undefined ? null : Number(kib) * 1024;
  } catch {
    return null;
  }
}

/**
 * RSS in bytes of a process and all its descendants (Linux /proc), or null when the main process's
 * RSS cannot be read (memory is then not sampled this pass). Never statm × 4096: Android 15 and the
 * Raspberry Pi 5 run 16 KiB pages.
 */
export function treeRss(pid: number): number | null {
  if (processRss(pid) === null) return null;
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readRegularFile(`/proc/${entry}/stat`, 4096);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {}
  }
  let total = 0;
  const queue = [pid];
  const seen = new Set<number>();
  while (queue.length) {
    const current = queue.shift()!;
    if (seen.has(current)) continue;
    seen.add(current);
    total += processRss(current) ?? 0;
    queue.push(...(children.get(current) ?? []));
  }
  return total;
}
