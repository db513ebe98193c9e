// make truth: the ground-truth harness. Real services, a stopwatch process asking each of them ten
// times as often as tend does, and a seeded random schedule of faults (kills, freezes, 502 spells,
// a hang from the start, a leak, a flapping upstream, a receiver answering 500, a pass killed by
// SIGTERM or SIGKILL, a reboot-like stop of everything, a wall-clock step, a full state disk) under
// cron-like passes or the loop, and an operator at work among them (`watchdog restart`, `stop` then
// `start`, `pause` then `resume`). Then every view tend gives — downtime.log, report --json, status
// --json and --nagios, /metrics and /api/status of a `watchdog serve` beside it, the metrics file, the
// heartbeat's {status} as a push monitor gets it, Alertmanager's alerts (every third seed notifies
// Alertmanager's API in place of a chat), the state's counts, what the passes and the operator's
// commands said on stdout, the notifications the receiver got — is held to what the stopwatch saw
// and the harness did. A failing seed prints its schedule and the first
// disagreements; `make truth SEED=n` replays it.
// usage: bun bench/truth.ts [--seed N] [--seeds COUNT] [--mode cron|loop|both|alternate] [--seconds S]
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import minimist from "minimist";
import { killGroup, waitFor } from "./common.ts";
import { spillDir } from "../lib/state/spill.ts";
import { savedState } from "../lib/state/service-state.ts";
import { freePort } from "../test/helpers.ts";

const ROOT = resolve(import.meta.dir, "..");
/**
 * The harness's own time: the wall clock at its start, carried on by the monotonic clock, so a
 * wall-clock step it makes moves none of its stamps (the stopwatch's are made so too; the oracle
 * puts them in tend's time: `framed`).
 */
const trueNow = () => performance.timeOrigin + performance.now();

/** Set the host's wall clock (CLOCK_REALTIME; root): `date -s @SECONDS`, to the millisecond. */
function setWallClock(ms: number) {
  const set = Bun.spawnSync(["date", "-u", "-s", `@${(ms / 1000).toFixed(3)}`], { stdout: "ignore" });
  if (set.exitCode !== 0) throw new Error(`cannot set the wall clock: ${set.stderr.toString().trim()}`);
}
const stepWallClock = (byMs: number) => setWallClock(Date.now() + byMs);
/**
 * A step back made and not yet put right: whatever ends the run puts the clock right first — by as
 * much forward, from where it reads then (never to the harness's own time: a virtual machine's wall
 * clock jumps ahead when it resumes, and its monotonic clock does not).
 */
const stepped = { byMs: 0 };
const putClockRight = () => {
  if (stepped.byMs) (stepWallClock(stepped.byMs), (stepped.byMs = 0));
};
const stoppedWhileStepped = () => (putClockRight(), process.exit(130));
const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
const BUN = process.execPath;
const SERVICE = join(import.meta.dir, "truth", "service.ts");
const STOPWATCH = join(import.meta.dir, "truth", "stopwatch.ts");

/** tend's period (cron's tick, the loop's interval) and its check timeout: the harness's resolution. */
const INTERVAL_MS = 1000;
// Well above a healthy answer even with both cores busy (CI runs the suite's files side by side beside
// it: a 1 s timeout once cut a starved pass's probe of a service that answered the stopwatch all along).
// tend's probes and the stopwatch's are asked the same question with the same timeout.
const TIMEOUT_MS = 2000;
/**
 * How far a number tend gives may lie from the stopwatch's: one probe interval (tend probes once a
 * period: it learns of a change up to a period late), plus the probe's own timeout (a hang is known
 * only when it runs out), plus a little for a pass's start-up under load.
 */
export const TOLERANCE_MS = INTERVAL_MS + TIMEOUT_MS + 700;
/** verify_timeout in the harness's configuration. */
const VERIFY_MS = 3000;

// ---------- the schedule ----------

export type FaultKind =
  | "kill"
  | "freeze"
  | "spell502"
  | "hangstart"
  | "leak"
  | "flap"
  | "slow"
  | "receiver500"
  | "passterm"
  | "passkill"
  | "reboot"
  | "clockstep"
  | "diskfull"
  | "oprestart"
  | "opstop"
  | "oppause";

export interface Fault {
  at: number; // ms from the start
  kind: FaultKind;
  service: string | null;
  forMs: number;
  /** clockstep: how far the wall clock steps back, in seconds (as tend sees it). */
  byS?: number;
}

/**
 * The faults made with the kernel's namespaces and a tmpfs (a reboot: a new boot id and boot-time
 * clock; a wall-clock step: the boot-time clock ahead of it; a full disk): they need root. Without
 * it they are left out of every schedule, and the harness says so.
 */
export const ROOT_FAULTS: FaultKind[] = ["reboot", "clockstep", "diskfull"];
export const asRoot = () => process.getuid?.() === 0;

let rebootProbe: string | null | undefined;

/**
 * Why a reboot cannot be made here, or null. It needs a boot id of its own bound over
 * /proc/sys/kernel/random/boot_id in a mount namespace, and a time namespace: a container (nspawn
 * mounts /proc/sys its own way) refuses the bind. Then the fault is left out, and the harness says so.
 */
export function rebootRefused(): string | null {
  if (rebootProbe !== undefined) return rebootProbe;
  const file = join(tmpdir(), `tend-truth-bootid-${process.pid}`);
  const id = crypto.randomUUID();
  writeFileSync(file, `${id}\n`);
  const bind = 'mount --bind "$0" /proc/sys/kernel/random/boot_id && cat /proc/sys/kernel/random/boot_id';
  const probe = Bun.spawnSync(["unshare", "-mfT", "--boottime", "1", "sh", "-c", bind, file], {
    stdout: "pipe",
    stderr: "pipe",
  });
  rmSync(file, { force: true });
  const said = probe.stderr.toString().trim().split("\n")[0] ?? "";
  rebootProbe =
    probe.exitCode === 0 && probe.stdout.toString().trim() === id
      ? null
      : `a boot id cannot be bound over /proc/sys/kernel/random/boot_id here: ${said || `exit ${probe.exitCode}`}`;
  return rebootProbe;
}

/** mulberry32: a small seeded PRNG, so a seed is a schedule. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const SERVICES = ["web", "api", "leaky", "flappy"] as const;
/** An operator's commands: a restart by hand; a stop, then a start; a pause, then a resume. */
const OPERATOR_FAULTS: FaultKind[] = ["oprestart", "opstop", "oppause"];
const SERVICE_FAULTS: Record<string, FaultKind[]> = {
  web: ["kill", "freeze", "spell502", "hangstart", "slow"],
  api: ["kill", "freeze", "spell502", "hangstart", "slow"],
  leaky: ["leak", "kill"],
  flappy: ["flap", "spell502"],
};

/**
 * Faults per service at random times, one at a time with a quiet gap after each (long enough for a
 * restart's verification, so outages stay apart); global faults (the receiver, a pass killed) anywhere.
 */
