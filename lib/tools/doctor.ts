import { accessSync, constants, existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isTermux } from "../core/platform.ts";
import { join } from "node:path";
import { connect } from "node:net";
import type { Config } from "../config/types.ts";
import { redactUrl } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";
import { inWords, readRegularFile, resolveOnPath } from "../os/files.ts";
import { networkReason } from "../os/net.ts";
import { flockAvailable } from "../os/lock.ts";
import { readProc, runningNamed } from "../os/proc.ts";
import { processRss } from "../os/rss.ts";
import { SHM } from "../state/spill.ts";
import { exerciseRows, termuxRows } from "./device.ts";
import { installedRow } from "./installed.ts";
import { runCommand } from "../os/run.ts";
import { crontabLines, cronEnvironment, lingerWords, tendCronLines, userTimerPath } from "../operator/install.ts";
import { lingering } from "../os/systemd.ts";
import { userName } from "../os/users.ts";
import { checkKind } from "../checks/index.ts";
import { blindTcpNotes } from "../checks/tcp.ts";
import { kindsUsedBy, restartKind, RESTARTS } from "../restarts/index.ts";

type Health = "ok" | "missing" | "limited";

/** One thing this host offers tend (or does not), and what it affects. */
export interface Capability {
  name: string;
  status: Health;
  detail: string;
  /** What does not work (or works less well) without it. */
  affects: string;
  /** The configuration relies on it: doctor fails when it does not work. */
  used: boolean;
}

interface DoctorOptions {
  config: Config | null;
  /** Why there is no usable configuration (not found, invalid). */
  configProblem: string | null;
  env: Record<string, string | undefined>;
  /** Deliver one test notification (`--send-test`); the result says how it went. */
  sendTest?: () => Promise<{ ok: boolean; detail: string }>;
}

/**
 * What a shell tool says about itself: exit code and first line. zx is the tool for this (shell-like
 * probes a person waits for anyway); it is loaded here only, never on the pass or notify path.
 */
async function probe(command: string, ...args: string[]): Promise<{ code: number; said: string }> {
  const { $ } = await import("zx");
  // In "/": no probe needs the working directory, and one this user may not enter (`sudo -u` from
  // /root, a checkout there) would make every probe fail as if the tool were missing.
  const run = $({ nothrow: true, quiet: true, cwd: "/" })`${command} ${args}`;
  const result = await Promise.race([run, Bun.sleep(10_000).then(() => null)]);
  if (!result) return { code: -1, said: "no answer within 10s" };
  const said = (result.stdout.trim() || result.stderr.trim()).split("\n")[0] ?? "";
  return { code: result.exitCode ?? -1, said: oneLine(said) };
}

/** termux-wake-lock ships in termux-tools (installed with Termux), not termux-api. */
const WAKE_LOCK_MISSING = "missing (termux-tools ships it: is $PREFIX/bin on PATH?)";

const uses = (config: Config | null, test: (service: Config["services"][number]) => boolean) =>
  Boolean(config?.services.some(test));

