import { existsSync, mkdirSync, rmSync } from "node:fs";
import { readRegularFile } from "../os/files.ts";
import { isTermux } from "../core/platform.ts";
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../os/atomic.ts";
import { statePaths } from "../state/dir.ts";
import type { Config } from "../config/types.ts";
import { formatDuration } from "../core/duration.ts";
import { TendError, usageError } from "../core/errors.ts";
import { runCommand, saidBy } from "../os/run.ts";

const SCHEDULERS = ["cron", "termux-boot", "systemd", "launchd"] as const;
type Scheduler = (typeof SCHEDULERS)[number];

interface InstallFile {
  path: string;
  content: string;
  mode: number;
}

interface InstallOptions {
  /** The tend binary the entry runs. */
  binary: string;
  home: string;
  uid: number;
  /** The period: `--interval`, else [watchdog] interval. */
  intervalMs: number;
  /** cron can mail a job's output (else the line appends it to the state dir's cron.log). */
  mail?: boolean;
  /** termux-boot: start the loop at boot (`--loop`) instead of runsvdir's crond running short passes. */
  loop?: boolean;
}

/** Marks tend's crontab line, so --write replaces it instead of adding a second. */
const CRON_MARK = "# tend watchdog";
/** isTendLine as the boot script's grep -E asks it of `crontab -l`. */
const CRON_LINE_PATTERN = "^[^#]* watchdog pass .*# tend watchdog[[:space:]]*$";
const LABEL = "org.tend.watchdog";
const UNIT = "tend-watchdog";

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);
const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const MINUTE = 60_000;
/** Periods cron runs at exactly: minute steps that divide an hour, hour steps that divide a day, a day. */
const CRON_PERIODS: [number, string][] = [
  ...[1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].map((n): [number, string] => [
    n * MINUTE,
    n === 1 ? "* * * * *" : `*/${n} * * * *`,
  ]),
  ...[1, 2, 3, 4, 6, 8, 12].map((n): [number, string] => [n * 60 * MINUTE, n === 1 ? "0 * * * *" : `0 */${n} * * *`]),
  [24 * 60 * MINUTE, "0 0 * * *"],
];

/** interval -> the cron schedule of the nearest period cron can run at exactly (e.g. 90s -> every 2 minutes). */
function cronSchedule(intervalMs: number): { schedule: string; periodMs: number } {
  // A tie goes to the longer period: fewer passes than asked, never more.
  const [periodMs, schedule] = CRON_PERIODS.reduce((best, candidate) =>
    Math.abs(candidate[0] - intervalMs) <= Math.abs(best[0] - intervalMs) ? candidate : best,
  );
  return { schedule, periodMs };
}

/** Said when cron cannot run at the interval asked for: both periods named. */
export function cronWarning(intervalMs: number): string | null {
  const { periodMs } = cronSchedule(intervalMs);
  if (periodMs === intervalMs) return null;
  const asked = formatDuration(intervalMs);
  return `cron cannot run every ${asked}: the line runs every ${formatDuration(periodMs)}, the nearest it can`;
}

/** cron gives % a meaning (newline) in the command: escaped. */
const cronEscape = (text: string) => text.replace(/%/g, "\\%");

/**
 * cron mails a job's output through sendmail (its MAILCMD, a fixed path); where there is none
 * (Termux, a host without an MTA) that output would be lost.
 */
export const cronCanMail = (prefix = process.env.PREFIX ?? "") =>
  ["/usr/sbin/sendmail", "/usr/lib/sendmail", `${prefix}/bin/sendmail`].some((path) => existsSync(path));

export function cronLine(config: Config, { binary, intervalMs, mail = cronCanMail() }: InstallOptions): string {
  // No mail: the line appends its output (a configuration error, say) to the state dir's cron.log.
  const output = mail ? "" : ` >> ${quote(statePaths(config.watchdog.stateDir).cronLog)} 2>&1`;
  // The line carries the period cron really runs it at: the heartbeat records it, so a slower
  // scheduler than [watchdog] interval never reads as a stale watchdog.
  const period = formatDuration(cronSchedule(intervalMs).periodMs);
  const command = cronEscape(
    `${quote(binary)} watchdog pass --interval ${period} --config ${quote(config.path)}${output}`,
  );
  return `${cronSchedule(intervalMs).schedule} ${command} ${CRON_MARK}`;
}

