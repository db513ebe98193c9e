import { readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import type { BusyConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";

const LISTEN = "0A";

/** Socket inodes listening on `port`, from /proc/net/tcp and tcp6 (Linux). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [, local, , state] = fields;
      if (state === LISTEN && local.endsWith(`:${hexPort}`)) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** The PID holding a listening socket on `port` (through /proc/PID/fd), or null when none listens. */
export function listenerOf(port: number): { pid: number | null } | null {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return null;
  const wanted = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (wanted.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return { pid: Number(entry) };
      } catch {}
    }
  }
  return { pid: null }; // listening, but the owner is not visible to us
}

/** Is a service whose probe failed busy? null: not busy (with why), else what shows it is working. */
export function busyEvidence(busy: BusyConfig, now = Date.now()): { busy: boolean; detail: string } {
  const signs: string[] = [];
  if (busy.port !== null) {
    const listener = listenerOf(busy.port);
    if (!listener) return { busy: false, detail: `nothing listens on port ${busy.port}` };
    signs.push(`pid ${listener.pid ?? "?"} listens on port ${busy.port}`);
  }
  if (busy.log !== null) {
    let age: number;
    try {
      age = Math.max(0, now - statSync(busy.log).mtimeMs);
    } catch {
      return { busy: false, detail: `${busy.log} is missing` };
    }
    if (age > busy.freshMs) return { busy: false, detail: `${busy.log} not written for ${humanDuration(age)}` };
    signs.push(`log written ${humanDuration(age)} ago`);
  }
  return { busy: true, detail: signs.join(", ") };
}
