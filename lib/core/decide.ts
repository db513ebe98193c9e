import type { ServiceConfig } from "../config/types.ts";
import { humanDuration } from "./duration.ts";
import { localStamp, utcStamp, type Tag } from "../state/logger.ts";
import type { ProbeResult } from "../checks/index.ts";
import { judgeMemory, RSS_HISTORY } from "./memory.ts";
import { LATENCY_HISTORY, remember, type LatencySample, type ServiceState } from "../state/service.ts";

/** What the pass knows about a service before probing it. */
export interface Facts {
  now: number;
  uptimeMs: number;
  bootDelayMs: number;
  /** From the service's pid source; null when it has none. supervised: systemd/launchd restart it, not tend. */
  process: { running: boolean; startedAt: number | null; detail: string; supervised?: boolean } | null;
  /** Set when a restart cannot help: a dependency is failing, a required name does not resolve. */
  waitReason: string | null;
  /** For a failed probe with `busy` configured: does the service show it is working? */
  busy?: { busy: boolean; detail: string } | null;
  /** systemd's view of the service's unit (unit = or restart.systemd). */
  unit?: { name: string; activeState: string; nRestarts: number | null } | null;
  /** RSS of the main process tree, for `memory`. */
  rssBytes?: number | null;
}

export type DecisionKind = "skip" | "crash" | "ok" | "strike" | "busy" | "wait" | "restart" | "give-up";

export interface LogLine {
  tag: Tag;
  message: string;
  /** downtime.log instead of the watchdog log */
  downtime?: boolean;
  /** Worth a notification: the event name (dedup key with the service). */
  event?: NotifyEvent;
}

/** Watchdog events and the emoji their notification starts with. */
export const EVENTS = {
  restart: "⚠️",
  failed: "🚨",
  "auto-restart": "🔁",
  "given-up": "⛔",
  busy: "⏳",
  memory: "📈",
  recovered: "✅",
} as const;
export type NotifyEvent = keyof typeof EVENTS;

export interface Decision {
  kind: DecisionKind;
  /** Why (skip: disabled/paused/boot_delay/grace/stopped; strike: why no restart at N; restart: hung_restart/crash/busy_timeout/memory). */
  reason: string;
  next: ServiceState;
  log: LogLine[];
}

const BUSY_LOG_EVERY_MS = 5 * 60_000;
const MEMORY_WARN_EVERY_MS = 60 * 60_000;

const checks = (count: number) => `${count} check${count === 1 ? "" : "s"}`;
const clock = (ms: number) => localStamp(new Date(ms)).slice(11);

/**
 * Every pass, whatever the verdict: systemd's silent auto-restarts (NRestarts), a unit that
 * systemd gave up on, and the RSS sample for memory growth.
 */
export function observe(service: ServiceConfig, state: ServiceState, facts: Facts): { next: ServiceState; log: LogLine[] } {
  let next = state.firstSeenAt === null ? { ...state, firstSeenAt: facts.now } : state;
  const log: LogLine[] = [];
  const unit = facts.unit;
  if (unit) {
    if (service.trackRestarts && unit.nRestarts !== null) {
      const before = state.nRestarts;
      if (before !== null && unit.nRestarts > before) {
        const count = unit.nRestarts - before;
        next = remember({ ...next, autoRestarts: next.autoRestarts + count }, { at: facts.now, what: "auto-restart", count });
        log.push({ tag: "AUTO-RESTART", event: "auto-restart", message: `${service.name}: systemd restarted ${unit.name} on its own ${count === 1 ? "once" : `${count} times`} (NRestarts ${before} -> ${unit.nRestarts})` });
      }
      next = { ...next, nRestarts: unit.nRestarts }; // a decrease (manual restart) only resets the baseline
    }
    if (unit.activeState === "failed" && state.unitState !== "failed") {
      log.push({ tag: "WARN", event: "failed", message: `${service.name}: ${unit.name} is failed (systemd gave up on it): tend does not restart a failed unit; see systemctl status ${unit.name}` });
    }
    next = { ...next, unitState: unit.activeState };
  }
  if (service.memory && facts.rssBytes) {
    next = { ...next, rss: [...next.rss, [facts.now, facts.rssBytes] as [number, number]].slice(-RSS_HISTORY) };
  }
  return { next, log };
}

