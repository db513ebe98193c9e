// Wall-clock steps, in a real kernel: each pass runs in a time namespace of its own (unshare -T),
// whose boot-time and monotonic clocks are offset. A pass in a namespace B seconds ahead of the
// last pass's sees the boot-time clock B seconds further on than the wall clock: B seconds more
// passed than the wall clock says, i.e. the wall clock stepped back by B (an NTP step back, a
// clock reset to 1970), with this kernel's real boot id and real file mtimes. Forward steps cannot
// be made so (the boot-time clock would have to run backwards), nor a step inside a running pass,
// nor a new boot: those are below with an injected clock (the wall clock as the test sets it, the
// boot-time clock real).
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { uptime } from "node:os";
import { join } from "node:path";
import { runPass } from "../lib/pass/pass.ts";
import { restartAndVerify } from "../lib/pass/verify.ts";
import { Logger } from "../lib/state/logger.ts";
import { freshState } from "../lib/core/state.ts";
import { runLoop } from "../lib/pass/loop.ts";
import { tendNow } from "../lib/state/clock.ts";
import { answer } from "../lib/views/serve.ts";
import { collectStatus } from "../lib/views/status.ts";
import { ServiceOwner } from "../lib/owner/owner.ts";
import { maintain } from "../lib/operator/maintenance.ts";
import { operate } from "../lib/operator/operate.ts";
import { readState } from "../lib/state/service-state.ts";
import { ensureStateDir } from "../lib/state/dir.ts";
import { readHeartbeat } from "../lib/state/heartbeat.ts";
import { parseConfig } from "../lib/config/load.ts";
import { readDead, readNotifyState, readSpool, spoolNow, writeNotifyState } from "../lib/notify/spool.ts";
import type { ClockSource } from "../lib/os/clock.ts";
import { latestRecorded, type ClockReading } from "../lib/core/clock.ts";
import {
  BUN,
  controlledServer,
  freePort,
  recordingReceiver,
  restartedWebConfig,
  run,
  Sandbox,
  SERVER,
  TEND,
  waitFor,
} from "./helpers.ts";

let box: Sandbox;
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
  box?.cleanup();
});

const HOUR_S = 3600;
const DAY_S = 86_400;
/** 56 years: the records of 2026 seen from a clock at 1970. */
const TO_1970_S = 1_767_225_600;

/** `tend ARGS` in a time namespace whose boot-time (and monotonic) clock is ahead by `offsetS`. */
const tendIn = (offsetS: number, args: string[]) =>
  run(["unshare", "-fT", "--boottime", String(offsetS), "--monotonic", String(offsetS), TEND, ...args], {
    env: box.env(),
    timeoutMs: 120_000,
  });

const stepLines = (log: string) => log.split("\n").filter((line) => line.includes("the clock stepped"));

function healthyService(url: string, receiver: string, extra = "") {
  return `
[watchdog]
state_dir = "${box.state}"
interval = "1m"
[notify]
url = "${receiver}/topic"
[[service]]
name = "web"
${extra}
[service.check]
http = "${url}"
`;
}

/** A service healthy while the flag file its restart command makes is there, and a receiver. */
function flaggedWorld() {
  const flag = join(box.dir, "up");
  const web = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response("", { status: existsSync(flag) ? 200 : 500 }),
  });
  const receiver = recordingReceiver();
  stops.push(() => web.stop(true), receiver.stop);
  return { flag, web, receiver };
}

