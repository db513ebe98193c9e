// What tend itself installed, checked as the thing that will run it sees it (SPEC doctor): the
// crontab line, the Termux:Boot script, the systemd units, the launchd plist. Every program an entry
// calls resolved on its runner's PATH, every file and directory it names present; one that cannot
// run is `missing`, and doctor exits 1, whatever the configuration uses.
import { existsSync } from "node:fs";
import { readRegularFile, resolveOnPath } from "../os/files.ts";
import { dirname, join } from "node:path";
import { isTermux } from "../core/platform.ts";
import { BOOT_NEEDS, BOOT_PROGRAMS, tendCronLines, userTimerPath } from "../operator/install.ts";

interface InstalledRow {
  name: string;
  status: "ok" | "missing" | "limited";
  detail: string;
  affects: string;
  used: boolean;
}

/** The words of a shell line as sh splits them: 'single quotes', "double quotes", \escapes. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (char === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? "") + line.slice(i + 1, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end;
    } else if (char === '"') {
      let j = i + 1;
      let text = "";
      for (; j < line.length && line[j] !== '"'; j++) text += line[j] === "\\" ? line[++j] : line[j];
      word = (word ?? "") + text;
      i = j;
    } else if (char === "\\") {
      word = (word ?? "") + (line[++i] ?? "");
    } else if (/\s/.test(char)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (char === "#" && word === null) {
      break; // a comment
    } else {
      word = (word ?? "") + char;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

const runnable = (path: string) => resolveOnPath(path, "") !== null;

/** What an entry needs that is not there: the binary, the configuration, the dir it writes to. */
function tendProblems(binary: string | null, config: string | null, writesIn: string | null): string[] {
  const problems: string[] = [];
  if (!binary) problems.push("names no tend binary");
  else if (!runnable(binary))
    problems.push(`${binary} cannot be run (${existsSync(binary) ? "not executable" : "no such file"})`);
  if (config && !existsSync(config)) problems.push(`its configuration ${config}: no such file`);
  if (writesIn && !existsSync(writesIn)) problems.push(`${writesIn} does not exist (its output goes there)`);
  return problems;
}

/** tend's crontab line, as cron runs it: an absolute binary, its configuration, the dir its output is appended in. */
function cronEntry(line: string): string[] {
  const words = shellWords(line.replace(/\\%/g, "%"));
  const command = words.slice(5);
  const after = (flag: string) => (command.includes(flag) ? command[command.indexOf(flag) + 1] : null);
  const appended = command.find((_, i) => command[i - 1] === ">>") ?? null;
  return tendProblems(command[0] ?? null, after("--config"), appended && dirname(appended));
}

/** A value the boot script sets (`tend='...'`), unquoted. */
const assigned = (script: string, name: string) => {
  const line = script.split("\n").find((text) => text.startsWith(`${name}=`));
  return line ? (shellWords(line.slice(name.length + 1))[0] ?? null) : null;
};

/**
 * The Termux:Boot script, as Termux:Boot runs it: its #! interpreter, then each program it calls on
 * Termux's PATH ($PREFIX/bin), crond enabled as a termux-services service, tend, its configuration.
 */
