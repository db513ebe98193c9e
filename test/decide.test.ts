// The decision for one service is a pure function: a table, one row per rule and per origin incident.
import { describe, expect, test } from "bun:test";
import { BUILTIN_TUNABLES } from "../lib/config/service-table.ts";
import type { ServiceConfig } from "../lib/config/types.ts";
import { decide, flapCount, EVENTS, explain, type Facts, type NotifyEvent } from "../lib/core/decide.ts";
import { beginRestart, recordRestart, recordStart } from "../lib/core/restart-accounting.ts";
import { asleepBetween, classifyGap, isStale } from "../lib/core/health.ts";
import { uptimeClock } from "../lib/os/proc.ts";
import type { ProbeResult } from "../lib/checks/index.ts";
import { readState } from "../lib/state/service-state.ts";
import { freshState, onlyObservations, type ServiceState } from "../lib/core/state.ts";
import { isCalm, notJudged, viewOf, WORDS, type StateWord } from "../lib/core/verdict.ts";
import { appendSample, parseSamples } from "../lib/core/latency.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, SERVICE_FIXTURE } from "./helpers.ts";

const NOW = Date.parse("2026-11-30T12:00:00Z");
const MIN = 60_000;
const DAY = 86_400_000;

const SERVICE: ServiceConfig = SERVICE_FIXTURE;

const OK: ProbeResult = { ok: true, detail: "HTTP 200", latencyMs: 40, timedOut: false };
const TIMEOUT: ProbeResult = { ok: false, detail: "no answer within 5.0s", latencyMs: 5000, timedOut: true };
const ALIVE = { running: true, startedAt: NOW - 24 * 60 * MIN, detail: "pid 42" };
const GONE = { running: false, startedAt: null, detail: "pid 42 is gone" };

const MIB = 1024 * 1024;
const BUSY = { port: 8080, log: "/var/log/engine.log", freshMs: 180_000, maxMs: 30 * MIN };
const BUSY_YES = { busy: true, detail: "pid 42 listens on port 8080, log written 3.0s ago" };
const MEMORY = { limitBytes: 1024 * MIB, warnWithinMs: 86_400_000, restartAboveBytes: 256 * MIB };

interface Row {
  name: string;
  service?: Partial<ServiceConfig>;
  state?: Partial<ServiceState>;
  facts?: Partial<Facts>;
  probe?: ProbeResult;
  kind: string;
  reason?: string | RegExp;
  strikes?: number;
  tags?: string[];
  /** The notification events of its log lines, in order (undefined: not notified) */
  events?: (NotifyEvent | undefined)[];
  /** Fields of the next state */
  next?: Partial<ServiceState>;
  /** The state word the pass records (every view shows it), and until when */
  word?: StateWord;
  until?: number | null;
}

