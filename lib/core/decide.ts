import type { ProbeResult } from "../checks/kind.ts";
import type { ServiceConfig } from "../config/types.ts";
import {
  remember,
  LATENCY_HISTORY,
  OUTAGE_HISTORY,
  type LatencySample,
  type OutageRecord,
  type ServiceState,
} from "./state.ts";
import { counted, humanDuration } from "./duration.ts";
import { appendSample } from "./latency.ts";
import { downtimeLine, downtimeMessage, type Downtime, type LogLine } from "./events.ts";
import { judgeMemory, RSS_HISTORY } from "./memory.ts";
import { localStamp, utcStamp } from "./time.ts";
import type { StateWord, Verdict } from "./verdict.ts";

export type { LogLine, NotifyEvent } from "./events.ts";
export { EVENTS } from "./events.ts";

/** What the pass knows about a service before probing it (and, after a failed probe, busy and wait). */
export interface Facts {
  now: number;
  uptimeMs: number;
  bootDelayMs: number;
  /** From the service's pid source; null when it has none. supervised: systemd/launchd restart it, not tend. */
  process: {
    running: boolean;
    startedAt: number | null;
    detail: string;
    supervised?: boolean;
    /** The source cannot say (a pidfile that is not a PID): not gone, so never started beside it. */
    unreadable?: boolean;
    /**
     * Alive but another user's (Android's hidepid), and the restart would have to stop it: tend
     * cannot, so it cannot restart the service.
     */
    hidden?: boolean;
  } | null;
  /** Set when a restart cannot help: a dependency is failing, a required name does not resolve. */
  waitReason: string | null;
  /** For a failed probe with `busy` configured: does the service show it is working? */
  busy?: { busy: boolean; detail: string; degraded?: string } | null;
  /** The restart backend says the service is down on purpose (`sv down`): why. Skipped, never started. */
  stopped?: string | null;
  /** systemd's view of the service's unit (unit = or restart.systemd). */
  /** `result`: systemd's Result= (start-limit-hit: it gave up; signal, exit-code: it failed, nothing restarted it). */
  unit?: {
    name: string;
    activeState: string;
    nRestarts: number | null;
    result?: string | null;
    /** Its Restart= policy (no, on-failure, always, …). */
    restart?: string | null;
  } | null;
  /** RSS of the main process tree, for `memory`. */
  rssBytes?: number | null;
  /** A gap in the watchdog's heartbeat this pass found: recorded as no data. */
  gap?: Downtime | null;
  /**
   * When the loop last saw the service's process alive: its exit's time for a child it started, its
   * crash watch's last tick for another (epoch ms). A crash's outage begins there, not at the last probe.
   */
  aliveAt?: number | null;
  /**
   * Capabilities this host denies this pass, each "capability: what and why" (busy.port when
   * /proc/net cannot be read, memory when RSS cannot): only that capability degrades, said once a day.
   */
  degraded?: string[];
}

/**
 * `owned`: not judged this time — another owner (a verification, an operator) holds the service's
 * lock, or the pass was stopped (SIGTERM) before its answer was recorded.
 */
type SkipReason = "disabled" | "paused" | "boot_delay" | "stopped" | "grace" | "error" | "owned";
/** start: the first start of a service tend never started nor saw healthy (not a restart: not counted). */
/** `start`: a new service's first start; `boot`: found not running after a reboot (neither is counted). */
export type RestartReason = "start" | "boot" | "crash" | "hung_restart" | "busy_timeout" | "memory";

interface Outcome {
  next: ServiceState;
  log: LogLine[];
}

/** The verdict for one service in one pass. */
export type Decision = Outcome &
  /** until: when the skip ends by itself (grace, boot_delay, a pause for a time), else null. */
  (
    | { kind: "skip"; reason: SkipReason; until: number | null }
    /** slow: healthy, but slower than slow_above; warning: a plugin's WARNING, a certificate inside warn_days. */
    | { kind: "ok"; slow?: boolean; warning?: boolean }
    | { kind: "strike" }
    | { kind: "busy"; evidence: string }
    | { kind: "wait"; reason: string }
    /** A restart is due but held: given up, backoff, cooldown, a failed unit, watch only. */
    | { kind: "held"; hold: string; until: number | null; word: StateWord }
    | { kind: "restart"; reason: RestartReason }
    | { kind: "give-up" }
  );
/** Before the probe: either the verdict, or "probe, then decide again with the result". */
export type Step = Decision | (Outcome & { kind: "probe" });

/** Why, in a few words: the dry run prints it beside the kind. */
export function explain(decision: Step): string {
  switch (decision.kind) {
    case "skip":
    case "restart":
    case "wait":
      return decision.reason;
    case "held":
      return decision.hold;
    case "busy":
      return decision.evidence;
    case "strike":
      return `strike ${decision.next.strikes}`;
    case "give-up":
      return "max_restarts";
    case "ok":
      return decision.slow ? "slow" : decision.warning ? "warning" : "healthy";
    case "probe":
      return "probe";
  }
}

const BUSY_LOG_EVERY_MS = 5 * 60_000;
const MEMORY_WARN_EVERY_MS = 60 * 60_000;
const WARNING_EVERY_MS = 24 * 60 * 60_000;
const SLOW_LOG_EVERY_MS = 60 * 60_000;
const DEGRADED_EVERY_MS = 24 * 60 * 60_000;
const GAP_HISTORY = 100;

const checks = (count: number) => counted(count, "check");
const clock = (ms: number) => localStamp(new Date(ms)).slice(11);

/**
 * The decision for one service, in the order the spec gives: observe (every pass), gate (skip,
 * or start a crashed process), then judge the probe. With `probe` null the pass has not probed
 * yet: the answer is the verdict, or `probe` when the service must be asked.
 */