/** Marks a crontab line install commented out (--replace), so uninstall can restore it. */
const REPLACED_MARK = " # replaced by tend";

/** Crontab lines that run another watchdog: a watchdog.sh, or the user's --replace PATTERN. */
function otherWatchdogs(lines: string[], pattern: string | null): string[] {
  return lines.filter(
    (line) =>
      !line.trimStart().startsWith("#") &&
      !isTendLine(line) &&
      (line.includes("watchdog.sh") || (pattern !== null && line.includes(pattern))),
  );
}

/**
 * A line install wrote: it ends with the marker and runs `watchdog pass` (a user's own line that
 * merely mentions "# tend watchdog" is not tend's to replace or remove).
 */
const isTendLine = (line: string) =>
  !line.trimStart().startsWith("#") && line.trimEnd().endsWith(CRON_MARK) && / watchdog pass /.test(line);

/** tend's own lines in a crontab (the exact marker install writes). */
export const tendCronLines = (lines: string[]) => lines.filter(isTendLine);

/**
 * The environment cron gives the tend line: its PATH (cron's default /usr/bin:/bin, or the last
 * PATH= line above it) and TMUX_TMPDIR when the crontab sets it.
 */
export function cronEnvironment(
  lines: string[],
  defaultPath = "/usr/bin:/bin",
): { PATH: string; TMUX_TMPDIR: string | null } {
  const env: { PATH: string; TMUX_TMPDIR: string | null } = { PATH: defaultPath, TMUX_TMPDIR: null };
  for (const line of lines) {
    if (isTendLine(line)) break;
    const assignment = /^\s*(PATH|TMUX_TMPDIR)\s*=\s*"?([^"]*)"?\s*$/.exec(line);
    if (assignment) env[assignment[1] as "PATH" | "TMUX_TMPDIR"] = assignment[2];
  }
  return env;
}

/** The user's crontab lines ([] when there is none). */
export async function crontabLines(): Promise<string[]> {
  // In "/": a working directory this user may not enter must not read as "no crontab".
  const current = await runCommand(["crontab", "-l"], { timeoutMs: 10_000, cwd: "/" });
  if (current.error) throw new TendError(`crontab: ${current.error} (install cron)`, 1);
  // `crontab -l` exits 1 with "no crontab for USER" when there is none yet.
  return current.exitCode === 0
    ? current.stdout
        .replace(/\n$/, "")
        .split("\n")
        .filter((line, i, all) => line || i < all.length - 1)
    : [];
}

/** On Termux: what cron needs that is not there yet, as the commands that install it (none: []). */
export function termuxCronNeeds(env: Record<string, string | undefined>, hasCrontab: boolean): string[] {
  const prefix = env.PREFIX ?? "";
  if (!isTermux(env)) return [];
  const needs: string[] = [];
  if (!hasCrontab) needs.push("pkg install cronie termux-services");
  const crond = join(env.SVDIR || join(prefix, "var", "service"), "crond");
  if (!hasCrontab || !existsSync(crond) || existsSync(join(crond, "down"))) needs.push("sv-enable crond");
  return needs;
}

/** What install cron says about the crontab it would share: another watchdog still runs from it. */
export async function crontabWarnings(pattern: string | null): Promise<string[]> {
  const others = otherWatchdogs(await crontabLines().catch(() => []), pattern);
  if (!others.length || pattern !== null) return [];
  return others.map(
    (line) =>
      `the crontab still runs another watchdog: ${line}\n` +
      "  two watchdogs restart the same services with separate locks: --replace PATTERN comments it out",
  );
}

/**
 * One word of an ExecStart line: double-quoted when it holds a space or a quote, `\` and `"` escaped
 * inside; `%` as `%%` (a specifier) and `$` as `$$` (a variable) everywhere.
 */