/** Each capability, checked on this host now. */
export async function diagnose({ config, configProblem, env, sendTest }: DoctorOptions): Promise<Capability[]> {
  const rows: Capability[] = [];
  const add = (row: Capability) => rows.push(row);
  const services = config?.services ?? [];

  const flock = await flockAvailable();
  add({
    name: "flock",
    status: flock ? "ok" : "limited",
    detail: flock ? "flock(2) through libc" : "no flock(2): a lock file with PID and start time instead",
    affects: "one pass at a time (a pass killed with -9 holds the fallback lock until its PID is gone)",
    used: true,
  });

  const self = readProc(process.pid);
  add({
    name: "process start times",
    status: self?.startTicks ? (process.platform === "darwin" ? "limited" : "ok") : "missing",
    detail: self ? (process.platform === "darwin" ? "ps -o lstart (1 s resolution)" : "/proc/PID/stat") : "cannot read",
    affects: "identity of pidfile processes (safe-kill, crash detection): without it PID reuse is not caught",
    used: services.some((service) => service.pidfile),
  });

  const rss = processRss(process.pid);
  add({
    name: "RSS (/proc)",
    status: rss !== null ? "ok" : "missing",
    detail: rss !== null ? "VmRSS of /proc/PID/status" : "cannot read /proc/self/status: memory is not sampled",
    affects: "[service.memory]: growth warnings and restart_above",
    used: uses(config, (service) => service.memory !== null),
  });

  let tcpDetail = "/proc/net/tcp";
  let tcp: Health = "ok";
  try {
    if (readRegularFile("/proc/net/tcp", 16 * 1024 * 1024).split("\n").length < 2)
      [tcp, tcpDetail] = ["limited", "empty (restricted)"];
  } catch (error) {
    // A degrade, not a failure: busy.log still decides (Android 10+ closes /proc/net to apps).
    [tcp, tcpDetail] = ["limited", existsSync("/proc/net") ? `/proc/net/tcp: ${inWords(error)}` : "no /proc/net"];
  }
  add({
    name: "listeners (/proc/net/tcp)",
    status: tcp,
    detail: tcp === "limited" ? `${tcpDetail} (Android restricts it for apps)` : tcpDetail,
    affects: "busy.port: with it unreadable a service counts as not busy; busy.log still works",
    used: uses(config, (service) => service.busy?.port != null),
  });

  // Where a full state disk's states wait between cron passes (state/spill.ts): Android has no /dev/shm.
  let memory: string | null = null;
  try {
    accessSync(SHM, constants.W_OK | constants.X_OK);
  } catch (error) {
    memory = existsSync(SHM) ? `${SHM}: ${inWords(error)}` : `no ${SHM}${isTermux(env) ? " (Android has none)" : ""}`;
  }
  add({
    name: "full-disk memory (/dev/shm)",
    status: memory === null ? "ok" : "limited",
    detail: memory ?? `${SHM}: a full disk's states are kept there between passes`,
    affects:
      "a full state disk: states are kept in the process's memory only — the loop keeps them, cron passes do not",
    used: false,
  });

  // What each restart kind needs from the host: its own row (tmux, systemctl, launchctl, sh ...).
  const seen = new Set<string>();
  for (const kind of Object.values(RESTARTS)) {
    if (!kind.doctor || seen.has(kind.doctor.name)) continue;
    seen.add(kind.doctor.name);
    const found = await kind.doctor.check(probe, env);
    const used = services.some((service) =>
      kindsUsedBy(service).some((other) => other.doctor?.name === kind.doctor!.name),
    );
    add({ name: kind.doctor.name, ...found, affects: kind.doctor.affects, used });
  }

  const crontab = await probe("crontab", "-l");
  const hasCrontab = crontab.code === 0 || /no crontab/i.test(crontab.said);
  const lines = hasCrontab ? await crontabLines().catch(() => []) : [];
  const installed = tendCronLines(lines).length > 0;
  const daemon = runningNamed(/^(cron|crond|cronie|busybox-crond)$/);
  add({
    name: "cron",
    status: hasCrontab && daemon && installed ? "ok" : hasCrontab ? "limited" : "missing",
    detail: !hasCrontab
      ? "no crontab"
      : [
          daemon ? `daemon ${daemon} running` : "no cron daemon runs",
          installed ? "tend line installed" : "no tend line in the crontab (watchdog install cron --write)",
        ].join("; "),
    affects: "install cron: without a running daemon and a tend line, no pass runs from cron",
    used: installed,
  });
  if (config) {
    // Termux's cronie gives its jobs $PREFIX/bin; elsewhere cron's PATH is /usr/bin:/bin.
    const cronEnv = cronEnvironment(lines, isTermux(env) ? join(env.PREFIX!, "bin") : undefined);
    add(programsRow(config, cronEnv.PATH, installed));
    for (const row of tmuxRows(config, env, cronEnv.TMUX_TMPDIR)) add(await row);
  }

  // A user's systemd timer (install systemd, not as root) runs only while they are logged in, unless lingering is on.
  if ((process.getuid?.() ?? 0) !== 0 && !isTermux(env)) {
    const user = userName(env);
    const on = lingering(user);
    add({
      name: "systemd lingering",
      status: on === true ? "ok" : on === false ? "limited" : "missing",
      detail: lingerWords(user, on),
      affects: "install systemd (as a user): the timer runs only while you are logged in without it",
      used: existsSync(userTimerPath(env.HOME ?? "")),
    });
  }

  const termux = isTermux(env);
  const bootDir = join(env.HOME ?? "", ".termux", "boot");
  const wakeLock = termux ? await probe("termux-wake-lock", "--help") : { code: 127, said: "" };
  add({
    name: "Termux:Boot",
    status: !termux ? "missing" : existsSync(bootDir) && wakeLock.code !== 127 ? "ok" : "limited",
    detail: !termux
      ? "not Termux"
      : `${existsSync(bootDir) ? bootDir : "no ~/.termux/boot (install Termux:Boot, open it once)"}; ` +
        `termux-wake-lock ${wakeLock.code === 127 ? WAKE_LOCK_MISSING : "found"}`,
    affects: "install termux-boot: the wake lock and runsvdir (crond) start at boot",
    used: false,
  });
  const stateDir = config?.watchdog.stateDir ?? null;
  // On the phone: what Android allows (hidepid, /proc, page size, the phantom killer, boot, wake lock, API).
  if (termux) rows.push(...(await termuxRows(env, probe, stateDir)));
  // What a pass does, done once: the device check.
  rows.push(...(await exerciseRows(stateDir)));

  add(installedRow(env, lines));
  if (config) add(stateDirRow(config.watchdog.stateDir, tendCronLines(lines)));
  const blind = config ? blindTcpNotes(config.services) : [];
  if (blind.length)
    add({
      name: "tcp checks",
      status: "limited",
      detail: blind.join("; "),
      affects: "a frozen service behind a tcp check without expect stays healthy: never restarted",
      used: true,
    });
  add({
    name: "config",
    status: config ? "ok" : "missing",
    detail: config ? `${config.path}: ${config.services.length} services` : (configProblem ?? "none"),
    affects: "everything the watchdog does",
    used: true,
  });
  if (config) add(await notifyRow(config, sendTest));
  return rows;
}