export function decide(service: ServiceConfig, state: ServiceState, facts: Facts, probe: ProbeResult): Decision;
export function decide(service: ServiceConfig, state: ServiceState, facts: Facts, probe: ProbeResult | null): Step;
export function decide(service: ServiceConfig, state: ServiceState, facts: Facts, probe: ProbeResult | null): Step {
  const observed = observe(service, state, facts);
  const decision: Step =
    gate(service, observed.next, facts) ??
    (probe ? judge(service, observed.next, probe, facts) : { kind: "probe", next: observed.next, log: [] });
  let log = [...observed.log, ...decision.log];
  if (decision.kind === "probe") return { ...decision, log };
  // The pass records what it decided: the views read this, never a rule of their own.
  let next = markNotified({ ...decision.next, verdict: verdictOf(service, decision, facts.now) }, log, facts.now);
  if (decision.kind !== "ok" && decision.kind !== "skip") {
    const reminder = remind(service, next, log, facts.now);
    if (reminder) [next, log] = [reminder.next, reminder.line ? [...log, reminder.line] : log];
  }
  return { ...decision, log, next };
}

/**
 * remind_every: still down after its 🚨/⛔ (failing, watch only, given up), said again every D with
 * how long it has been down (🔔). Counted from the notification, then from each reminder.
 */
function remind(service: ServiceConfig, state: ServiceState, log: LogLine[], now: number) {
  if (!service.remindEveryMs || !(state.outage?.notified || state.givenUp)) return null;
  if (log.some((line) => line.event && OUTAGE_EVENTS.has(line.event))) return null; // notified just now
  const from = state.remindedAt ?? null;
  if (from === null) return { next: { ...state, remindedAt: now }, line: null as LogLine | null }; // an older state
  if (now - from < service.remindEveryMs) return null;
  const since = state.outage?.since ?? state.givenUpAt ?? from;
  const how = state.givenUp ? "given up" : (state.lastProbe?.detail ?? "failing");
  const message = `${service.name} is still down after ${humanDuration(now - since)} (${how})`;
  const line: LogLine = { tag: "WARN", event: "reminder", message };
  return { next: { ...state, remindedAt: now }, line };
}

/** The events that tell the operator of an outage (⚠️ 🚨 ⛔): only after one of them is its end worth a ✅. */
const OUTAGE_EVENTS: ReadonlySet<string> = new Set(["restart", "failed", "held", "given-up"]);

/** The open outage was notified: its RECOVERED is sent (✅); a blip below N strikes or a WAIT is only logged. */
function markNotified(next: ServiceState, log: LogLine[], now: number): ServiceState {
  if (!log.some((line) => line.event && OUTAGE_EVENTS.has(line.event))) return next;
  const remindedAt = now; // remind_every counts from the latest 🚨/⛔
  if (!next.outage || next.outage.notified) return { ...next, remindedAt };
  return { ...next, outage: { ...next.outage, notified: true }, remindedAt };
}

const SKIPPED: Record<SkipReason, StateWord> = {
  disabled: "disabled",
  paused: "paused",
  boot_delay: "starting",
  grace: "starting",
  stopped: "stopped",
  error: "new",
  owned: "restarting",
};

/** The state word and reason of a decision, as the pass records it. */
function verdictOf(service: ServiceConfig, decision: Decision, now: number): Verdict {
  const reason = explain(decision);
  const verdict = (word: StateWord, until: number | null = null): Verdict => ({
    kind: decision.kind,
    word,
    reason,
    until,
    at: now,
  });
  switch (decision.kind) {
    case "skip":
      return verdict(SKIPPED[decision.reason], decision.until);
    case "ok":
      return verdict(
        decision.next.flappingSince ? "flapping" : decision.slow ? "slow" : decision.warning ? "warning" : "healthy",
      );
    case "strike":
      return verdict(decision.next.flappingSince ? "flapping" : "failing");
    case "busy":
      return verdict("busy");
    case "wait":
      return verdict("waiting");
    case "held":
      return verdict(decision.word, decision.until);
    case "restart":
      // Being verified from now on, until healthy or verify_timeout: a first start is "starting".
      return verdict(
        ["start", "boot"].includes(decision.reason) ? "starting" : "restarting",
        now + service.verifyTimeoutMs,
      );
    case "give-up":
      return verdict("given-up");
  }
}

/**
 * systemd gave up on a failed unit: its start limit was hit (Result=start-limit-hit), or its Restart=
 * would have restarted this result and it is failed all the same (its restarts hit the limit: systemd
 * 252 keeps the last run's Result, exit-code, as the real systemd test shows). tend respects that. A
 * unit that failed where its policy restarts nothing (a crash with Restart=no, as hand-written units
 * are) is restarted like any down service — nobody else will (#64). Facts without a Result (a test's)
 * count as given up, as before.
 */
const systemdGaveUp = (unit: NonNullable<Facts["unit"]>) =>
  unit.activeState === "failed" &&
  (unit.result === undefined ||
    unit.result === "start-limit-hit" ||
    (RESTARTED_RESULTS[unit.restart ?? "no"] ?? []).includes(unit.result ?? ""));

/** Which Result= each Restart= policy restarts (systemd.service(5), its table of exit causes). */
const RESTARTED_RESULTS: Record<string, string[]> = {
  always: ["exit-code", "signal", "core-dump", "timeout", "watchdog", "oom-kill", "success"],
  "on-failure": ["exit-code", "signal", "core-dump", "timeout", "watchdog", "oom-kill"],
  "on-abnormal": ["signal", "core-dump", "timeout", "watchdog"],
  "on-abort": ["signal", "core-dump"],
  "on-watchdog": ["watchdog"],
};

/**
 * Every pass, whatever the verdict: systemd's silent auto-restarts (NRestarts), a unit that
 * systemd gave up on, the RSS sample for memory growth, a heartbeat gap.
 */