function systemdWord(word: string): string {
  const literal = word.replace(/%/g, "%%").replace(/\$/g, "$$$$");
  return /^[\w@%+=:,./$-]+$/.test(literal) ? literal : `"${literal.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Paths tend writes into an entry: a newline or another control character would start a line of its own. */
function refuseControls(what: string, path: string) {
  if (/[\u0000-\u001f\u007f]/.test(path))
    throw usageError(
      `${what} ${JSON.stringify(path)} holds a newline or a control character: it cannot go in an entry`,
    );
}

/** Termux's shell: Termux:Boot runs a script by its #! line, and /bin/sh is Android's, not Termux's. */
const TERMUX_SH = "/data/data/com.termux/files/usr/bin/sh";
/** What the boot script calls to start the short passes: termux-services' runsvdir runs cronie's crond. */
export const BOOT_PROGRAMS = ["service-daemon", "runsvdir", "sv", "crond"];
/** The line of a boot script tend wrote that names what it calls (doctor checks each on Termux:Boot's PATH). */
export const BOOT_NEEDS = "# tend needs:";

/**
 * The Termux:Boot script. Each step goes to STATE_DIR/boot.log; each program is looked for before it
 * is called; if crond cannot be started (a program missing, crond not enabled or not running 10s
 * later) the loop watches instead, said in boot.log and in a notification: a reboot never leaves
 * the phone unwatched without a word. With --loop the loop is the user's choice.
 */
function bootScript(config: Config, options: InstallOptions, every: string): string {
  const stateDir = config.watchdog.stateDir;
  const run = `exec "$tend" watchdog run${every} --config "$config" > /dev/null 2>> "$log"`;
  const head = [
    `#!${TERMUX_SH}`,
    "# Written by `tend watchdog install termux-boot`. Termux:Boot runs it after the first unlock.",
    `${BOOT_NEEDS} termux-wake-lock${options.loop ? "" : ` ${BOOT_PROGRAMS.join(" ")}`}`,
    `log=${quote(join(stateDir, "boot.log"))}`,
    `tend=${quote(options.binary)}`,
    `config=${quote(config.path)}`,
    `mkdir -p ${quote(stateDir)}`,
    `say() { echo "$(date '+%Y-%m-%d %H:%M:%S') $*" >> "$log"; }`,
    'say "boot: Termux:Boot runs tend-watchdog"',
    "# The wake lock first: without it the CPU sleeps between passes.",
    "if command -v termux-wake-lock > /dev/null; then",
    '  termux-wake-lock && say "wake lock taken"',
    "else",
    '  say "termux-wake-lock not found: the CPU may sleep between passes"',
    "fi",
  ];
  if (options.loop)
    return [
      ...head,
      "# The loop, your choice: Android 12+'s phantom process killer goes for long-lived processes first",
      "# (tend doctor says how to turn it off). crond, when termux-services has it enabled, runs tend's",
      "# crontab line as the loop's keeper: its pass exits at once while the loop runs, and watches when",
      "# the loop was killed. Nothing else starts runsvdir at boot (Termux starts it with a session).",
      'export SVDIR="$PREFIX/var/service" LOGDIR="$PREFIX/var/log"',
      'if command -v service-daemon > /dev/null && [ -e "$SVDIR/crond/run" ] && [ ! -e "$SVDIR/crond/down" ]; then',
      '  service-daemon start >> "$log" 2>&1 || say "service-daemon start: exit $? (runsvdir may run already)"',
      `  say "crond started: it runs the loop's keeper (tend's crontab line)"`,
      "else",
      `  say "no crond enabled (pkg install cronie termux-services; sv-enable crond): nothing keeps the loop's watch"`,
      "fi",
      `say "tend's loop starts (watchdog run)"`,
      run,
      "",
    ].join("\n");
  return [
    ...head,
    "# Short passes from cron: termux-services' runsvdir runs crond, which runs tend's crontab line",
    "# (pkg install cronie termux-services; sv-enable crond; tend watchdog install cron --write).",
    "loop() {",
    `  say "$1: tend's loop watches instead (watchdog run)"`,
    '  "$tend" notify --config "$config" --title "tend at boot" --priority high \\',
    `    "crond cannot run tend's passes at boot ($1): tend's loop watches instead (watchdog run)" >> "$log" 2>&1`,
    `  ${run}`,
    "}",
    'export SVDIR="$PREFIX/var/service" LOGDIR="$PREFIX/var/log"',
    `for program in ${BOOT_PROGRAMS.join(" ")}; do`,
    '  command -v "$program" > /dev/null || loop "$program not found (pkg install cronie termux-services)"',
    "done",
    '[ -e "$SVDIR/crond/run" ] || loop "crond is no service in $SVDIR (pkg install cronie termux-services)"',
    '[ ! -e "$SVDIR/crond/down" ] || loop "crond is not enabled (sv-enable crond)"',
    "# crond runs only what its crontab says: without tend's line there it would run nothing of tend's.",
    `crontab -l 2> /dev/null | grep -q -E ${quote(CRON_LINE_PATTERN)} || ` +
      'loop "the crontab has no tend line (watchdog install cron --write)"',
    "# Termux:Boot may run this twice: a runsvdir that already runs is kept.",
    'service-daemon start >> "$log" 2>&1 || say "service-daemon start: exit $? (runsvdir may run already)"',
    "waited=0",
    "until sv status crond 2> /dev/null | grep -q '^run:'; do",
    '  [ "$waited" -lt 10 ] || loop "crond did not start within 10s ($(sv status crond 2>&1))"',
    "  sleep 1",
    "  waited=$((waited + 1))",
    "done",
    `say "crond runs ($(sv status crond)): it runs tend's crontab line"`,
    "",
  ].join("\n");
}

