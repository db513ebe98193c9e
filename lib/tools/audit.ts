// `tend doctor --audit [FILE...]`: the traps the seeds fell into, found in the files that carry them
// (SPEC doctor): the supervisors of the watched services (`systemctl cat` of each unit, each launchd
// job's plist), the user's crontab and the scripts its lines run, and any file given. Read only.
// Each trap is a rule over one file's lines: what happens, and the fix. A file's kind is told by its
// content. Pure over the text (auditText); the edge (which files, their text) is auditHost.
import { existsSync, statSync } from "node:fs";
import { inWords, readBounded } from "../os/files.ts";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Config, ServiceConfig } from "../config/types.ts";
import { oneLine } from "../core/sanitize.ts";
import { runCommand } from "../os/run.ts";
import { serviceUnit } from "../restarts/index.ts";
import { shellWords } from "./installed.ts";

type Severity = "high" | "medium";
type FileKind = "unit" | "plist" | "crontab" | "script";

export interface Finding {
  severity: Severity;
  /** A short name for the trap (stable: scripts may match on it). */
  trap: string;
  file: string;
  line: number;
  /** What happens because of it. */
  what: string;
  fix: string;
}

/** What the audit knows besides the file: tend's measured p99 per URL, the units tend probes. */
interface AuditContext {
  /** The p99 latency tend measured for an http check's URL (ms). */
  p99ForUrl?: (url: string) => number | null;
  /** Whether tend probes this systemd unit (a configured service with it as `unit`/`restart.systemd`). */
  probedUnit?: (name: string) => boolean;
  /** The file's name as systemd knows it (for a unit read with `systemctl cat`). */
  unitName?: string;
  /** Whether tend restarts this systemd unit (a configured service's `restart.systemd`). */
  restartedUnit?: (name: string) => boolean;
}

/** A file's kind, by its content: `[Unit]`/`[Service]`, `<plist`, five-field cron lines, else a script. */
export function kindOf(text: string): FileKind {
  if (/^\s*\[(Unit|Service|Timer|Install)\]\s*$/m.test(text)) return "unit";
  if (/<plist[\s>]/.test(text)) return "plist";
  const lines = text.split("\n").filter((line) => line.trim() && !line.trimStart().startsWith("#"));
  const cron = lines.filter((line) => cronCommand(line) !== null || /^\s*[A-Z_]+\s*=/.test(line));
  if (!text.startsWith("#!") && lines.length && cron.length === lines.length) return "crontab";
  return "script";
}

/** The command of a crontab line (five time fields, or @reboot/@daily...), or null. */
function cronCommand(line: string): string | null {
  const special = /^\s*@(reboot|yearly|annually|monthly|weekly|daily|midnight|hourly)\s+(.+)$/.exec(line);
  if (special) return special[2];
  const field = String.raw`[\d*/,\-A-Za-z]+`;
  const match = new RegExp(String.raw`^\s*${field}\s+${field}\s+${field}\s+${field}\s+${field}\s+(.+)$`).exec(line);
  return match && !/^\s*#/.test(line) ? match[1] : null;
}

/** A systemd time span in ms ("5s", "1min 30s", "100ms", a bare number of seconds), or null. */
function systemdSpan(text: string): number | null {
  const units: Record<string, number> = {
    us: 0.001,
    usec: 0.001,
    ms: 1,
    msec: 1,
    s: 1000,
    sec: 1000,
    second: 1000,
    seconds: 1000,
    m: 60_000,
    min: 60_000,
    minute: 60_000,
    minutes: 60_000,
    h: 3_600_000,
    hr: 3_600_000,
    hour: 3_600_000,
    hours: 3_600_000,
    d: 86_400_000,
    day: 86_400_000,
    days: 86_400_000,
  };
  const trimmed = text.trim();
  if (trimmed === "infinity") return Infinity;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  let total = 0;
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/g)];
  if (!parts.length || parts.map((part) => part[0]).join("").length !== trimmed.replace(/\s+/g, "").length) return null;
  for (const [, number, unit] of parts) {
    if (!(unit in units)) return null;
    total += Number(number) * units[unit];
  }
  return total;
}

const seconds = (ms: number) => `${ms / 1000}s`;

/** `Key=value` settings of a unit, each with its line (the last one wins, as systemd reads them). */
function unitSettings(lines: string[]) {
  const settings = new Map<string, { value: string; line: number; section: string }>();
  let section = "";
  lines.forEach((text, index) => {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(text);
    if (header) section = header[1];
    const setting = /^\s*([A-Za-z]+)\s*=\s*(.*?)\s*$/.exec(text);
    if (setting && !text.trimStart().startsWith("#"))
      settings.set(setting[1], { value: setting[2], line: index + 1, section });
  });
  return settings;
}