function observe(service: ServiceConfig, state: ServiceState, facts: Facts): Outcome {
  let next = state.firstSeenAt === null ? { ...state, firstSeenAt: facts.now } : state;
  const log: LogLine[] = [];
  const unit = facts.unit;
  if (unit) {
    if (service.trackRestarts && unit.nRestarts !== null) {
      const before = state.nRestarts;
      if (before !== null && unit.nRestarts > before) {
        const count = unit.nRestarts - before;
        next = remember(
          { ...next, autoRestarts: next.autoRestarts + count },
          { at: facts.now, what: "auto-restart", count },
        );
        const times = count === 1 ? "once" : `${count} times`;
        log.push({
          tag: "AUTO-RESTART",
          event: "auto-restart",
          message:
            `${service.name}: systemd restarted ${unit.name} on its own ${times} ` +
            `(NRestarts ${before} -> ${unit.nRestarts})`,
        });
      }
      next = { ...next, nRestarts: unit.nRestarts }; // a decrease (manual restart) only resets the baseline
    }
    if (systemdGaveUp(unit) && state.unitState !== "failed") {
      log.push({
        tag: "WARN",
        event: "failed",
        message:
          `${service.name}: ${unit.name} is failed (systemd gave up on it): ` +
          `tend does not restart a failed unit; see systemctl status ${unit.name}`,
      });
    }
    next = { ...next, unitState: unit.activeState };
  }
  if (service.memory && facts.rssBytes) {
    next = { ...next, rss: [...next.rss, [facts.now, facts.rssBytes] as [number, number]].slice(-RSS_HISTORY) };
  }
  const sourceProblem = facts.process?.unreadable ? facts.process.detail : null;
  if (sourceProblem && sourceProblem !== state.sourceProblem) {
    const message =
      `${service.name}: ${sourceProblem}: ` + `nothing is started beside what may still run; the probe judges it`;
    log.push({ tag: "ERROR", message });
  }
  if (sourceProblem !== state.sourceProblem) next = { ...next, sourceProblem };
  for (const problem of facts.degraded ?? []) {
    const capability = problem.slice(0, problem.indexOf(":"));
    if ((next.degradedSaidAt[capability] ?? -Infinity) + DEGRADED_EVERY_MS > facts.now) continue;
    next = { ...next, degradedSaidAt: { ...next.degradedSaidAt, [capability]: facts.now } };
    log.push({ tag: "WARN", message: `${service.name}: ${problem} (said once a day)` });
  }
  if (facts.gap) {
    const { from, to, reason } = facts.gap;
    next = { ...next, gaps: [...next.gaps, { from, to, reason }].slice(-GAP_HISTORY) };
    if (next.outage) {
      const [cut, line] = cutByGap(service, next, facts.gap);
      next = cut;
      log.push(line);
    }
  }
  return { next, log };
}

/**
 * Time the watchdog did not see is no data, never downtime: an outage open when the gap began closes
 * as measured, at its last failed probe, "(then no data for Ns)". If it was notified, the next
 * healthy probe still sends its ✅; if it is still failing, a new outage opens (already notified).
 */
function cutByGap(service: ServiceConfig, state: ServiceState, gap: Downtime): [ServiceState, LogLine] {
  const { since, reason } = state.outage!;
  const failedAt = state.lastProbe && !state.lastProbe.ok ? state.lastProbe.at : since;
  const to = Math.max(since, Math.min(failedAt, gap.from));
  const noDataMs = gap.to - gap.from;
  const incident = Boolean(state.outage!.notified || state.outage!.waited);
  const record: OutageRecord = { from: since, to, reason, ...(incident ? { incident } : {}) };
  const downtime = { name: service.name, from: since, to, reason };
  const line: LogLine = {
    ...downtimeLine(downtime),
    message: `${downtimeMessage(downtime)} (then no data for ${Math.round(noDataMs / 1000)}s)`,
  };
  const next: ServiceState = {
    ...state,
    outage: null,
    outages: [...state.outages, record].slice(-OUTAGE_HISTORY),
    owedRecovery: state.outage!.notified ? { since, to, noDataMs } : null,
  };
  return [next, line];
}

/**
 * Before probing: skip (disabled, paused, boot_delay, a unit stopped on purpose, grace) or
 * start a crashed process at once. null means: probe, then `judge`.
 */
function gate(service: ServiceConfig, state: ServiceState, facts: Facts): Decision | null {
  const { now } = facts;
  const skip = (reason: SkipReason, until: number | null = null): Decision => ({
    kind: "skip",
    reason,
    until,
    next: state,
    log: [],
  });
  if (!service.enabled) return skip("disabled");
  if (state.paused && (state.pausedUntil === null || state.pausedUntil > now)) return skip("paused", state.pausedUntil);
  if (facts.uptimeMs < facts.bootDelayMs) return skip("boot_delay", now + facts.bootDelayMs - facts.uptimeMs);
  // Stopped on purpose (an inactive unit, `sv down`): never started.
  if (facts.unit?.activeState === "inactive" || facts.stopped) return skip("stopped");

  const { process } = facts;
  // A pid source that cannot be read may name a process that still runs: nothing is started beside
  // it. After a reboot none of the last boot's processes runs: a pidfile a power cut left empty
  // (the shell's write, cut before it reached the disk) names nothing, and the service is started.
  const unreadable = process?.unreadable === true && facts.gap?.name !== "host";
  if (process && !process.running && !process.supervised && !unreadable && service.restart) {
    // Never started by tend nor seen healthy: new, not crashed. Its first start opens no outage and is not counted.
    if (state.startedAt === null && state.lastHealthyAt === null)
      return { kind: "restart", reason: "start", next: state, log: [] };
    // The host rebooted since the last pass: not a crash. Started, not counted, no outage, no ⚠️ of its
    // own (the pass sends one 🔌 for all); a given-up service stays given up.
    if (facts.gap?.name === "host" && !state.givenUp) return { kind: "restart", reason: "boot", next: state, log: [] };
    const why = `${service.name} is not running (${process.detail})`;
    // Down since it was last seen alive — healthy, or started by tend (a start after a reboot whose
    // verification was cut) — not since this pass found it; never in time the watchdog did not see
    // (a reboot's is the host's downtime: counted once).
    const lastSeenAlive = Math.max(
      state.lastHealthyAt ?? now,
      state.startedAt ?? 0,
      state.gaps.at(-1)?.to ?? 0,
      facts.aliveAt ?? 0,
    );
    return restartOrHold({
      service,
      state: openOutage(state, Math.min(now, lastSeenAlive), "crash"),
      facts,
      reason: "crash",
      why,
      detail: process.detail,
      lines: [{ tag: "WARN", event: "restart", message: `${why}: starting it (crash)` }],
    });
  }

  // A start recorded ahead of now (a time written across a clock step) counts from now, never beyond.
  const graceFrom = Math.min(now, Math.max(state.startedAt ?? 0, facts.process?.startedAt ?? 0));
  if (graceFrom && now < graceFrom + service.graceMs) return skip("grace", graceFrom + service.graceMs);
  return null;
}