/**
 * On Termux, what the boot script's short passes need that this Termux lacks: the programs not on
 * PATH (a fresh Termux has neither cronie nor termux-services). Elsewhere nothing can be checked: [].
 */
export function termuxBootMissing(env: Record<string, string | undefined>): string[] {
  if (!isTermux(env)) return [];
  return [...BOOT_PROGRAMS, "crontab"].filter((program) => Bun.which(program, { PATH: env.PATH ?? "" }) === null);
}

/** The files (or crontab line) each scheduler needs. */
export function installFiles(scheduler: Scheduler, config: Config, options: InstallOptions): InstallFile[] {
  const { binary, home, uid, intervalMs } = options;
  refuseControls("the binary", binary);
  refuseControls("the configuration", config.path);
  refuseControls("state_dir", config.watchdog.stateDir);
  const seconds = Math.max(1, Math.round(intervalMs / 1000));
  const every = intervalMs === config.watchdog.intervalMs ? "" : ` --interval ${formatDuration(intervalMs)}`;
  const pass = [binary, "watchdog", "pass", "--interval", formatDuration(intervalMs), "--config", config.path];
  switch (scheduler) {
    case "cron":
      return [{ path: "crontab", content: cronLine(config, options) + "\n", mode: 0o644 }];
    case "termux-boot":
      return [
        {
          path: join(home, ".termux", "boot", "tend-watchdog"),
          mode: 0o755,
          content: bootScript(config, options, every),
        },
      ];
    case "systemd": {
      const dir = uid === 0 ? "/etc/systemd/system" : join(home, ".config", "systemd", "user");
      const bootSeconds = config.watchdog.bootDelayMs ? Math.ceil(config.watchdog.bootDelayMs / 1000) : 60;
      return [
        {
          path: join(dir, `${UNIT}.service`),
          mode: 0o644,
          content: [
            "[Unit]",
            "Description=tend watchdog pass",
            "",
            "[Service]",
            "Type=oneshot",
            // systemd gives %, $ and \ a meaning in ExecStart (specifiers, variables, escapes).
            `ExecStart=${pass.map(systemdWord).join(" ")}`,
            "# Services tend spawns start in their own session; do not kill them with this unit's cgroup.",
            "KillMode=process",
            "",
          ].join("\n"),
        },
        {
          path: join(dir, `${UNIT}.timer`),
          mode: 0o644,
          content: [
            "[Unit]",
            "Description=tend watchdog pass every interval",
            "",
            "[Timer]",
            `OnBootSec=${bootSeconds}s`,
            `OnUnitActiveSec=${seconds}s`,
            "AccuracySec=1s",
            "",
            "[Install]",
            "WantedBy=timers.target",
            "",
          ].join("\n"),
        },
      ];
    }
    case "launchd": {
      const dir = uid === 0 ? "/Library/LaunchDaemons" : join(home, "Library", "LaunchAgents");
      const args = pass.map((arg) => `    <string>${xml(arg)}</string>`).join("\n");
      return [
        {
          path: join(dir, `${LABEL}.plist`),
          mode: 0o644,
          content: `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${LABEL}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <!-- launchd starts jobs with a bare PATH: add Homebrew's (arm64 and x86) for what checks run. -->
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key>
    <string>/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin</string>
  </dict>
  <key>StartInterval</key>
  <integer>${seconds}</integer>
  <key>RunAtLoad</key>
  <true/>
  <!-- launchd kills a job's process group when it exits: services tend restarts must survive it. -->
  <key>AbandonProcessGroup</key>
  <true/>
  <key>StandardOutPath</key>
  <string>${xml(join(config.watchdog.stateDir, "launchd.out"))}</string>
  <key>StandardErrorPath</key>
  <string>${xml(join(config.watchdog.stateDir, "launchd.out"))}</string>
</dict>
</plist>
`,
        },
      ];
    }
  }
}

