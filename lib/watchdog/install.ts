import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../os/atomic.ts";
import type { Config } from "../config/types.ts";
import { TendError, usageError } from "../core/errors.ts";
import { runCommand, saidBy } from "../os/run.ts";

export const SCHEDULERS = ["cron", "termux-boot", "systemd", "launchd"] as const;
export type Scheduler = (typeof SCHEDULERS)[number];

export interface InstallFile {
  path: string;
  content: string;
  mode: number;
}

export interface InstallOptions {
  /** The tend binary the entry runs. */
  binary: string;
  home: string;
  uid: number;
}

/** Marks tend's crontab line, so --write replaces it instead of adding a second. */
const CRON_MARK = "# tend watchdog";
const LABEL = "org.tend.watchdog";
const UNIT = "tend-watchdog";

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);
const xml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** interval -> a cron schedule: every N minutes (N dividing 60), every N hours, else every minute count rounded. */
export function cronSchedule(intervalMs: number): string {
  const minutes = Math.max(1, Math.round(intervalMs / 60_000));
  if (minutes < 60) return minutes === 1 ? "* * * * *" : `*/${minutes} * * * *`;
  const hours = Math.max(1, Math.round(minutes / 60));
  return hours >= 24 ? "0 0 * * *" : `0 */${hours} * * *`;
}

export function cronLine(config: Config, { binary }: InstallOptions): string {
  const command = `${quote(binary)} watchdog pass --config ${quote(config.path)}`;
  return `${cronSchedule(config.watchdog.intervalMs)} ${command} ${CRON_MARK}`;
}

/** The files (or crontab line) each scheduler needs. */
export function installFiles(scheduler: Scheduler, config: Config, options: InstallOptions): InstallFile[] {
  const { binary, home, uid } = options;
  const seconds = Math.max(1, Math.round(config.watchdog.intervalMs / 1000));
  const pass = [binary, "watchdog", "pass", "--config", config.path];
  switch (scheduler) {
    case "cron":
      return [{ path: "crontab", content: cronLine(config, options) + "\n", mode: 0o644 }];
    case "termux-boot":
      return [
        {
          path: join(home, ".termux", "boot", "tend-watchdog"),
          mode: 0o755,
          content: [
            "#!/data/data/com.termux/files/usr/bin/sh",
            "# Termux:Boot runs this at boot: hold a wake lock so Android does not doze the loop away.",
            "termux-wake-lock",
            `exec ${quote(binary)} watchdog run --config ${quote(config.path)}`,
            "",
          ].join("\n"),
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
            `ExecStart=${pass.map(quote).join(" ")}`,
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

/** What --write would write: the crontab line, or each file under a `# PATH` line. */
export function renderInstall(scheduler: Scheduler, files: InstallFile[]): string {
  return files.map((file) => (scheduler === "cron" ? file.content : `# ${file.path}\n${file.content}`)).join("\n");
}

/** Write the entry idempotently; returns what changed, one line each. */
export async function writeInstall(scheduler: Scheduler, files: InstallFile[]): Promise<string[]> {
  if (scheduler === "cron") return [await writeCrontab(files[0].content.trim())];
  const said: string[] = [];
  for (const file of files) {
    let current: string | null = null;
    try {
      current = readFileSync(file.path, "utf8");
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

/** Replace tend's line in the user's crontab (or add it): never a second one. */
async function writeCrontab(line: string): Promise<string> {
  const current = await runCommand(["crontab", "-l"], { timeoutMs: 10_000 });
  if (current.error) throw new TendError(`crontab: ${current.error} (install cron)`, 1);
  // `crontab -l` exits 1 with "no crontab for USER" when there is none yet.
  const lines =
    current.exitCode === 0
      ? current.stdout.split("\n").filter((existing, index, all) => existing !== "" || index < all.length - 1)
      : [];
  const ours = lines.filter((existing) => existing.includes(CRON_MARK));
  if (ours.length === 1 && ours[0] === line) return "crontab: unchanged";
  const next = [...lines.filter((existing) => !existing.includes(CRON_MARK)), line];
  const written = await runCommand(["crontab", "-"], { timeoutMs: 10_000, input: next.join("\n") + "\n" });
  if (written.exitCode !== 0)
    throw new TendError(`crontab -: ${written.error ?? (saidBy(written) || `exit ${written.exitCode}`)}`, 1);
  return `crontab: ${ours.length ? "updated" : "added"}: ${line}`;
}

export function parseScheduler(name: string | undefined): Scheduler {
  if (!name || !SCHEDULERS.includes(name as Scheduler))
    throw usageError(`watchdog install needs one of: ${SCHEDULERS.join(", ")}`);
  return name as Scheduler;
}