/** After probing: ok, busy, wait, strike k/N, restart (at N, busy too long, memory), held, or give up. */
function judge(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const decision = judgeProbe(service, state, probe, facts);
  const flap = flapping(service, decision.next, facts.now);
  return { ...decision, next: flap.next, log: [...decision.log, ...flap.log] } as Decision;
}

/** Nagios's flap detection: changes of the probe result among the last FLAP_WINDOW probes. */
export const FLAP_WINDOW = 20;
/** Nagios's high and low thresholds: a spell begins at 6 changes, ends only at 3 or fewer (no chatter at 5-6). */
const FLAP_CHANGES = 6;
const FLAP_LOW = 3;

/** Changes between consecutive results ("0101" has 3), and how many failed. */
export function flapCount(probes: string): { changes: number; failed: number } {
  let changes = 0;
  for (let i = 1; i < probes.length; i++) if (probes[i] !== probes[i - 1]) changes++;
  return { changes, failed: [...probes].filter((result) => result === "0").length };
}

/**
 * A service whose result changed at least 6 times in its last 20 probes is flapping, whatever the
 * last one said: said when the spell begins (🔀 once), and when it ends — at 3 changes or fewer, not
 * at 5 (Nagios's low threshold: a service at the edge would chatter); the spell is kept for report.
 */
function flapping(service: ServiceConfig, state: ServiceState, now: number): Outcome {
  const probes = state.probes ?? "";
  const { changes, failed } = flapCount(probes);
  const flaps = state.flappingSince ? changes > FLAP_LOW : changes >= FLAP_CHANGES;
  if (flaps && !state.flappingSince) {
    const message = `${service.name} is flapping (${failed} of ${probes.length} probes failed, ${changes} changes)`;
    return { next: { ...state, flappingSince: now }, log: [{ tag: "WARN", event: "flapping", message }] };
  }
  if (!flaps && state.flappingSince) {
    const spell = { from: Math.min(state.flappingSince, now), to: now };
    const message =
      `${service.name} no longer flaps (${changes} changes in its last ${probes.length} probes; ` +
      `flapped for ${humanDuration(spell.to - spell.from)})`;
    const next = { ...state, flappingSince: null, flaps: [...(state.flaps ?? []), spell].slice(-FLAP_HISTORY) };
    return { next, log: [{ tag: "RECOVERED", message }] };
  }
  return { next: state, log: [] };
}
const FLAP_HISTORY = 100;

/** failures_within = M (> N): the results since the last restart, at most M; null when M = N (in a row). */
function strikeWindow(service: ServiceConfig, state: ServiceState, ok: boolean): string | null {
  const within = service.failuresWithin;
  if (!within || within <= service.failures) return null;
  return ((state.strikeWindow ?? "") + (ok ? "1" : "0")).slice(-within);
}

function judgeProbe(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const { now } = facts;
  const window = strikeWindow(service, state, probe.ok);
  const recorded = {
    ...recordProbe(state, probe, now, service.check.timeoutMs),
    ...(window !== null ? { strikeWindow: window } : {}),
  };
  if (probe.ok) return judgeHealthy(service, { ...recorded, busySince: null }, probe, facts);

  // Down from the moment the unanswered request was sent, not from when its timeout ran out (never
  // inside time the watchdog did not see).
  const sent = Math.max(now - probe.latencyMs, facts.gap?.to ?? 0);
  const failing = openOutage(recorded, Math.min(sent, now), "failing");
  if (facts.busy?.busy && service.busy) {
    const busySince = state.busySince ?? now;
    if (now - busySince > service.busy.maxMs) {
      const why =
        `${service.name} has been busy for ${humanDuration(now - busySince)}, ` +
        `longer than busy.max ${humanDuration(service.busy.maxMs)}`;
      return restartOrHold({
        service,
        state: { ...failing, busySince },
        facts,
        reason: "busy_timeout",
        why,
        lines: [{ tag: "HUNG", event: "restart", message: `${why}: restarting (busy_timeout)` }],
      });
    }
    const due = state.busySince === null || (state.busyLoggedAt ?? 0) + BUSY_LOG_EVERY_MS <= now;
    const line: LogLine = {
      tag: "BUSY",
      message:
        `${service.name} failed health check (${probe.detail}) but is busy (${facts.busy.detail}): ` +
        `not counted, not restarted (busy for ${humanDuration(now - busySince)}, ` +
        `limit ${humanDuration(service.busy.maxMs)})`,
      ...(state.busySince === null ? { event: "busy" as const } : {}),
    };
    const next = { ...failing, busySince, busyLoggedAt: due ? now : state.busyLoggedAt };
    return { kind: "busy", evidence: facts.busy.detail, next, log: due ? [line] : [] };
  }
  const notBusy = { ...failing, busySince: null };
  if (facts.waitReason) {
    const message =
      `${service.name} failed health check (${probe.detail}) but ${facts.waitReason}: ` + `not counted, not restarted`;
    const waited = { ...notBusy, outage: notBusy.outage && { ...notBusy.outage, waited: true } };
    return { kind: "wait", reason: facts.waitReason, next: waited, log: [{ tag: "WAIT", message }] };
  }
  // N in a row (one success resets), or with failures_within = M: N of the last M probes failed.
  const strikes = Math.min(
    window === null ? state.strikes + 1 : [...window].filter((result) => result === "0").length,
    service.failures,
  );
  const next = { ...notBusy, strikes };
  const within = window === null ? "" : ` within the last ${service.failuresWithin} probes`;
  const failedHow =
    window === null ? `${checks(strikes)} in a row` : `${strikes} of the last ${service.failuresWithin} checks`;
  const warn: LogLine = {
    tag: "WARN",
    message: `${service.name} failed health check (${probe.detail}, failure ${strikes}/${service.failures}${within})`,
  };
  if (strikes < service.failures) return { kind: "strike", next, log: [warn] };
  return restartOrHold({
    service,
    state: next,
    facts,
    reason: "hung_restart",
    why: `${service.name} failed ${failedHow}`,
    before: [warn],
    lines: [
      {
        tag: "HUNG",
        event: "restart",
        message: `${service.name} failed ${failedHow} (last: ${probe.detail}): restarting`,
      },
    ],
    detail: probe.detail,
    saidHeld: state.strikes >= service.failures,
  });
}