/**
 * A user's systemd timer runs only while its manager does: from their login to their logout,
 * unless lingering is on. What install and doctor say of it (`on` null: no logind to ask).
 */
export function lingerWords(user: string, on: boolean | null): string {
  const turnOn = `loginctl enable-linger ${user}`;
  if (on === true) return `lingering is on for ${user}: the timer runs from boot, and after ${user} logs out`;
  if (on === false)
    return (
      `lingering is off for ${user}: the timer stops when ${user} logs out and does not start at boot ` +
      `(turn it on: ${turnOn})`
    );
  return (
    `lingering for ${user} is unknown (no systemd-logind state here): a user timer runs only while ${user} ` +
    `is logged in unless it is on (${turnOn})`
  );
}

/** Where a user's systemd timer for tend is installed. */
export const userTimerPath = (home: string) => join(home, ".config", "systemd", "user", `${UNIT}.timer`);

/** What --write would write: the crontab line, or each file under a `# PATH` line. */
export function renderInstall(scheduler: Scheduler, files: InstallFile[]): string {
  return files.map((file) => (scheduler === "cron" ? file.content : `# ${file.path}\n${file.content}`)).join("\n");
}

/** Write the entry idempotently; returns what changed, one line each. */
export async function writeInstall(
  scheduler: Scheduler,
  files: InstallFile[],
  replace: string | null = null,
): Promise<string[]> {
  if (scheduler === "cron") return writeCrontab(files[0].content.trim(), replace);
  const said: string[] = [];
  for (const file of files) {
    let current: string | null = null;
    try {
      current = readRegularFile(file.path, 1024 * 1024);
    } catch {}
    if (current === file.content) {
      said.push(`${file.path}: unchanged`);
      continue;
    }
    try {
      mkdirSync(dirname(file.path), { recursive: true });
      writeFileAtomic(file.path, file.content, file.mode);
    } catch (error) {
      throw new TendError(`cannot write ${file.path}: ${(error as NodeJS.ErrnoException).code ?? error}`, 1);
    }
    said.push(`${file.path}: ${current === null ? "written" : "updated"}`);
  }
  const user = files[0].path.startsWith("/etc/") ? "" : "--user ";
  if (scheduler === "systemd")
    said.push(`then: systemctl ${user}daemon-reload && systemctl ${user}enable --now ${UNIT}.timer`);
  if (scheduler === "launchd")
    said.push(
      `then: launchctl bootstrap ${files[0].path.startsWith("/Library/") ? "system" : `gui/$(id -u)`} ${files[0].path}`,
    );
  return said;
}

/**
 * Replace tend's line in the user's crontab (or add it): never a second one. With `replace`, the
 * lines running another watchdog that match it are commented out, marked, for uninstall to restore.
 */