const ROWS: Row[] = [
  // rule: skip
  {
    name: "disabled service is skipped",
    service: { enabled: false },
    probe: TIMEOUT,
    kind: "skip",
    word: "disabled",
    reason: "disabled",
  },
  {
    name: "paused until resumed is skipped",
    state: { paused: true, pausedUntil: null },
    probe: TIMEOUT,
    kind: "skip",
    word: "paused",
    until: null,
    reason: "paused",
  },
  {
    name: "a pause that has run out no longer skips",
    state: { paused: true, pausedUntil: NOW - 1 },
    probe: OK,
    kind: "ok",
    word: "healthy",
  },
  {
    name: "inside boot_delay is skipped",
    facts: { uptimeMs: 30_000, bootDelayMs: 2 * MIN },
    probe: TIMEOUT,
    kind: "skip",
    word: "starting",
    until: NOW + 90_000,
    reason: "boot_delay",
  },
  {
    name: "inside grace after tend's start is skipped",
    state: { startedAt: NOW - 10_000 },
    probe: TIMEOUT,
    kind: "skip",
    word: "starting",
    until: NOW - 10_000 + BUILTIN_TUNABLES.graceMs,
    reason: "grace",
  },
  {
    name: "inside grace after the process's own start (tend did not start it) is skipped",
    facts: { process: { running: true, startedAt: NOW - 5_000, detail: "pid 42" } },
    probe: TIMEOUT,
    kind: "skip",
    word: "starting",
    until: NOW - 5_000 + BUILTIN_TUNABLES.graceMs,
    reason: "grace",
  },
  // rule 0: new or crashed
  {
    name: "new: never started by tend nor seen healthy: its first start (START), no outage, not a restart",
    facts: { process: GONE },
    probe: TIMEOUT,
    kind: "restart",
    word: "starting",
    until: NOW + BUILTIN_TUNABLES.verifyTimeoutMs,
    reason: "start",
    tags: [],
    next: { outage: null, strikes: 0, restartsTotal: 0 },
  },
  {
    name: "a pid source whose process is gone after it was healthy: a crash, started at once, no strike",
    state: { lastHealthyAt: NOW - 5 * MIN },
    facts: { process: GONE },
    probe: TIMEOUT,
    kind: "restart",
    word: "restarting",
    until: NOW + BUILTIN_TUNABLES.verifyTimeoutMs,
    reason: "crash",
    strikes: 0,
    tags: ["WARN"],
    next: { outage: { since: NOW - 5 * MIN, reason: "crash" } }, // down since last seen healthy
  },
  {
    name: "gone after tend started it (a boot start whose verification was cut): down since that start",
    state: { lastHealthyAt: NOW - 10 * MIN, startedAt: NOW - 30_000 },
    facts: { process: GONE },
    kind: "restart",
    reason: "crash",
    next: { outage: { since: NOW - 30_000, reason: "crash" } }, // not across the time before its start
  },
  {
    name: "gone, found after the watchdog did not run: down from the end of the gap (before it: no data)",
    state: { lastHealthyAt: NOW - 10 * MIN },
    facts: {
      process: GONE,
      gap: { name: "watchdog", reason: "watchdog_not_running", from: NOW - 9 * MIN, to: NOW - 1000 },
    },
    kind: "restart",
    reason: "crash",
    next: { outage: { since: NOW - 1000, reason: "crash" } },
  },
  {
    name: "gone, its last healthy probe before the host booted (paused through the boot's pass): down from the boot",
    state: { lastHealthyAt: NOW - 10 * MIN },
    facts: { process: GONE, uptimeMs: 8_000 },
    kind: "restart",
    reason: "crash",
    next: { outage: { since: NOW - 8_000, reason: "crash" } }, // the power-off is the host's downtime
  },
  {
    name: "tend started it before (its first start failed): gone again is a crash, not new",
    state: { startedAt: NOW - 10 * MIN },
    facts: { process: GONE },
    kind: "restart",
    reason: "crash",
  },
  {
    name: "crash inside grace is still started (grace waits for a live process only)",
    state: { startedAt: NOW - 5_000 },
    facts: { process: GONE },
    kind: "restart",
    reason: "crash",
  },
  {
    name: "crash inside the cooldown is started anyway (cooldown is for hung restarts)",
    state: { lastRestartAt: NOW - MIN, lastHealthyAt: NOW - MIN },
    facts: { process: GONE },
    kind: "restart",
    reason: "crash",
  },
  {
    name: "crash during backoff waits",
    state: { backoffUntil: NOW + MIN, startedAt: NOW - 5 * MIN },
    facts: { process: GONE },
    kind: "held",
    word: "backoff",
    reason: /^backoff until/,
  },
  {
    name: "crash loop: max_restarts reached gives up",
    service: { maxRestarts: 2 },
    state: { restartTimes: [NOW - 5 * MIN, NOW - 2 * MIN], startedAt: NOW - 2 * MIN },
    facts: { process: GONE },
    kind: "give-up",
    word: "given-up",
    tags: ["GIVEN-UP"],
  },
  {
    name: "a systemd/launchd-supervised process that is gone is left to its manager: probed, not started",
    facts: { process: { ...GONE, supervised: true } },
    probe: TIMEOUT,
    kind: "strike",
    strikes: 1,
  },
  {
    name: "crash with no restart action (watch only) is probed like any failure",
    service: { restart: null },
    facts: { process: GONE },
    probe: TIMEOUT,
    kind: "strike",
    strikes: 1,
  },
  // rule 2: ok
  { name: "success resets strikes", state: { strikes: 2 }, probe: OK, kind: "ok", strikes: 0 },
  {
    name: "success closes an open outage: RECOVERED and a DOWNTIME line",
    state: { strikes: 1, outage: { since: NOW - 5 * MIN, reason: "failing" } },
    probe: OK,
    kind: "ok",
    word: "healthy",
    tags: ["RECOVERED", "DOWNTIME"],
  },
  { name: "success clears given-up", state: { givenUp: true, strikes: 3 }, probe: OK, kind: "ok", tags: ["RECOVERED"] },
  // rule 3: strikes and waits
  { name: "first failure is strike 1/3, logged WARN", probe: TIMEOUT, kind: "strike", strikes: 1, tags: ["WARN"] },
  {
    name: "second failure is strike 2/3, no restart",
    state: { strikes: 1 },
    probe: TIMEOUT,
    kind: "strike",
    word: "failing",
    strikes: 2,
    tags: ["WARN"],
  },
  {
    name: "a failing dependency: WAIT, no strike",
    state: { strikes: 1 },
    facts: { waitReason: "dependency db is failing" },
    probe: TIMEOUT,
    kind: "wait",
    word: "waiting",
    strikes: 1,
    tags: ["WAIT"],
  },
  {
    name: "required name does not resolve: WAIT, no restart at N",
    state: { strikes: 2 },
    facts: { waitReason: "example.org does not resolve" },
    probe: TIMEOUT,
    kind: "wait",
    strikes: 2,
  },
  // rule 4: restart at N, unless cooldown / backoff / given-up
  {
    name: "third failure restarts: WARN 3/3, HUNG",
    state: { strikes: 2 },
    probe: TIMEOUT,
    kind: "restart",
    word: "restarting",
    reason: "hung_restart",
    strikes: 3,
    tags: ["WARN", "HUNG"],
  },
  { name: "failures = 1 restarts at once", service: { failures: 1 }, probe: TIMEOUT, kind: "restart" },
  {
    name: "cooldown holds the restart: down, and never in silence (🚨 held, once per outage)",
    state: { strikes: 2, lastRestartAt: NOW - 2 * MIN },
    probe: TIMEOUT,
    kind: "held",
    word: "down",
    reason: /^cooldown until/,
    strikes: 3,
    tags: ["WARN", "FAILED"],
    events: [undefined, "held"],
  },
  {
    name: "incident: 530 three ticks, restart held by an older cooldown: said, as the script said it",
    state: { strikes: 2, lastRestartAt: NOW - 5 * MIN, outage: { since: NOW - 2 * MIN, reason: "failing" } },
    probe: { ok: false, detail: "HTTP 530", latencyMs: 80, timedOut: false },
    kind: "held",
    word: "down",
    tags: ["WARN", "FAILED"],
    events: [undefined, "held"],
    next: { outage: { since: NOW - 2 * MIN, reason: "failing", notified: true } },
  },
  {
    name: "held, already told in this outage (its restart's ⚠️): no second 🚨",
    state: {
      strikes: 2,
      lastRestartAt: NOW - 2 * MIN,
      outage: { since: NOW - 3 * MIN, reason: "hung_restart", notified: true },
    },
    probe: TIMEOUT,
    kind: "held",
    word: "down",
    tags: ["WARN"],
  },
  {
    name: "a crash held by backoff is said, not silent (🚨 held once)",
    service: { pidfile: "/x.pid" },
    state: { startedAt: NOW - DAY, lastHealthyAt: NOW - MIN, backoffUntil: NOW + 30_000 },
    facts: { process: GONE },
    kind: "held",
    word: "backoff",
    tags: ["WARN", "FAILED"],
    events: [undefined, "held"],
  },
  {
    name: "backoff holds the restart",
    state: { strikes: 3, backoffUntil: NOW + 30_000 },
    probe: TIMEOUT,
    kind: "held",
    word: "backoff",
    reason: /^backoff until/,
    strikes: 3,
  },
  {
    name: "another user's process (hidepid): at N no restart, not counted; FAILED, 🚨 once, down",
    service: { pidfile: "/x.pid", restart: { kind: "spawn", argv: ["web"], cwd: null, env: {}, output: "/x.out" } },
    state: { strikes: 2 },
    facts: {
      process: { running: true, startedAt: null, detail: "pid 42 runs as another user (not visible)", hidden: true },
    },
    probe: TIMEOUT,
    kind: "held",
    word: "down",
    tags: ["WARN", "FAILED"],
    events: [undefined, "failed"],
    next: { restartsTotal: 0 },
  },
  {
    name: "given-up holds the restart",
    state: { strikes: 3, givenUp: true },
    probe: TIMEOUT,
    kind: "held",
    word: "given-up",
    reason: /^given up/,
  },
  {
    name: "watch only (no restart action): at N, FAILED is down, watch only (🚨), strikes stop at N",
    service: { restart: null },
    state: { strikes: 2 },
    probe: TIMEOUT,
    kind: "held",
    word: "down",
    reason: "watch only",
    strikes: 3,
    tags: ["WARN", "FAILED"],
  },
  {
    name: "watch only, still down: said once per outage, only WARN N/N",
    service: { restart: null },
    state: { strikes: 3 },
    probe: TIMEOUT,
    kind: "held",
    reason: "watch only",
    strikes: 3,
    tags: ["WARN"],
  },
  // rule 5: give up
  {
    name: "max_restarts within restart_window: GIVEN-UP",
    state: { strikes: 2, restartTimes: [1, 2, 3, 4, 5].map((m) => NOW - m * 11 * MIN) },
    probe: TIMEOUT,
    kind: "give-up",
    word: "given-up",
    tags: ["WARN", "GIVEN-UP"],
  },
  {
    name: "restarts older than restart_window do not count",
    state: { strikes: 2, restartTimes: [1, 2, 3, 4, 5].map((m) => NOW - 61 * MIN - m) },
    probe: TIMEOUT,
    kind: "restart",
  },
  // busy is not hung
  {
    name: "busy (listening, log fresh): no strike, BUSY logged with a notification",
    service: { busy: BUSY },
    state: { strikes: 1 },
    facts: { busy: BUSY_YES },
    kind: "busy",
    word: "busy",
    strikes: 1,
    tags: ["BUSY"],
  },
  {
    name: "still busy 2 minutes later: quiet (BUSY at most every 5 minutes)",
    service: { busy: BUSY },
    state: { busySince: NOW - 2 * MIN, busyLoggedAt: NOW - 2 * MIN },
    facts: { busy: BUSY_YES },
    kind: "busy",
    tags: [],
  },
  {
    name: "still busy 6 minutes after the last BUSY line: logged again",
    service: { busy: BUSY },
    state: { busySince: NOW - 6 * MIN, busyLoggedAt: NOW - 6 * MIN },
    facts: { busy: BUSY_YES },
    kind: "busy",
    tags: ["BUSY"],
  },
  {
    name: "busy longer than busy.max is hung: restarted at once (busy_timeout)",
    service: { busy: BUSY },
    state: { busySince: NOW - 31 * MIN, outage: { since: NOW - 31 * MIN, reason: "failing" } },
    facts: { busy: BUSY_YES },
    kind: "restart",
    reason: "busy_timeout",
    tags: ["HUNG"],
  },
  {
    name: "no longer showing work (log stale): strikes count again",
    service: { busy: BUSY },
    state: { busySince: NOW - 10 * MIN, strikes: 0 },
    facts: { busy: { busy: false, detail: "log not written for 5m" } },
    kind: "strike",
    strikes: 1,
  },
  // systemd
  {
    name: "an inactive unit was stopped on purpose: skipped, never started",
    facts: { unit: { name: "blog.service", activeState: "inactive", nRestarts: 0 } },
    kind: "skip",
    word: "stopped",
    reason: "stopped",
  },
  {
    name: "android: /proc/net denied: busy.port degrades (said once a day), the probe still judges and strikes",
    facts: {
      degraded: ["busy.port: /proc/net/tcp: permission denied: the port is not checked, busy.log alone decides"],
    },
    probe: TIMEOUT,
    kind: "strike",
    word: "failing",
    strikes: 1,
    tags: ["WARN", "WARN"],
    next: { degradedSaidAt: { "busy.port": NOW } },
  },
  {
    name: "android: the same denial an hour later is not said again; strikes go on counting",
    state: { strikes: 1, degradedSaidAt: { "busy.port": NOW - 60 * MIN } },
    facts: {
      degraded: ["busy.port: /proc/net/tcp: permission denied: the port is not checked, busy.log alone decides"],
    },
    probe: TIMEOUT,
    kind: "strike",
    strikes: 2,
    tags: ["WARN"],
  },
  {
    name: "runit says the service is down on purpose (sv down): skipped, never started, even with its process gone",
    service: { restart: { kind: "runit", service: "blog", dir: "/etc/service/blog" } },
    state: { lastHealthyAt: NOW - 5 * MIN },
    facts: { stopped: "runit service /etc/service/blog is down on purpose", process: { ...GONE, supervised: true } },
    kind: "skip",
    word: "stopped",
    reason: "stopped",
  },
  {
    name: "a failed unit is reported once and not restarted",
    service: { restart: { kind: "systemd", unit: "blog.service" } },
    state: { strikes: 2, unitState: "active" },
    facts: { unit: { name: "blog.service", activeState: "failed", nRestarts: 3 } },
    kind: "held",
    word: "down",
    reason: /is failed/,
    tags: ["WARN", "WARN"],
  },
  {
    name: "NRestarts went up: a silent auto-restart is reported",
    service: { trackRestarts: true },
    state: { nRestarts: 1 },
    facts: { unit: { name: "blog.service", activeState: "active", nRestarts: 3 } },
    probe: OK,
    kind: "ok",
    tags: ["AUTO-RESTART"],
  },
  {
    name: "NRestarts went down (manual restart): only the baseline moves",
    service: { trackRestarts: true },
    state: { nRestarts: 3 },
    facts: { unit: { name: "blog.service", activeState: "active", nRestarts: 0 } },
    probe: OK,
    kind: "ok",
    tags: [],
  },
  // memory growth
  {
    name: "RSS above restart_above: preventive restart (memory)",
    service: { memory: MEMORY, pidfile: "/x.pid" },
    state: { rss: [[NOW - MIN, 300 * MIB]] },
    facts: { rssBytes: 300 * MIB },
    probe: OK,
    kind: "restart",
    reason: "memory",
    tags: ["MEMORY"],
    // ⚠️ like every restart, never 📈: the growth warning's dedup key would swallow it (seed 004)
    events: ["restart"],
  },
  {
    name: "a steady slope that reaches the limit within warn_within: MEMORY warning with rate and ETA",
    service: { memory: { ...MEMORY, limitBytes: 200 * MIB, restartAboveBytes: null } },
    state: { rss: [4, 3, 2, 1].map((h) => [NOW - h * 3_600_000, (100 - h * 12) * MIB] as [number, number]) },
    facts: { rssBytes: 100 * MIB },
    probe: OK,
    kind: "ok",
    tags: ["MEMORY"],
  },
  // origin incidents
  {
    name:
      "incident: hung tunnel, PID alive for 23 minutes, HTTP times out: " +
      "restarted at the 3rd strike (10 min in at a 5 min interval)",
    state: { strikes: 2, outage: { since: NOW - 10 * MIN, reason: "failing" } },
    facts: { process: ALIVE },
    probe: TIMEOUT,
    kind: "restart",
    tags: ["WARN", "HUNG"],
  },
  {
    name: "incident: 8 s timeout cut 6-9 s answers: one slow answer is one strike, not a restart",
    service: { failures: 3 },
    probe: { ok: false, detail: "no answer within 8.0s", latencyMs: 8000, timedOut: true },
    kind: "strike",
    strikes: 1,
  },
  {
    name: "incident: 8 s timeout: the next normal answer resets the count",
    state: { strikes: 1 },
    probe: { ok: true, detail: "HTTP 200", latencyMs: 6500, timedOut: false },
    kind: "ok",
    strikes: 0,
  },
  {
    name: "incident: an indexing engine busy with a backfill at load 10.7 is not killed after two 5 s timeouts",
    service: { busy: BUSY },
    state: { strikes: 1, busySince: NOW - 5 * MIN, busyLoggedAt: NOW - 5 * MIN },
    facts: { busy: BUSY_YES },
    kind: "busy",
    word: "busy",
    strikes: 1,
  },
  {
    name: "incident: a shared DB blip: dependents wait for the DB instead of six restarts",
    state: { strikes: 2 },
    facts: { waitReason: "dependency db is failing" },
    kind: "wait",
    word: "waiting",
    strikes: 2,
    tags: ["WAIT"],
  },
  {
    name: "incident: an SSE proxy leaking 12 MiB/h toward a 1 GiB limit is seen days ahead",
    service: {
      memory: { limitBytes: 1024 * MIB, warnWithinMs: 3 * 86_400_000, restartAboveBytes: null },
      pidfile: "/x.pid",
    },
    state: { rss: [5, 4, 3, 2, 1].map((h) => [NOW - h * 3_600_000, (400 - h * 12) * MIB] as [number, number]) },
    facts: { rssBytes: 400 * MIB },
    probe: OK,
    kind: "ok",
    tags: ["MEMORY"],
  },
  {
    name: "incident: restart loop after the first restart: the slow starter is left alone in grace",
    state: { startedAt: NOW - 20_000, lastRestartAt: NOW - 20_000, strikes: 0 },
    facts: { process: { running: true, startedAt: NOW - 20_000, detail: "pid 43" } },
    probe: TIMEOUT,
    kind: "skip",
    word: "starting",
    reason: "grace",
  },
  {
    name: "incident: restart loop: after grace, failing again inside cooldown is not restarted again",
    state: { startedAt: NOW - 3 * MIN, lastRestartAt: NOW - 3 * MIN, strikes: 2 },
    probe: TIMEOUT,
    kind: "held",
    word: "down",
    reason: /^cooldown until/,
  },
  {
    name: "incident: a phone reboot (12 notifications in 2 minutes): a service found not running is a boot start",
    state: { startedAt: NOW - DAY, lastHealthyAt: NOW - 6 * MIN, restartsTotal: 0 },
    facts: {
      process: { running: false, startedAt: null, detail: "pid 42 is gone" },
      gap: { name: "host", reason: "unexpected_shutdown_or_reboot", from: NOW - 6 * MIN, to: NOW },
    },
    kind: "restart",
    reason: "boot",
    word: "starting",
    tags: [], // no ⚠️ of its own: the pass sends one 🔌
    next: { outage: null, restartsTotal: 0 },
  },
  {
    name: "incident: a power cut left the pidfile empty: after the reboot it names nothing, so a boot start",
    state: { startedAt: NOW - DAY, lastHealthyAt: NOW - 6 * MIN },
    facts: {
      process: { running: false, startedAt: null, detail: 'pidfile holds "", not a PID', unreadable: true },
      gap: { name: "host", reason: "unexpected_shutdown_or_reboot", from: NOW - 6 * MIN, to: NOW },
    },
    kind: "restart",
    reason: "boot",
  },
  {
    name: "an empty pidfile within a boot (a write in progress) starts nothing beside what may run",
    state: { startedAt: NOW - DAY, lastHealthyAt: NOW - 6 * MIN },
    facts: { process: { running: false, startedAt: null, detail: 'pidfile holds "", not a PID', unreadable: true } },
    kind: "strike",
  },
  // slow_above: slow is not failing.
  {
    name: "slow_above: a healthy answer slower than D is slow: no strike, WARN + 🐢 when it becomes slow",
    service: { slowAboveMs: 5000 },
    probe: { ...OK, latencyMs: 9000 },
    kind: "ok",
    word: "slow",
    strikes: 0,
    tags: ["WARN"],
    next: { slowSince: NOW, slowLoggedAt: NOW },
  },
  {
    name: "slow_above: still slow within the hour: said nothing more",
    service: { slowAboveMs: 5000 },
    state: { slowSince: NOW - 10 * MIN, slowLoggedAt: NOW - 10 * MIN },
    probe: { ...OK, latencyMs: 9000 },
    kind: "ok",
    word: "slow",
    tags: [],
  },
  {
    name: "slow_above: still slow an hour on: WARN again (no 🐢: one per slow spell)",
    service: { slowAboveMs: 5000 },
    state: { slowSince: NOW - 2 * 60 * MIN, slowLoggedAt: NOW - 61 * MIN },
    probe: { ...OK, latencyMs: 9000 },
    kind: "ok",
    word: "slow",
    tags: ["WARN"],
    next: { slowSince: NOW - 2 * 60 * MIN, slowLoggedAt: NOW },
  },
  {
    name: "slow_above: fast again is healthy, the spell ends",
    service: { slowAboveMs: 5000 },
    state: { slowSince: NOW - 10 * MIN, slowLoggedAt: NOW - 10 * MIN },
    probe: OK,
    kind: "ok",
    word: "healthy",
    next: { slowSince: null },
  },
  // remind_every: still down after its 🚨/⛔.
  {
    name: "remind_every: a given-up service still down a day on is said again (🔔), with for how long",
    service: { remindEveryMs: 60 * MIN },
    state: {
      strikes: 3,
      givenUp: true,
      givenUpAt: NOW - 3 * 60 * MIN,
      remindedAt: NOW - 61 * MIN,
      outage: { since: NOW - 4 * 60 * MIN, reason: "failing", notified: true },
    },
    probe: TIMEOUT,
    kind: "held",
    word: "given-up",
    next: { remindedAt: NOW },
  },
  {
    name: "remind_every: inside D since the last 🔔, nothing",
    service: { remindEveryMs: 60 * MIN },
    state: {
      strikes: 3,
      givenUp: true,
      givenUpAt: NOW - 3 * 60 * MIN,
      remindedAt: NOW - 30 * MIN,
      outage: { since: NOW - 4 * 60 * MIN, reason: "failing", notified: true },
    },
    probe: TIMEOUT,
    kind: "held",
    word: "given-up",
    next: { remindedAt: NOW - 30 * MIN },
  },
  // given_up_retry: one verified restart every D.
  {
    name: "given_up_retry: a given-up service is tried again once D has passed since it was given up",
    service: { givenUpRetryMs: 60 * MIN },
    state: { strikes: 3, givenUp: true, givenUpAt: NOW - 61 * MIN, restartTimes: [NOW - 62 * MIN, NOW - 63 * MIN] },
    probe: TIMEOUT,
    kind: "restart",
    reason: "hung_restart",
    word: "restarting",
    next: { givenUp: true, givenUpAt: NOW },
  },
  {
    name: "given_up_retry: before D it stays given up, saying when it is tried again",
    service: { givenUpRetryMs: 60 * MIN },
    state: { strikes: 3, givenUp: true, givenUpAt: NOW - 10 * MIN },
    probe: TIMEOUT,
    kind: "held",
    word: "given-up",
    until: NOW + 50 * MIN,
    reason: /^given up \(tried again at /,
  },
  {
    name: "after a reboot a given-up service stays given up (no boot start)",
    state: { startedAt: NOW - DAY, lastHealthyAt: NOW - 2 * DAY, givenUp: true },
    facts: {
      process: { running: false, startedAt: null, detail: "pid 42 is gone" },
      gap: { name: "host", reason: "unexpected_shutdown_or_reboot", from: NOW - 6 * MIN, to: NOW },
    },
    kind: "held",
    word: "given-up",
  },
];

const facts = (extra: Partial<Facts> = {}): Facts => ({
  now: NOW,
  uptimeMs: 86_400_000,
  bootDelayMs: 0,
  process: null,
  waitReason: null,
  ...extra,
});

describe("decide: one row per rule and per origin incident", () => {
  test.each(ROWS.map((row) => [row.name, row] as const))("%s", (_name, row) => {
    const service = { ...SERVICE, ...row.service };
    const state = { ...freshState(), ...row.state };
    const decision = decide(service, state, facts(row.facts), row.probe ?? TIMEOUT);
    expect(decision.kind as string).toBe(row.kind);
    if (typeof row.reason === "string") expect(explain(decision)).toBe(row.reason);
    if (row.reason instanceof RegExp) expect(explain(decision)).toMatch(row.reason);
    if (row.strikes !== undefined) expect(decision.next.strikes).toBe(row.strikes);
    if (row.tags) expect(decision.log.map((line) => line.tag as string)).toEqual(row.tags);
    if (row.events) expect(decision.log.map((line) => line.event)).toEqual(row.events);
    if (row.next) expect(decision.next).toMatchObject(row.next);
    // The pass records its decision: kind, reason and state word, the one truth of every view.
    const verdict = decision.next.verdict!;
    expect(verdict).toMatchObject({ kind: decision.kind, reason: explain(decision), at: NOW });
    if (row.word) expect(verdict.word).toBe(row.word);
    if (row.until !== undefined) expect(verdict.until).toBe(row.until);
    // STRIKES never disagree with the word: failing means a strike is counted; healthy means none.
    if (verdict.word === "failing") expect(decision.next.strikes).toBeGreaterThan(0);
    if (verdict.word === "healthy") expect(decision.next.strikes).toBe(0);
    // What a pass fsyncs: every decision that logs, strikes, restarts or opens/closes an outage.
    const decided = decision.log.length > 0 || decision.kind === "restart" || decision.next.strikes !== state.strikes;
    if (decided || decision.next.outage !== state.outage) expect(onlyObservations(state, decision.next)).toBe(false);
    // The pass asks first without a probe: a verdict the probe cannot change comes back as it is.
    const before = decide(service, state, facts(row.facts), null);
    if (before.kind !== "probe") expect(before).toEqual(decision);
    else expect(before.next.lastProbe).toEqual(state.lastProbe);
  });

  test("the MEMORY warning names the rate and the ETA", () => {
    const service = { ...SERVICE, memory: { ...MEMORY, limitBytes: 200 * MIB, restartAboveBytes: null } };
    const rss = [4, 3, 2, 1].map((h) => [NOW - h * 3_600_000, (100 - h * 12) * MIB] as [number, number]);
    const decision = decide(service, { ...freshState(), rss }, facts({ rssBytes: 100 * MIB }), OK);
    expect(decision.log[0].message).toBe(
      "blog memory grows 12 MiB/h (100 MiB now): reaches the limit 200 MiB in 8h 20m",
    );
    expect(decision.log[0].event).toBe("memory");
  });

  // Dedup keys are service + event: two kinds of happening under one event would let min_interval
  // swallow the second (seed 004: the memory restart's ⚠️ behind the growth warning's 📈).
  test("no two kinds share a dedup key: every counted restart says ⚠️ once, nothing else says it", () => {
    let restarts = 0;
    for (const row of ROWS) {
      const decision = decide(
        { ...SERVICE, ...row.service },
        { ...freshState(), ...row.state },
        facts(row.facts),
        row.probe ?? TIMEOUT,
      );
      const said = decision.log.filter((line) => line.event === "restart").length;
      const counted = decision.kind === "restart" && decision.reason !== "start" && decision.reason !== "boot";
      if (counted) restarts++;
      expect([row.name, said]).toEqual([row.name, counted ? 1 : 0]);
    }
    expect(restarts).toBeGreaterThanOrEqual(4); // crash, hung, busy_timeout, memory at least
    // One title per event: what the receiver sees tells the keys apart.
    const titles = Object.values(EVENTS).map((event) => event.title);
    expect(new Set(titles).size).toBe(titles.length);
  });

  test("a healthy answer like the last one is only an observation (its state write is not fsynced)", () => {
    const seen = { firstSeenAt: NOW - 60 * MIN, firstHealthyAt: NOW - 60 * MIN, lastHealthyAt: NOW - MIN };
    const state = {
      ...freshState(),
      ...seen,
      lastProbe: { at: NOW - MIN, ok: true, detail: "HTTP 200", latencyMs: 30 },
      // Judged healthy by the last pass: the same verdict again (only its time differs) is an observation.
      verdict: { kind: "ok" as const, word: "healthy" as const, reason: "healthy", until: null, at: NOW - MIN },
    };
    expect(onlyObservations(freshState(), decide(SERVICE, freshState(), facts(), OK).next)).toBe(false); // first seen
    const decision = decide(SERVICE, state, facts(), OK);
    expect(decision.kind).toBe("ok");
    expect(decision.next.latencyCount).toBe(1);
    expect(onlyObservations(state, decision.next)).toBe(true);
    expect(onlyObservations(state, { ...decision.next, strikes: 1 })).toBe(false);
    expect(onlyObservations(state, { ...decision.next, paused: true })).toBe(false);
  });

  test("the pure function does not touch its input state", () => {
    const state = Object.freeze({ ...freshState(), strikes: 2 });
    decide(SERVICE, state, facts(), TIMEOUT);
    expect(state.strikes).toBe(2);
  });
});

describe("the recorded verdict: what every view shows", () => {
  test("a first start verified: healthy; one that fails: backoff, never left `starting`", () => {
    const ok = recordStart(
      SERVICE,
      freshState(),
      { issued: true, recovered: true, elapsedMs: 800, detail: "HTTP 200", lastProbe: OK },
      NOW,
      NOW + 800,
    );
    expect(ok.next.verdict).toMatchObject({ word: "healthy", kind: "verified" });
    const failed = recordStart(
      SERVICE,
      freshState(),
      { issued: false, recovered: false, elapsedMs: 5, detail: "no such pane", lastProbe: null },
      NOW,
      NOW + 5,
    );
    expect(failed.next.verdict).toMatchObject({ word: "backoff", until: failed.next.backoffUntil });
  });

  test("backoff over and still failing: failing with its strike, not `restarting` (nothing restarts)", () => {
    const state = {
      ...freshState(),
      ...{
        strikes: 1,
        failedInRow: 1,
        backoffUntil: NOW - 1000,
        startedAt: NOW - 5 * MIN,
        lastRestartAt: NOW - 5 * MIN,
      },
    };
    const decision = decide(SERVICE, state, facts(), TIMEOUT);
    expect(decision.next.verdict).toMatchObject({ word: "failing", reason: "strike 2" });
    expect(decision.next.strikes).toBe(2);
  });

  test("a service the pass could not judge keeps its last word and says why", () => {
    const last = decide(SERVICE, freshState(), facts(), OK).next.verdict;
    expect(notJudged(last, "cannot read /proc/uptime", NOW + MIN)).toEqual({
      ...last!,
      at: NOW + MIN,
      error: "cannot read /proc/uptime",
    });
    expect(notJudged(null, "state file is a symlink", NOW)).toMatchObject({
      word: "new",
      error: "state file is a symlink",
    });
  });

  test("the one table of what each word means: calm, up, Nagios, firing", () => {
    const view = (word: StateWord, error?: string) => ({ word, error });
    for (const word of [
      "healthy",
      "slow",
      "warning",
      "busy",
      "starting",
      "paused",
      "stopped",
      "disabled",
    ] as StateWord[])
      expect(isCalm(view(word))).toBe(true);
    for (const word of [
      "failing",
      "flapping",
      "waiting",
      "restarting",
      "down",
      "backoff",
      "given-up",
      "new",
    ] as StateWord[])
      expect(isCalm(view(word))).toBe(false);
    expect(isCalm(view("healthy", "not judged"))).toBe(false);
    // Down only when judged down: a strike below N, waiting or flapping is up and WARNING (a blip must not page).
    const up = (words: string[]) => words.map((word) => WORDS[word as StateWord].up);
    expect(up(["healthy", "slow", "warning", "busy", "flapping", "starting", "failing", "waiting"])).toEqual(
      Array(8).fill(1),
    );
    expect(up(["restarting", "down", "backoff", "given-up"])).toEqual([0, 0, 0, 0]);
    expect(up(["paused", "stopped", "disabled", "new"])).toEqual([null, null, null, null]);
    const nagios = (words: string[]) => words.map((word) => WORDS[word as StateWord].nagios);
    expect(nagios(["healthy", "starting", "paused", "stopped", "disabled", "new"])).toEqual(Array(6).fill(0));
    expect(nagios(["slow", "warning", "busy", "flapping", "failing", "waiting"])).toEqual(Array(6).fill(1));
    expect(nagios(["restarting", "down", "backoff", "given-up"])).toEqual(Array(4).fill(2));
    // Alertmanager fires exactly where tend_service_up is 0: the two fleet paths agree.
    for (const meaning of Object.values(WORDS)) expect(meaning.firing).toBe(meaning.up === 0);
    expect(viewOf(true, null).word).toBe("new");
    expect(viewOf(false, null).word).toBe("disabled");
  });
});

describe("recordRestart: verification counted, backoff exponential up to backoff_max", () => {
  const service = { ...SERVICE, backoffMs: 10_000, backoffMaxMs: 35_000 };
  test("recovered: counted ok, strikes 0, outage closed with a downtime line", () => {
    const state = { ...freshState(), strikes: 3, outage: { since: NOW - MIN, reason: "hung_restart" } };
    const decision = recordRestart(
      service,
      state,
      { issued: true, recovered: true, elapsedMs: 3200, detail: "HTTP 200", lastProbe: OK },
      NOW,
      NOW + 3200,
    );
    expect(decision.next).toMatchObject({
      strikes: 0,
      recoveriesOk: 1,
      restartsTotal: 1,
      outage: null,
      startedAt: NOW,
      lastRestartAt: NOW,
    });
    expect(decision.log.map((line) => line.tag)).toEqual(["RECOVERED", "DOWNTIME"]);
    expect(decision.log[0].message).toBe("blog recovered 3.2s after restart (HTTP 200)");
    expect(decision.log[1].message).toMatch(/^blog was unavailable for 63s \(hung_restart, from .* UTC to .* UTC\)$/);
    // Verified: the pass records healthy, no longer `restarting`.
    expect(decision.next.verdict).toEqual({
      kind: "verified",
      word: "healthy",
      reason: "recovered",
      until: null,
      at: NOW + 3200,
    });
  });
  // Found by the ground-truth harness (seed 301): a reboot cut the outage of a restart being verified (its
  // ⚠️ sent); the operator's restart after the boot recovered it (✅), then the next pass said the owed ✅ again.
  test("recovered after a gap cut a notified outage: one ✅, telling the part before the gap too", () => {
    const owed = { since: NOW - 70_000, to: NOW - 70_000, noDataMs: 6000 };
    for (const state of [
      { ...freshState(), owedRecovery: owed }, // an operator's restart: no outage open
      { ...freshState(), strikes: 3, outage: { since: NOW - MIN, reason: "crash", notified: true, before: owed } },
    ]) {
      const outcome = { issued: true, recovered: true, elapsedMs: 1600, detail: "HTTP 200", lastProbe: OK };
      const decision = recordRestart(service, state, outcome, NOW, NOW + 1600);
      expect(decision.log[0].message).toBe(
        "blog recovered 1.6s after restart (earlier: down 0s until 2026-11-30 11:58:50 UTC, then no data for 6s) " +
          "(HTTP 200)",
      );
      expect(decision.log[0].event).toBe("recovered");
      expect(decision.next.owedRecovery).toBeNull();
      // The next healthy probe owes nothing more.
      const next = decide(service, decision.next, facts({}), OK);
      expect(next.log.filter((line) => line.event === "recovered")).toEqual([]);
    }
  });
  test("a process that exits during verification: FAILED saying when, never a deadline it did not reach", () => {
    const outcome = { issued: true, recovered: false, elapsedMs: 1200, detail: "pid 42 is gone", lastProbe: TIMEOUT };
    const restarted = recordRestart(service, freshState(), { ...outcome, exitedAfterMs: 1200 }, NOW, NOW + 1200);
    expect(restarted.log[0].message).toBe("blog exited 1.2s after the restart (pid 42 is gone); backoff 10s");
    expect(restarted.next.verdict).toMatchObject({ word: "backoff" });
    const started = recordStart(service, freshState(), { ...outcome, exitedAfterMs: 300 }, NOW, NOW + 300);
    expect(started.log[0].message).toBe("blog exited 0.3s after its first start (pid 42 is gone); backoff 10s");
    // The time really waited (a probe may run past verify_timeout), not the setting.
    const waited = recordRestart(service, freshState(), { ...outcome, elapsedMs: 61_400 }, NOW, NOW + 61_400);
    expect(waited.log[0].message).toMatch(/^blog did not recover within 61s after restart/);
  });
  test("failed: counted, backoff 10s, 20s, 35s (capped)", () => {
    let state: ServiceState = { ...freshState(), strikes: 3 };
    const backoffs: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const at = NOW + attempt * MIN;
      const decision = recordRestart(
        service,
        state,
        { issued: true, recovered: false, elapsedMs: 60_000, detail: "last probe: timeout", lastProbe: TIMEOUT },
        at,
        at + 60_000,
      );
      expect(decision.log[0].tag).toBe("FAILED");
      state = decision.next;
      backoffs.push(state.backoffUntil! - (at + 60_000));
    }
    expect(backoffs).toEqual([10_000, 20_000, 35_000]);
    // Not `restarting` once verified: backoff, until it ends.
    expect(state.verdict).toMatchObject({ kind: "verified", word: "backoff", until: state.backoffUntil });
    expect(state.recoveriesFailed).toBe(3);
    expect(state.strikes).toBe(3); // still failing: the next restart needs no new strikes, only the backoff
  });
  test("a memory restart that fails: down from the restart (its first failed probe), not from a later strike", () => {
    // Found by the ground-truth harness (seed 151): it answered until the restart stopped it.
    const begun = beginRestart(service, { ...freshState(), lastHealthyAt: NOW - 1000 }, "memory", NOW, []);
    expect(begun.outage).toBeNull(); // a restart made while it answered opens no outage by itself
    const refused = {
      issued: true,
      recovered: false,
      elapsedMs: 3000,
      detail: "connection refused",
      lastProbe: TIMEOUT,
    };
    const failed = recordRestart(service, begun, refused, NOW, NOW + 3000);
    expect(failed.next.outage).toMatchObject({ since: NOW, reason: "memory" });
    // Not issued (the action could not run): it still answers as it did, no outage.
    const notRun = recordRestart(service, begun, { ...refused, issued: false }, NOW, NOW + 3000);
    expect(notRun.next.outage).toBeNull();
  });
  test("a crash start that came up hung leaves the strikes at N, as a hang restart does (seed 000)", () => {
    const hung = {
      issued: true,
      recovered: false,
      elapsedMs: 60_000,
      detail: "no answer within 8s",
      lastProbe: TIMEOUT,
    };
    const crashed = recordRestart(service, { ...freshState(), strikes: 0 }, hung, NOW, NOW + MIN);
    expect(crashed.next.strikes).toBe(service.failures);
    const booted = recordStart(service, freshState(), hung, NOW, NOW + MIN, { afterReboot: true });
    expect(booted.next.strikes).toBe(service.failures);
    // After the backoff and the cooldown, the next failed probe restarts it: not the first of N fresh strikes.
    const later = NOW + service.cooldownMs + MIN;
    const next = decide(service, crashed.next, facts({ now: later }), TIMEOUT);
    expect(next.kind).toBe("restart");
    expect(explain(next)).toBe("hung_restart");
  });
});

