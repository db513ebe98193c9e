/**
 * The decision for one service: a pure function of (config, state, facts, probe result). What a
 * decision does to the restart count, backoff and max_restarts is restart accounting
 * (restart-accounting.ts); what it opens and closes of an outage is the outage ledger (outage-ledger.ts).
 */
import type { ProbeResult } from "../checks/kind.ts";
import type { ServiceConfig } from "../config/types.ts";
import { remember, type ServiceState } from "./state.ts";
import { counted, humanDuration } from "./duration.ts";
import type { Downtime, LogLine } from "./events.ts";
import { judgeMemory, RSS_HISTORY } from "./memory.ts";
import type { StateWord, Verdict } from "./verdict.ts";
import {
  closeOutage,
  crashSince,
  cutByGap,
  markNotified,
  OUTAGE_EVENTS,
  openOutage,
  recordProbe,
} from "./outage-ledger.ts";
import { restartOrHold, systemdGaveUp } from "./restart-accounting.ts";

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

export interface Outcome {
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
    return restartOrHold({
      service,
      state: openOutage(
        state,
        crashSince(state, now, { aliveAt: facts.aliveAt, bootAt: now - facts.uptimeMs }),
        "crash",
      ),
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
