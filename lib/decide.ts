import type { ServiceConfig } from "./config.ts";
import { humanDuration } from "./duration.ts";
import { localStamp, type Tag } from "./log.ts";
import type { ProbeResult } from "./probe.ts";
import { LATENCY_HISTORY, type ServiceState } from "./state.ts";

/** What the pass knows about a service before probing it. */
export interface Facts {
  now: number;
  uptimeMs: number;
  bootDelayMs: number;
  /** From the service's pid source; null when it has none. supervised: systemd/launchd restart it, not tend. */
  process: { running: boolean; startedAt: number | null; detail: string; supervised?: boolean } | null;
  /** Set when a restart cannot help: a dependency is failing, a required name does not resolve. */
  waitReason: string | null;
}

export type DecisionKind = "skip" | "crash" | "ok" | "strike" | "wait" | "restart" | "give-up";

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
  /** Why (skip: disabled/paused/boot_delay/grace; strike: why no restart was done at N; restart: hung/crash). */
  reason: string;
  next: ServiceState;
  log: LogLine[];
}

const checks = (count: number) => `${count} check${count === 1 ? "" : "s"}`;
const clock = (ms: number) => localStamp(new Date(ms)).slice(11);

/**
 * Before probing: skip (disabled, paused, boot_delay, grace) or start a crashed process at once.
 * null means: probe, then `judge`.
 */
export function gate(service: ServiceConfig, state: ServiceState, facts: Facts): Decision | null {
  const { now } = facts;
  const skip = (reason: string): Decision => ({ kind: "skip", reason, next: state, log: [] });
  if (!service.enabled) return skip("disabled");
  if (state.paused && (state.pausedUntil === null || state.pausedUntil > now)) return skip("paused");
  if (facts.uptimeMs < facts.bootDelayMs) return skip("boot_delay");

  if (facts.process && !facts.process.running && !facts.process.supervised && service.restart) {
    const opened = openOutage(state, now, "crash");
    const held = restartHold(service, opened, now);
    if (held) return { kind: "strike", reason: held, next: opened, log: [] };
    const next = { ...opened, outage: { since: opened.outage!.since, reason: "crash" } };
    if (windowRestarts(service, state, now).length >= service.maxRestarts) return giveUp(service, next, `${service.name} is not running (${facts.process.detail})`);
    return {
      kind: "crash",
      reason: "crash",
      next,
      log: [{ tag: "RESTART", event: "restart", message: `${service.name} is not running (${facts.process.detail}): starting it (crash)` }],
    };
  }

  const graceFrom = Math.max(state.startedAt ?? 0, facts.process?.startedAt ?? 0);
  if (graceFrom && now < graceFrom + service.graceMs) return skip("grace");
  return null;
}

/** After probing: ok, strike k/N, wait, restart at N, or give up. */
export function judge(service: ServiceConfig, state: ServiceState, probe: ProbeResult, facts: Facts): Decision {
  const { now } = facts;
  const recorded = recordProbe(state, probe, now);
  if (probe.ok) return { kind: "ok", reason: "healthy", ...closeOutage(service, recorded, probe, now) };

  const failing = openOutage(recorded, now, "failing");
  if (facts.waitReason) {
    return {
      kind: "wait",
      reason: facts.waitReason,
      next: failing,
      log: [{ tag: "WAIT", message: `${service.name} failed health check (${probe.detail}) but ${facts.waitReason}: not counted, not restarted` }],
    };
  }
  const strikes = Math.min(state.strikes + 1, service.failures);
  const next = { ...failing, strikes };
  const warn: LogLine = { tag: "WARN", message: `${service.name} failed health check (${probe.detail}, failure ${strikes}/${service.failures})` };
  if (strikes < service.failures) return { kind: "strike", reason: "below threshold", next, log: [warn] };

  const held = service.restart ? restartHold(service, next, now) : "no restart action configured";
  if (held) {
    // Say once why the restart is held, not at every pass.
    const said = state.strikes >= service.failures;
    return { kind: "strike", reason: held, next, log: [said ? warn : { ...warn, message: `${warn.message}; not restarting: ${held}` }] };
  }
  if (windowRestarts(service, state, now).length >= service.maxRestarts) {
    const decision = giveUp(service, next, `${service.name} failed ${checks(strikes)} in a row`);
    return { ...decision, log: [warn, ...decision.log] };
  }
  return {
    kind: "restart",
    reason: "hung_restart",
    next: { ...next, outage: { since: next.outage!.since, reason: "hung_restart" } },
    log: [
      warn,
      { tag: "HUNG", event: "restart", message: `${service.name} failed ${checks(strikes)} in a row (last: ${probe.detail}): restarting` },
    ],
  };
}

/** gate + judge: the whole decision, for callers that have probed already (tests, dry runs). */
export function decide(service: ServiceConfig, state: ServiceState, facts: Facts, probe: ProbeResult): Decision {
  return gate(service, state, facts) ?? judge(service, state, probe, facts);
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
    ...state,
    restartsTotal: state.restartsTotal + 1,
    restartTimes: [...windowRestarts(service, state, startedAt), startedAt],
    lastRestartAt: startedAt,
    startedAt,
  };
  if (outcome.lastProbe) next = recordProbe(next, outcome.lastProbe, now);
  if (outcome.recovered) {
    const ok = { ...next, strikes: 0, recoveriesOk: next.recoveriesOk + 1, failedInRow: 0, backoffUntil: null };
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
  const failed = { ...next, recoveriesFailed: next.recoveriesFailed + 1, failedInRow, backoffUntil: now + backoffMs };
  const what = outcome.issued ? `did not recover within ${humanDuration(service.verifyTimeoutMs)} after restart` : `could not be restarted`;
  return {
    kind: "restart",
    reason: "failed",
    next: failed,
    log: [{ tag: "FAILED", event: "failed", message: `${service.name} ${what} (${outcome.detail}); backoff ${humanDuration(backoffMs)}` }],
  };
}

function recordProbe(state: ServiceState, probe: ProbeResult, now: number): ServiceState {
  const latencies = [...state.latencies, [now, probe.latencyMs, probe.ok ? 1 : 0] as [number, number, number]].slice(-LATENCY_HISTORY);
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
    const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ");
    log.push({ tag: "DOWNTIME", downtime: true, message: `${service.name} was unavailable for ${seconds}s (${reason}, from ${utc(since)} UTC to ${utc(now)} UTC)` });
  } else if (state.givenUp && sayRecovered) {
    log.push({ tag: "RECOVERED", event: "recovered", message: `${service.name} is healthy again: no longer given up` });
  }
  return { next, log };
}

/** Why a restart cannot happen now (given-up, backoff, cooldown), or null. */
function restartHold(service: ServiceConfig, state: ServiceState, now: number): string | null {
  if (state.givenUp) return "given up (watchdog reset to retry)";
  if (state.backoffUntil && now < state.backoffUntil) return `backoff until ${clock(state.backoffUntil)}`;
  if (state.lastRestartAt && now < state.lastRestartAt + service.cooldownMs) return `cooldown until ${clock(state.lastRestartAt + service.cooldownMs)}`;
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