test("-1 h during backoff: an hour passed by the boot-time clock, so the backoff is over: restarted", async () => {
  box = new Sandbox();
  const web = controlledServer();
  web.control.status = 503;
  const receiver = recordingReceiver();
  stops.push(() => web.server.stop(true), receiver.stop);
  box.writeConfig(
    healthyService(
      web.url,
      receiver.url,
      [
        'failures = 1\ncooldown = "0s"\nbackoff = "10m"\nbackoff_max = "1h"\nrestart_window = "1d"',
        'verify_timeout = "1s"\n[service.restart]\ncommand = ["true"]',
      ].join("\n"),
    ),
  );
  const first = await tendIn(0, ["watchdog"]);
  expect(first.stdout).toMatch(/\[FAILED\] web did not recover within .*; backoff 10m/);
  // An hour on by the boot-time clock, before a pass followed: stale, in the JSON and the text alike.
  const staleJson = JSON.parse((await tendIn(HOUR_S, ["watchdog", "status", "--json", "--cached"])).stdout);
  expect(staleJson.watchdog.stale).toBe(true);
  const staleText = (await tendIn(HOUR_S, ["watchdog", "status", "--cached"])).stdout;
  expect(staleText).toMatch(/\b1h( \d+s)? ago/);
  expect(staleText).not.toMatch(/\b\d+(\.\d)?s ago/);
  // Seconds later by the wall clock, an hour later by the boot-time clock (before the fix: held
  // in backoff for 10 minutes of wall clock more, and after a real step back, for an hour more).
  const stepped = await tendIn(HOUR_S, ["watchdog"]);
  expect(stepped.stdout).toMatch(/\[WARN\] the clock stepped -360\ds: tend's intervals and durations are unaffected/);
  expect(stepped.stdout).toContain("[RESTART] web: command true");
  expect(stepped.stdout).toMatch(/\[FAILED\] web did not recover within .*; backoff 20m/);
  // The hour the boot-time clock counted and the wall clock did not: measured, as no data.
  expect(stepped.stdout).toMatch(/\[DOWNTIME\] watchdog did not run for 360\ds \(watchdog_not_running/);
  const state = box.stateOf("web");
  expect(state.verdict.word).toBe("backoff");
  expect(state.verdict.until - state.verdict.at).toBeLessThanOrEqual(20 * 60_000);
  expect(state.restartTimes).toHaveLength(2);
  expect(state.restartTimes[1] - state.restartTimes[0]).toBeGreaterThan(HOUR_S * 1000); // an hour apart, as they were
  const status = JSON.parse((await tendIn(HOUR_S, ["watchdog", "status", "--json", "--cached"])).stdout);
  expect(status.watchdog.stale).toBe(false);
  expect(status.services[0].state).toBe("backoff");
  // Said once; and no negative duration anywhere in the log.
  await tendIn(HOUR_S, ["watchdog"]);
  expect(stepLines(box.read("watchdog.log"))).toHaveLength(1);
  const durations = box
    .read("watchdog.log")
    .split("\n")
    .filter((line) => !line.includes("the clock stepped"));
  expect(durations.join("\n")).not.toMatch(/ -\d+(\.\d+)?s\b/);
}, 60_000);

test("back to 1970 during grace: grace is over by the boot-time clock, and the failing probe strikes", async () => {
  box = new Sandbox();
  // Healthy while the flag file the restart command makes is there. (No PID source here: a process's
  // start time in /proc reads differently in each time namespace, which no real boot does.)
  const { flag, web, receiver } = flaggedWorld();
  box.writeConfig(
    healthyService(
      `http://127.0.0.1:${web.port}/`,
      receiver.url,
      `grace = "10m"\nfailures = 1\n[service.restart]\ncommand = ["touch", "${flag}"]`,
    ),
  );
  const start = await tendIn(0, ["watchdog"]);
  expect(start.stdout).toContain("[RECOVERED] web recovered");
  expect(box.stateOf("web").verdict.word).toBe("healthy");
  rmSync(flag);
  // 56 years by the boot-time clock, seconds by the wall clock (a clock reset to 1970). Before the
  // fix: in grace until the wall clock passes the start plus 10 minutes.
  const struck = await tendIn(TO_1970_S, ["watchdog"]);
  expect(struck.stdout).toMatch(/\[WARN\] the clock stepped -\d{10}s/);
  expect(struck.stdout).toContain("[WARN] web failed health check (HTTP 500 (expected 2xx/3xx), failure 1/1)");
  expect(struck.stdout).toContain("[RECOVERED] web recovered");
  const state = box.stateOf("web");
  const [first, second] = state.history
    .filter((entry: { what: string }) => entry.what === "restart")
    .map((entry: { at: number }) => entry.at);
  expect(new Date(first).getUTCFullYear()).toBe(1970); // the earlier start moved back with the wall clock
  expect(second - first).toBeGreaterThan(TO_1970_S * 1000); // 56 years apart by the boot-time clock
  expect(stepLines(box.read("watchdog.log"))).toHaveLength(1);
}, 60_000);

/** The notify durations, each across a step back of 2 h (2 h passed by the boot-time clock, seconds by the wall). */
function notifying(receiver: string, notifyExtra: string, watchdogExtra = "") {
  return `
[watchdog]
state_dir = "${box.state}"
interval = "1m"
${watchdogExtra}
[notify]
url = "${receiver}/topic"
retries = 0
${notifyExtra}
`;
}

test("-2 h with a message spooled: spool_max_age counts its real age, by hand and after a pass followed", async () => {
  box = new Sandbox();
  const receiver = recordingReceiver();
  stops.push(receiver.stop);
  box.writeConfig(notifying(receiver.url, 'spool_max_age = "1h"'));
  expect((await tendIn(0, ["watchdog"])).code).toBe(0); // the heartbeat: tend's time from here
  receiver.control.status = 503;
  for (const text of ["first", "second"]) {
    const spooled = await tendIn(0, ["notify", "--event", "failed", "--service", text, text]);
    expect(spooled.stderr).toContain("spooled (");
  }
  receiver.control.status = 200;
  // Before any pass followed the step (the records' frame): 2 h old, past spool_max_age.
  await tendIn(2 * HOUR_S, ["notify", "--flush"]);
  expect(receiver.received).toEqual([]);
  const dead = box.read("notify-dead.jsonl");
  expect(dead).toContain('"first"');
  expect(dead).toMatch(/expired: spooled 2h\d*m?\d*s? ago \(spool_max_age 1h\)/);
  expect(box.read("watchdog.log")).toMatch(/2 spooled notification\(s\) older than 1h .*moved to notify-dead.jsonl/);
  // Again with a pass that follows the step first (the entries' times moved by it): expired too.
  receiver.control.status = 503;
  await tendIn(2 * HOUR_S, ["notify", "--event", "failed", "--service", "third", "third"]);
  receiver.control.status = 200;
  const stepped = await tendIn(4 * HOUR_S, ["watchdog"]);
  expect(stepped.stdout).toMatch(/\[WARN\] the clock stepped -(72|144)\d\ds/);
  expect(receiver.received.join("\n")).not.toContain("third");
  expect(box.read("notify-dead.jsonl")).toContain('"third"');
}, 60_000);

test("-2 h: min_interval counts real time, so a repeat 2 h later is sent, not suppressed for 2 h more", async () => {
  box = new Sandbox();
  const receiver = recordingReceiver();
  stops.push(receiver.stop);
  box.writeConfig(notifying(receiver.url, 'min_interval = "1h"'));
  expect((await tendIn(0, ["watchdog"])).code).toBe(0);
  const notify = (offsetS: number, text: string) =>
    tendIn(offsetS, ["notify", "--event", "restart", "--service", "web", text]);
  expect((await notify(0, "one")).code).toBe(0);
  expect((await notify(0, "two")).stdout).toContain("suppressed"); // within min_interval: a repeat
  // By hand before any pass followed the step, then after one did: both 2 h after "one".
  expect((await notify(2 * HOUR_S, "three")).stdout).not.toContain("suppressed");
  expect(receiver.received.join("\n")).toContain("three (+1 similar suppressed)");
  await tendIn(4 * HOUR_S, ["watchdog"]);
  expect(stepLines(box.read("watchdog.log"))).toHaveLength(1);
  expect((await notify(4 * HOUR_S, "four")).stdout).not.toContain("suppressed");
  expect(receiver.received.join("\n")).toContain("four");
}, 60_000);

test("-25 h: a heartbeat URL refused for good is tried again after a real day, not a wall-clock one", async () => {
  box = new Sandbox();
  let pings = 0;
  // Uptime Kuma's answer for a deleted push monitor (its words, from its source), from a local server.
  const kuma = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => (pings++, Response.json({ ok: false, msg: "Monitor not found or not active." }, { status: 404 })),
  });
  const receiver = recordingReceiver();
  stops.push(() => kuma.stop(true), receiver.stop);
  const push = `http://127.0.0.1:${kuma.port}/api/push/token?status={status}&msg={msg}`;
  box.writeConfig(notifying(receiver.url, "", `heartbeat_url = "${push}"`));
  expect((await tendIn(0, ["watchdog"])).stdout).toContain("refused for good");
  await tendIn(0, ["watchdog"]);
  expect(pings).toBe(1); // left a day
  await tendIn(12 * HOUR_S, ["watchdog"]); // a step back of 12 h: half a day passed
  expect(pings).toBe(1);
  const later = await tendIn(25 * HOUR_S, ["watchdog"]); // 25 h after the first: tried, and said, again
  expect(pings).toBe(2);
  expect(later.stdout).toContain("refused for good");
}, 60_000);

