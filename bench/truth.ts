// make truth: the ground-truth harness. Real services, a stopwatch process asking each of them ten
// times as often as tend does, and a seeded random schedule of faults (kills, freezes, 502 spells,
// a hang from the start, a leak, a flapping upstream, a receiver answering 500, a pass killed by
// SIGTERM or SIGKILL) under cron-like passes or the loop. Then every view tend gives — downtime.log,
// report --json, status --json, the state's counts, the notifications the receiver got — is held
// to what the stopwatch saw and the harness did. A failing seed prints its schedule and the first
// disagreements; `make truth SEED=n` replays it.
// usage: bun bench/truth.ts [--seed N] [--seeds COUNT] [--mode cron|loop|both] [--seconds S]
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import minimist from "minimist";
import { killGroup, waitFor } from "./common.ts";
import { freePort } from "../test/helpers.ts";

const ROOT = resolve(import.meta.dir, "..");
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

// ---------- the schedule ----------

export type FaultKind =
  "kill" | "freeze" | "spell502" | "hangstart" | "leak" | "flap" | "slow" | "receiver500" | "passterm" | "passkill";

export interface Fault {
  at: number; // ms from the start
  kind: FaultKind;
  service: string | null;
  forMs: number;
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
export function schedule(seed: number, faultSeconds: number, mode: "cron" | "loop"): Fault[] {
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
  return faults.sort((a, b) => a.at - b.at);
}

export const describeFault = (fault: Fault) =>
  `+${(fault.at / 1000).toFixed(1)}s ${fault.kind}${fault.service ? ` ${fault.service}` : ""}` +
  (fault.forMs ? ` for ${(fault.forMs / 1000).toFixed(1)}s` : "");

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
  counts: { truthOutages: number; tendOutages: number; restarts: number; messages: number; resent: number };
  seconds: number;
}

export interface RunOptions {
  seed: number;
  mode: "cron" | "loop";
  /** How long faults are scheduled; then a quiet spell in which everything must come back. */
  faultSeconds?: number;
  quietSeconds?: number;
  keep?: boolean;
  say?: (line: string) => void;
}

const pidOf = (file: string) => {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return pid > 1 ? pid : null;
  } catch {
    return null;
  }
};

const signal = (pid: number | null, name: NodeJS.Signals) => {
  if (pid === null) return;
  try {
    process.kill(pid, name);
  } catch {}
};