/**
 * Healthy: strikes 0, outage closed. The check may still warn (📅 at most daily, no strike), and
 * memory may warn or ask for a preventive restart.
 */
function judgeHealthy(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const closed = closeOutage(service, state, probe, facts.now);
  if (probe.warning && (state.warnedAt ?? 0) + WARNING_EVERY_MS <= facts.now) {
    closed.next = { ...closed.next, warnedAt: facts.now };
    const event = probe.warningEvent ?? "certificate";
    closed.log.push({ tag: "WARN", event, message: `${service.name}: ${probe.warning}` });
  }
  const slow = slowness(service, closed.next, probe, facts.now);
  closed.next = slow.next;
  closed.log.push(...slow.log);
  const warning = Boolean(probe.warning);
  const healthy: Decision = { kind: "ok", slow: slow.slow, warning, ...closed };
  if (!service.memory) return healthy;
  const verdict = judgeMemory(service.name, service.memory, closed.next.rss);
  if (verdict.restart) {
    const decision = restartOrHold({
      service,
      state: closed.next,
      facts,
      reason: "memory",
      why: verdict.restart,
      before: closed.log,
      // A restart's ⚠️ (event `restart`), never the growth warning's 📈: dedup keys are per event, and
      // sharing one let min_interval swallow the restart behind the warning (seed 004).
      lines: [{ tag: "MEMORY", event: "restart", message: `${verdict.restart}: restarting (memory)` }],
    });
    return decision.kind === "restart" || decision.kind === "give-up" ? decision : healthy;
  }
  if (verdict.warn && (state.memoryWarnedAt ?? 0) + MEMORY_WARN_EVERY_MS <= facts.now) {
    return {
      kind: "ok",
      slow: slow.slow,
      warning,
      next: { ...closed.next, memoryWarnedAt: facts.now },
      log: [...closed.log, { tag: "MEMORY", event: "memory", message: verdict.warn }],
    };
  }
  return healthy;
}

/**
 * slow_above: a healthy answer slower than D is slow, not failing: no strike, WARN when it becomes
 * slow (🐢, once per slow spell) and then at most hourly; the state word is `slow`.
 */
function slowness(service: ServiceConfig, state: ServiceState, probe: ProbeResult, now: number) {
  if (!service.slowAboveMs || probe.latencyMs <= service.slowAboveMs) {
    const next = state.slowSince ? { ...state, slowSince: null, slowLoggedAt: null } : state;
    return { next, log: [] as LogLine[], slow: false };
  }
  const message =
    `${service.name} is slow (${probe.detail} in ${humanDuration(probe.latencyMs)}, ` +
    `above ${humanDuration(service.slowAboveMs)})`;
  if (!state.slowSince) {
    const log: LogLine[] = [{ tag: "WARN", event: "slow", message }];
    return { next: { ...state, slowSince: now, slowLoggedAt: now }, log, slow: true };
  }
  if ((state.slowLoggedAt ?? 0) + SLOW_LOG_EVERY_MS <= now) {
    return { next: { ...state, slowLoggedAt: now }, log: [{ tag: "WARN", message }] as LogLine[], slow: true };
  }
  return { next: state, log: [] as LogLine[], slow: true };
}

interface RestartWanted {
  service: ServiceConfig;
  state: ServiceState;
  facts: Facts;
  reason: RestartReason;
  /** The sentence GIVEN-UP starts with. */
  why: string;
  /** Lines that come first whatever happens (the WARN k/N line). */
  before?: LogLine[];
  /** Lines for the restart itself (HUNG, MEMORY, RESTART). */
  lines: LogLine[];
  /** The last probe's detail, for a watch-only service's FAILED line. */
  detail?: string;
  /** The hold was already said in an earlier pass of this outage: do not say it again. */
  saidHeld?: boolean;
}

/** What holds a restart that is due, with the time it ends (null: until something changes). */
type Hold = { hold: string; until: number | null; word: StateWord };