export function schedule(
  seed: number,
  faultSeconds: number,
  mode: "cron" | "loop",
  { clockSteps = false, reboots = true, operator = true } = {},
): Fault[] {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const between = (low: number, high: number) => Math.round(low + random() * (high - low));
  const faults: Fault[] = [];
  const endMs = faultSeconds * 1000;
  for (const service of SERVICES) {
    let at = between(2000, 6000);
    while (at < endMs) {
      const kind = pick(SERVICE_FAULTS[service]);
      // A flapping spell long enough for 6 changes in tend's probes (one a second), with room to spare.
      const forMs = kind === "kill" ? 0 : kind === "flap" ? between(10_000, 14_000) : between(2500, 6000);
      faults.push({ at, kind, service, forMs });
      at += forMs + between(6000, 12_000);
    }
  }
  for (let at = between(3000, 10_000); at < endMs; at += between(10_000, 20_000))
    faults.push({ at, kind: "receiver500", service: null, forMs: between(2000, 6000) });
  if (mode === "cron")
    for (let at = between(4000, 12_000); at < endMs; at += between(8000, 16_000))
      faults.push({ at, kind: random() < 0.5 ? "passterm" : "passkill", service: null, forMs: 0 });
  // Drawn whether or not they can be made here, so a seed's other faults are the same everywhere.
  const drawn: Fault[] = [
    { at: between(8000, Math.max(8000, endMs - 8000)), kind: "reboot", service: null, forMs: between(3000, 6000) },
    { at: between(4000, endMs), kind: "clockstep", service: null, forMs: between(3000, 8000), byS: between(30, 1800) },
    { at: between(4000, endMs), kind: "diskfull", service: null, forMs: between(3000, 8000) },
  ];
  const whole = drawn.filter(() => random() < 0.6);
  faults.push(
    ...whole.filter(
      (fault) =>
        (asRoot() || !ROOT_FAULTS.includes(fault.kind)) &&
        (clockSteps || fault.kind !== "clockstep") &&
        (reboots || fault.kind !== "reboot"),
    ),
  );
  // An operator at work among the faults (drawn last: every other fault of a seed is what it was).
  if (operator)
    for (let at = between(5000, 12_000); at < endMs; at += between(9000, 18_000))
      faults.push({ at, kind: pick(OPERATOR_FAULTS), service: pick(SERVICES), forMs: between(2000, 5000) });
  return faults.sort((a, b) => a.at - b.at);
}

export const describeFault = (fault: Fault) =>
  `+${(fault.at / 1000).toFixed(1)}s ${fault.kind}${fault.service ? ` ${fault.service}` : ""}` +
  (fault.forMs ? ` for ${(fault.forMs / 1000).toFixed(1)}s` : "") +
  (fault.byS ? ` (the wall clock back by ${fault.byS}s, then right again)` : "");

// ---------- a run ----------

interface Received {
  at: number;
  key: string | null;
  service: string | null;
  event: string | null;
  message: string;
}

export interface RunResult {
  seed: number;
  mode: "cron" | "loop";
  faults: Fault[];
  disagreements: string[];
  /** What was compared, for the table: outages seen by the stopwatch and by tend, restarts, messages. */
  /** resent: messages that came again under their key (delivered in the instant before a pass was killed). */
  counts: {
    truthOutages: number;
    tendOutages: number;
    restarts: number;
    messages: number;
    resent: number;
    /** The operator's commands run, the heartbeat's pings, Alertmanager's posts. */
    operator: number;
    pings: number;
    alertPosts: number;
  };
  seconds: number;
}

export interface RunOptions {
  seed: number;
  mode: "cron" | "loop";
  /** How long faults are scheduled; then a quiet spell in which everything must come back. */
  faultSeconds?: number;
  quietSeconds?: number;
  /** A disagreeing run's files: kept where they are (true), or moved into this directory. */
  keep?: boolean | string;
  say?: (line: string) => void;
  /**
   * Step the host's wall clock (make truth): not beside other tests, whose deadlines on the wall
   * clock it would move (make test's short seed leaves it out, and says so).
   */
  clockSteps?: boolean;
}

const pidOf = (file: string) => {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return pid > 1 ? pid : null;
  } catch {
    return null;
  }
};

const OPERATOR_COMMANDS = ["restart", "stop", "start", "pause", "resume"];

/** What an operator did: a command's span (and for a stop or a pause, the span until the start or resume). */
interface OperatorRun {
  kind: "restart" | "stop" | "pause";
  name: string;
  from: number;
  /** The command returned (a stop's or pause's: it has taken effect). */
  to: number;
  code: number;
  /** A stop's start, a pause's resume: from when it was run, to when it returned, and its exit. */
  undo?: { from: number; to: number; code: number };
  said: string;
}

const signalGroup = (group: number, name: NodeJS.Signals) => {
  try {
    process.kill(-group, name);
  } catch {}
};

const signal = (pid: number | null, name: NodeJS.Signals) => {
  if (pid === null) return;
  try {
    process.kill(pid, name);
  } catch {}
};