export async function runSeed(options: RunOptions): Promise<RunResult> {
  const { seed, mode, faultSeconds = 45, quietSeconds = 22, say = () => {} } = options;
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), `tend-truth-${seed}-${mode}-`));
  const state = join(dir, "state");
  const faults = schedule(seed, faultSeconds, mode);
  const children: number[] = [];
  const received: Received[] = [];
  let resent = 0;
  const receiverDown = { until: 0 };
  const receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const body = await request.json().catch(() => ({}));
      if (Date.now() < receiverDown.until) return new Response("down for the harness", { status: 500 });
      // As ntfy and webhooks: a key seen before is the same message, kept once.
      const key = request.headers.get("idempotency-key");
      if (key !== null && received.some((message) => message.key === key)) return (resent++, new Response("ok"));
      received.push({
        at: Date.now(),
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
  writeFileSync(
    config,
    [
      `[watchdog]`,
      `state_dir = "${state}"`,
      `interval = "${INTERVAL_MS / 1000}s"`,
      `[notify]`,
      `url = "http://127.0.0.1:${receiver.port}/"`,
      `format = "json"`,
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
      `verify_timeout = "3s"`,
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
  const tend = async (args: string[]) => {
    const child = Bun.spawn([TEND, ...args], { env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    return { code, stdout, stderr };
  };
  const truthFile = join(dir, "stopwatch.jsonl");
  const disagreements: string[] = [];
  const disagree = (what: string) => disagreements.push(what);
  let tendOutages = 0;
  let truthOutages = 0;
  let restarts = 0;
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
    const t0 = Date.now();
    const passes = new Set<ReturnType<typeof Bun.spawn>>();
    const passStarted = new Map<ReturnType<typeof Bun.spawn>, number>();
    const killNextPass: { signal: NodeJS.Signals | null } = { signal: null };
    let loop: ReturnType<typeof Bun.spawn> | null = null;
    let ticking = true;
    const ticker = (async () => {
      if (mode === "loop") {
        loop = Bun.spawn([TEND, "watchdog", "run", "--interval", `${INTERVAL_MS / 1000}s`], {
          env,
          stdout: "ignore",
          stderr: "ignore",
        });
        children.push(loop.pid);
        return;
      }
      while (ticking) {
        const child = Bun.spawn([TEND, "watchdog", "pass", "--interval", `${INTERVAL_MS / 1000}s`], {
          env,
          stdout: "ignore",
          stderr: "ignore",
        });
        passes.add(child);
        passStarted.set(child, Date.now());
        child.exited.then(() => passes.delete(child));
        await Bun.sleep(INTERVAL_MS);
      }
    })();
    // A pass is killed where it hurts: the first one found running longer than a quick pass (verifying).
    const passKiller = setInterval(() => {
      if (!killNextPass.signal) return;
      for (const child of passes) {
        if (Date.now() - passStarted.get(child)! < 400) continue;
        say(`  ${killNextPass.signal} to pass pid ${child.pid}`);
        child.kill(killNextPass.signal);
        killNextPass.signal = null;
        return;
      }
    }, 20);

    // The schedule, then the quiet spell.
    const timers: Promise<void>[] = [];
    for (const fault of faults) {
      timers.push(
        (async () => {
          await Bun.sleep(Math.max(0, t0 + fault.at - Date.now()));
          appendFileSync(truthFile, JSON.stringify({ at: Date.now(), fault: fault.kind, name: fault.service }) + "\n");
          await inject(fault);
        })(),
      );
    }
    async function inject(fault: Fault) {
      const name = fault.service!;
      switch (fault.kind) {
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
          receiverDown.until = Date.now() + fault.forMs;
          return;
        case "passterm":
        case "passkill":
          killNextPass.signal = fault.kind === "passterm" ? "SIGTERM" : "SIGKILL";
          return;
      }
    }
    await Promise.all(timers);
    await Bun.sleep(quietSeconds * 1000);
    killNextPass.signal = null;
    clearInterval(passKiller);
    ticking = false;
    await ticker;
    for (const child of passes) await child.exited;
    if (loop) {
      (loop as ReturnType<typeof Bun.spawn>).kill("SIGTERM");
      await (loop as ReturnType<typeof Bun.spawn>).exited;
    }
    // One more pass after the quiet spell: it flushes what the receiver refused meanwhile.
    await tend(["watchdog", "pass", "--interval", `${INTERVAL_MS / 1000}s`]);
    const endedAt = Date.now();
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
    const report = JSON.parse((await tend(["watchdog", "report", "--json", "--since", "1h"])).stdout);
    const status = await tend(["watchdog", "status", "--json"]);
    const statusJson = JSON.parse(status.stdout);
    for (const name of SERVICES) {
      const stateJson = JSON.parse(readFileSync(join(state, "services", `${name}.json`), "utf8"));
      // The stopwatch's changes, and each kill as the harness made it: down from that instant, even
      // when tend (or the crash watch) brought it back between two of the stopwatch's looks.
      const truth = downSpans(
        samples
          .filter(
            (s) => s.name === name && (typeof s.ok === "boolean" || s.fault === "kill" || s.fault === "hangstart"),
          )
          .map((s) => (typeof s.ok === "boolean" ? s : { at: s.at, ok: false })),
        t0,
        endedAt,
      );
      const kills = samples.filter((s) => s.name === name && (s.fault === "kill" || s.fault === "hangstart"));
      const flaps = faults
        .filter((fault) => fault.service === name && fault.kind === "flap")
        .map((fault) => [t0 + fault.at, t0 + fault.at + fault.forMs] as [number, number]);
      const recorded = [
        ...stateJson.outages.map((o: { from: number; to: number; reason: string }) => o),
        ...(stateJson.outage ? [{ from: stateJson.outage.since, to: endedAt, reason: stateJson.outage.reason }] : []),
      ].filter((o: { to: number }) => o.to >= t0);
      truthOutages += truth.length;
      tendOutages += recorded.length;
      // A slow spell (answers inside the timeout) is no outage (the phantom check holds that) and, where
      // slow_above is set, is said: its WARN line while it lasts, or a slow spell still open.
      if (name === "api")
        for (const fault of faults.filter((f) => f.service === name && f.kind === "slow" && f.forMs >= 3000)) {
          const [from, to] = [t0 + fault.at, t0 + fault.at + fault.forMs];
          const said = [...logText.matchAll(/^\[([\d-]+ [\d:]+)\] \[WARN\] api is slow \(/gm)].some((match) => {
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
      compareOutages(name, truth, recorded, kills, disagree, flaps, tendSaid);
      // A flapping spell is found while it lasts (6 changes take 7 of tend's probes, one a second):
      // a spell tend recorded (or one still open) overlaps it. One spell may span two faults close together.
      const spells: [number, number][] = [
        ...(stateJson.flaps ?? []).map((spell: { from: number; to: number }) => [spell.from, spell.to]),
        ...(stateJson.flappingSince ? [[stateJson.flappingSince, endedAt]] : []),
      ];
      for (const [from, to] of flaps)
        if (!spells.some(([a, b]) => a <= to + TOLERANCE_MS && b >= from))
          disagree(
            `${name}: flapped ${((to - from) / 1000).toFixed(1)}s from ${new Date(from).toISOString()}, not found`,
          );
      // Restarts: every RESTART line is one restart, counted once, in the state, the report and a ⚠️.
      const restartLines = [...logText.matchAll(new RegExp(`\\[RESTART\\] ${name}: `, "g"))].length;
      const row = report.services.find((r: { name: string }) => r.name === name);
      const warnings = new Set(
        received.filter((m) => m.service === name && m.event === "restart").map((m) => m.key ?? m.message),
      );
      restarts += restartLines;
      if (stateJson.restartsTotal !== restartLines)
        disagree(`${name}: ${restartLines} RESTART lines in the log, restartsTotal ${stateJson.restartsTotal}`);
      if (row.restarts !== restartLines)
        disagree(`${name}: ${restartLines} RESTART lines in the log, report says ${row.restarts} restarts`);
      if (warnings.size !== restartLines) disagree(`${name}: ${restartLines} restarts, ${warnings.size} ⚠️ received`);
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
      // After the quiet spell every service answers, and status says so.
      const said = statusJson.services.find((r: { name: string }) => r.name === name);
      if (said.state !== "healthy") disagree(`${name}: after the quiet spell status says ${said.state}`);
      if (stateJson.outage) disagree(`${name}: an outage still open after the quiet spell`);
    }
    // Nothing lost, nothing twice: every message has its idempotency key, and the receiver keeps it once
    // (as ntfy and webhooks do); one delivered in the instant before a pass was killed, unacknowledged,
    // comes again under its key: counted apart, kept once.
    if (received.some((m) => m.key === null)) disagree("a message without an idempotency key");
    const spool = join(state, "notify-spool.jsonl");
    const spooled = existsSync(spool) ? readFileSync(spool, "utf8").trim() : "";
    if (spooled) disagree(`the spool still holds ${spooled.split("\n").length} message(s) after the last pass`);
    if (status.code !== 0) disagree(`status exits ${status.code} after the quiet spell`);
    if (disagreements.length && options.keep) say(`  kept: ${dir}`);
    return {
      seed,
      mode,
      faults,
      disagreements,
      counts: { truthOutages, tendOutages, restarts, messages: received.length, resent },
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    receiver.stop(true);
    for (const pid of children) killGroup(pid);
    for (const name of SERVICES) killGroup(pidOf(pidfile(name)) ?? 0);
    if (!(disagreements.length && options.keep)) rmSync(dir, { recursive: true, force: true });
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
  // Spans closer together than the tolerance are one for tend (it cannot tell them apart).
  const clusters: [number, number][] = [];
  for (const span of truth) {
    const last = clusters.at(-1);
    if (last && span[0] - last[1] <= T) last[1] = Math.max(last[1], span[1]);
    else clusters.push([...span]);
  }
  const near = (outage: { from: number; to: number }, [a, b]: [number, number]) =>
    outage.from <= b + T && outage.to >= a - T;
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
    const mine = sorted.filter((outage) => near(outage, cluster));
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
  const modes = args.mode === "both" || !args.mode ? (["cron", "loop"] as const) : [args.mode as "cron" | "loop"];
  const faultSeconds = Number(args.seconds ?? 45);
  if (!existsSync(TEND)) throw new Error(`no binary at ${TEND}: make build/tend`);
  mkdirSync(join(ROOT, "build"), { recursive: true });
  const began = Date.now();
  let failed = 0;
  const rows: string[] = [];
  for (let seed = first; seed < first + count; seed++) {
    for (const mode of modes) {
      const result = await runSeed({ seed, mode, faultSeconds, keep: true, say: (line) => console.log(line) });
      const { truthOutages, tendOutages, restarts, messages, resent } = result.counts;
      const row =
        `seed ${seed} ${mode}: ${result.disagreements.length ? "DISAGREES" : "agrees"} — ` +
        `${result.faults.length} faults, ${truthOutages} outages seen by the stopwatch, ${tendOutages} by tend, ` +
        `${restarts} restarts, ${messages} messages (${resent} again under their key), ${result.seconds}s`;
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
  const summary = `${rows.length} runs, ${failed} disagreed, ${Math.round((Date.now() - began) / 1000)}s`;
  console.log(summary);
  writeFileSync(join(ROOT, "build", "truth.txt"), [...rows, summary].join("\n") + "\n");
  process.exit(failed ? 1 : 0);
}