/** Where a line of `systemctl cat`'s output comes from: its `# /path` header, and the line within that file. */
function catOrigin(lines: string[], index: number): { file: string; line: number } | null {
  for (let at = index; at >= 0; at--) {
    const header = /^# (\/\S+)$/.exec(lines[at]);
    if (header) return { file: header[1], line: index - at };
  }
  return null;
}

const LONG_LIVED_SERVER = /\b(java|node|deno|bun|python3?|gunicorn|uvicorn|puma|unicorn|ruby|php-fpm|dotnet)\b|\.jar\b/;

function auditUnit(file: string, lines: string[], context: AuditContext): Finding[] {
  const findings: Finding[] = [];
  const settings = unitSettings(lines);
  const value = (key: string) => settings.get(key)?.value ?? null;
  const at = (key: string, fallback = 1) => settings.get(key)?.line ?? fallback;
  const found = (severity: Severity, trap: string, line: number, what: string, fix: string) => {
    const origin = catOrigin(lines, line - 1);
    findings.push({ severity, trap, file: origin?.file ?? file, line: origin?.line ?? line, what, fix });
  };
  const serviceLine = lines.findIndex((text) => /^\s*\[Service\]\s*$/.test(text)) + 1 || 1;
  const unitLine = lines.findIndex((text) => /^\s*\[Unit\]\s*$/.test(text)) + 1 || serviceLine;
  const restart = value("Restart") ?? "no";
  const type = value("Type") ?? "simple";
  if (restart !== "no") {
    // systemd's defaults: 5 starts within 10s, RestartSec=100ms.
    const burst = Number(value("StartLimitBurst") ?? 5);
    const intervalMs = systemdSpan(value("StartLimitIntervalSec") ?? value("StartLimitInterval") ?? "10s") ?? 10_000;
    const restartMs = systemdSpan(value("RestartSec") ?? "100ms") ?? 100;
    // Reachable only when (burst - 1) restarts' delays fit in the interval.
    if (intervalMs > 0 && burst > 0 && !((burst - 1) * restartMs < intervalMs)) {
      found(
        "high",
        "start-limit-unreachable",
        settings.has("StartLimitBurst")
          ? at("StartLimitBurst")
          : settings.has("RestartSec")
            ? at("RestartSec")
            : unitLine,
        `StartLimitBurst=${burst} within StartLimitIntervalSec=${seconds(intervalMs)} cannot be reached at ` +
          `RestartSec=${seconds(restartMs)} ((${burst} - 1) x ${seconds(restartMs)} >= ${seconds(intervalMs)}): ` +
          "the crash-loop stop never fires, systemd restarts it forever",
        `make StartLimitIntervalSec longer than ${seconds((burst - 1) * restartMs)} ` +
          `(e.g. StartLimitIntervalSec=${Math.ceil(((burst - 1) * restartMs * 2) / 1000)}s), ` +
          "or StartLimitBurst smaller",
      );
    }
  }
  const name = context.unitName ?? file.split("/").pop() ?? file;
  // #64: a watched unit without Restart= whose restart is not tend's: a crash leaves it failed for good.
  if (
    restart === "no" &&
    type !== "oneshot" &&
    (context.probedUnit?.(name) ?? false) &&
    !(context.restartedUnit?.(name) ?? false)
  ) {
    found(
      "high",
      "no-restart-no-watcher",
      settings.get("Restart")?.line ?? serviceLine,
      "no Restart= and no watcher: when it crashes it stays failed — systemd does not restart it, and tend " +
        "only watches it (its service has no restart.systemd)",
      `Restart=on-failure in the unit, or restart.systemd = "${name}" in tend's service`,
    );
  }
  if (restart !== "no") {
    if (restart === "on-failure" && !(context.probedUnit?.(name) ?? false)) {
      found(
        "medium",
        "restart-without-probe",
        at("Restart"),
        "Restart=on-failure restarts it when it exits, never when it hangs: a frozen process is alive, " +
          "and nothing probes it",
        `watch it with tend: a service with unit = "${name}" and an http or tcp check`,
      );
    }
    const exec = value("ExecStart") ?? "";
    if (type !== "oneshot" && LONG_LIVED_SERVER.test(exec) && value("OOMPolicy") !== "kill") {
      found(
        "medium",
        "no-oom-policy-kill",
        at("ExecStart", serviceLine),
        "when the kernel kills one of its processes for memory, the rest can keep running half-alive " +
          "(a JVM without a thread it needs): the unit looks active and Restart= never comes",
        "OOMPolicy=kill (the whole unit stops, and Restart= starts it again)",
      );
    }
  }
  const execs = [...settings].filter(([key]) => key.startsWith("ExecStart"));
  const spawnsChildren = execs.some(([, setting]) =>
    /(^|[^&])&\s*($|;)|\bnohup\b|\bsetsid\b|\bdaemon(ize)?\b/.test(setting.value),
  );
  const killMode = value("KillMode") ?? "control-group";
  if (type === "oneshot" && spawnsChildren && killMode === "control-group" && value("RemainAfterExit") !== "yes") {
    found(
      "medium",
      "oneshot-kills-children",
      settings.get("KillMode")?.line ?? at("Type", serviceLine),
      "a oneshot that starts long-lived children: when it finishes, KillMode=control-group kills them with it",
      "KillMode=process (its children live on), or run them as services of their own",
    );
  }
  return findings;
}