/** The state dir: this user's, not writable by group or others, writable by tend. */
function stateDirRow(stateDir: string, cronLines: string[] = []): Capability {
  const row = { name: "state dir", affects: "every pass, notify's spool", used: true };
  if (!existsSync(stateDir)) {
    // A line that redirects into it fails in the shell, before tend could create it: nothing runs.
    const redirected = cronLines.some((line) => line.includes(`>> ${join(stateDir, "cron.log")}`));
    if (redirected)
      return {
        ...row,
        status: "missing",
        detail:
          `${stateDir} does not exist, and the crontab line appends to its cron.log: cron cannot start ` +
          `it (run watchdog install cron --write again, or mkdir -m 700 ${stateDir})`,
      };
    return { ...row, status: "ok", detail: `${stateDir} (created 0700 by the first pass)` };
  }
  try {
    const info = statSync(stateDir);
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    if (info.uid !== process.getuid?.()) {
      return {
        ...row,
        status: "missing",
        detail: `${stateDir} belongs to uid ${info.uid}: chown ${process.getuid?.()} ${stateDir}`,
      };
    }
    if (info.mode & 0o022)
      return { ...row, status: "missing", detail: `${stateDir} mode ${mode}: chmod go-w ${stateDir}` };
    const probeFile = join(stateDir, `.doctor-${process.pid}`);
    writeFileSync(probeFile, "", { flag: "wx", mode: 0o600 });
    rmSync(probeFile);
    return { ...row, status: "ok", detail: `${stateDir} (mode ${mode}, writable)` };
  } catch (error) {
    return { ...row, status: "missing", detail: `${stateDir}: ${inWords(error)}` };
  }
}

/** The notify target: a TCP connection to its host (nothing sent), or a test message with --send-test. */
async function notifyRow(config: Config, sendTest?: DoctorOptions["sendTest"]): Promise<Capability> {
  const row = { name: "notify target", affects: "notifications (they are spooled until it answers)" };
  const url = config.notify.url;
  if (!url) return { ...row, status: "missing", detail: "no [notify] url: events are only logged", used: false };
  if (sendTest) {
    const sent = await sendTest();
    return {
      ...row,
      status: sent.ok ? "ok" : "missing",
      detail: `test message to ${redactUrl(url)}: ${sent.detail}`,
      used: true,
    };
  }
  if (config.notify.format === "termux") {
    const found = Bun.which("termux-notification");
    return found
      ? { ...row, status: "ok", detail: `${found} (the Termux:API app must be installed too)`, used: true }
      : { ...row, status: "missing", detail: "no termux-notification: pkg install termux-api", used: true };
  }
  const parsed = new URL(url);
  const port = Number(parsed.port) || (parsed.protocol === "https:" ? 443 : 80);
  const reached = await new Promise<string | null>((resolve) => {
    const socket = connect({ host: parsed.hostname.replace(/^\[|\]$/g, ""), port });
    const done = (problem: string | null) => (socket.destroy(), resolve(problem));
    socket.setTimeout(config.notify.timeoutMs, () => done("no answer"));
    socket.once("connect", () => done(null));
    socket.once("error", (error) => done(networkReason(error)));
  });
  return {
    ...row,
    status: reached === null ? "ok" : "missing",
    detail: reached === null ? `${redactUrl(url)} reachable (--send-test sends one)` : `${redactUrl(url)}: ${reached}`,
    used: true,
  };
}

/**
 * The programs the configuration runs (spawn, run, command and check argv, and each kind's tools),
 * resolved on the PATH cron gives: `python3` found in an interactive shell may not be there.
 */