/** What holds a restart that is due, with the time it ends (null: until something changes) and the state word. */
function holdOf({ service, state, facts, reason }: RestartWanted): Hold | null {
  const { now } = facts;
  // At N strikes with no restart coming now: down (the table's CRITICAL), whatever holds it.
  if (!service.restart) return { hold: "watch only", until: null, word: "down" };
  if (facts.unit && systemdGaveUp(facts.unit)) {
    return { hold: `${facts.unit.name} is failed (systemd's start limit is respected)`, until: null, word: "down" };
  }
  // A process tend cannot see cannot be stopped: a restart would start a second copy beside it. Not a
  // restart at all (not counted, no ⚠️): the service is down and tend says it cannot help.
  if (facts.process?.hidden) {
    return { hold: `cannot be restarted by tend (${facts.process.detail})`, until: null, word: "down" };
  }
  if (state.givenUp && !givenUpRetryDue(service, state, now)) {
    const retryAt = service.givenUpRetryMs ? givenUpFrom(state, now) + service.givenUpRetryMs : null;
    const hold = retryAt ? `given up (tried again at ${clock(retryAt)})` : "given up (watchdog reset to retry)";
    return { hold, until: retryAt, word: "given-up" };
  }
  // Never longer than backoff_max from now, whatever a state written across a clock step says.
  const backoffUntil = state.backoffUntil && Math.min(state.backoffUntil, now + service.backoffMaxMs);
  if (backoffUntil && now < backoffUntil) {
    return { hold: `backoff until ${clock(backoffUntil)}`, until: backoffUntil, word: "backoff" };
  }
  // A process that is gone is started without waiting out the cooldown: backoff and max_restarts bound a crash loop.
  const cooldownEnd = Math.min(state.lastRestartAt ?? 0, now) + service.cooldownMs;
  if (reason !== "crash" && state.lastRestartAt && now < cooldownEnd) {
    return { hold: `cooldown until ${clock(cooldownEnd)}`, until: cooldownEnd, word: "down" };
  }
  return null;
}

/**
 * A restart is wanted: hold it (watch only, a failed unit, given-up, backoff, cooldown), give up
 * (max_restarts within restart_window), or restart. `before` lines come first in every case.
 */
function restartOrHold(wanted: RestartWanted): Decision {
  const { service, state, facts, reason, why, before = [], lines, saidHeld = false } = wanted;
  const held = holdOf(wanted);
  if (held) {
    return { kind: "held", ...held, next: state, log: saidHeld ? before : heldLog(wanted, held) };
  }
  // given_up_retry: one restart, verified, every D; it stays given up unless that one recovers.
  if (state.givenUp && givenUpRetryDue(service, state, facts.now)) {
    const retry: LogLine = {
      tag: "HUNG",
      event: "restart", // a restart like any other: its ⚠️
      message: `${why}: given up, trying one restart again (given_up_retry ${humanDuration(service.givenUpRetryMs)})`,
    };
    const outage = state.outage && { ...state.outage, reason: strongest(state.outage.reason, reason) };
    return { kind: "restart", reason, next: { ...state, outage, givenUpAt: facts.now }, log: [...before, retry] };
  }
  if (windowRestarts(service, state, facts.now).length >= service.maxRestarts) {
    return {
      kind: "give-up",
      next: { ...state, givenUp: true, givenUpAt: facts.now },
      log: [...before, givenUpLine(service, why)],
    };
  }
  const outage = state.outage && { ...state.outage, reason: strongest(state.outage.reason, reason) };
  return { kind: "restart", reason, next: { ...state, outage }, log: [...before, ...lines] };
}

/** An outage's reasons, weakest first: it keeps the strongest it reached (a crash stays a crash). */
const REASON_STRENGTH = ["dependency", "failing", "check_failed", "memory", "busy_timeout", "hung_restart", "crash"];
const strongest = (held: string, reached: string) =>
  REASON_STRENGTH.indexOf(reached) > REASON_STRENGTH.indexOf(held) ? reached : held;

/**
 * The log of a held restart, said once per outage: a watch-only service is down (🚨); one whose
 * restart waits (cooldown, backoff, a failed unit) is down too, and never in silence — 🚨 `held`
 * once per outage, unless the outage was told already (a restart's ⚠️, a failed one's 🚨). A
 * given-up service keeps its ⛔ alone.
 */
function heldLog({ service, state, facts, before = [], detail, why, reason }: RestartWanted, held: Hold): LogLine[] {
  if (!service.restart) {
    const message = `${service.name} is down (${detail ?? "failing"}): watch only, not restarted`;
    return [...before, { tag: "FAILED", event: "failed", message }];
  }
  const said: LogLine[] = before.length
    ? [{ ...before[0], message: `${before[0].message}; not restarting: ${held.hold}` }, ...before.slice(1)]
    : [{ tag: "WARN", message: `${why}; not restarting: ${held.hold}` }];
  // A failed unit said its own 🚨 when it failed (observe).
  if (held.word === "given-up" || state.outage?.notified || (facts.unit && systemdGaveUp(facts.unit))) return said;
  if (facts.process?.hidden && held.hold.startsWith("cannot be restarted")) {
    const message = `${service.name} ${held.hold}`;
    return [...said, { tag: "FAILED", event: "failed", message }];
  }
  const what =
    reason === "crash"
      ? `not running: ${detail}`
      : reason === "hung_restart"
        ? `failure ${state.strikes}/${service.failures}, ${detail}`
        : why.slice(service.name.length + 1);
  const by = held.word === "down" && held.until === null ? `: ${held.hold}` : ` by ${held.hold}`;
  const message = `${service.name} is down (${what}): restart held${by}`;
  return [...said, { tag: "FAILED", event: "held", message }];
}

const givenUpLine = (service: ServiceConfig, why: string): LogLine => ({
  tag: "GIVEN-UP",
  event: "given-up",
  message:
    `${why} but was restarted ${service.maxRestarts} times within ${humanDuration(service.restartWindowMs)}: ` +
    `giving up until it is healthy again or \`watchdog reset ${service.name}\``,
});

