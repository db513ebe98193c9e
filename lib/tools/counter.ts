import { oneLine } from "../core/sanitize.ts";
import { inWords, readRegularFile } from "../os/files.ts";
import { writeFileAtomic } from "../os/atomic.ts";

/** A counter is a few digits: never read more than this. */
const COUNTER_LIMIT = 64;

/**
 * A plain-integer counter file, as a hand-written watchdog.sh keeps it (`echo 0 > FILE`,
 * `$(cat FILE)`): missing or unreadable counts as 0 (with why), written atomically.
 */
export function readCounter(path: string): { value: number; problem: string | null } {
  let text: string;
  try {
    text = readRegularFile(path, COUNTER_LIMIT, { follow: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { value: 0, problem: code === "ENOENT" ? null : `cannot read ${path}: ${inWords(error)}` };
  }
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { value: Number(trimmed), problem: null };
  return { value: 0, problem: `${path} holds "${oneLine(trimmed, 20)}", not a number: counting from 0` };
}

export function writeCounter(path: string, value: number): void {
  writeFileAtomic(path, `${value}\n`, 0o644);
}