/** A clock a test steps: the wall clock as set, the boot-time clock real (this boot), one boot id. */
function steppedClock(bootId = "b0a7c1d2-0000-4000-8000-000000000001") {
  const clock = { stepMs: 0, bootId };
  const source: ClockSource = {
    read: async (): Promise<ClockReading> => ({
      wallMs: Date.now() + clock.stepMs,
      bootMs: performance.now(),
      bootId: clock.bootId,
    }),
    monotonic: () => performance.now(),
  };
  return { clock, source };
}

function libConfig(text: string) {
  box.writeConfig(text);
  return parseConfig(text, box.config, box.env());
}

/** web, started by tend (its pidfile) with no grace nor cooldown, its own lines after; the loop's tests. */
const loopWebConfig = (more: string) =>
  libConfig(`
[watchdog]
state_dir = "${box.state}"
log = "${join(box.state, "watchdog.log")}"
[defaults]
grace = "0s"
cooldown = "0s"
[[service]]
name = "web"
pidfile = "${join(box.dir, "web.pid")}"
${more}`);

/** A sandbox watching one HTTP service, web, answering 200 until the test says otherwise. */
function oneHealthyWeb() {
  box = new Sandbox();
  const web = controlledServer();
  stops.push(() => web.server.stop(true));
  const config = libConfig(`
[watchdog]
state_dir = "${box.state}"
log = "${join(box.state, "watchdog.log")}"
[[service]]
name = "web"
[service.check]
http = "${web.url}"
`);
  return { web, config };
}

/** One HTTP service, web, failing (500) at its first strike; its restart a `true` that changes nothing. */
function oneFailingWebWithRestart() {
  box = new Sandbox();
  const web = controlledServer();
  web.control.status = 500;
  stops.push(() => web.server.stop(true));
  const config = libConfig(
    restartedWebConfig(box, web.url, `failures = 1\nrestart_window = "1h"\nverify_timeout = "3s"`),
  );
  return { web, config };
}

/** A sandbox watching one healthy HTTP service, notifying a receiver, on a clock the test steps. */
function healthyWorld() {
  box = new Sandbox();
  const web = controlledServer();
  const receiver = recordingReceiver();
  stops.push(() => web.server.stop(true), receiver.stop);
  return { web, receiver, config: libConfig(healthyService(web.url, receiver.url)), ...steppedClock() };
}