function auditPlist(file: string, text: string, lines: string[]): Finding[] {
  const args = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1] ?? "";
  const program = [...args.matchAll(/<string>([^<]*)<\/string>/g)].map((match) => match[1]).join(" ");
  const abandons = /<key>AbandonProcessGroup<\/key>\s*<true\s*\/>/.test(text);
  const longLived = /\bnohup\b|&\s*($|;|<)|\btmux\b|\bscreen\b|\bsetsid\b|\bdaemon(ize)?\b|restart|start/.test(program);
  if (abandons || !longLived) return [];
  const line = lines.findIndex((text) => text.includes("ProgramArguments")) + 1 || 1;
  return [
    {
      severity: "high",
      trap: "launchd-reaps-children",
      file,
      line,
      what:
        "this job starts long-lived processes without AbandonProcessGroup: launchd kills its whole process " +
        "group when the job exits, so what it started dies a second later",
      fix: "<key>AbandonProcessGroup</key><true/> in the plist",
    },
  ];
}

/** A curl that sends something (a notification): -d/--data*, -F, -T, -X POST/PUT, or a known receiver. */
const SENDS = new RegExp(
  [
    String.raw`(^|\s)(-d|--data(-\w+)?|-F|--form|-T|--upload-file|-X\s*(POST|PUT)|--request\s+(POST|PUT))(\s|=|$)`,
    String.raw`ntfy|hooks\.slack|discord(app)?\.com\/api\/webhooks|api\.telegram\.org|pushover|gotify`,
  ].join("|"),
);

/** The curl invocations in a line: each from `curl` up to the end of its command (|, ;, &&, ||, `)`). */
function curlCalls(line: string): string[] {
  return [...line.matchAll(/(?:^|[\s;|&(`$])curl\s([^;|&`)]*)/g)].map((match) => match[1]);
}

function failsOnHttpErrors(args: string[]): boolean {
  return args.some((arg) => arg === "--fail" || arg === "--fail-with-body" || /^-[a-zA-Z]*f[a-zA-Z]*$/.test(arg));
}

function maxTimeOf(args: string[]): { seconds: number } | null {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const joined = /^--max-time=(.+)$/.exec(arg) ?? /^-m(\d+(?:\.\d+)?)$/.exec(arg);
    const value = joined ? joined[1] : arg === "--max-time" || arg === "-m" ? args[index + 1] : null;
    if (value !== null && value !== undefined && /^\d+(\.\d+)?$/.test(value)) return { seconds: Number(value) };
  }
  return null;
}