/**
 * Before probing: skip (disabled, paused, boot_delay, a unit stopped on purpose, grace) or
 * start a crashed process at once. null means: probe, then `judge`.
 */
export function gate(service: ServiceConfig, state: ServiceState, facts: Facts): Decision | null {
  const { now } = facts;
  const skip = (reason: string): Decision => ({ kind: "skip", reason, next: state, log: [] });
  if (!service.enabled) return skip("disabled");
  if (state.paused && (state.pausedUntil === null || state.pausedUntil > now)) return skip("paused");
  if (facts.uptimeMs < facts.bootDelayMs) return skip("boot_delay");
  if (facts.unit?.activeState === "inactive") return skip("stopped"); // stopped on purpose: never started

  if (facts.process && !facts.process.running && !facts.process.supervised && service.restart) {
    const line: LogLine = { tag: "RESTART", event: "restart", message: `${service.name} is not running (${facts.process.detail}): starting it (crash)` };
    return restartOrHold(service, openOutage(state, now, "crash"), facts, "crash", `${service.name} is not running (${facts.process.detail})`, [], [line]);
  }

  const graceFrom = Math.max(state.startedAt ?? 0, facts.process?.startedAt ?? 0);
  if (graceFrom && now < graceFrom + service.graceMs) return skip("grace");
  return null;
}

/** After probing: ok, busy, wait, strike k/N, restart (at N, busy too long, memory), or give up. */
export function judge(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const { now } = facts;
  const recorded = recordProbe(state, probe, now);
  if (probe.ok) return judgeHealthy(service, { ...recorded, busySince: null }, probe, facts);

  const failing = openOutage(recorded, now, "failing");
  if (facts.busy?.busy && service.busy) {
    const busySince = state.busySince ?? now;
    if (now - busySince > service.busy.maxMs) {
      const why = `${service.name} has been busy for ${humanDuration(now - busySince)}, longer than busy.max ${humanDuration(service.busy.maxMs)}`;
      const hung: LogLine = { tag: "HUNG", event: "restart", message: `${why}: restarting (busy_timeout)` };
      return restartOrHold(service, { ...failing, busySince }, facts, "busy_timeout", why, [], [hung]);
    }
    const due = state.busySince === null || (state.busyLoggedAt ?? 0) + BUSY_LOG_EVERY_MS <= now;
    const line: LogLine = {
      tag: "BUSY",
      message: `${service.name} failed health check (${probe.detail}) but is busy (${facts.busy.detail}): not counted, not restarted (busy for ${humanDuration(now - busySince)}, limit ${humanDuration(service.busy.maxMs)})`,
      ...(state.busySince === null ? { event: "busy" as const } : {}),
    };
    return { kind: "busy", reason: facts.busy.detail, next: { ...failing, busySince, busyLoggedAt: due ? now : state.busyLoggedAt }, log: due ? [line] : [] };
  }
  const notBusy = { ...failing, busySince: null };
  if (facts.waitReason) {
    return {
      kind: "wait",
      reason: facts.waitReason,
      next: notBusy,
      log: [{ tag: "WAIT", message: `${service.name} failed health check (${probe.detail}) but ${facts.waitReason}: not counted, not restarted` }],
    };
  }
  const strikes = Math.min(state.strikes + 1, service.failures);
  const next = { ...notBusy, strikes };
  const warn: LogLine = { tag: "WARN", message: `${service.name} failed health check (${probe.detail}, failure ${strikes}/${service.failures})` };
  if (strikes < service.failures) return { kind: "strike", reason: "below threshold", next, log: [warn] };
  const hung: LogLine = { tag: "HUNG", event: "restart", message: `${service.name} failed ${checks(strikes)} in a row (last: ${probe.detail}): restarting` };
  return restartOrHold(service, next, facts, "hung_restart", `${service.name} failed ${checks(strikes)} in a row`, [warn], [hung], state.strikes >= service.failures);
}