test("a step inside a verification (injected clock): recovered, no false FAILED; the next pass says it", async () => {
  box = new Sandbox();
  const web = controlledServer();
  web.control.status = 500;
  stops.push(() => web.server.stop(true));
  const config = libConfig(`
[watchdog]
state_dir = "${box.state}"
log = "${join(box.state, "watchdog.log")}"
[[service]]
name = "web"
failures = 1
verify_timeout = "20s"
[service.check]
http = "${web.url}"
[service.restart]
command = ["true"]
`);
  const { clock, source } = steppedClock();
  const lines: string[] = [];
  const echo = (line: string) => lines.push(line);
  // Healthy 2 s after the restart; the wall clock steps a day on 1 s into the verification.
  const sleep = async (ms: number) => {
    await Bun.sleep(ms);
    if (lines.some((line) => line.includes("[RESTART]"))) {
      clock.stepMs = 86_400_000;
      setTimeout(() => (web.control.status = 200), 1000);
    }
  };
  await runPass({ config, echo, clock: source, sleep });
  const said = lines.join("\n");
  expect(said).toMatch(/\[RECOVERED\] web recovered \d+\.\ds after restart/);
  expect(said).not.toContain("[FAILED]");
  const seconds = Number(/recovered (\d+\.\d)s after restart/.exec(said)![1]);
  expect(seconds).toBeLessThan(20);
  lines.length = 0;
  await runPass({ config, echo, clock: source, sleep });
  expect(lines.join("\n")).toMatch(/\[WARN\] the clock stepped \+8640\ds/);
  expect(lines.join("\n")).not.toContain("DOWNTIME");
}, 60_000);

test("tend's time read again mid-verification, a step back (the loop's clock, seed 204): one frame", async () => {
  box = new Sandbox();
  const web = controlledServer();
  web.control.status = 500;
  stops.push(() => web.server.stop(true));
  const config = libConfig(restartedWebConfig(box, web.url, `verify_timeout = "20s"`));
  // The loop's `now` reads its clock anew after each pass: made while the wall clock read 553 s
  // behind (a step no pass had followed yet), it jumps back under a verification still running.
  let behind = 0;
  const now = () => Date.now() - behind;
  const logger = new Logger(null, () => {}, now, config.watchdog.rotation);
  const downSince = now() - 3000;
  const state = { ...freshState(), lastHealthyAt: downSince, outage: { since: downSince, reason: "crash" } };
  setTimeout(() => (behind = 553_000), 500);
  setTimeout(() => (web.control.status = 200), 2000);
  const options = { now, monotonic: () => performance.now(), sleep: Bun.sleep };
  // Its owner, as a pass's: its lock held while it restarts.
  ensureStateDir(box.state);
  const owner = (await ServiceOwner.take(config, "web", "pass", { logger, now }))!;
  const verified = await restartAndVerify(config.services[0], state, null, owner, options, "crash");
  owner.release();
  expect(verified.recovered).toBe(true);
  // The outage ends after it began, 5 s later as it really did: not at a time 553 s before its start.
  const outage = verified.next.outages.at(-1)!;
  expect(outage.from).toBe(downSince);
  expect(outage.to - outage.from).toBeGreaterThanOrEqual(4500);
  expect(outage.to - outage.from).toBeLessThan(15_000);
}, 60_000);