interface RestartOutcome {
  /** The restart action itself ran (false: it failed; detail says why). */
  issued: boolean;
  recovered: boolean;
  /** ms from the restart to the first healthy probe, or to giving up verifying */
  elapsedMs: number;
  detail: string;
  /** The log's version of `detail` (a command's whole argv, secrets redacted). */
  full?: string;
  lastProbe: ProbeResult | null;
  /** The restarted process exited during verification, this long after the restart: FAILED at once. */
  exitedAfterMs?: number;
  /**
   * When the probe that answered was made: the outage ends there, not when the verification
   * finished looking (a process tend started is looked at again a second after its start).
   */
  answeredAt?: number;
}

export interface Verified extends Outcome {
  recovered: boolean;
}

/**
 * A counted restart, recorded before its action runs (decision step 4): toward max_restarts and the
 * window (an operator's `watchdog restart` is counted, but not toward max_restarts: an operator
 * asked), the start grace counts from, and the pending record a killed pass's successor finishes.
 * `owed`: the lines whose ⚠️ is spooled once the action returns.
 */
export function beginRestart(
  service: ServiceConfig,
  state: ServiceState,
  reason: string,
  at: number,
  owed: LogLine[],
  { towardLimit = true } = {},
): ServiceState {
  const windowed = windowRestarts(service, state, at);
  return {
    ...remember(state, { at, what: "restart" }),
    restartsTotal: state.restartsTotal + 1,
    restartTimes: towardLimit ? [...windowed, at] : windowed,
    lastRestartAt: at,
    startedAt: at,
    strikeWindow: "", // failures before a restart never count toward the next one
    restarting: {
      at,
      until: at + service.verifyTimeoutMs,
      reason,
      acted: false,
      owed: owed.map((line) => ({ at, line: { tag: line.tag, message: line.message, event: line.event } })),
    },
  };
}

/** Count a restart (unless beginRestart did) and its verification: RECOVERED or FAILED, backoff after a failure. */
export function recordRestart(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  startedAt: number,
  now: number,
  { towardLimit = true } = {},
): Verified {
  // Counted once: before its action ran (beginRestart), or here for a caller that did not.
  let next: ServiceState = {
    ...(state.restarting ? state : beginRestart(service, state, "restart", startedAt, [], { towardLimit })),
    restarting: null,
  };
  const answeredAt = Math.min(outcome.answeredAt ?? now, now);
  if (outcome.lastProbe)
    next = recordProbe(next, outcome.lastProbe, outcome.recovered ? answeredAt : now, service.check.timeoutMs);
  if (outcome.recovered) {
    const ok = {
      ...remember(next, { at: now, what: "recovered" }),
      strikes: 0,
      recoveriesOk: next.recoveriesOk + 1,
      failedInRow: 0,
      backoffUntil: null,
    };
    const closed = closeOutage(service, ok, outcome.lastProbe!, answeredAt, false);
    const message = `${service.name} recovered ${humanDuration(outcome.elapsedMs)} after restart (${outcome.detail})`;
    return {
      recovered: true,
      // Healthy again, unless its results still flap (the spell is the state's, whatever answered last).
      next: { ...closed.next, verdict: verified(answeredWord(closed.next), "recovered", null, now) },
      log: [{ tag: "RECOVERED", event: "recovered", message }, ...closed.log],
    };
  }
  // An outage opens at the first failed probe: for a restart made while it answered (memory, busy,
  // an operator's), its verification's first probe, right after the action stopped it (found by the
  // ground-truth harness, seed 151: a failed memory restart's outage opened 4 s late, at a later strike).
  const reason = state.restarting?.reason;
  const opened =
    outcome.issued && !next.outage
      ? openOutage(next, startedAt, reason && REASON_STRENGTH.includes(reason) ? reason : "check_failed")
      : next;
  const failed = {
    ...remember(opened, { at: now, what: "failed" }),
    recoveriesFailed: next.recoveriesFailed + 1,
  };
  // The time really waited: a process that exited early is said so, never "within verify_timeout".
  const what = !outcome.issued
    ? "could not be restarted"
    : outcome.exitedAfterMs !== undefined
      ? `exited ${humanDuration(outcome.exitedAfterMs)} after the restart`
      : `did not recover within ${humanDuration(Math.max(outcome.elapsedMs, 0))} after restart`;
  return failedVerification(service, failed, outcome, what, now);
}

/**
 * The first start of a new service: verified like a restart, but not counted. Quiet when it
 * answers; FAILED (🚨) with backoff when not, and from then on it is judged like any other.
 */
export function recordStart(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  startedAt: number,
  now: number,
  { afterReboot = false } = {},
): Verified {
  let next: ServiceState = { ...state, startedAt };
  const start = afterReboot ? "its start after the reboot" : "its first start";
  if (outcome.lastProbe) next = recordProbe(next, outcome.lastProbe, now, service.check.timeoutMs);
  if (outcome.recovered)
    return { recovered: true, next: { ...next, verdict: verified(answeredWord(next), "started", null, now) }, log: [] };
  const what = !outcome.issued
    ? "could not be started"
    : outcome.exitedAfterMs !== undefined
      ? `exited ${humanDuration(outcome.exitedAfterMs)} after ${start}`
      : `did not become healthy within ${humanDuration(Math.max(outcome.elapsedMs, 0))} after ${start}`;
  return failedVerification(service, next, outcome, what, now);
}

/** FAILED (🚨) and the next backoff, doubling up to backoff_max. */
function failedVerification(
  service: ServiceConfig,
  state: ServiceState,
  outcome: RestartOutcome,
  what: string,
  now: number,
): Verified {
  const failedInRow = state.failedInRow + 1;
  const backoffMs = Math.min(service.backoffMs * 2 ** (failedInRow - 1), service.backoffMaxMs);
  const say = (detail: string) => `${service.name} ${what} (${detail}); backoff ${humanDuration(backoffMs)}`;
  const line: LogLine = { tag: "FAILED", event: "failed", message: say(outcome.detail) };
  if (outcome.full) line.full = say(outcome.full);
  const backoffUntil = now + backoffMs;
  const verdict = verified("backoff", `${outcome.issued ? "did not recover" : "not restarted"}`, backoffUntil, now);
  // A start that did not recover leaves the strikes at N, whatever led to it (a hang, a crash, a
  // boot): the service is failing now, and its next failed probe after the backoff restarts it,
  // not the Nth fresh one (2 x 5 min lost under cron for a crash start that came up hung).
  const strikes = Math.max(state.strikes, service.failures);
  const next = markNotified({ ...state, strikes, failedInRow, backoffUntil, verdict }, [line], now);
  return { recovered: false, next, log: [line] };
}