function auditShellLines(file: string, lines: string[], kind: FileKind, context: AuditContext): Finding[] {
  const findings: Finding[] = [];
  const termuxBoot = /\/\.termux\/boot\//.test(file);
  let wakeLock = false;
  let startsServices: number | null = null;
  lines.forEach((raw, index) => {
    const line = index + 1;
    const text = kind === "crontab" ? (cronCommand(raw) ?? "") : raw;
    const code = text.replace(/(^|\s)#.*$/, "");
    if (!code.trim()) return;
    if (/\bpkill\s+(-\w+\s+)*-\w*f|\bkillall\b|\bpkill\b/.test(code)) {
      findings.push({
        severity: "high",
        trap: "kill-by-pattern",
        file,
        line,
        what:
          `${/killall/.test(code) ? "killall" : "pkill"} kills by name or pattern: it matches every process ` +
          "whose command line holds it, the shell running this line among them",
        fix: "signal the one process by its identity: tend safe-kill NAME (or pidfile:PATH, tmux:TARGET)",
      });
    }
    for (const call of curlCalls(code)) {
      const args = shellWords(call);
      if (SENDS.test(` ${call} `) && !failsOnHttpErrors(args)) {
        findings.push({
          severity: "high",
          trap: "curl-without-fail",
          file,
          line,
          what:
            "curl sends a notification without -f: a receiver's 4xx or 5xx answer counts as sent, and the " +
            "alert is lost without a word",
          fix: "curl -fsS (and check its exit status), or tend notify (it retries and spools)",
        });
      }
      const limit = maxTimeOf(args);
      const url = args.find((arg) => /^https?:\/\//.test(arg));
      const p99 = limit && url ? (context.p99ForUrl?.(url) ?? null) : null;
      if (limit && p99 !== null && limit.seconds * 1000 <= p99) {
        findings.push({
          severity: "medium",
          trap: "timeout-below-p99",
          file,
          line,
          what:
            `--max-time ${limit.seconds} is below the p99 tend measured for ${oneLine(url!, 80)} ` +
            `(${(p99 / 1000).toFixed(1)}s): it cuts into normal latency and counts slow answers as failures`,
          fix: `a timeout above the tail: at least ${Math.ceil((p99 * 1.5) / 1000)}s (tend watchdog stats says more)`,
        });
      }
    }
    if (/\bif\b.*\b(pgrep|pidof)\b|\b(pgrep|pidof)\b.*(\|\||&&)|\bkill\s+-0\b|\[\s+-[ed]\s+"?\/proc\/\$/.test(code)) {
      findings.push({
        severity: "high",
        trap: "pid-only-check",
        file,
        line,
        what:
          "a health check by PID alone: a hung process still has its PID, so it is called healthy " +
          "(a hung tunnel passed such a check for 23 minutes)",
        fix: "probe what it serves (curl -fsS --max-time N URL, or a tend http/tcp check with a restart)",
      });
    }
    if (/\bnohup\b/.test(code) && (kind === "crontab" || /&\s*$/.test(code))) {
      findings.push({
        severity: "medium",
        trap: "nohup-child-of-job",
        file,
        line,
        what:
          "started with nohup from a job: a scheduler that kills the job's process group or cgroup when it " +
          "ends (launchd without AbandonProcessGroup, a systemd timer's service) kills this child too",
        fix: "let a supervisor start it: tend restart.spawn (its own session), a systemd service or runit",
      });
    }
    if (/\btermux-wake-lock\b/.test(code)) wakeLock = true;
    if (
      startsServices === null &&
      /\b(sshd|service-daemon|runsvdir|sv\s+up|tmux\s+new|nohup|crond|tend\s+watchdog|watchdog\s+run)\b|&\s*$/.test(
        code,
      )
    )
      startsServices = line;
  });
  if (termuxBoot && !wakeLock && startsServices !== null)
    findings.push({
      severity: "medium",
      trap: "boot-without-wake-lock",
      file,
      line: startsServices,
      what: "a Termux:Boot script that starts services without termux-wake-lock: the CPU sleeps, and they stall",
      fix: "termux-wake-lock as the script's first command",
    });
  return findings;
}

/** The findings in one file's text (pure). */
export function auditText(file: string, text: string, context: AuditContext = {}, kind = kindOf(text)): Finding[] {
  const lines = text.split("\n");
  if (kind === "unit") return auditUnit(file, lines, context);
  if (kind === "plist") return auditPlist(file, text, lines);
  return auditShellLines(file, lines, kind, context);
}

/** The scripts a crontab line runs: its command's first word, or the file a shell is given, if readable. */
function scriptsOf(command: string, home = homedir()): string[] {
  const words = shellWords(command.replace(/\s(>>?|2>>?|2>&1|<).*$/, ""));
  const candidates = /^(ba|da|z)?sh$|\/(ba|da|z)?sh$/.test(words[0] ?? "")
    ? words
        .slice(1)
        .filter((word) => !word.startsWith("-"))
        .slice(0, 1)
    : words.slice(0, 1);
  return candidates
    .map((word) => word.replace(/^~(?=\/)/, home).replace(/^\$HOME(?=\/)/, home))
    .filter((path) => path.startsWith("/") && existsSync(path) && statSync(path).isFile());
}

interface AuditReport {
  files: string[];
  findings: Finding[];
  /** What could not be read, in words. */
  unread: string[];
}

const BYTES = 1024 * 1024;

/**
 * A file's text through the one reader, its first MiB (a huge log given by mistake, /dev/zero, is
 * never read whole; a FIFO is never waited on: said in words). `cut` when there was more.
 */
function readAudited(path: string): { text: string; cut: boolean } {
  const { bytes, more } = readBounded(path, BYTES, { follow: true });
  return { text: bytes.toString("utf8"), cut: more };
}

/**
 * The audit of this host for this configuration: each watched service's supervisor, the user's
 * crontab and its scripts, and the files given. `p99ForUrl` comes from tend's own latency records.
 */
export async function auditHost(
  config: Config | null,
  given: string[],
  {
    p99ForUrl,
    cwd = process.cwd(),
    home = homedir(),
  }: { p99ForUrl?: AuditContext["p99ForUrl"]; cwd?: string; home?: string } = {},
): Promise<AuditReport> {
  const report: AuditReport = { files: [], findings: [], unread: [] };
  const services: ServiceConfig[] = config?.services ?? [];
  const unitsOf = (service: ServiceConfig) => [serviceUnit(service)].filter((unit): unit is string => unit !== null);
  const probedUnit = (name: string) => services.some((service) => unitsOf(service).includes(name));
  const restartedUnit = (name: string) =>
    services.some((service) => service.restart !== null && "unit" in service.restart && service.restart.unit === name);
  const add = (file: string, text: string, context: AuditContext = {}) => {
    report.files.push(file);
    report.findings.push(...auditText(file, text, { p99ForUrl, probedUnit, restartedUnit, ...context }));
  };
  const addFile = (path: string) => {
    try {
      const { text, cut } = readAudited(path);
      add(path, text);
      if (cut) report.unread.push(`${path}: past its first MiB (only that was read)`);
    } catch (error) {
      report.unread.push(`${path}: ${inWords(error)}`);
    }
  };
  const units = new Set(services.flatMap(unitsOf));
  for (const unit of units) {
    const cat = await runCommand(["systemctl", "cat", "--", unit], { timeoutMs: 10_000 });
    if (cat.exitCode === 0) add(`systemctl cat ${unit}`, cat.stdout, { unitName: unit });
    else
      report.unread.push(`${unit}: systemctl cat: ${oneLine(cat.stderr || cat.error || `exit ${cat.exitCode}`, 160)}`);
  }
  for (const service of services) {
    if (!service.launchd) continue;
    const label = service.launchd;
    const plist = [
      join(home, "Library", "LaunchAgents", `${label}.plist`),
      `/Library/LaunchDaemons/${label}.plist`,
    ].find(existsSync);
    if (plist) addFile(plist);
    else report.unread.push(`${label}: no plist in ~/Library/LaunchAgents or /Library/LaunchDaemons`);
  }
  const crontab = await runCommand(["crontab", "-l"], { timeoutMs: 10_000, cwd: "/" });
  if (crontab.exitCode === 0 && crontab.stdout.trim()) {
    add("crontab -l", crontab.stdout, {});
    for (const line of crontab.stdout.split("\n")) {
      const command = cronCommand(line);
      for (const script of command ? scriptsOf(command, home) : []) {
        if (!report.files.includes(script)) addFile(script);
      }
    }
  }
  for (const file of given) {
    addFile(resolve(cwd, file));
  }
  return report;
}

export const hasHigh = (report: AuditReport) => report.findings.some((finding) => finding.severity === "high");

export function renderAudit(report: AuditReport): string {
  // File names and what was found in them are outside text: escaped as every view escapes them.
  const lines = report.findings.map(
    (finding) =>
      `${finding.severity.toUpperCase().padEnd(6)} ${oneLine(finding.file, 400)}:${finding.line}  ${finding.trap}\n` +
      `       ${oneLine(finding.what, 400)}\n       fix: ${oneLine(finding.fix, 400)}`,
  );
  const read = `read: ${report.files.length ? report.files.map((file) => oneLine(file, 400)).join(", ") : "nothing"}`;
  const unread = report.unread.map((said) => `not read: ${oneLine(said, 400)}`);
  const summary = report.findings.length
    ? `${report.findings.length} finding(s), ${report.findings.filter((one) => one.severity === "high").length} high`
    : "no trap found";
  return [...lines, read, ...unread, summary].join("\n");
}