describe("the watchdog itself: a heartbeat gap is a reboot or a watchdog that did not run; stale is dead", () => {
  const INTERVAL = 5 * MIN;
  const GAPS: [string, number | null, number, { name: string; reason: string } | null][] = [
    // name, last pass (ms before now), booted (ms before now), expected gap
    ["an ordinary interval is no gap", 5 * MIN, 86_400_000, null],
    ["2 x interval + 30 s is still no gap", 10.5 * MIN, 86_400_000, null],
    [
      "booted after the last heartbeat: the host was down",
      20 * MIN,
      10 * MIN,
      { name: "host", reason: "unexpected_shutdown_or_reboot" },
    ],
    [
      "incident: a phone rebooted inside one cron period (3 min): a reboot whatever the gap's length",
      3 * MIN,
      1 * MIN,
      { name: "host", reason: "unexpected_shutdown_or_reboot" },
    ],
    [
      "up all along: the watchdog did not run (cron stopped, the loop died)",
      20 * MIN,
      2 * 86_400_000,
      { name: "watchdog", reason: "watchdog_not_running" },
    ],
    [
      "incident: three minutes of setup before the first cron pass is not a reboot",
      3 * MIN + 11 * MIN,
      3 * 86_400_000,
      { name: "watchdog", reason: "watchdog_not_running" },
    ],
  ];
  test.each(GAPS)("%s", (_name, lastAgo, bootedAgo, expected) => {
    const gap = classifyGap(lastAgo === null ? null : NOW - lastAgo, INTERVAL, NOW - bootedAgo, NOW);
    if (expected === null) expect(gap).toBeNull();
    else expect(gap).toEqual({ ...expected, from: NOW - lastAgo!, to: NOW });
  });
  test.each([
    ["interval 10s, last pass 66 s ago: stale (the watchdog is not running)", 66_000, true],
    ["interval 10s, last pass 40 s ago: fresh", 40_000, false],
  ] as const)("%s", (_name, ago, stale) => {
    expect(isStale(NOW - ago, 10_000, NOW)).toBe(stale);
  });
  test("a pass reads the host's uptime once and advances it by its clock", () => {
    let clock = NOW;
    let reads = 0;
    const uptime = uptimeClock(
      () => clock,
      () => (reads++, 5 * MIN),
    );
    expect(reads).toBe(0); // not before it is asked
    expect(uptime()).toBe(5 * MIN);
    clock += 1500;
    expect(uptime()).toBe(5 * MIN + 1500);
    expect(reads).toBe(1);
  });
  test("before the first pass there is nothing to be stale", () => expect(isStale(null, 10_000, NOW)).toBe(false));

  // Sleep is not absence: a phone without a wake lock suspends; its boot-time clock runs on, its awake clock stops.
  const SLEEPS: [string, number, number | null, string][] = [
    // name, last pass (ms before now), asleep since then (ms; null: clocks not recorded), expected reason
    [
      "incident: a night in Doze (8 h asleep, awake minutes): device_suspended, no 💤",
      8 * 60 * MIN,
      8 * 60 * MIN - 4 * MIN,
      "device_suspended",
    ],
    [
      "asleep 50 min of a 60 min gap, awake 10 min (no stale awake part): device_suspended",
      60 * MIN,
      50 * MIN,
      "device_suspended",
    ],
    [
      "asleep 20 min of a 60 min gap: 40 min awake without a pass is the watchdog not running",
      60 * MIN,
      20 * MIN,
      "watchdog_not_running",
    ],
    [
      "no clocks recorded (an older heartbeat): as before, the watchdog did not run",
      60 * MIN,
      null,
      "watchdog_not_running",
    ],
    ["never asleep: the watchdog did not run", 60 * MIN, 0, "watchdog_not_running"],
  ];
  test.each(SLEEPS)("%s", (_name, lastAgo, asleep, reason) => {
    const gap = classifyGap(NOW - lastAgo, INTERVAL, NOW - 2 * 86_400_000, NOW, asleep);
    expect(gap).toEqual({
      name: reason === "device_suspended" ? "device" : "watchdog",
      reason,
      from: NOW - lastAgo,
      to: NOW,
    });
  });
  test("a reboot is a reboot, asleep or not (the boot is after the last heartbeat)", () => {
    expect(classifyGap(NOW - 60 * MIN, INTERVAL, NOW - 2 * MIN, NOW, 55 * MIN)?.reason).toBe(
      "unexpected_shutdown_or_reboot",
    );
  });
  test("asleep = boot-time clock advance - awake clock advance; none across two boots", () => {
    expect(asleepBetween({ bootMs: 1000, awakeMs: 900 }, { bootMs: 61_000, awakeMs: 10_900 })).toBe(50_000);
    expect(asleepBetween({ bootMs: 1000, awakeMs: 900 }, { bootMs: 500, awakeMs: 400 })).toBeNull(); // rebooted
    expect(asleepBetween(null, { bootMs: 1, awakeMs: 1 })).toBeNull();
  });
});