/** A verified start's word: healthy, or flapping while a flapping spell is open. */
const answeredWord = (state: ServiceState): StateWord => (state.flappingSince ? "flapping" : "healthy");

/** The verdict after a restart or a first start was verified. */
const verified = (word: StateWord, reason: string, until: number | null, at: number): Verdict => ({
  kind: "verified",
  word,
  reason,
  until,
  at,
});

function recordProbe(state: ServiceState, probe: ProbeResult, now: number, timeoutMs: number): ServiceState {
  // A sample that did not time out leaves the flag out: a thousand of them are in every state write.
  // One that did keeps the timeout that cut it: "more than 5s", never the latency of a later timeout.
  const sample: LatencySample = probe.timedOut
    ? [now, probe.latencyMs, probe.ok ? 1 : 0, 1, timeoutMs]
    : [now, probe.latencyMs, probe.ok ? 1 : 0];
  const latencies = appendSample(state.latencyLog, state.latencyCount, sample, LATENCY_HISTORY);
  const lastProbe = {
    at: now,
    ok: probe.ok,
    detail: probe.detail,
    latencyMs: probe.latencyMs,
    ...(probe.perfdata?.length ? { perfdata: probe.perfdata } : {}),
  };
  const expiry = probe.certExpiresAt !== undefined ? { certExpiresAt: probe.certExpiresAt } : {};
  const probes = ((state.probes ?? "") + (probe.ok ? "1" : "0")).slice(-FLAP_WINDOW);
  if (!probe.ok) return { ...state, ...latencies, lastProbe, ...expiry, probes };
  const healthy = {
    lastHealthyAt: now,
    firstHealthyAt: state.firstHealthyAt ?? now,
    checkWarning: probe.warning ?? null,
  };
  return { ...state, ...latencies, lastProbe, ...healthy, ...expiry, probes };
}

function openOutage(state: ServiceState, now: number, reason: string): ServiceState {
  if (state.outage) return state;
  // Still down after a gap that cut a notified outage: this one was notified already (its ✅ is owed,
  // and tells the whole story: the part before the gap, the gap, this part).
  if (state.owedRecovery)
    return { ...state, owedRecovery: null, outage: { since: now, reason, notified: true, before: state.owedRecovery } };
  return { ...state, outage: { since: now, reason } };
}

/** Healthy: strikes 0; an open outage closes (RECOVERED unless the caller says it, and a DOWNTIME line). */
function closeOutage(
  service: ServiceConfig,
  state: ServiceState,
  probe: ProbeResult,
  now: number,
  sayRecovered = true,
): Outcome {
  const next: ServiceState = { ...state, strikes: 0, givenUp: false, failedInRow: 0, backoffUntil: null, outage: null };
  const log: LogLine[] = [];
  if (state.outage) {
    // An outage never ends before it began (a since recorded ahead of now, across a clock step).
    const since = Math.min(state.outage.since, now);
    const { reason } = state.outage;
    if (sayRecovered) {
      const before = state.outage.before;
      const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;
      const message = before
        ? `${service.name} is healthy again (down ${seconds(before.to - before.since)} until ` +
          `${utcStamp(new Date(before.to))} UTC, then no data for ${seconds(before.noDataMs)}, ` +
          `down again ${seconds(now - since)}) (${probe.detail})`
        : `${service.name} is healthy again after ${humanDuration(now - since)} (${probe.detail})`;
      // ✅ only for an outage that was notified; a blip or a wait is logged and measured, not notified.
      log.push({ tag: "RECOVERED", ...(state.outage.notified ? { event: "recovered" as const } : {}), message });
    }
    const incident = Boolean(state.outage.notified || state.outage.waited);
    const record: OutageRecord = { from: since, to: now, reason, ...(incident ? { incident } : {}) };
    log.push(downtimeLine({ name: service.name, from: since, to: now, reason }));
    return { next: { ...next, outages: [...state.outages, record].slice(-OUTAGE_HISTORY) }, log };
  }
  if (state.owedRecovery && sayRecovered) {
    const { since, to, noDataMs } = state.owedRecovery;
    // The numbers its DOWNTIME line gave, in the same whole seconds.
    const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;
    const message =
      `${service.name} is healthy again (down ${seconds(to - since)} until ${utcStamp(new Date(to))} UTC, ` +
      `then no data for ${seconds(noDataMs)}) (${probe.detail})`;
    log.push({ tag: "RECOVERED", event: "recovered", message });
    return { next: { ...next, owedRecovery: null }, log };
  }
  if (state.givenUp && sayRecovered) {
    log.push({ tag: "RECOVERED", event: "recovered", message: `${service.name} is healthy again: no longer given up` });
  }
  return { next, log };
}

const givenUpRetryDue = (service: ServiceConfig, state: ServiceState, now: number) =>
  service.givenUpRetryMs > 0 && now >= givenUpFrom(state, now) + service.givenUpRetryMs;

/** When it was given up (an older state without the time: its last restart). */
const givenUpFrom = (state: ServiceState, now: number) => Math.min(state.givenUpAt ?? state.lastRestartAt ?? now, now);

/** Restarts inside restart_window (one recorded ahead of now, across a clock step, is not: it is no evidence). */
const windowRestarts = (service: ServiceConfig, state: ServiceState, now: number) =>
  state.restartTimes.filter((at) => at > now - service.restartWindowMs && at <= now);