/** Healthy: strikes 0, outage closed; memory may still warn or ask for a preventive restart. */
function judgeHealthy(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const healthy = { kind: "ok" as const, reason: "healthy", ...closeOutage(service, state, probe, facts.now) };
  if (!service.memory) return healthy;
  const verdict = judgeMemory(service.name, service.memory, healthy.next.rss);
  if (verdict.restart) {
    const line: LogLine = { tag: "MEMORY", event: "memory", message: `${verdict.restart}: restarting (memory)` };
    const decision = restartOrHold(service, healthy.next, facts, "memory", verdict.restart, healthy.log, [line]);
    return decision.kind === "restart" || decision.kind === "give-up" ? decision : healthy;
  }
  if (verdict.warn && (state.memoryWarnedAt ?? 0) + MEMORY_WARN_EVERY_MS <= facts.now) {
    return { ...healthy, next: { ...healthy.next, memoryWarnedAt: facts.now }, log: [...healthy.log, { tag: "MEMORY", event: "memory", message: verdict.warn }] };
  }
  return healthy;
}

/**
 * A restart is wanted: hold it (given-up, backoff, cooldown, a failed unit, no action), give up
 * (max_restarts within restart_window), or restart. `before` lines come first in every case.
 */
function restartOrHold(
  service: ServiceConfig,
  state: ServiceState,
  facts: Facts,
  reason: string,
  why: string,
  before: LogLine[],
  restartLines: LogLine[],
  heldAlreadySaid = false,
): Decision {
  const { now } = facts;
  const held = !service.restart
    ? "no restart action configured"
    : facts.unit?.activeState === "failed"
      ? `${facts.unit.name} is failed (systemd's start limit is respected)`
      : restartHold(service, state, now, reason !== "crash");
  if (held) {
    // Say once why the restart is held, not at every pass.
    const log = before.length && !heldAlreadySaid ? [{ ...before[0], message: `${before[0].message}; not restarting: ${held}` }, ...before.slice(1)] : before;
    return { kind: "strike", reason: held, next: state, log };
  }
  if (windowRestarts(service, state, now).length >= service.maxRestarts) {
    const decision = giveUp(service, state, why);
    return { ...decision, log: [...before, ...decision.log] };
  }
  const outage = state.outage ? { since: state.outage.since, reason } : null;
  return { kind: reason === "crash" ? "crash" : "restart", reason, next: { ...state, outage }, log: [...before, ...restartLines] };
}

/** observe + gate + judge: the whole decision, for callers that have probed already (tests, dry runs). */
export function decide(service: ServiceConfig, state: ServiceState, facts: Facts, probe: ProbeResult): Decision {
  const observed = observe(service, state, facts);
  const decision = gate(service, observed.next, facts) ?? judge(service, observed.next, probe, facts);
  return { ...decision, log: [...observed.log, ...decision.log] };
}

export interface RestartOutcome {
  /** The restart action itself ran (false: it failed; detail says why). */
  issued: boolean;
  recovered: boolean;
  /** ms from the restart to the first healthy probe, or to giving up verifying */
  elapsedMs: number;
  detail: string;
  lastProbe: ProbeResult | null;
}