describe("the latency history: one string in the state file, bounded, and files of earlier versions read", () => {
  test("appended oldest first, the oldest dropped beyond the bound; a timed-out probe is flagged", () => {
    let history = { latencyLog: "", latencyCount: 0 };
    for (let at = 1; at <= 5; at++)
      history = appendSample(history.latencyLog, history.latencyCount, [at, 10 * at, 1], 3);
    history = appendSample(history.latencyLog, history.latencyCount, [6, 5000, 0, 1], 3);
    expect(history).toEqual({ latencyLog: "4,40,1 5,50,1 6,5000,0,1", latencyCount: 3 });
    expect(parseSamples(history.latencyLog)).toEqual([
      [4, 40, 1],
      [5, 50, 1],
      [6, 5000, 0, 1],
    ]);
    expect(parseSamples("1,2,1 nonsense 3,x,1 4,5,0")).toEqual([
      [1, 2, 1],
      [4, 5, 0],
    ]);
  });

  test("a state file of an earlier version ([at, ms, ok, timedOut] arrays) is read into the log", () => {
    const box = new Sandbox();
    mkdirSync(join(box.state, "services"), { recursive: true });
    const old = {
      version: 1,
      strikes: 1,
      latencies: [
        [1000, 12, 1, 0],
        [2000, 5000, 0, 1],
      ],
    };
    writeFileSync(join(box.state, "services", "web.json"), JSON.stringify(old));
    const { state, problem } = readState(box.state, "web");
    box.cleanup();
    expect(problem).toBeNull();
    expect(state).toMatchObject({ strikes: 1, latencyLog: "1000,12,1,0 2000,5000,0,1", latencyCount: 2 });
    expect("latencies" in state).toBe(false);
    expect(parseSamples(state.latencyLog)[1]).toEqual([2000, 5000, 0, 1]);
  });
});