function programsRow(config: Config, cronPath: string, installed: boolean): Capability {
  const wanted = new Map<string, string[]>();
  const want = (program: string | undefined, why: string) => {
    if (!program) return;
    wanted.set(program, [...(wanted.get(program) ?? []), why]);
  };
  for (const service of config.services) {
    const action = service.restart;
    for (const program of (action && restartKind(action).programs?.(action)) || [])
      want(program, `${service.name}: restart.${action!.kind}`);
    for (const program of checkKind(service.check).programs?.(service.check) ?? [])
      want(program, `${service.name}: check.${service.check.kind}`);
    for (const kind of kindsUsedBy(service)) for (const tool of kind.tools) want(tool, `${service.name}: ${kind.kind}`);
  }
  const missing = [...wanted].flatMap(([program, uses]) => {
    if (resolveOnPath(program, cronPath)) return [];
    const elsewhere = resolveOnPath(program, process.env.PATH ?? "");
    const hint = elsewhere ? ` (here it is ${elsewhere}: give the full path or set PATH= in the crontab)` : "";
    return [`${program} (${uses[0]}) is not on cron's PATH ${cronPath}${hint}`];
  });
  return {
    name: "programs on cron's PATH",
    status: missing.length ? (installed ? "missing" : "limited") : "ok",
    detail: missing.length ? missing.join("; ") : `${wanted.size} program(s) resolve on ${cronPath}`,
    affects: "restarts and checks run from cron: a program cron cannot find fails every time",
    used: wanted.size > 0,
  };
}

/**
 * The tmux servers the configuration's panes live on, as cron's tend reaches them: each service's
 * `socket` (a name under TMUX_TMPDIR, or a path), else the default socket under TMUX_TMPDIR (the
 * crontab's, else tmux's own default). A person's panes on another server (their own TMUX_TMPDIR,
 * or inside tmux) would make cron's tend start a second copy of each. One row per server.
 */
function tmuxRows(config: Config, env: Record<string, string | undefined>, cronTmpdir: string | null) {
  const servers = new Map<string | null, string[]>();
  for (const service of config.services) {
    if (!service.tmux) continue;
    const socket = service.tmuxSocket ?? null;
    const sessions = servers.get(socket) ?? [];
    const session = service.tmux.split(":")[0];
    if (!sessions.includes(session)) sessions.push(session);
    servers.set(socket, sessions);
  }
  const uid = process.getuid?.() ?? 0;
  // tmux's own default: /tmp, and $PREFIX/tmp for Termux's build.
  const fallback = isTermux(env) ? join(env.PREFIX!, "tmp") : join("/", "tmp");
  const socketIn = (tmpdir: string, socket: string | null) =>
    socket?.startsWith("/") ? socket : join(tmpdir, `tmux-${uid}`, socket ?? "default");
  return [...servers].map(async ([socket, sessions]) => {
    const cronSocket = socketIn(cronTmpdir || fallback, socket);
    const inside = socket === null ? env.TMUX?.split(",")[0] : undefined;
    const mine = inside || socketIn(env.TMUX_TMPDIR || fallback, socket);
    const row = {
      name: socket === null ? "tmux server" : `tmux server (socket ${socket})`,
      affects: "restart.tmux and tmux pid sources from cron",
      used: true,
    };
    const listed = (path: string) =>
      runCommand(["tmux", "-S", path, "list-sessions", "-F", "#{session_name}"], { timeoutMs: 5000 }).then((result) =>
        result.exitCode === 0 ? result.stdout.split("\n").filter(Boolean) : null,
      );
    const onCron = await listed(cronSocket);
    const absent = sessions.filter((session) => !onCron?.includes(session));
    if (!absent.length)
      return { ...row, status: "ok" as const, detail: `${cronSocket}: sessions ${sessions.join(", ")}` };
    const onMine = mine !== cronSocket ? await listed(mine) : null;
    const elsewhere = absent.filter((session) => onMine?.includes(session));
    if (elsewhere.length)
      return {
        ...row,
        status: "missing" as const,
        detail:
          `session ${elsewhere.join(", ")} is on ${mine}, but cron's tend talks to ${cronSocket}: ` +
          `it would start a second copy (set TMUX_TMPDIR in the crontab, or run the panes on cron's server)`,
      };
    const server = onCron ? `${cronSocket} has no session ${absent.join(", ")}` : `no server on ${cronSocket} yet`;
    return { ...row, status: "ok" as const, detail: `${server}: the first pass creates it` };
  });
}

/** Everything the configuration uses works (ok or limited). */
export const healthy = (rows: Capability[]) => rows.every((row) => !row.used || row.status !== "missing");

export function renderDoctor(rows: Capability[]): string {
  const width = Math.max(...rows.map((row) => row.name.length));
  return rows
    .map((row) => {
      const mark = row.status === "ok" ? "ok     " : row.status === "limited" ? "limited" : "missing";
      const used = row.used ? "" : " (not used by the config)";
      const affects = row.status === "ok" ? "" : `\n${"".padEnd(width + 11)}affects: ${row.affects}${used}`;
      return `${row.name.padEnd(width)}  ${mark}  ${row.detail}${affects}`;
    })
    .join("\n");
}