function bootEntry(script: string, env: Record<string, string | undefined>, crontab: string[]): string[] {
  const prefix = env.PREFIX || "/data/data/com.termux/files/usr";
  const path = join(prefix, "bin");
  const problems: string[] = [];
  const shebang = /^#!\s*(\S+)/.exec(script)?.[1] ?? null;
  if (!shebang || !runnable(shebang)) problems.push(`its interpreter ${shebang ?? "(no #! line)"} cannot be run`);
  const needsLine = script.split("\n").find((line) => line.startsWith(BOOT_NEEDS));
  // A script from an older tend names no needs: the programs it mentions.
  const needs = needsLine
    ? needsLine.slice(BOOT_NEEDS.length).trim().split(/\s+/).filter(Boolean)
    : ["termux-wake-lock", ...BOOT_PROGRAMS, "service-daemon"].filter((program) => script.includes(program));
  const absent = [...new Set(needs)].filter(
    (program) => program !== "termux-wake-lock" && !resolveOnPath(program, path),
  );
  if (absent.length)
    problems.push(
      `${absent.join(", ")} not found on ${path} (pkg install cronie termux-services): at boot it falls back ` +
        "to tend's loop",
    );
  else if (needs.includes("crond")) {
    const service = join(env.SVDIR || join(prefix, "var", "service"), "crond");
    if (!existsSync(join(service, "run")))
      problems.push(`${service} is no service (pkg install cronie termux-services)`);
    else if (existsSync(join(service, "down"))) problems.push(`crond is not enabled (sv-enable crond)`);
  }
  // crond runs what its crontab says: a boot chain without tend's line there starts nothing of tend's (#61).
  if (needs.includes("crond") && !tendCronLines(crontab).length)
    problems.push(
      "the crontab has no tend line: at boot crond would run nothing of tend's (watchdog install cron --write)",
    );
  const log = assigned(script, "log");
  problems.push(...tendProblems(assigned(script, "tend"), assigned(script, "config"), log && dirname(log)));
  return problems;
}

/** A systemd unit's ExecStart, as systemd runs it: its first word. */
function unitEntry(text: string): string[] {
  const exec = /^ExecStart=(.*)$/m.exec(text)?.[1];
  if (!exec) return [];
  const words = shellWords(exec.replace(/%%/g, "%").replace(/\$\$/g, "$"));
  const after = (flag: string) => (words.includes(flag) ? words[words.indexOf(flag) + 1] : null);
  return tendProblems(words[0] ?? null, after("--config"), null);
}

/** A launchd plist's ProgramArguments, as launchd runs it. */
function plistEntry(text: string): string[] {
  const args = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1] ?? "";
  const words = [...args.matchAll(/<string>([^<]*)<\/string>/g)].map((match) =>
    match[1].replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"),
  );
  const after = (flag: string) => (words.includes(flag) ? words[words.indexOf(flag) + 1] : null);
  return tendProblems(words[0] ?? null, after("--config"), null);
}

/** One row: every entry tend installed for this user, each checked as its runner will see it. */
export function installedRow(env: Record<string, string | undefined>, crontab: string[]): InstalledRow {
  const home = env.HOME ?? "";
  const uid = process.getuid?.() ?? 0;
  const read = (path: string) => {
    try {
      return readRegularFile(path, 1024 * 1024);
    } catch {
      return null;
    }
  };
  const entries: { what: string; problems: string[] }[] = [];
  for (const line of tendCronLines(crontab)) entries.push({ what: "crontab line", problems: cronEntry(line) });
  const boot = read(join(home, ".termux", "boot", "tend-watchdog"));
  if (boot !== null)
    entries.push({ what: "Termux:Boot script tend-watchdog", problems: bootEntry(boot, env, crontab) });
  if (!isTermux(env)) {
    const unitDir = uid === 0 ? "/etc/systemd/system" : dirname(userTimerPath(home));
    const unit = read(join(unitDir, "tend-watchdog.service"));
    if (unit !== null)
      entries.push({ what: `systemd unit ${join(unitDir, "tend-watchdog.service")}`, problems: unitEntry(unit) });
    const plistPath =
      uid === 0
        ? "/Library/LaunchDaemons/org.tend.watchdog.plist"
        : join(home, "Library", "LaunchAgents", "org.tend.watchdog.plist");
    const plist = read(plistPath);
    if (plist !== null) entries.push({ what: `launchd job ${plistPath}`, problems: plistEntry(plist) });
  }
  const row = {
    name: "installed entries",
    affects: "what runs tend's passes (cron, Termux:Boot, systemd, launchd): an entry that cannot run runs nothing",
  };
  if (!entries.length)
    return {
      ...row,
      status: "limited",
      used: false,
      detail: "none (watchdog install cron|termux-boot|systemd|launchd)",
    };
  const broken = entries.filter((entry) => entry.problems.length);
  return {
    ...row,
    status: broken.length ? "missing" : "ok",
    used: true,
    detail: entries
      .map((entry) => `${entry.what}: ${entry.problems.length ? entry.problems.join("; ") : "ok"}`)
      .join("; "),
  };
}