test("the boot-time clock going back is a reboot, even a short one and whatever the wall clock says", () => {
  const gap = classifyGap(NOW - 60_000, 5 * 60_000, NOW - 7 * 86_400_000, NOW, null, true);
  expect(gap).toMatchObject({ name: "host", reason: "unexpected_shutdown_or_reboot" });
});

describe("✅ only after a notified outage", () => {
  const down = (notified: boolean) => ({ outage: { since: NOW - 5 * MIN, reason: "failing", notified } });
  test("incident: a blip below N strikes (or a WAIT) is logged RECOVERED and measured, never notified", () => {
    const blip = decide(SERVICE, { ...freshState(), ...down(false), strikes: 1 }, facts(), OK);
    expect(blip.log.map((line) => [line.tag, line.event])).toEqual([
      ["RECOVERED", undefined],
      ["DOWNTIME", undefined],
    ]);
  });
  test("an outage that was notified (⚠️, 🚨, ⛔) ends with ✅", () => {
    const after = decide(SERVICE, { ...freshState(), ...down(true), strikes: 3 }, facts(), OK);
    expect(after.log.find((line) => line.tag === "RECOVERED")?.event).toBe("recovered");
  });
  test("the strike that restarts marks the outage notified; a strike below N does not", () => {
    const one = decide(SERVICE, freshState(), facts(), TIMEOUT);
    expect(one.next.outage?.notified).toBeUndefined();
    const third = decide(SERVICE, { ...freshState(), strikes: 2, ...down(false) }, facts(), TIMEOUT);
    expect(third.kind).toBe("restart");
    expect(third.next.outage).toMatchObject({ notified: true });
  });
});

