// `watchdog import SCRIPT [--out FILE]`: a draft tend.toml from a hand-written watchdog script (SPEC
// Commands). The script is read as its shell would run it, never run: parsed (import/shell.ts), then
// walked with its variables, functions, branches and loops (import/reader.ts) into checks and the
// restarts on their failing branches, then written with each value's line (import/draft.ts). The
// traps doctor --audit finds are listed on top. Pure over the text.
import { auditText } from "./audit.ts";
import { writeDraft } from "./import/draft.ts";
import { Reader, type Sourced } from "./import/reader.ts";
import { parseScript } from "./import/shell.ts";
import { shellWords } from "./installed.ts";

interface ImportResult {
  /** The draft's text: TOML with comments. */
  draft: string;
  /** How many services it mapped (0: nothing could be mapped). */
  services: number;
  /** Restarts the script makes that the draft does not carry, each with its line and why. */
  missing: string[];
}

interface ImportOptions {
  /** The crontab line that runs the script, if any: its period, and the arguments it passes. */
  cronLine?: string | null;
  /** The sender mail(1) would use on this host (USER@HOST). */
  mailFrom?: string;
  /** $PREFIX where import runs (Termux). */
  prefix?: string;
}

const TERMUX_PREFIX = "/data/data/com.termux/files/usr";

const STRUCTURE =
  /^\s*(then|else|fi|do|done|esac|;;|\{|\}|\)|[\w-]+\s*\(\)\s*\{?|function\s+[\w-]+.*|[^\s()]+\))\s*(#.*)?$/;

/** A draft tend.toml from a watchdog script's text. */
export function importScript(path: string, text: string, options: ImportOptions = {}): ImportResult {
  const base = path.split("/").pop() ?? path;
  // The crontab line: the user's (given), else one the script's own comments show (`# */5 * * * * .../x.sh`).
  const commented = text
    .split("\n")
    .map((line) => /^\s*#(.*)$/.exec(line)?.[1] ?? "")
    .map((comment) => {
      const schedule = /(?:^|[\s:(])((?:[\d*\/,-]+\s+){4}[\d*\/,-]+(?:\s[^)]*)?)\)?\s*$/.exec(comment);
      // A crontab line in a comment: the one that runs this script (its name, a path, or the word cron).
      const named = new RegExp(`(^|/|\\s)${escape(base)}(\\s|$)`).test(comment) || /\bcron|\s[~.]?\//i.test(comment);
      return schedule && named && cronPeriod(schedule[1]) !== null ? schedule[1] : null;
    })
    .find((line): line is string => line !== null);
  const cronLine = options.cronLine ?? commented ?? null;
  const args = cronLine ? argsAfter(cronLine, base) : [];
  // Termux's $PREFIX is fixed (the app's own prefix): known where the script is a phone's.
  const env: Record<string, string> = {};
  if (options.prefix) env.PREFIX = options.prefix;
  else if (/com\.termux|\btermux-/.test(text)) env.PREFIX = TERMUX_PREFIX;
  const reading = new Reader(path, args, env).read(parseScript(text));
  const cron = cronLine ? cronPeriod(cronLine) : null;
  const period: Sourced<string> | null = cron
    ? {
        value: cron,
        line: options.cronLine ? 0 : lineOf(text, commented!),
        why: `the crontab line: ${cronLine!.trim().split(/\s+/).slice(0, 5).join(" ")}`,
      }
    : reading.period;
  const traps = auditText(path, text, {}, "script").map(
    (trap) => `${trap.severity.toUpperCase()} line ${trap.line}: ${trap.trap}: ${trap.fix}`,
  );
  const lines = text.split("\n");
  const unmapped: string[] = [];
  for (const item of reading.unreadable) unmapped.push(`line ${item.line}: ${item.text} (${item.why})`);
  lines.forEach((raw, index) => {
    const number = index + 1;
    if (index > 0 && /\\\s*$/.test(lines[index - 1])) return; // a continuation of the line before
    const code = raw.replace(/(^|\s)#.*$/, "").trim();
    if (!code || reading.used.has(number) || STRUCTURE.test(code) || /^#!/.test(raw)) return;
    if (reading.unreadable.some((item) => item.line === number)) return;
    unmapped.push(`line ${number}: ${code}${why(code)}`);
  });
  const draft = writeDraft({
    path,
    reading,
    period,
    traps,
    unmapped: unmapped.slice(0, 60),
    mailFrom: options.mailFrom ?? "tend@localhost",
  });
  return { draft: draft.text, services: draft.services, missing: draft.missing };
}

/** The arguments a crontab line passes to the script (after its path; a system crontab's user skipped). */
function argsAfter(cronLine: string, base: string): string[] {
  const words = shellWords(cronLine.replace(/\s[12]?>>?.*$|\s&>.*$|\s\|.*$/, "")).slice(5);
  let at = words.findIndex((word) => word === base || word.endsWith(`/${base}`));
  if (at < 0) at = words.findIndex((word) => word.includes("/"));
  return at < 0 ? [] : words.slice(at + 1);
}

function lineOf(text: string, fragment: string): number {
  return text.split("\n").findIndex((line) => line.includes(fragment)) + 1;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Why a line needs no mapping, when tend does it itself. */
function why(text: string): string {
  if (/\bflock\b|\.lock\b/.test(text)) return " (tend takes its own lock)";
  if (/heartbeat/.test(text)) return " (tend keeps its own heartbeat: status, /healthz)";
  if (/downtime/i.test(text)) return " (tend writes downtime.log itself)";
  if (/fail-?count|fails?\b|strikes?/i.test(text)) return " (tend counts strikes itself)";
  if (/^\s*(echo|printf|log)\b.*>>/.test(text)) return " (tend writes watchdog.log itself)";
  return "";
}

/** A cron schedule's period, when it has one: `*\/5 * * * *` 5m, `* * * * *` 1m, `0 * * * *` 1h. */
function cronPeriod(line: string): string | null {
  const special = /^\s*@(hourly|daily|midnight)\b/.exec(line);
  if (special) return special[1] === "hourly" ? "1h" : "1d";
  const fields = line.trim().split(/\s+/).slice(0, 5);
  if (fields.length < 5 || !fields.every((field) => /^[\d*/,-]+$/.test(field))) return null;
  const [minute, hour, ...rest] = fields;
  if (rest.some((field) => field !== "*")) return null;
  if (hour === "*" && minute === "*") return "1m";
  const every = /^\*\/(\d+)$/.exec(minute);
  if (hour === "*" && every) return `${every[1]}m`;
  const list = /^\d+(,\d+)+$/.test(minute) ? minute.split(",").map(Number) : null;
  if (list && hour === "*") {
    const gaps = new Set(list.map((value, index) => (list[(index + 1) % list.length] - value + 60) % 60));
    if (gaps.size === 1) return `${[...gaps][0]}m`;
  }
  if (/^\d+$/.test(minute) && hour === "*") return "1h";
  const hours = /^\*\/(\d+)$/.exec(hour);
  if (/^\d+$/.test(minute) && hours) return `${hours[1]}h`;
  return null;
}