async function writeCrontab(line: string, replace: string | null = null): Promise<string[]> {
  const lines = await crontabLines();
  const replaced = otherWatchdogs(lines, replace).filter((other) => replace !== null && other.includes(replace));
  // --replace names one line: an empty or broad pattern must not comment out a whole crontab.
  const done = (line: string) => line.endsWith(REPLACED_MARK) && replace !== null && line.includes(replace);
  if (replace !== null && replaced.length === 0 && !lines.some(done))
    throw usageError(`--replace ${JSON.stringify(replace)} matches no crontab line (tend's own lines aside)`);
  if (replace !== null && replaced.length > 1)
    throw usageError(
      `--replace ${JSON.stringify(replace)} matches ${replaced.length} crontab lines; give a pattern that matches one`,
    );
  const ours = lines.filter(isTendLine);
  if (ours.length === 1 && ours[0] === line && !replaced.length) return ["crontab: unchanged"];
  const next = [
    ...lines
      .filter((existing) => !isTendLine(existing))
      .map((existing) => (replaced.includes(existing) ? `#${existing}${REPLACED_MARK}` : existing)),
    line,
  ];
  await saveCrontab(next);
  return [
    ...replaced.map((other) => `crontab: commented out: ${other}`),
    `crontab: ${ours.length ? "updated" : "added"}: ${line}`,
  ];
}

async function saveCrontab(lines: string[]) {
  const written = await runCommand(["crontab", "-"], {
    timeoutMs: 10_000,
    cwd: "/",
    input: lines.length ? lines.join("\n") + "\n" : "",
  });
  if (written.exitCode !== 0) {
    throw new TendError(`crontab -: ${written.error ?? (saidBy(written) || `exit ${written.exitCode}`)}`, 1);
  }
}

/**
 * `watchdog uninstall KIND`: remove exactly what install wrote (tend's crontab line, other lines
 * kept; the boot script; both systemd units, disabled first; the launchd plist, booted out first).
 * Idempotent; without `write`, says what it would do.
 */
export async function removeInstall(scheduler: Scheduler, files: InstallFile[], write: boolean): Promise<string[]> {
  if (scheduler === "cron") {
    const lines = await crontabLines();
    const ours = lines.filter(isTendLine);
    const restored = lines.filter((line) => line.endsWith(REPLACED_MARK));
    if (!ours.length && !restored.length) return ["crontab: no tend line"];
    const original = (line: string) => line.slice(1, -REPLACED_MARK.length);
    if (!write) {
      return [
        ...ours.map((line) => `would remove from the crontab: ${line}`),
        ...restored.map((line) => `would restore: ${original(line)}`),
      ];
    }
    const rest = lines
      .filter((line) => !isTendLine(line))
      .map((line) => (line.endsWith(REPLACED_MARK) ? original(line) : line));
    await saveCrontab(rest);
    return [
      ...ours.map((line) => `crontab: removed: ${line}`),
      ...restored.map((line) => `crontab: restored: ${original(line)}`),
    ];
  }
  const present = files.filter((file) => existsSync(file.path));
  if (!present.length) return [`${files.map((file) => file.path).join(", ")}: not installed`];
  if (!write) return present.map((file) => `would remove ${file.path}`);
  const said: string[] = [];
  const user = files[0].path.startsWith("/etc/") ? [] : ["--user"];
  const tell = async (argv: string[]) => {
    const result = await runCommand(argv, { timeoutMs: 30_000 });
    said.push(
      `${argv.join(" ")}: ` +
        (result.exitCode === 0 ? "ok" : saidBy(result) || result.error || `exit ${result.exitCode}`),
    );
  };
  if (scheduler === "systemd") await tell(["systemctl", ...user, "disable", "--now", `${UNIT}.timer`]);
  if (scheduler === "launchd") {
    await tell([
      "launchctl",
      "bootout",
      files[0].path.startsWith("/Library/") ? "system" : `gui/${process.getuid?.()}`,
      files[0].path,
    ]);
  }
  for (const file of present) {
    rmSync(file.path, { force: true });
    said.push(`${file.path}: removed`);
  }
  if (scheduler === "systemd") await tell(["systemctl", ...user, "daemon-reload"]);
  return said;
}

export function parseScheduler(name: string | undefined): Scheduler {
  if (!name || !SCHEDULERS.includes(name as Scheduler))
    throw usageError(`watchdog install needs one of: ${SCHEDULERS.join(", ")}`);
  return name as Scheduler;
}