export async function runSeed(options: RunOptions): Promise<RunResult> {
  const { seed, mode, faultSeconds = 45, quietSeconds = 22, say = () => {} } = options;
  const started = trueNow();
  const dir = mkdtempSync(join(tmpdir(), `tend-truth-${seed}-${mode}-`));
  const state = join(dir, "state");
  const noReboot = asRoot() ? rebootRefused() : null;
  const faults = schedule(seed, faultSeconds, mode, { clockSteps: options.clockSteps, reboots: !noReboot });
  if (!asRoot()) say(`  left out (they need root): ${ROOT_FAULTS.join(", ")}`);
  else if (!options.clockSteps) say("  left out: clockstep (the host's clock: other tests run beside this one)");
  if (noReboot) say(`  left out: reboot (${noReboot})`);
  const stepsClock = faults.some((fault) => fault.kind === "clockstep");
  if (stepsClock) for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, stoppedWhileStepped);
  const children: number[] = [];
  const received: Received[] = [];
  let resent = 0;
  const receiverDown = { until: 0 };
  // Every third seed notifies Alertmanager's API (its alerts, not chat messages): the receiver keeps the
  // posts, as Alertmanager would, and the oracle holds them to the stopwatch.
  const alertmanager = seed % 3 === 0;
  const alertPosts: { at: number; alerts: { labels: Record<string, string>; startsAt: string; endsAt: string }[] }[] =
    [];
  // The heartbeat, as an Uptime Kuma push monitor gets it: {status} on every pass (and between passes, on change).
  const pings: { at: number; status: string; down: string[] }[] = [];
  const receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      if (url.pathname === "/push") {
        pings.push({
          at: trueNow(),
          status: url.searchParams.get("status") ?? "",
          down: (url.searchParams.get("msg") ?? "").replace(/^down: /, "").split(", "),
        });
        return new Response("ok");
      }
      const body = await request.json().catch(() => ({}));
      if (trueNow() < receiverDown.until) return new Response("down for the harness", { status: 500 });
      if (url.pathname === "/api/v2/alerts") {
        alertPosts.push({ at: trueNow(), alerts: Array.isArray(body) ? body : [] });
        return new Response("ok");
      }
      // As ntfy and webhooks: a key seen before is the same message, kept once.
      const key = request.headers.get("idempotency-key");
      if (key !== null && received.some((message) => message.key === key)) return (resent++, new Response("ok"));
      received.push({
        at: trueNow(),
        key,
        service: typeof body.service === "string" ? body.service : null,
        event: typeof body.event === "string" ? body.event : null,
        message: String(body.message ?? ""),
      });
      return new Response("ok");
    },
  });
  // Below the ephemeral range (test/helpers.ts freePort): a restarted service binds its port again,
  // and a port from bind(0) may meanwhile be some client's source port.
  const ports: Record<string, number> = {};
  for (const name of SERVICES) ports[name] = await freePort();
  const control = (name: string) => join(dir, `${name}.mode`);
  const pidfile = (name: string) => join(dir, `${name}.pid`);
  const setMode = (name: string, mode: string) => writeFileSync(control(name), mode);
  for (const name of SERVICES) setMode(name, "ok");
  const config = join(dir, "tend.toml");
  const metricsFile = join(dir, "tend.prom");
  writeFileSync(
    config,
    [
      `[watchdog]`,
      `state_dir = "${state}"`,
      `interval = "${INTERVAL_MS / 1000}s"`,
      `metrics_file = "${metricsFile}"`,
      `heartbeat_url = "http://127.0.0.1:${receiver.port}/push?status={status}&msg={msg}"`,
      `[notify]`,
      `url = "http://127.0.0.1:${receiver.port}/"`,
      `format = "${alertmanager ? "alertmanager" : "json"}"`,
      `timeout = "1s"`,
      `retries = 0`,
      // Every restart's ⚠️ is a message of its own: no thinning of repeats in the harness.
      `min_interval = "0s"`,
      `[defaults]`,
      `timeout = "${TIMEOUT_MS}ms"`,
      `failures = 2`,
      `grace = "0s"`,
      `cooldown = "0s"`,
      `backoff = "1s"`,
      `backoff_max = "2s"`,
      `max_restarts = 1000`,
      `verify_timeout = "${VERIFY_MS / 1000}s"`,
      `stop_timeout = "1s"`,
      ...SERVICES.flatMap((name) => [
        `[[service]]`,
        `name = "${name}"`,
        `pidfile = "${pidfile(name)}"`,
        // api says when its answers are slow (600 ms answers, a 300 ms mark): slow, never failing.
        ...(name === "api" ? [`failures = 3`, `slow_above = "300ms"`] : []),
        // monit's "3 times within 5 cycles": a service failing every other probe is restarted.
        ...(name === "flappy" ? [`failures = 3`, `failures_within = 5`] : []),
        `[service.check]`,
        `http = "http://127.0.0.1:${ports[name]}/"`,
        ...(name === "leaky"
          ? [`[service.memory]`, `limit = "400MiB"`, `warn_within = "1h"`, `restart_above = "150MiB"`]
          : []),
        `[service.restart]`,
        `spawn = ["${BUN}", "${SERVICE}", "${ports[name]}", "${control(name)}"]`,
      ]),
    ].join("\n") + "\n",
  );
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, TZ: "UTC", TEND_CONFIG: config };
  // The host as tend's processes see it after a reboot-like fault: a time namespace whose boot-time and
  // monotonic clocks read a second since the boot, and a boot id of its own (bind-mounted over
  // /proc/sys/kernel/random/boot_id in a mount namespace). (Not a wall-clock step: a namespace's
  // boot-time clock ahead of the wall clock would also move every process's start time in /proc,
  // and make a gap of as much: that fault steps the host's real clock.)
  const host = { bootOffsetS: 0, monotonicOffsetS: 0, bootId: false };
  const bootIdFile = join(dir, "boot_id");
  const wrap = (argv: string[]) => {
    if (!host.bootOffsetS && !host.monotonicOffsetS && !host.bootId) return argv;
    const offsets = ["--boottime", String(host.bootOffsetS), "--monotonic", String(host.monotonicOffsetS)];
    if (!host.bootId) return ["unshare", "-fT", ...offsets, ...argv];
    const bind = 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"';
    return ["unshare", "-mfT", ...offsets, "sh", "-c", bind, bootIdFile, ...argv];
  };
  // What tend's passes and loop say on stdout (cron would mail it): every line, the log's or not (a
  // line the full disk kept from watchdog.log is said there).
  const stdoutFile = join(dir, "stdout.log");
  const saidFd = openSync(stdoutFile, "a");
  const tend = async (args: string[]) => {
    const child = Bun.spawn(wrap([TEND, ...args]), { env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    // What the passes and the operator's commands said: every RESTART line is one restart.
    if (args[1] === "pass" || OPERATOR_COMMANDS.includes(args[1])) appendFileSync(stdoutFile, stdout);
    return { code, stdout, stderr };
  };
  const truthFile = join(dir, "stopwatch.jsonl");
  const disagreements: string[] = [];
  const disagree = (what: string) => disagreements.push(what);
  let tendOutages = 0;
  let truthOutages = 0;
  let restarts = 0;
  // A full disk needs a disk of its own: the state dir on a small tmpfs.
  const fillsDisk = faults.some((fault) => fault.kind === "diskfull");
  mkdirSync(state, { recursive: true, mode: 0o700 });
  if (fillsDisk) {
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", state]);
    if (mounted.exitCode !== 0) throw new Error(`cannot mount a tmpfs for the full disk: ${mounted.stderr}`);
  }
  try {
    // The services, started by tend's own first pass (START, not counted), then the stopwatch.
    const first = await tend(["watchdog", "pass", "--interval", `${INTERVAL_MS / 1000}s`]);
    if (first.code !== 0) throw new Error(`the first pass failed: ${first.stderr}`);
    for (const name of SERVICES) {
      const pid = pidOf(pidfile(name));
      if (pid) children.push(pid);
    }
    await waitFor(
      async () =>
        (
          await Promise.all(
            SERVICES.map((name) =>
              fetch(`http://127.0.0.1:${ports[name]}/`, { signal: AbortSignal.timeout(300) })
                .then((r) => r.ok)
                .catch(() => false),
            ),
          )
        ).every(Boolean),
      10_000,
      "every service answering",
    );
    const stopwatch = Bun.spawn(
      [BUN, STOPWATCH, truthFile, String(TIMEOUT_MS), ...SERVICES.map((n) => `${n}=http://127.0.0.1:${ports[n]}/`)],
      { stdout: "ignore", stderr: "inherit" },
    );
    children.push(stopwatch.pid);
    await waitFor(
      () => existsSync(truthFile) && readFileSync(truthFile, "utf8").split("\n").length > 4 * SERVICES.length,
      5000,
      "the stopwatch's first look",
    );

    // The watchdog: cron's ticks (a new pass every period, whether or not the last one ended), or the loop.
    // Each in a process group of its own (the namespace's unshare and tend in it): signalled as a group,
    // and gone when the group is.
    const t0 = trueNow();
    const passes = new Set<number>();
    const passStarted = new Map<number, number>();
    const killNextPass: { signal: NodeJS.Signals | null } = { signal: null };
    let loop: number | null = null;
    let ticking = true;
    const down = { now: false }; // a reboot: nothing of tend's runs
    const startTend = (args: string[]) => {
      const child = Bun.spawn(wrap([TEND, ...args]), { env, stdout: saidFd, stderr: saidFd, detached: true });
      children.push(child.pid);
      return child.pid;
    };
    const gone = (group: number) => {
      try {
        process.kill(-group, 0);
        return false;
      } catch {
        return true;
      }
    };
    const startLoop = () => (loop = startTend(["watchdog", "run", "--interval", `${INTERVAL_MS / 1000}s`]));
    const ticker = (async () => {
      if (mode === "loop") return void startLoop();
      while (ticking) {
        if (!down.now) {
          const group = startTend(["watchdog", "pass", "--interval", `${INTERVAL_MS / 1000}s`]);
          passes.add(group);
          passStarted.set(group, trueNow());
        }
        await Bun.sleep(INTERVAL_MS);
        for (const group of passes) if (gone(group)) passes.delete(group);
      }
    })();
    /** Stop every process of tend's (the loop, running passes) with `signal`, and wait until they are gone. */
    const stopTend = async (signal: NodeJS.Signals) => {
      const groups = [...passes, ...(loop ? [loop] : [])];
      for (const group of groups) signal === "SIGKILL" ? killGroup(group) : signalGroup(group, signal);
      await waitFor(() => groups.every(gone), 10_000, `tend's processes gone after ${signal}`);
      passes.clear();
      loop = null;
    };
    // `watchdog serve` beside it, as Prometheus and a status page would see it: /metrics sampled
    // every 250 ms (tend_service_up), /api/status at the end. Started again in each new namespace.
    const servePort = await freePort();
    let serve: number | null = null;
    const startServe = async () => {
      if (serve) killGroup(serve);
      serve = startTend(["watchdog", "serve", "--listen", `127.0.0.1:${servePort}`]);
      await waitFor(
        () =>
          fetch(`http://127.0.0.1:${servePort}/healthz`).then(
            () => true,
            () => false,
          ),
        10_000,
        "watchdog serve",
      );
    };
    await startServe();
    // The metrics file too, read where node_exporter's textfile collector reads it, as often.
    const ups: { at: number; name: string; up: number; from: "/metrics" | "metrics_file" }[] = [];
    let sampling = true;
    const upsIn = (text: string, at: number, from: "/metrics" | "metrics_file") => {
      for (const match of text.matchAll(/^tend_service_up\{instance="[^"]*",service="([^"]+)"[^}]*\} (\d+)/gm))
        ups.push({ at, name: match[1], up: Number(match[2]), from });
    };
    const sampler = (async () => {
      while (sampling) {
        const at = trueNow();
        const text = await fetch(`http://127.0.0.1:${servePort}/metrics`, { signal: AbortSignal.timeout(1000) })
          .then((r) => r.text())
          .catch(() => "");
        upsIn(text, at, "/metrics");
        try {
          upsIn(readFileSync(metricsFile, "utf8"), trueNow(), "metrics_file");
        } catch {} // not written yet
        await Bun.sleep(250);
      }
    })();
    // A pass is killed where it hurts: the first one found running longer than a quick pass (verifying).
    const passKiller = setInterval(() => {
      if (!killNextPass.signal) return;
      for (const group of passes) {
        if (trueNow() - passStarted.get(group)! < 400 || gone(group)) continue;
        say(`  ${killNextPass.signal} to pass group ${group}`);
        signalGroup(group, killNextPass.signal);
        killNextPass.signal = null;
        return;
      }
    }, 20);
    // The wall clock's steps: back by byMs over [from, to], then right again.
    const steps: { from: number; to: number; byMs: number }[] = [];
    const reboots: { killedAt: number; bootedAt: number; resumedAt: number }[] = [];
    const fillsBy: { from: number; to: number }[] = [];
    const monotonicS = () => Number(process.hrtime.bigint() / 1_000_000_000n);
    const uptimeS = () => Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);

    // The schedule, then the quiet spell.
    const timers: Promise<void>[] = [];
    for (const fault of faults) {
      timers.push(
        (async () => {
          await Bun.sleep(Math.max(0, t0 + fault.at - trueNow()));
          appendFileSync(truthFile, JSON.stringify({ at: trueNow(), fault: fault.kind, name: fault.service }) + "\n");
          await inject(fault);
        })(),
      );
    }
    /** Wait until a pass records its heartbeat at or after `wallMs`; none within 15 s is a disagreement. */
    const heartbeatAfter = async (wallMs: number, what: string) => {
      const heartbeatAt = () => Date.parse(readFileSync(join(state, "heartbeat"), "utf8").split("\n")[0]);
      await waitFor(() => heartbeatAt() >= wallMs, 15_000, what).catch(() =>
        disagree(`${what}: no heartbeat recorded within 15 s`),
      );
    };
    // One whole-host fault at a time: a step while the host is down waits for its boot.
    let wholeHost = Promise.resolve();
    const alone = (work: () => Promise<void>) => (wholeHost = wholeHost.then(work, work));
    // One operator, one command at a time; none while the host is off (the operator waits for its boot).
    const operatorRuns: OperatorRun[] = [];
    let operatorAt = Promise.resolve();
    const operator = (work: () => Promise<void>) => (operatorAt = operatorAt.then(work, work));
    const hostUp = () => waitFor(() => !down.now, 60_000, "the host up for the operator").catch(() => {});
    const command = async (args: string[]) => {
      await hostUp();
      const from = trueNow();
      const run = await tend(["watchdog", ...args]);
      return { from, to: trueNow(), code: run.code, said: `${run.stdout}${run.stderr}`.trim() };
    };
    async function inject(fault: Fault) {
      const name = fault.service!;
      switch (fault.kind) {
        case "oprestart":
          return operator(async () => {
            const run = await command(["restart", name]);
            operatorRuns.push({ kind: "restart", name, ...run });
          });
        case "opstop":
        case "oppause":
          return operator(async () => {
            const [verb, undo] = fault.kind === "opstop" ? ["stop", "start"] : ["pause", "resume"];
            const run = await command([verb, name]);
            await Bun.sleep(fault.forMs);
            const back = await command([undo, name]);
            operatorRuns.push({
              kind: verb as "stop" | "pause",
              name,
              ...run,
              undo: { from: back.from, to: back.to, code: back.code },
              said: `${run.said}\n${back.said}`,
            });
          });
        case "kill":
          return killGroup(pidOf(pidfile(name)) ?? 0);
        case "freeze": {
          const pid = pidOf(pidfile(name));
          signal(pid, "SIGSTOP");
          await Bun.sleep(fault.forMs);
          return signal(pid, "SIGCONT");
        }
        case "hangstart":
          setMode(name, "hang");
          killGroup(pidOf(pidfile(name)) ?? 0);
          await Bun.sleep(fault.forMs);
          return setMode(name, "ok");
        case "spell502":
        case "leak":
        case "flap":
        case "slow":
          setMode(name, fault.kind === "spell502" ? "502" : fault.kind);
          await Bun.sleep(fault.forMs);
          return setMode(name, "ok");
        case "receiver500":
          receiverDown.until = trueNow() + fault.forMs;
          return;
        case "passterm":
        case "passkill":
          killNextPass.signal = fault.kind === "passterm" ? "SIGTERM" : "SIGKILL";
          return;
        case "reboot":
          // Power off: tend and every service gone at once; after forMs a new boot (its boot id, a
          // boot-time clock a second old), where cron ticks again or the loop starts again.
          return alone(async () => {
            down.now = true;
            const killedAt = trueNow();
            // tend first (a pass could start a service after the services were killed), then every
            // service, and whatever holds a service's port: nothing outlives a power cut.
            await stopTend("SIGKILL");
            for (const service of SERVICES) killGroup(pidOf(pidfile(service)) ?? 0);
            for (const service of SERVICES)
              Bun.spawnSync(["fuser", "-k", "-KILL", "-n", "tcp", String(ports[service])], { stderr: "ignore" });
            // Nor does anything in RAM: the states a full disk kept on /dev/shm are gone.
            const spilled = spillDir(state);
            if (spilled) rmSync(spilled, { recursive: true, force: true });
            await Bun.sleep(fault.forMs);
            writeFileSync(bootIdFile, crypto.randomUUID() + "\n");
            host.bootId = true;
            host.bootOffsetS = -(Math.floor(uptimeS()) - 1);
            host.monotonicOffsetS = -(monotonicS() - 1);
            const bootedAt = trueNow() - 1000;
            await startServe();
            down.now = false;
            if (mode === "loop") startLoop();
            reboots.push({ killedAt, bootedAt, resumedAt: trueNow() });
            // Done when tend has seen the new boot (its first pass): a clock step before that would
            // make the boot's time unknowable (a boot with a wrong clock: tend says so, and counts 0 s).
            await heartbeatAfter(Date.now(), "a pass of the new boot");
          });
        case "clockstep":
          // The host's wall clock steps back by byS (an NTP step, a phone's clock reset), and forMs
          // later forward again (NTP puts it right): for real, every process on the machine sees it.
          return alone(async () => {
            const from = trueNow();
            stepWallClock(-fault.byS! * 1000);
            stepped.byMs = fault.byS! * 1000;
            await Bun.sleep(fault.forMs);
            putClockRight();
            const rightAt = trueNow();
            steps.push({ from, to: rightAt, byMs: fault.byS! * 1000 });
            // What tend recorded while the clock was wrong moves only when a pass sees it right: the
            // next whole-host fault waits for that pass (a reboot before it leaves the last boot's
            // records in the wrong frame, and nothing on the host could tell tend otherwise).
            await heartbeatAfter(Date.now(), "a pass after the wall clock was put right");
          });
        case "diskfull":
          // The state dir's disk full for forMs: one file takes all it has left.
          return alone(async () => {
            const filler = join(state, "filler");
            const chunk = Buffer.alloc(64 << 10);
            const fd = openSync(filler, "w");
            try {
              while (true) writeSync(fd, chunk);
            } catch {}
            closeSync(fd);
            const from = trueNow();
            await Bun.sleep(fault.forMs);
            rmSync(filler, { force: true });
            fillsBy.push({ from, to: trueNow() });
          });
      }
    }
    await Promise.all(timers);
    await wholeHost;
    await operatorAt;
    await Bun.sleep(quietSeconds * 1000);
    killNextPass.signal = null;
    clearInterval(passKiller);
    ticking = false;
    await ticker;
    await waitFor(() => [...passes].every(gone), 30_000, "the last passes");
    if (loop) await stopTend("SIGTERM");
    // One more pass after the quiet spell: it flushes what the receiver refused meanwhile.
    await tend(["watchdog", "pass", "--interval", `${INTERVAL_MS / 1000}s`]);
    const endedAt = trueNow();
    sampling = false;
    await sampler;
    const apiStatus = await fetch(`http://127.0.0.1:${servePort}/api/status`).then((r) => r.json());
    killGroup(serve!);
    stopwatch.kill("SIGTERM");
    await stopwatch.exited;
    for (const name of SERVICES) {
      const pid = pidOf(pidfile(name));
      if (pid) children.push(pid);
    }

    // ---------- the oracle ----------
    const samples = readFileSync(truthFile, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const logText = readFileSync(join(state, "watchdog.log"), "utf8");
    const stdoutText = readFileSync(stdoutFile, "utf8");
    // Wide enough for records a clock step moved back (up to 30 min).
    const report = JSON.parse((await tend(["watchdog", "report", "--json", "--since", "1d"])).stdout);
    const status = await tend(["watchdog", "status", "--json"]);
    const statusJson = JSON.parse(status.stdout);
    // tend follows each wall-clock step once, moving what it recorded with it: back, then forward
    // again, its records are where they were. So a moment of the stopwatch's is in tend's time the
    // wall clock's now less the harness's own: nothing, unless the host's clock jumped meanwhile (a
    // virtual machine paused and resumed: its wall clock jumps ahead at resume, as tend sees and follows).
    const drift = Date.now() - trueNow();
    const framed = (at: number) => at + drift;
    const unframed = (at: number) => at - drift;
    const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
    // A reboot: from the power-off until the new boot's services answer (a verification later), the
    // host's downtime and its boot starts, not the services' outages. tend's host line runs from its
    // last pass to its first pass of the new boot (not the boot itself: nothing was watched until then);
    // its last pass may be seconds before the power-off when a restart's action held the passes (seed 145).
    const rebootSpans = reboots.map(
      ({ killedAt, resumedAt }) => [framed(killedAt), framed(resumedAt + VERIFY_MS + INTERVAL_MS)] as [number, number],
    );
    for (const [index, { killedAt, bootedAt, resumedAt }] of reboots.entries()) {
      const host = [
        ...logText.matchAll(/\[DOWNTIME\] host was unavailable for \d+s \(\S+, from (\S+ \S+) UTC to (\S+ \S+) UTC\)/g),
      ].map((match) => match.slice(1, 3).map((stamp) => Date.parse(stamp.replace(" ", "T") + "Z")));
      const mine = host.find(
        ([from, to]) =>
          from <= framed(killedAt) + 1000 &&
          from >= framed(killedAt) - TOLERANCE_MS - VERIFY_MS &&
          to >= framed(bootedAt) - 2000 &&
          to <= framed(resumedAt) + INTERVAL_MS + TOLERANCE_MS,
      );
      if (!mine)
        disagree(
          `reboot ${index + 1}: powered off ${at(framed(killedAt))}, booted ${at(framed(bootedAt))}: ` +
            `no host DOWNTIME line ` +
            `near it (${host.map(([from, to]) => `${at(from)}-${at(to)}`).join(", ") || "none"})`,
        );
      // Said once: a pass killed in the new boot's first second leaves it to the next, never twice (seed 165).
      const again = host.filter(([from]) => mine && from === mine[0]).length;
      if (again > 1) disagree(`reboot ${index + 1}: its host DOWNTIME line said ${again} times`);
      if (!alertmanager && !received.some((message) => message.event === "reboot" && message.at >= resumedAt))
        disagree(`reboot ${index + 1}: no 🔌 received`);
    }
    if (received.some((message) => message.event === "gap"))
      disagree(`a 💤 (the watchdog did not run): ${received.find((message) => message.event === "gap")!.message}`);
    // /metrics: tend_service_up 0 only while the service was down, or while a restart tend made (a
    // memory restart's too, the stopwatch may not see it gone) was verified, or its backoff.
    const restartedAt = (name: string) =>
      [...stdoutText.matchAll(new RegExp(`^\\[([\\d-]+ [\\d:]+)\\] \\[RESTART\\] ${name}: `, "gm"))].map((match) =>
        unframed(Date.parse(match[1].replace(" ", "T") + "Z")),
      );
    /** Whether NAME may be said down at `sampledAt`: down for the stopwatch, or in a restart's verification. */
    const downExplained = (name: string, sampledAt: number) => {
      // A restart logged while the wall clock was stepped back carries that clock's stamp: not matched here.
      if (steps.some((step) => sampledAt >= step.from - 1000 && sampledAt <= step.to + VERIFY_MS + TOLERANCE_MS))
        return true;
      const restarts = restartedAt(name).map((at) => [at - 1000, at + VERIFY_MS] as [number, number]);
      const spans = [...realSpans(name), ...restarts];
      return spans.some(([from, to]) => sampledAt >= from && sampledAt <= to + TOLERANCE_MS + INTERVAL_MS);
    };
    for (const from of ["/metrics", "metrics_file"] as const)
      for (const { at: sampledAt, name, up } of ups.filter((sample) => sample.from === from)) {
        if (up !== 0 || downExplained(name, sampledAt)) continue;
        disagree(`${name}: ${from} said tend_service_up 0 at ${at(sampledAt)}, the stopwatch saw it answering`);
        break;
      }
    // The heartbeat's {status}: down only when a service it names was (never a strike below N); the last
    // pass's, after the quiet spell, up.
    for (const ping of pings.filter((one) => one.status === "down")) {
      const unexplained = ping.down.filter((name) => !downExplained(name, ping.at));
      if (unexplained.length) {
        disagree(
          `the heartbeat said down (${unexplained.join(", ")}) at ${at(ping.at)}, the stopwatch saw it answering`,
        );
        break;
      }
    }
    if (!pings.length) disagree("the heartbeat was never pinged");
    else if (pings.at(-1)!.status !== "up")
      disagree(`the heartbeat's last ping, after the quiet spell, said ${pings.at(-1)!.status}`);
    // Alertmanager: TendServiceDown firing only while its service was down; never a hand message or a
    // watchdog gap; every alert resolved by the end.
    const lastOf = new Map<string, { endsAt: string; postedAt: number }>();
    for (const post of alertPosts)
      for (const alert of post.alerts) {
        const key = `${alert.labels.alertname}/${alert.labels.service}`;
        lastOf.set(key, { endsAt: alert.endsAt, postedAt: post.at });
        const firing = Date.parse(alert.endsAt) > Date.now() - (trueNow() - post.at) + 1000;
        if (alert.labels.alertname === "TendNotification" || (firing && alert.labels.alertname === "TendWatchdogGap"))
          disagree(`Alertmanager got ${alert.labels.alertname} at ${at(post.at)}`);
        if (firing && alert.labels.alertname === "TendServiceDown" && !downExplained(alert.labels.service, post.at))
          disagree(`${alert.labels.service}: TendServiceDown firing at ${at(post.at)}, the stopwatch saw it answering`);
        // Memory growth: only for the service whose memory is watched. (Not only after its leak: the SPEC's
        // least-squares slope projects a new process's first seconds of growth too — seed 3, at its start.)
        if (firing && alert.labels.alertname === "TendMemoryGrowth" && alert.labels.service !== "leaky")
          disagree(`${alert.labels.service}: TendMemoryGrowth firing at ${at(post.at)}: its memory is not watched`);
      }
    // Resolved by the end: every condition but a memory trend (its samples may still climb toward the
    // limit after a leak that did not reach restart_above: true, and said).
    for (const [key, last] of lastOf)
      if (
        !key.startsWith("TendMemoryGrowth/") &&
        Date.parse(last.endsAt) > Date.now() - (trueNow() - last.postedAt) + 1000
      )
        disagree(`Alertmanager: ${key} still firing after the quiet spell`);
    // The operator's commands: what each said it did, the stopwatch saw; while a service was stopped
    // or paused, no pass restarted it.
    const answering = (name: string, moment: number) => {
      const last = samples.filter((s) => s.name === name && typeof s.ok === "boolean" && s.at <= moment).at(-1);
      return last?.ok !== false;
    };
    const answeredWithin = (name: string, from: number, to: number) =>
      answering(name, from) || samples.some((s) => s.name === name && s.ok === true && s.at >= from && s.at <= to);
    const failedWithin = (name: string, from: number, to: number) =>
      !answering(name, from) || samples.some((s) => s.name === name && s.ok === false && s.at >= from && s.at <= to);
    for (const run of operatorRuns) {
      const what = `watchdog ${run.kind} ${run.name} at ${at(run.from)}`;
      if (![0, 1].includes(run.code) || /^\s+at /m.test(run.said))
        disagree(`${what}: exit ${run.code}: ${run.said.slice(0, 200)}`);
      if (run.kind === "restart" && run.code === 0 && !answeredWithin(run.name, run.from, run.to + TOLERANCE_MS))
        disagree(`${what}: exit 0 (recovered), the stopwatch never saw it answer`);
      if (run.kind === "restart" && run.code === 1 && !failedWithin(run.name, run.from, run.to))
        disagree(`${what}: exit 1 (not recovered), the stopwatch saw it answer throughout`);
      if (!run.undo) continue;
      if (run.undo.code !== 0 && run.kind === "pause") disagree(`${what}: resume exits ${run.undo.code}`);
      if (
        run.kind === "stop" &&
        run.code === 0 &&
        run.undo.from - run.to > 1000 &&
        !failedWithin(run.name, run.to, run.undo.from)
      )
        disagree(`${what}: stopped, the stopwatch saw it answer throughout`);
      if (
        run.kind === "stop" &&
        run.undo.code === 0 &&
        !answeredWithin(run.name, run.undo.from, run.undo.to + TOLERANCE_MS)
      )
        disagree(`${what}: started again (exit 0), the stopwatch never saw it answer`);
      const held =
        run.code === 0 && !steps.some((step) => step.from <= run.undo!.from && step.to + TOLERANCE_MS >= run.to);
      // A RESTART line's stamp is its second, cut: the restart was within the second after it (seed 318:
      // one tend recorded 0.3 s after the resume's START line, its stamp before the resume began, was read
      // as made while paused).
      const restartedMeanwhile = restartedAt(run.name).filter(
        (t) => t > run.to + 500 && t + 1000 < run.undo!.from - 500,
      );
      if (held && restartedMeanwhile.length)
        disagree(
          `${what}: restarted at ${at(restartedMeanwhile[0])}, while ${run.kind === "stop" ? "stopped" : "paused"}`,
        );
    }
    // Time under an operator's stop or pause is not the watchdog's to measure (nothing probes it); nor is
    // an operator's restart's own dip, which tend records as no outage (the operator knows): a kill 2.6 s
    // after one was merged with it into one span, "down" from the restart (seed 384).
    const operatorSpans = (name: string) =>
      operatorRuns
        .filter((run) => run.name === name && (run.undo || run.kind === "restart"))
        .map((run) => [framed(run.from), framed((run.undo?.to ?? run.to) + VERIFY_MS)] as [number, number]);
    function realSpans(name: string) {
      // The stopwatch's changes, and each kill as the harness made it: down from that instant, even
      // when tend (or the crash watch) brought it back between two of the stopwatch's looks.
      return downSpans(
        samples
          .filter(
            (s) =>
              (s.name === name && (typeof s.ok === "boolean" || s.fault === "kill" || s.fault === "hangstart")) ||
              s.fault === "reboot",
          )
          .map((s) => (typeof s.ok === "boolean" ? s : { at: s.at, ok: false })),
        t0,
        endedAt,
      );
    }
    for (const name of SERVICES) {
      const stateJson: any = savedState(state, name); // its file and the observations appended since
      const truth = realSpans(name).map(([from, to]) => [framed(from), framed(to)] as [number, number]);
      const kills = samples
        .filter((s) => s.name === name && (s.fault === "kill" || s.fault === "hangstart"))
        .map((s) => ({ at: framed(s.at) }));
      const flaps = faults
        .filter((fault) => fault.service === name && fault.kind === "flap")
        .map((fault) => [framed(t0 + fault.at), framed(t0 + fault.at + fault.forMs)] as [number, number]);
      const recorded = [
        ...stateJson.outages.map((o: { from: number; to: number; reason: string }) => o),
        ...(stateJson.outage ? [{ from: stateJson.outage.since, to: endedAt, reason: stateJson.outage.reason }] : []),
      ].filter((o: { to: number }) => o.to >= framed(t0));
      truthOutages += truth.length;
      tendOutages += recorded.length;
      // The host's downtime is the host's: no outage of a service counts it again.
      for (const { killedAt, bootedAt } of reboots) {
        const [a, b] = [framed(killedAt) + TOLERANCE_MS, framed(bootedAt) - 1000];
        const twice = recorded.find((o: { from: number; to: number }) => o.from < b && o.to > a);
        if (twice)
          disagree(
            `${name}: an outage ${at(twice.from)}-${at(twice.to)} (${twice.reason}) counts the host's ` +
              `downtime (${at(framed(killedAt))}-${at(framed(bootedAt))}) again`,
          );
      }
      // A slow spell (answers inside the timeout) is no outage (the phantom check holds that) and, where
      // slow_above is set, is said: its WARN line while it lasts, or a slow spell still open.
      if (name === "api")
        for (const fault of faults.filter((f) => f.service === name && f.kind === "slow" && f.forMs >= 3000)) {
          const [from, to] = [framed(t0 + fault.at), framed(t0 + fault.at + fault.forMs)];
          // A log line's stamp is the wall clock's: while it was stepped back, not the stopwatch's time.
          if (steps.some((step) => step.from <= to + TOLERANCE_MS && step.to >= from)) continue;
          // Down for most of it (the host was): too little of it left for tend's probes.
          if (rebootSpans.some(([a, b]) => a <= to && b >= from)) continue;
          // On stdout: every line, those a full disk kept from the log too (seed 166).
          const said = [...stdoutText.matchAll(/^\[([\d-]+ [\d:]+)\] \[WARN\] api is slow \(/gm)].some((match) => {
            const at = Date.parse(match[1].replace(" ", "T") + "Z");
            return at >= from - 1000 && at <= to + TOLERANCE_MS;
          });
          if (!said)
            disagree(`api: slow ${(fault.forMs / 1000).toFixed(1)}s from ${new Date(from).toISOString()}, not said`);
        }
      // What tend said of its failures, for a disagreement's words.
      const tendSaid = (from: number, to: number) =>
        [
          ...logText.matchAll(
            new RegExp(`^\\[([\\d-]+ [\\d:]+)\\] \\[WARN\\] ${name} failed health check \\((.*)\\)$`, "gm"),
          ),
        ]
          .filter((match) => {
            const at = Date.parse(match[1].replace(" ", "T") + "Z");
            return at >= from - 1000 && at <= to + 1000;
          })
          .map((match) => match[2])
          .slice(0, 3);
      compareOutages(
        name,
        truth,
        recorded,
        kills,
        disagree,
        [...flaps, ...rebootSpans, ...operatorSpans(name)],
        tendSaid,
      );
      // A flapping spell is found while it lasts (6 changes take 7 of tend's probes, one a second):
      // a spell tend recorded (or one still open) overlaps it. One spell may span two faults close together.
      const spells: [number, number][] = [
        ...(stateJson.flaps ?? []).map((spell: { from: number; to: number }) => [spell.from, spell.to]),
        ...(stateJson.flappingSince ? [[stateJson.flappingSince, endedAt]] : []),
      ];
      for (const [from, to] of flaps)
        if (
          // Cut by a reboot or an operator's pause or stop (nothing probes it then: seed 381), too few of
          // tend's probes may have met it (six changes take seven).
          ![...rebootSpans, ...operatorSpans(name)].some(([a, b]) => a <= to && b >= from) &&
          !spells.some(([a, b]) => a <= to + TOLERANCE_MS && b >= from)
        )
          disagree(
            `${name}: flapped ${((to - from) / 1000).toFixed(1)}s from ${new Date(from).toISOString()}, not found`,
          );
      // Restarts: every RESTART line is one restart, counted once, in the state, the report and a ⚠️.
      // Counted on what the passes said on stdout (every line: a full disk keeps some from the log,
      // never from stdout); the log holds them all unless the disk was full.
      const pattern = new RegExp(`^\\[[^\\]]+\\] \\[RESTART\\] ${name}: `, "gm");
      const restartLines = [...stdoutText.matchAll(pattern)].length;
      const logged = [...logText.matchAll(pattern)].length;
      if (logged > restartLines || (logged < restartLines && !fillsBy.length))
        disagree(`${name}: ${logged} RESTART lines in the log, ${restartLines} said on stdout`);
      const row = report.services.find((r: { name: string }) => r.name === name);
      const warnings = new Set(
        received.filter((m) => m.service === name && m.event === "restart").map((m) => m.key ?? m.message),
      );
      restarts += restartLines;
      if (stateJson.restartsTotal !== restartLines)
        disagree(`${name}: ${restartLines} RESTART lines said, restartsTotal ${stateJson.restartsTotal}`);
      if (row.restarts !== restartLines)
        disagree(`${name}: ${restartLines} RESTART lines said, report says ${row.restarts} restarts`);
      if (!alertmanager && warnings.size !== restartLines)
        disagree(`${name}: ${restartLines} restarts, ${warnings.size} ⚠️ received`);
      // The metrics file after the last pass: the same count.
      const exposition = readFileSync(metricsFile, "utf8");
      const counted = new RegExp(`^tend_service_restarts_total\\{[^}]*service="${name}"[^}]*\\} (\\d+)$`, "m").exec(
        exposition,
      )?.[1];
      if (Number(counted) !== restartLines)
        disagree(`${name}: ${restartLines} RESTART lines said, the metrics file counts ${counted ?? "none"}`);
      if (row.outages !== recorded.length)
        disagree(`${name}: report counts ${row.outages} outages, the state has ${recorded.length}`);
      // ✅ only after a ⚠️/🚨/⛔ of the same outage that no ✅ answered yet.
      let open = false;
      for (const message of received.filter((m) => m.service === name)) {
        if (["restart", "failed", "held", "given-up"].includes(message.event ?? "")) open = true;
        if (message.event === "recovered") {
          if (!open) disagree(`${name}: a ✅ with no ⚠️/🚨 before it: ${message.message}`);
          open = false;
        }
      }
      // Downtime and MTTR as report gives them, against the stopwatch's (a flapping spell's many short
      // spans are not tend's to measure; a reboot's is the host's): each outage's edges may each lie
      // a tolerance off.
      const measured = truth.filter(
        ([from, to]) => ![...flaps, ...rebootSpans, ...operatorSpans(name)].some(([a, b]) => from <= b && to >= a),
      );
      // (After a reboot tend may record what the stopwatch saw in the host's downtime: its edges are
      // compareOutages's, and the sum is not comparable.)
      if (!flaps.length && !reboots.length && !operatorSpans(name).length && measured.length) {
        const clustered = clusterSpans(measured);
        // Those tend recorded (one it may miss, shorter than it can be sure to see, is compareOutages's).
        const seen = clustered.filter(([from, to]) =>
          recorded.some((o) => o.from <= to + TOLERANCE_MS && o.to >= from - TOLERANCE_MS),
        );
        const truthS = seen.reduce((sum, [from, to]) => sum + (to - from), 0) / 1000;
        const slack = (seen.length * 2 * TOLERANCE_MS) / 1000 + 1;
        if (Math.abs(row.downtime_s - truthS) > slack)
          disagree(`${name}: report says ${row.downtime_s}s down, the stopwatch ${truthS.toFixed(1)}s (±${slack}s)`);
        if (seen.length && row.mttr_s !== null) {
          const mean = truthS / seen.length;
          if (Math.abs(row.mttr_s - mean) > (2 * TOLERANCE_MS) / 1000 + 1)
            disagree(`${name}: report's MTTR ${row.mttr_s}s, the stopwatch's ${mean.toFixed(1)}s`);
        }
      }
      // After the quiet spell every service answers, and status, --nagios and /api/status say so.
      const said = statusJson.services.find((r: { name: string }) => r.name === name);
      if (said.state !== "healthy") disagree(`${name}: after the quiet spell status says ${said.state}`);
      const served = apiStatus.services?.find((r: { name: string }) => r.name === name);
      // The last pass's record: one slow answer under load may leave it `slow`, a word of health too.
      if (!["healthy", "slow"].includes(served?.state))
        disagree(`${name}: after the quiet spell /api/status says ${served?.state}`);
      if (stateJson.outage) disagree(`${name}: an outage still open after the quiet spell`);
    }
    const nagios = await tend(["watchdog", "status", "--nagios"]);
    if (nagios.code !== 0 || !nagios.stdout.startsWith("TEND OK"))
      disagree(`status --nagios after the quiet spell: exit ${nagios.code}, ${nagios.stdout.trim().slice(0, 120)}`);
    // Nothing lost, nothing twice: every message has its idempotency key, and the receiver keeps it once
    // (as ntfy and webhooks do); one delivered in the instant before a pass was killed, unacknowledged,
    // comes again under its key: counted apart, kept once.
    if (received.some((m) => m.key === null)) disagree("a message without an idempotency key");
    const spool = join(state, "notify-spool.jsonl");
    const spooled = existsSync(spool) ? readFileSync(spool, "utf8").trim() : "";
    if (spooled) disagree(`the spool still holds ${spooled.split("\n").length} message(s) after the last pass`);
    if (status.code !== 0) disagree(`status exits ${status.code} after the quiet spell`);
    if (disagreements.length && options.keep) {
      // What the receiver got, in its order (the harness's time): a message's place is often the disagreement.
      writeFileSync(join(dir, "received.jsonl"), received.map((message) => JSON.stringify(message) + "\n").join(""));
      say(`  kept: ${typeof options.keep === "string" ? join(options.keep, basename(dir)) : dir}`);
    }
    return {
      seed,
      mode,
      faults,
      disagreements,
      counts: {
        truthOutages,
        tendOutages,
        restarts,
        messages: received.length,
        resent,
        operator: operatorRuns.length,
        pings: pings.length,
        alertPosts: alertPosts.length,
      },
      seconds: Math.round((trueNow() - started) / 1000),
    };
  } finally {
    putClockRight();
    if (stepsClock) for (const signal of ["SIGINT", "SIGTERM"] as const) process.off(signal, stoppedWhileStepped);
    receiver.stop(true);
    for (const pid of children) killGroup(pid);
    for (const name of SERVICES) killGroup(pidOf(pidfile(name)) ?? 0);
    // Whatever still holds a service's port (a process started just before a kill), and the states a
    // full disk kept in RAM: the run's own, nothing else.
    for (const name of SERVICES)
      Bun.spawnSync(["fuser", "-k", "-KILL", "-n", "tcp", String(ports[name])], { stderr: "ignore" });
    const spilled = spillDir(state);
    if (spilled) rmSync(spilled, { recursive: true, force: true });
    closeSync(saidFd);
    // Its records are read (or kept for a look) first: a kept run's tmpfs is copied out.
    if (fillsDisk) {
      if (disagreements.length && options.keep) Bun.spawnSync(["cp", "-a", state, `${state}.kept`]);
      Bun.spawnSync(["umount", "-l", state]);
    }
    // Kept where asked (make test keeps a failing seed in build/, leaving nothing in /tmp), else in place.
    if (disagreements.length && typeof options.keep === "string") {
      mkdirSync(options.keep, { recursive: true });
      Bun.spawnSync(["cp", "-a", dir, join(options.keep, basename(dir))]);
    }
    if (!(disagreements.length && options.keep === true)) rmSync(dir, { recursive: true, force: true });
  }
}

/** The stopwatch's spans of no answer, from its changes (sorted by when each probe was sent). */
export function downSpans(changes: { at: number; ok: boolean }[], from: number, to: number): [number, number][] {
  const spans: [number, number][] = [];
  let downSince: number | null = null;
  for (const { at, ok } of [...changes].sort((a, b) => a.at - b.at)) {
    if (!ok && downSince === null) downSince = at;
    if (ok && downSince !== null) {
      spans.push([downSince, at]);
      downSince = null;
    }
  }
  if (downSince !== null) spans.push([downSince, to]);
  return spans.filter(([, end]) => end >= from);
}

/** Spans closer together than the tolerance are one for tend (it cannot tell them apart). */
export function clusterSpans(spans: [number, number][]): [number, number][] {
  const clusters: [number, number][] = [];
  for (const span of [...spans].sort((a, b) => a[0] - b[0])) {
    const last = clusters.at(-1);
    if (last && span[0] - last[1] <= TOLERANCE_MS) last[1] = Math.max(last[1], span[1]);
    else clusters.push([...span]);
  }
  return clusters;
}

/**
 * tend's outages against the stopwatch's: never overlapping; each near a span the stopwatch saw;
 * each span tend could have seen (longer than its resolution) found, starting and ending within the
 * tolerance; a kill's outage a crash.
 */
export function compareOutages(
  name: string,
  truth: [number, number][],
  recorded: { from: number; to: number; reason: string }[],
  kills: { at: number }[],
  disagree: (what: string) => void,
  flaps: [number, number][] = [],
  said: (from: number, to: number) => string[] = () => [],
) {
  const T = TOLERANCE_MS;
  const sorted = [...recorded].sort((a, b) => a.from - b.from);
  const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i].from < sorted[i - 1].to)
      disagree(`${name}: outages overlap: ${at(sorted[i - 1].from)}-${at(sorted[i - 1].to)} and ${at(sorted[i].from)}`);
  const clusters = clusterSpans(truth);
  const near = (outage: { from: number; to: number }, [a, b]: [number, number]) =>
    outage.from <= b + T && outage.to >= a - T;
  // How far an outage lies from a cluster: 0 when they overlap, less the more they do.
  const distance = (outage: { from: number; to: number }, [a, b]: [number, number]) =>
    Math.max(a - outage.to, outage.from - b, -(Math.min(b, outage.to) - Math.max(a, outage.from)));
  const nearest = (outage: { from: number; to: number }) =>
    clusters.reduce((best, cluster) => (distance(outage, cluster) < distance(outage, best) ? cluster : best));
  for (const outage of sorted)
    if (!clusters.some((cluster) => near(outage, cluster)))
      disagree(
        `${name}: an outage the stopwatch never saw: ${at(outage.from)}-${at(outage.to)} (${outage.reason}; ` +
          `tend saw: ${said(outage.from, outage.to).join(" | ") || "no WARN line"})`,
      );
  for (const cluster of clusters) {
    // A flapping spell is many short outages at random: tend sees those its probes meet, not their
    // edges. What it must see there is the flapping (judged apart), not the stopwatch's spans.
    if (flaps.some(([from, to]) => cluster[0] <= to + T && cluster[1] >= from - T)) continue;
    // Each outage is its nearest cluster's: one that ends within the tolerance of the next cluster's
    // start is still the one before's.
    const mine = sorted.filter((outage) => near(outage, cluster) && nearest(outage) === cluster);
    const length = cluster[1] - cluster[0];
    if (!mine.length) {
      // Shorter than what one probe a period can be sure to see: tend may miss it.
      if (length > INTERVAL_MS + T)
        disagree(`${name}: down ${(length / 1000).toFixed(1)}s at ${at(cluster[0])}, no outage`);
      continue;
    }
    const start = Math.min(...mine.map((o) => o.from));
    const end = Math.max(...mine.map((o) => o.to));
    if (Math.abs(start - cluster[0]) > T)
      disagree(`${name}: outage from ${at(start)}, the stopwatch says ${at(cluster[0])} (${start - cluster[0]} ms)`);
    if (Math.abs(end - cluster[1]) > T)
      disagree(`${name}: outage until ${at(end)}, the stopwatch says ${at(cluster[1])} (${end - cluster[1]} ms)`);
    const killed = kills.some((kill) => kill.at >= cluster[0] - T && kill.at <= cluster[1]);
    if (killed && !mine.some((outage) => outage.reason === "crash"))
      disagree(`${name}: killed at ${at(cluster[0])}, outage reason ${mine.map((o) => o.reason).join(", ")}`);
  }
}