test("remind_every: the 🔔 line says how long it has been down", () => {
  const service = { ...SERVICE, remindEveryMs: 60 * MIN };
  const state = {
    ...freshState(),
    strikes: 3,
    givenUp: true,
    givenUpAt: NOW - 3 * 60 * MIN,
    remindedAt: NOW - 61 * MIN,
    outage: { since: NOW - 4 * 60 * MIN, reason: "failing", notified: true },
  };
  const decision = decide(service, state, facts(), TIMEOUT);
  const reminder = decision.log.find((line) => line.event === "reminder");
  expect(reminder).toMatchObject({ tag: "WARN", message: "blog is still down after 4h (given up)" });
});

describe("no data is not downtime: a gap cuts an open outage at its last failed probe", () => {
  const S = 1000;
  const gap = { name: "watchdog", reason: "watchdog_not_running", from: NOW - 168 * S, to: NOW };
  const state = (notified: boolean) => ({
    ...freshState(),
    strikes: 3,
    outage: { since: NOW - 170 * S, reason: "failing", notified },
    lastProbe: { at: NOW - 169 * S, ok: false, detail: "HTTP 503", latencyMs: 10 },
  });
  test("incident: 'unavailable for 167s' for ~1 s down: measured to the last failed probe, then no data", () => {
    const decision = decide(SERVICE, state(true), facts({ gap }), OK);
    const downtime = decision.log.find((line) => line.tag === "DOWNTIME")!;
    expect(downtime.message).toMatch(
      /^blog was unavailable for 1s \(failing, from .* UTC to .* UTC\) \(then no data for 168s\)$/,
    );
    expect(downtime.downtime).toMatchObject({ from: NOW - 170 * S, to: NOW - 169 * S });
    // The ✅ it owes says the same numbers.
    const recovered = decision.log.find((line) => line.tag === "RECOVERED")!;
    expect(recovered).toMatchObject({ event: "recovered" });
    expect(recovered.message).toMatch(/^blog is healthy again \(down 1s until .* UTC, then no data for 168s\)/);
    expect(decision.next.outages.at(-1)).toMatchObject({ from: NOW - 170 * S, to: NOW - 169 * S, incident: true });
    expect(decision.next).toMatchObject({ outage: null, owedRecovery: null });
  });
  test("still failing after the gap: a new outage opens now, notified already (no second 🚨 needed for its ✅)", () => {
    const decision = decide({ ...SERVICE, restart: null }, state(true), facts({ gap }), TIMEOUT);
    expect(decision.next.outage).toMatchObject({ since: NOW, notified: true });
  });
  test("down again after the gap, then healthy: the ✅ tells the whole story, never only the part after the gap", () => {
    const watchOnly = { ...SERVICE, restart: null };
    const after = decide(watchOnly, state(true), facts({ gap }), TIMEOUT).next;
    const later = NOW + 10 * S;
    const recovered = decide(watchOnly, after, facts({ now: later }), OK).log.find((line) => line.tag === "RECOVERED")!;
    expect(recovered).toMatchObject({ event: "recovered" });
    expect(recovered.message).toMatch(
      /^blog is healthy again \(down 1s until .* UTC, then no data for 168s, down again 10s\) \(HTTP 200\)$/,
    );
  });
  test("a blip cut by a gap is measured and not notified", () => {
    const decision = decide(SERVICE, { ...state(false), strikes: 1 }, facts({ gap }), OK);
    expect(decision.log.filter((line) => line.event === "recovered")).toEqual([]);
  });
});