/** Count a restart and its verification: RECOVERED or FAILED, backoff after a failure. */
export function recordRestart(service: ServiceConfig, state: ServiceState, outcome: RestartOutcome, startedAt: number, now: number): Decision {
  let next: ServiceState = {
    ...remember(state, { at: startedAt, what: "restart" }),
    restartsTotal: state.restartsTotal + 1,
    restartTimes: [...windowRestarts(service, state, startedAt), startedAt],
    lastRestartAt: startedAt,
    startedAt,
  };
  if (outcome.lastProbe) next = recordProbe(next, outcome.lastProbe, now);
  if (outcome.recovered) {
    const ok = { ...remember(next, { at: now, what: "recovered" }), strikes: 0, recoveriesOk: next.recoveriesOk + 1, failedInRow: 0, backoffUntil: null };
    const closed = closeOutage(service, ok, outcome.lastProbe!, now, false);
    return {
      kind: "ok",
      reason: "recovered",
      next: closed.next,
      log: [{ tag: "RECOVERED", event: "recovered", message: `${service.name} recovered ${humanDuration(outcome.elapsedMs)} after restart (${outcome.detail})` }, ...closed.log],
    };
  }
  const failedInRow = next.failedInRow + 1;
  const backoffMs = Math.min(service.backoffMs * 2 ** (failedInRow - 1), service.backoffMaxMs);
  const failed = { ...remember(next, { at: now, what: "failed" }), recoveriesFailed: next.recoveriesFailed + 1, failedInRow, backoffUntil: now + backoffMs };
  const what = outcome.issued ? `did not recover within ${humanDuration(service.verifyTimeoutMs)} after restart` : `could not be restarted`;
  return {
    kind: "restart",
    reason: "failed",
    next: failed,
    log: [{ tag: "FAILED", event: "failed", message: `${service.name} ${what} (${outcome.detail}); backoff ${humanDuration(backoffMs)}` }],
  };
}

function recordProbe(state: ServiceState, probe: ProbeResult, now: number): ServiceState {
  const sample: LatencySample = [now, probe.latencyMs, probe.ok ? 1 : 0, probe.timedOut ? 1 : 0];
  const latencies = [...state.latencies, sample].slice(-LATENCY_HISTORY);
  return { ...state, latencies, lastProbe: { at: now, ok: probe.ok, detail: probe.detail, latencyMs: probe.latencyMs } };
}

function openOutage(state: ServiceState, now: number, reason: string): ServiceState {
  return state.outage ? state : { ...state, outage: { since: now, reason } };
}

/** Healthy: strikes 0; an open outage closes (RECOVERED unless the caller says it, and a DOWNTIME line). */
function closeOutage(service: ServiceConfig, state: ServiceState, probe: ProbeResult, now: number, sayRecovered = true) {
  const next: ServiceState = { ...state, strikes: 0, givenUp: false, failedInRow: 0, backoffUntil: null, outage: null };
  const log: LogLine[] = [];
  if (state.outage) {
    const { since, reason } = state.outage;
    const seconds = Math.round((now - since) / 1000);
    if (sayRecovered) log.push({ tag: "RECOVERED", event: "recovered", message: `${service.name} is healthy again after ${humanDuration(now - since)} (${probe.detail})` });
    const utc = (ms: number) => utcStamp(new Date(ms));
    log.push({ tag: "DOWNTIME", downtime: true, message: `${service.name} was unavailable for ${seconds}s (${reason}, from ${utc(since)} UTC to ${utc(now)} UTC)` });
  } else if (state.givenUp && sayRecovered) {
    log.push({ tag: "RECOVERED", event: "recovered", message: `${service.name} is healthy again: no longer given up` });
  }
  return { next, log };
}

/** Why a restart cannot happen now (given-up, backoff, cooldown), or null. */
/** A process that is gone is started without waiting out the cooldown: backoff and max_restarts bound a crash loop. */
function restartHold(service: ServiceConfig, state: ServiceState, now: number, cooldown = true): string | null {
  if (state.givenUp) return "given up (watchdog reset to retry)";
  if (state.backoffUntil && now < state.backoffUntil) return `backoff until ${clock(state.backoffUntil)}`;
  if (cooldown && state.lastRestartAt && now < state.lastRestartAt + service.cooldownMs) return `cooldown until ${clock(state.lastRestartAt + service.cooldownMs)}`;
  return null;
}

const windowRestarts = (service: ServiceConfig, state: ServiceState, now: number) =>
  state.restartTimes.filter((at) => at > now - service.restartWindowMs);

function giveUp(service: ServiceConfig, state: ServiceState, why: string): Decision {
  return {
    kind: "give-up",
    reason: "max_restarts",
    next: { ...state, givenUp: true },
    log: [{
      tag: "GIVEN-UP",
      event: "given-up",
      message: `${why} but was restarted ${service.maxRestarts} times within ${humanDuration(service.restartWindowMs)}: giving up until it is healthy again or \`watchdog reset ${service.name}\``,
    }],
  };
}