test("a phone booting at 1970 (injected clock): tend's time goes on from the last pass, then follows NTP", async () => {
  const { web, config } = oneHealthyWeb();
  const { clock, source } = steppedClock();
  const lines: string[] = [];
  const echo = (line: string) => lines.push(line);
  await runPass({ config, echo, clock: source });
  const healthyBefore = box.stateOf("web").lastHealthyAt;
  // The reboot: another boot id, the wall clock at 1970 (no RTC, no network yet).
  clock.bootId = "b0a7c1d2-0000-4000-8000-000000000002";
  clock.stepMs = Date.parse("1970-01-01T00:00:30Z") - Date.now();
  await runPass({ config, echo, clock: source });
  let said = lines.join("\n");
  expect(said).toMatch(/\[WARN\] the clock reads 1970-01-01 00:00:\d\d UTC, before the last pass/);
  // How long the host was down is not known while the clock reads 1970: said when the clock is set (#61).
  expect(said).toMatch(/\[WARN\] host rebooted, down since \S+ \S+ UTC: how long is said when the clock is set/);
  expect(said).not.toContain("[DOWNTIME]");
  expect(box.read("downtime.log")).toBe("");
  expect(said).not.toMatch(/-\d+(\.\d+)?s\b/);
  const atBoot = box.stateOf("web").lastHealthyAt;
  expect(atBoot).toBeGreaterThanOrEqual(healthyBefore); // not 1970: no time before the last pass
  // Network time: the wall clock is right again.
  lines.length = 0;
  clock.stepMs = 0;
  await runPass({ config, echo, clock: source });
  said = lines.join("\n");
  expect(said).toMatch(/\[WARN\] the clock stepped [+-]\d+s/);
  // The reboot's gap, now that the clock dates this boot: from the last pass before it to the boot's first
  // (this reboot took no real time), said once, in the log and in downtime.log.
  expect(said).toMatch(/\[DOWNTIME\] host was unavailable for \d+s \(unexpected_shutdown_or_reboot, from /);
  expect(box.read("downtime.log").match(/unexpected_shutdown_or_reboot/g)).toHaveLength(1);
  expect(Math.abs(box.stateOf("web").lastHealthyAt - Date.now())).toBeLessThan(5000);
  lines.length = 0;
  await runPass({ config, echo, clock: source });
  expect(lines.join("\n")).not.toContain("DOWNTIME");
}, 60_000);

test("+1 d (injected clock): said once; no reboot, no 💤, no downtime; the times keep their distances", async () => {
  const { receiver, config, clock, source } = healthyWorld();
  const lines: string[] = [];
  const echo = (line: string) => lines.push(line);
  await runPass({ config, echo, clock: source });
  const before = box.stateOf("web");
  clock.stepMs = 86_400_000;
  await runPass({ config, echo, clock: source });
  let said = lines.join("\n");
  expect(said.match(/the clock stepped/g)).toHaveLength(1);
  expect(said).toMatch(/\[WARN\] the clock stepped \+8640\ds: tend's intervals and durations are unaffected/);
  expect(said).not.toContain("DOWNTIME");
  expect(box.read("downtime.log")).toBe("");
  expect(receiver.received).toEqual([]); // no 💤, no 🔌
  const after = box.stateOf("web");
  expect(after.gaps).toEqual([]);
  expect(Math.abs(after.firstSeenAt - before.firstSeenAt - 86_400_000)).toBeLessThan(5); // moved with tend's time
  const sinceFirstSeen = Date.now() + clock.stepMs - after.firstSeenAt;
  expect(sinceFirstSeen).toBeGreaterThanOrEqual(0);
  expect(sinceFirstSeen).toBeLessThan(60_000);
  lines.length = 0;
  await runPass({ config, echo, clock: source });
  expect(lines).toEqual([]); // said once
}, 60_000);

test("1970 -> now (injected clock: network time after tend ran at 1970): said once, no reboot, dated now", async () => {
  const { receiver, config, clock, source } = healthyWorld();
  const lines: string[] = [];
  const echo = (line: string) => lines.push(line);
  clock.stepMs = Date.parse("1970-01-01T00:01:00Z") - Date.now();
  await runPass({ config, echo, clock: source });
  expect(new Date(box.stateOf("web").firstSeenAt).getUTCFullYear()).toBe(1970);
  clock.stepMs = 0;
  await runPass({ config, echo, clock: source });
  const said = lines.join("\n");
  expect(said).toMatch(/\[WARN\] the clock stepped \+17\d{8}s/);
  expect(said).not.toContain("DOWNTIME");
  expect(receiver.received).toEqual([]);
  const state = box.stateOf("web");
  expect(Math.abs(Date.now() - state.firstSeenAt)).toBeLessThan(60_000);
  expect(state.lastHealthyAt - state.firstSeenAt).toBeGreaterThanOrEqual(0);
  expect(state.lastHealthyAt - state.firstSeenAt).toBeLessThan(60_000);
}, 60_000);

test("back to 1970 during grace (injected clock): grace ends as configured, not when the wall clock does", async () => {
  box = new Sandbox();
  const { flag, web, receiver } = flaggedWorld();
  const config = libConfig(
    healthyService(
      `http://127.0.0.1:${web.port}/`,
      receiver.url,
      `grace = "3s"\nfailures = 1\n[service.restart]\ncommand = ["touch", "${flag}"]`,
    ),
  );
  const { clock, source } = steppedClock();
  const lines: string[] = [];
  const echo = (line: string) => lines.push(line);
  await runPass({ config, echo, clock: source });
  expect(box.stateOf("web").verdict.word).toBe("healthy");
  rmSync(flag);
  clock.stepMs = Date.parse("1970-01-01T00:00:10Z") - Date.now();
  await runPass({ config, echo, clock: source });
  expect(lines.join("\n")).toMatch(/\[WARN\] the clock stepped -17\d{8}s/);
  const inGrace = box.stateOf("web").verdict;
  expect(inGrace).toMatchObject({ kind: "skip", reason: "grace" });
  expect(inGrace.until - inGrace.at).toBeLessThanOrEqual(3000);
  await waitFor(() => performance.now() > 0 && Date.now() + clock.stepMs > inGrace.until + 200, 10_000, "grace to end");
  await runPass({ config, echo, clock: source });
  expect(lines.join("\n")).toContain("[WARN] web failed health check (HTTP 500 (expected 2xx/3xx), failure 1/1)");
  expect(lines.join("\n").match(/the clock stepped/g)).toHaveLength(1);
}, 60_000);

test("the loop across a step back (injected clock): a full pass every interval still, the step said once", async () => {
  const { web, receiver, config, clock, source } = healthyWorld();
  const lines: string[] = [];
  const started = performance.now();
  // One hour back after the first pass: before the fix the next pass was due at "started + interval"
  // on the wall clock, an hour and a second away.
  const stepper = setInterval(() => {
    if (web.control.hits > 0 && clock.stepMs === 0) clock.stepMs = -3_600_000;
  }, 50);
  stops.push(() => clearInterval(stepper));
  const loop = runLoop({ config, intervalMs: 1000, maxPasses: 4, echo: (line) => lines.push(line), clock: source });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise(
    (_, reject) => (timer = setTimeout(() => reject(new Error("the loop stopped passing")), 30_000)),
  );
  await Promise.race([loop, deadline]).finally(() => clearTimeout(timer));
  expect(web.control.hits).toBe(4); // four full passes, each probing once
  expect(performance.now() - started).toBeLessThan(30_000);
  expect(lines.filter((line) => line.includes("the clock stepped -3600s"))).toHaveLength(1);
  expect(lines.join("\n")).not.toContain("DOWNTIME");
}, 60_000);

test("the loop's wait, from one reading of its clock: never for nothing once the next pass is due", async () => {
  // Found by the test above on a loaded machine: the loop read its clock just before the next pass was
  // due to decide to wait, and again just after it to say how long: a wait for nothing, with no timer.
  const { sleepFor } = await import("../lib/core/schedule.ts");
  const rows: [string, Parameters<typeof sleepFor>[0], number][] = [
    ["before the next pass", { at: 400, next: 1000, passDone: true, untilRetry: Infinity, looking: false }, 600],
    ["due, the pass done: at once", { at: 1000, next: 1000, passDone: true, untilRetry: Infinity, looking: false }, 0],
    ["past due, the pass done", { at: 1000.4, next: 1000, passDone: true, untilRetry: Infinity, looking: false }, 0],
    // Its end wakes the loop: no timer needed.
    [
      "due, the pass still judging",
      { at: 1200, next: 1000, passDone: false, untilRetry: Infinity, looking: false },
      Infinity,
    ],
    [
      "due, still judging, a process looked at",
      { at: 1200, next: 1000, passDone: false, untilRetry: Infinity, looking: true },
      1000,
    ],
    ["a retry sooner", { at: 400, next: 1000, passDone: true, untilRetry: 250, looking: true }, 250],
    ["a retry overdue", { at: 400, next: 1000, passDone: true, untilRetry: -30, looking: false }, 0],
  ];
  for (const [name, input, expected] of rows) expect({ name, wait: sleepFor(input) }).toEqual({ name, wait: expected });
});

test("a step moves every time notify keeps, once (injected clock): dedup, alerts, spool, dead letters", async () => {
  const { receiver, config, clock, source } = healthyWorld();
  await runPass({ config, echo: () => {}, clock: source });
  const at = (await tendNow(box.state, source))();
  const iso = new Date(at).toISOString();
  writeNotifyState(box.state, {
    dropped: 0,
    dedup: { "web\u0000restart": { lastAt: at, suppressed: 1 } },
    lastError: { at: iso, detail: "HTTP 503" },
    firing: { "TendServiceDown web": { labels: {}, annotations: {}, startsAt: iso } },
    unanswered: { web: at },
    waitingSaid: { count: 1, at },
  });
  const entry = { message: "m", title: null, priority: null, tags: [], event: null, service: null, time: iso };
  writeFileSync(
    join(box.state, "notify-spool.jsonl"),
    JSON.stringify({ ...entry, id: "a", url: "u", format: "text" }) + "\n",
  );
  const letter = { ...entry, id: "b", url: "u", format: "text", status: 400, answer: "no", deadAt: iso };
  writeFileSync(join(box.state, "notify-dead.jsonl"), JSON.stringify(letter) + "\n");
  clock.stepMs = -3_600_000;
  await runPass({ config, echo: () => {}, clock: source });
  const hourBack = (value: string | number) => (typeof value === "string" ? Date.parse(value) : value) - at;
  const state = readNotifyState(box.state);
  for (const value of [
    state.dedup["web\u0000restart"].lastAt,
    state.lastError!.at,
    state.firing["TendServiceDown web"].startsAt,
    state.unanswered.web,
    state.waitingSaid!.at,
    readSpool(box.state).messages[0].time,
    readDead(box.state)[0].time,
    readDead(box.state)[0].deadAt,
  ])
    expect(Math.abs(hourBack(value) + 3_600_000)).toBeLessThan(1000); // moved by the step as measured
  expect(state.clockStep).toBe(1);
  writeNotifyState(box.state, state); // saved as read: moved once, not again
  expect(readNotifyState(box.state).dedup["web\u0000restart"].lastAt).toBe(state.dedup["web\u0000restart"].lastAt);
}, 60_000);

test("/healthz, status after a step no pass followed (injected clock): the records' frame, not negative", async () => {
  const { receiver, config, clock, source } = healthyWorld();
  await runPass({ config, clock: source });
  clock.stepMs = -3_600_000;
  const now = await tendNow(box.state, source);
  const healthz = await answer(config, new Request("http://127.0.0.1/healthz"), now());
  expect(healthz.status).toBe(200);
  expect((await healthz.text()).trim()).toMatch(/^ok: last pass [0-4]s ago, expected every 60s$/);
  const report = await collectStatus(config, { cached: true, now });
  expect(report.watchdog.stale).toBe(false);
  expect(report.services[0].state).toBe("healthy");
  expect(report.services[0].error).toBeNull(); // not "decided before the host booted"
}, 60_000);

test("a pidfile written while the clock read an hour behind: tend's own process is still its own", async () => {
  box = new Sandbox();
  const port = await freePort();
  box.configure({
    services: [
      {
        name: "web",
        pidfile: "web.pid",
        grace: "0s",
        verify_timeout: "5s",
        check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
        restart: { spawn: [BUN, SERVER, `${port}`] },
      },
    ],
  });
  const first = await box.tend(["watchdog"]);
  expect(first.stdout).toMatch(/\[START\] web: started pid (\d+)/);
  const pidfile = join(box.state, "web.pid");
  box.track(Number(readFileSync(pidfile, "utf8").trim()));
  // Its pidfile's time, as a clock an hour (and the whole boot) behind wrote it: the clock since put
  // right (an NTP step), so the file reads older than this boot.
  const beforeBoot = new Date(Date.now() - uptime() * 1000 - 3600_000);
  utimesSync(pidfile, beforeBoot, beforeBoot);
  const next = await box.tend(["watchdog"]);
  // Before: "pid N is from before the host booted": started again beside itself, which cannot bind.
  expect(next.stdout).not.toContain("from before the host booted");
  expect(next.stdout).not.toContain("[RESTART]");
  expect(box.stateOf("web")).toMatchObject({ restartsTotal: 0, lastProbe: { ok: true } });
}, 60_000);

test("a dedup record ahead of now (a clock's wrong frame) suppresses nothing: min_interval 0 or 10m", async () => {
  // Truth seed 174: a restart's lastAt left 103 s ahead by a step; the next restart's ⚠️, with
  // min_interval 0, was suppressed (now − lastAt < 0) and never sent.
  box = new Sandbox();
  mkdirSync(box.state, { mode: 0o700 });
  const now = Date.parse("2026-12-02T10:45:54Z");
  const restart = (n: number) => ({
    message: `⚠️ web restarted (${n})`,
    title: null,
    priority: null,
    tags: [],
    event: "restart",
    service: "web",
    time: new Date(now).toISOString(),
  });
  const channel = { url: "http://127.0.0.1:9/", format: "json" as const, timeoutMs: 1000, retries: 0 };
  for (const [n, minIntervalMs] of [
    [1, 0],
    [2, 600_000],
  ]) {
    writeNotifyState(box.state, {
      dropped: 0,
      dedup: { "web\u0000restart": { lastAt: now + 103_000, suppressed: 0 } },
      lastError: null,
      firing: {},
      unanswered: {},
    });
    await spoolNow([restart(n)], {
      stateDir: box.state,
      channel,
      timeoutMs: 1000,
      retries: 0,
      minIntervalMs,
      now: () => now,
    });
    expect(readSpool(box.state).messages.map((entry) => entry.message)).toContain(`⚠️ web restarted (${n})`);
    expect(readNotifyState(box.state).dedup["web\u0000restart"]).toEqual({ lastAt: now, suppressed: 0 });
  }
  // A record behind now, inside min_interval, still suppresses (what dedup is for).
  await spoolNow([restart(3)], {
    stateDir: box.state,
    channel,
    timeoutMs: 1000,
    retries: 0,
    minIntervalMs: 600_000,
    now: () => now + 60_000,
  });
  expect(readSpool(box.state).messages.map((entry) => entry.message)).not.toContain("⚠️ web restarted (3)");
});

test("the crash watch beside a pass that followed a step (seed 308): its outage in the states' frame", async () => {
  box = new Sandbox();
  const slow = controlledServer();
  stops.push(() => slow.server.stop(true));
  const port = await freePort();
  const config = loopWebConfig(`
[service.check]
http = "http://127.0.0.1:${port}/"
[service.restart]
spawn = ["${BUN}", "${SERVER}", "${port}"]
[[service]]
name = "slow"
[service.check]
http = "${slow.url}"
timeout = "8s"
`);
  const { clock, source } = steppedClock();
  const lines: string[] = [];
  const loop = runLoop({ config, intervalMs: 4000, maxPasses: 3, echo: (line) => lines.push(line), clock: source });
  // The web tend started last, killed by the sandbox's cleanup.
  stops.push(
    () => existsSync(join(box.dir, "web.pid")) && box.track(Number(readFileSync(join(box.dir, "web.pid"), "utf8"))),
  );
  const judged = (name: string) => existsSync(join(box.state, "services", `${name}.json`)) && box.stateOf(name);
  await waitFor(() => judged("web")?.watch?.pid > 0 && judged("slow")?.verdict, 15_000, "the first pass");
  // Ten minutes back; the next full pass follows it at its start, then judges slow for 3 s (its lock held,
  // the loop's own clock not read again until it ends): web is killed meanwhile.
  slow.control.delayMs = 3000;
  const hits = slow.control.hits;
  clock.stepMs = -600_000;
  await waitFor(() => slow.control.hits > hits, 10_000, "the second pass probing slow");
  await waitFor(() => lines.some((line) => line.includes("the clock stepped -600s")), 5000, "the step followed");
  const killedAt = Date.now() + clock.stepMs; // in the frame the states are in now
  process.kill(-box.stateOf("web").watch.pid, "SIGKILL");
  await waitFor(() => (box.stateOf("web").outages ?? []).length > 0, 10_000, "the crash's outage closed");
  const outage = box.stateOf("web").outages.at(-1);
  expect(outage.reason).toBe("crash");
  // Seen by the loop within a second of the kill, in the states' frame: not ten minutes off.
  expect(Math.abs(outage.from - killedAt)).toBeLessThan(2000);
  await loop;
}, 60_000);

test("a crash watch's verification across a pass that followed a step (seed 372): recorded in one frame", async () => {
  box = new Sandbox();
  const web = controlledServer();
  stops.push(() => web.server.stop(true));
  const config = loopWebConfig(`
verify_timeout = "30s"
[service.check]
http = "${web.url}"
[service.restart]
spawn = ["sleep", "600"]
`);
  const { clock, source } = steppedClock();
  const lines: string[] = [];
  const loop = runLoop({ config, intervalMs: 2000, maxPasses: 6, echo: (line) => lines.push(line), clock: source });
  const pid = () => Number(readFileSync(join(box.dir, "web.pid"), "utf8"));
  stops.push(() => existsSync(join(box.dir, "web.pid")) && box.track(pid()));
  await waitFor(
    () => existsSync(join(box.state, "services", "web.json")) && box.stateOf("web").watch?.pid > 0,
    15_000,
    "web started",
  );
  // web dies while its check fails: the crash watch starts it again and verifies it, holding its lock; a full
  // pass follows a step forward meanwhile (leaving web to its owner) and the loop's clock moves to the step's frame.
  web.control.status = 500;
  const killed = box.stateOf("web").watch.pid;
  process.kill(killed, "SIGKILL");
  await waitFor(() => lines.some((line) => line.includes("web is not running")), 10_000, "the crash watch's start");
  clock.stepMs = 600_000;
  await waitFor(() => lines.some((line) => line.includes("the clock stepped +600s")), 10_000, "the step followed");
  // That pass ends (its heartbeat dated after the step was followed): the loop's own clock moves to the
  // step's frame then, while web's verification still runs; web answers after that.
  const followedAt = Date.now() + clock.stepMs;
  await waitFor(() => (readHeartbeat(box.state)?.clock?.atMs ?? 0) > followedAt, 10_000, "that pass's end");
  web.control.status = 200;
  await waitFor(() => lines.some((line) => line.includes("[RECOVERED] web")), 15_000, "the verification's end");
  await loop;
  const { state } = readState(box.state, "web");
  // Every time web's state records is in the records' frame now: its recovery after its restart, the
  // outage it ends not negative, and nothing ahead of now (a time recorded in the step's frame into a
  // state that had not taken the step was moved by it again).
  const outage = state.outages.at(-1)!;
  expect(outage.to).toBeGreaterThanOrEqual(outage.from);
  expect(outage.to - outage.from).toBeLessThan(30_000);
  expect(state.history.at(-1)!.at).toBeGreaterThanOrEqual(state.lastRestartAt!);
  expect(latestRecorded(state)).toBeLessThanOrEqual(Date.now() + clock.stepMs + 1000);
}, 90_000);

test("an operator's pause that waited while a pass followed a step (injected clock, seed 310): one frame", async () => {
  const { web, config } = oneHealthyWeb();
  const { clock, source } = steppedClock();
  await runPass({ config, echo: () => {}, clock: source });
  // web's lock held (a verification, say): `watchdog pause web` reads tend's time, then waits for it.
  const holder = (await ServiceOwner.take(config, "web", "pass", { logger: new Logger(null), now: Date.now }))!;
  let waiting = false;
  const sleep = (ms: number) => ((waiting = true), Bun.sleep(ms));
  const pausing = maintain(config, "web", { kind: "pause", forMs: null }, { clock: source, sleep });
  await waitFor(() => waiting, 5000, "the pause waiting for web's lock");
  // Meanwhile a pass follows a step back (it leaves web to its owner, and records the step).
  clock.stepMs = -600_000;
  await runPass({ config, echo: () => {}, clock: source });
  holder.release();
  await pausing;
  const { state } = readState(box.state, "web");
  // The pause is dated in the frame of the state it was written into: a moment after web's last probe,
  // not ten minutes later (which the step's undoing would then have moved further still).
  expect(state.paused).toBe(true);
  expect(state.verdict!.at - state.lastProbe!.at).toBeGreaterThanOrEqual(0);
  expect(state.verdict!.at - state.lastProbe!.at).toBeLessThan(5000);
}, 60_000);

test("an operator's restart after a reboot no pass has seen (seed 332): the outage ends at the boot", async () => {
  const { web, config } = oneFailingWebWithRestart();
  const before = steppedClock("b0a7c1d2-0000-4000-8000-0000000332a1");
  await runPass({ config, echo: () => {}, clock: before.source }); // web fails: its outage opens
  const opened = box.stateOf("web").outage;
  expect(opened).not.toBeNull();
  const lastPassAt = Date.parse(box.read("heartbeat").split("\n")[0]);
  // The host reboots; web answers again; the operator restarts it before the new boot's first pass.
  web.control.status = 200;
  const after = steppedClock("b0a7c1d2-0000-4000-8000-0000000332b2");
  const code = await operate(config, "web", "restart", { echo: () => {}, clock: after.source });
  expect(code).toBe(0);
  const state = box.stateOf("web");
  // The outage open at the power-off ended there (its last failed probe), as the first pass would end it:
  // the host's downtime is the host's, never counted in the service's.
  const outage = state.outages.at(-1);
  expect(outage.from).toBe(opened.since);
  expect(outage.to).toBeLessThanOrEqual(lastPassAt);
  expect(state.outage).toBeNull();
  expect(box.read("watchdog.log")).toMatch(
    /\[DOWNTIME\] web was unavailable for \d+s \(.*\) \(then no data for \d+s\)/,
  );
}, 60_000);