// ---------- make truth ----------

if (import.meta.main) {
  const args = minimist(process.argv.slice(2), { string: ["seed", "seeds", "mode", "seconds"] });
  const first = Number(args.seed ?? 1);
  const count = Number(args.seeds ?? 1);
  // alternate: odd seeds under cron, even under the loop (100 seeds in the time of 50 with both).
  const modesOf = (seed: number): readonly ("cron" | "loop")[] =>
    args.mode === "both" || !args.mode
      ? ["cron", "loop"]
      : args.mode === "alternate"
        ? [seed % 2 ? "cron" : "loop"]
        : [args.mode as "cron" | "loop"];
  const faultSeconds = Number(args.seconds ?? 45);
  if (!existsSync(TEND)) throw new Error(`no binary at ${TEND}: make build/tend`);
  mkdirSync(join(ROOT, "build"), { recursive: true });
  const began = trueNow();
  let failed = 0;
  const rows: string[] = [];
  for (let seed = first; seed < first + count; seed++) {
    for (const mode of modesOf(seed)) {
      const result = await runSeed({
        seed,
        mode,
        faultSeconds,
        keep: true,
        clockSteps: true,
        say: (line) => console.log(line),
      });
      const { truthOutages, tendOutages, restarts, messages, resent, operator, pings, alertPosts } = result.counts;
      const row =
        `seed ${seed} ${mode}: ${result.disagreements.length ? "DISAGREES" : "agrees"} — ` +
        `${result.faults.length} faults (${operator} operator's), ${truthOutages} outages seen by the stopwatch, ` +
        `${tendOutages} by tend, ${restarts} restarts, ${messages} messages (${resent} again under their key), ` +
        `${pings} pings, ${alertPosts} alert posts, ${result.seconds}s`;
      console.log(row);
      rows.push(row);
      if (result.disagreements.length) {
        failed++;
        console.log(`  schedule (replay: make truth SEED=${seed} MODE=${mode}):`);
        for (const fault of result.faults) console.log(`    ${describeFault(fault)}`);
        console.log("  disagreements:");
        for (const what of result.disagreements) console.log(`    ${what}`);
      }
    }
  }
  const summary = `${rows.length} runs, ${failed} disagreed, ${Math.round((trueNow() - began) / 1000)}s`;
  console.log(summary);
  writeFileSync(join(ROOT, "build", "truth.txt"), [...rows, summary].join("\n") + "\n");
  process.exit(failed ? 1 : 0);
}