describe("failures_within (monit's N of M) and flapping (Nagios's share of changes)", () => {
  const FAIL: ProbeResult = { ok: false, detail: "HTTP 502", latencyMs: 5, timedOut: false };
  /** Probe the same service once a minute with these results; every decision, in order. */
  const run = (service: ServiceConfig, results: boolean[]) => {
    let state = freshState();
    return results.map((ok, index) => {
      const decision = decide(service, state, facts({ now: NOW + index * MIN }), ok ? OK : FAIL);
      state = decision.next;
      return decision;
    });
  };
  const alternating = (count: number) => Array.from({ length: count }, (_, index) => index % 2 === 1);

  test("N = 3 within M = 5: a service failing every other probe is restarted at its 5th probe", () => {
    const decisions = run({ ...SERVICE, failuresWithin: 5 }, alternating(5));
    expect(decisions.map((decision) => decision.kind)).toEqual(["strike", "ok", "strike", "ok", "restart"]);
    expect(decisions[2].log[0].message).toBe(
      "blog failed health check (HTTP 502, failure 2/3 within the last 5 probes)",
    );
  });

  test("M = N (the default): in a row, one success resets: the alternating service is never restarted", () => {
    const decisions = run(SERVICE, alternating(20));
    expect(decisions.every((decision) => decision.kind === "strike" || decision.kind === "ok")).toBe(true);
    expect(Math.max(...decisions.map((decision) => decision.next.strikes))).toBe(1);
  });

  test("after a restart, the failures before it never count toward the next one", () => {
    const decisions = run({ ...SERVICE, failuresWithin: 5, graceMs: 0 }, alternating(5));
    const restarted = recordRestart(
      { ...SERVICE, failuresWithin: 5 },
      decisions[4].next,
      { issued: true, recovered: true, elapsedMs: 500, detail: "HTTP 200", lastProbe: OK },
      NOW + 4 * MIN,
      NOW + 4 * MIN + 500,
    );
    expect(restarted.next.strikeWindow).toBe("");
    const FAILED: ProbeResult = { ok: false, detail: "HTTP 502", latencyMs: 5, timedOut: false };
    const next = decide({ ...SERVICE, failuresWithin: 5 }, restarted.next, facts({ now: NOW + 10 * MIN }), FAILED);
    expect([next.kind, next.next.strikes]).toEqual(["strike", 1]);
  });

  test("6 changes in the last 20 probes: flapping, said once (🔀) with the share, its end said, the word", () => {
    const decisions = run(SERVICE, [...alternating(12), ...Array(20).fill(true)]);
    const said = decisions.flatMap((decision) => decision.log.filter((line) => /flap/.test(line.message)));
    expect(said.map((line) => [line.tag, line.event])).toEqual([
      ["WARN", "flapping"],
      ["RECOVERED", undefined],
    ]);
    expect(said[0].message).toBe("blog is flapping (4 of 7 probes failed, 6 changes)");
    expect(said[1].message).toMatch(/^blog no longer flaps \(3 changes in its last 20 probes; flapped for 2\d+m\)$/);
    // Whatever the last probe said: flapping on a healthy answer and on a failed one alike.
    expect(decisions[6].next.verdict!.word).toBe("flapping");
    expect(decisions[7].next.verdict!.word).toBe("flapping");
    expect(decisions.at(-1)!.next.verdict!.word).toBe("healthy");
    expect(decisions.at(-1)!.next.flaps).toHaveLength(1);
    expect(WORDS.flapping).toMatchObject({ calm: false, nagios: 1, up: 1 });
  });

  test("at the edge (5, 6, 5, 6 changes ...): one spell, one 🔀, ended only at 3 changes or fewer", () => {
    // 6 changes, then a long run that drifts the count between 4 and 6 for many probes, then calm.
    const edge = [...alternating(7), true, true, false, false, true, true, false, false, true, true, false, false];
    const decisions = run(SERVICE, [...edge, ...edge, ...Array(20).fill(true)]);
    const counts = decisions.map((decision) => flapCount(decision.next.probes ?? "").changes);
    expect(counts.some((count) => count === 5) && counts.some((count) => count >= 6)).toBe(true);
    const said = decisions.flatMap((decision) => decision.log.filter((line) => /flap/.test(line.message)));
    expect(said.map((line) => line.event ?? line.tag)).toEqual(["flapping", "RECOVERED"]);
    const ended = decisions.findIndex((decision) => decision.log.some((line) => /no longer flaps/.test(line.message)));
    expect(counts[ended]).toBeLessThanOrEqual(3);
    expect(
      counts
        .slice(
          decisions.findIndex((d) => d.next.flappingSince),
          ended,
        )
        .every((count) => count > 3),
    ).toBe(true);
  });
});
