import { constants } from "node:os";
import { humanDuration } from "../core/duration.ts";
import { TendError, usageError } from "../core/errors.ts";
import { refuseUnsafe } from "../os/signal.ts";
import { commandLine, hasExited, waitForExit } from "../os/proc.ts";
import type { KillTarget } from "./target.ts";

export interface Signal {
  name: string;
  number: number;
}

const ALLOWED = ["TERM", "KILL", "INT", "HUP", "STOP", "CONT", "USR1", "USR2"];

/** TERM, SIGTERM, term, or a number from 1 to 64. */
export function parseSignal(text: string): Signal {
  const signals = constants.signals as Record<string, number>;
  if (/^\d+$/.test(text)) {
    const number = Number(text);
    if (number < 1 || number > 64) throw usageError(`-s ${text}: signal numbers go from 1 to 64`);
    const name = Object.keys(signals).find((key) => signals[key] === number);
    return { name: name ?? `signal ${number}`, number };
  }
  const bare = text.toUpperCase().replace(/^SIG/, "");
  if (!ALLOWED.includes(bare))
    throw usageError(`-s ${text}: not a signal safe-kill sends (allowed: ${ALLOWED.join(", ")} or a number)`);
  return { name: `SIG${bare}`, number: signals[`SIG${bare}`] };
}

interface KillOptions {
  signal: Signal;
  /** After the signal, wait this long for exit, then SIGKILL. */
  escalateMs?: number | null;
  dryRun?: boolean;
  self?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** Signal a verified process; returns the lines to print. */
export async function safeKill(target: KillTarget, options: KillOptions): Promise<string[]> {
  const { signal, escalateMs = null, dryRun = false, self = process.pid, sleep } = options;
  const { info, label } = target;
  refuseUnsafe(info.pid, self);
  if (escalateMs !== null && ["SIGKILL", "SIGSTOP", "SIGCONT"].includes(signal.name)) {
    throw usageError(`--escalate needs a signal the process can act on, not ${signal.name}`);
  }
  const what = `${label} (pid ${info.pid}: ${commandLine(info.pid)})`;
  if (dryRun)
    return [
      `would send ${signal.name} to ${what}` +
        (escalateMs !== null ? `, then SIGKILL if it is still running after ${humanDuration(escalateMs)}` : ""),
    ];
  // Last identity check right before the signal: the PID must still name the same process.
  if (hasExited(info)) throw new TendError(`${label} (pid ${info.pid}) exited before it could be signalled`, 1);
  process.kill(info.pid, signal.number);
  const lines = [`sent ${signal.name} to ${what}`];
  if (escalateMs === null) return lines;
  const started = performance.now();
  if (await waitForExit(info, escalateMs, sleep)) {
    lines.push(
      `${label} exited after ${signal.name} within ${humanDuration(performance.now() - started)}: no force needed`,
    );
    return lines;
  }
  if (!hasExited(info)) process.kill(info.pid, "SIGKILL");
  const gone = await waitForExit(info, 5000, sleep);
  lines.push(
    `${label} was still running after ${humanDuration(escalateMs)}: sent SIGKILL (force was needed)` +
      (gone ? "" : "; it has not exited yet"),
  );
  return lines;
}
