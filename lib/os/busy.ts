import { readdirSync, readlinkSync, statSync } from "node:fs";
import type { BusyConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { inWords, readRegularFile } from "./files.ts";

const LISTEN = "0A";
/** /proc/net/tcp is ~150 bytes a socket: 16 MiB is 100 000 sockets. */
const PROC_NET_LIMIT = 16 * 1024 * 1024;

/** Socket inodes listening on `port`, from /proc/net/tcp and tcp6 (Linux); null when neither can be read. */
function listeningInodes(port: number): Set<string> | { unreadable: string } {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  let read = 0;
  let problem = "";
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readRegularFile(table, PROC_NET_LIMIT);
      read++;
    } catch (error) {
      problem ||= `${table}: ${inWords(error)}`;
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [, local, , state] = fields;
      if (state === LISTEN && local.endsWith(`:${hexPort}`)) inodes.add(fields[9]);
    }
  }
  return read ? inodes : { unreadable: problem };
}

/** The PID holding a listening socket on `port` (through /proc/PID/fd), or null when none listens. */
function listenerOf(port: number): { pid: number | null } | { unreadable: string } | null {
  const inodes = listeningInodes(port);
  if (!(inodes instanceof Set)) return inodes;
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

/**
 * Is a service whose probe failed busy? What shows it is working, or why not. When the listeners
 * cannot be read (Android 10+ denies an app /proc/net), the port is not checked and the log alone
 * decides: only busy.port degrades, said in `degraded`.
 */
export function busyEvidence(busy: BusyConfig, now = Date.now()): { busy: boolean; detail: string; degraded?: string } {
  const signs: string[] = [];
  let degraded: string | undefined;
  if (busy.port !== null) {
    const listener = listenerOf(busy.port);
    if (!listener) return { busy: false, detail: `nothing listens on port ${busy.port}` };
    if ("unreadable" in listener) {
      degraded = `busy.port: ${listener.unreadable}: the port is not checked, busy.log alone decides`;
      if (busy.log === null) return { busy: false, detail: `port ${busy.port} not checked`, degraded };
    } else signs.push(`pid ${listener.pid ?? "?"} listens on port ${busy.port}`);
  }
  if (busy.log !== null) {
    let age: number;
    try {
      age = Math.max(0, now - statSync(busy.log).mtimeMs);
    } catch {
      return { busy: false, detail: `${busy.log} is missing` };
    }
    if (age > busy.freshMs)
      return { busy: false, detail: `${busy.log} not written for ${humanDuration(age)}`, degraded };
    signs.push(`log written ${humanDuration(age)} ago`);
  }
  return { busy: true, detail: signs.join(", "), degraded };
}
