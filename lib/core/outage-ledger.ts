/**
 * The outage ledger: what probes and outages leave in a service's state — the probe record, an outage
 * opened at its first failed probe, closed (RECOVERED, DOWNTIME) or cut by a gap the watchdog did not see,
 * and whether it was notified (only then is its end worth a ✅). Pure, as decide.ts is.
 */
import type { ProbeResult } from "../checks/kind.ts";
import type { ServiceConfig } from "../config/types.ts";
import { LATENCY_HISTORY, OUTAGE_HISTORY, type LatencySample, type OutageRecord, type ServiceState } from "./state.ts";
import { humanDuration } from "./duration.ts";
import { appendSample } from "./latency.ts";
import { downtimeLine, downtimeMessage, type Downtime, type LogLine } from "./events.ts";
import { utcStamp } from "./time.ts";
import type { Outcome } from "./decide.ts";

/** The events that tell the operator of an outage (⚠️ 🚨 ⛔): only after one of them is its end worth a ✅. */
export const OUTAGE_EVENTS: ReadonlySet<string> = new Set(["restart", "failed", "held", "given-up"]);

/** The open outage was notified: its RECOVERED is sent (✅); a blip below N strikes or a WAIT is only logged. */
export function markNotified(next: ServiceState, log: LogLine[], now: number): ServiceState {
  if (!log.some((line) => line.event && OUTAGE_EVENTS.has(line.event))) return next;
  const remindedAt = now; // remind_every counts from the latest 🚨/⛔
  if (!next.outage || next.outage.notified) return { ...next, remindedAt };
  return { ...next, outage: { ...next.outage, notified: true }, remindedAt };
}

/**
 * Time the watchdog did not see is no data, never downtime: an outage open when the gap began closes
 * as measured, at its last failed probe, "(then no data for Ns)". If it was notified, the next
 * healthy probe still sends its ✅; if it is still failing, a new outage opens (already notified).
 */
export function cutByGap(service: ServiceConfig, state: ServiceState, gap: Downtime): [ServiceState, LogLine] {
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

/** Nagios's flap detection: changes of the probe result among the last FLAP_WINDOW probes. */
const FLAP_WINDOW = 20;
/** An outage's reasons, weakest first: it keeps the strongest it reached (a crash stays a crash). */
export const REASON_STRENGTH = [
  "dependency",
  "failing",
  "check_failed",
  "memory",
  "busy_timeout",
  "hung_restart",
  "crash",
];
export const strongest = (held: string, reached: string) =>
  REASON_STRENGTH.indexOf(reached) > REASON_STRENGTH.indexOf(held) ? reached : held;

export function recordProbe(state: ServiceState, probe: ProbeResult, now: number, timeoutMs: number): ServiceState {
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

/**
 * When a service whose process was found gone went down: when it was last seen alive — healthy, or
 * started by tend (a start after a reboot whose verification was cut), or seen by the loop (`aliveAt`)
 * — not when it was found gone; never in time the watchdog did not see (a gap's is no data; a
 * reboot's is the host's downtime, counted once): never before the last gap's end nor before this boot
 * (`bootAt`: a service the first pass after a reboot did not judge, paused then, has no gap of its own,
 * and its outage spanned the power-off: ground truth, seed 318).
 */
export function crashSince(
  state: ServiceState,
  now: number,
  { aliveAt = null, bootAt }: { aliveAt?: number | null; bootAt: number },
): number {
  const lastSeenAlive = Math.max(
    state.lastHealthyAt ?? now,
    state.startedAt ?? 0,
    state.gaps.at(-1)?.to ?? 0,
    aliveAt ?? 0,
    bootAt,
  );
  return Math.min(now, lastSeenAlive);
}

export function openOutage(state: ServiceState, now: number, reason: string): ServiceState {
  if (state.outage) return state;
  // Still down after a gap that cut a notified outage: this one was notified already (its ✅ is owed,
  // and tells the whole story: the part before the gap, the gap, this part).
  if (state.owedRecovery)
    return { ...state, owedRecovery: null, outage: { since: now, reason, notified: true, before: state.owedRecovery } };
  return { ...state, outage: { since: now, reason } };
}

/** Whole seconds: the numbers a DOWNTIME line gave. */
const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;

/** The part of a story before a watchdog gap cut it: its ✅ tells it too (never only the part after the gap). */
export const beforeGap = ({ since, to, noDataMs }: { since: number; to: number; noDataMs: number }) =>
  `down ${seconds(to - since)} until ${utcStamp(new Date(to))} UTC, then no data for ${seconds(noDataMs)}`;

/** Healthy: strikes 0; an open outage closes (RECOVERED unless the caller says it, and a DOWNTIME line). */
export function closeOutage(
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
      const message = before
        ? `${service.name} is healthy again (${beforeGap(before)}, ` +
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
    const message = `${service.name} is healthy again (${beforeGap(state.owedRecovery)}) (${probe.detail})`;
    log.push({ tag: "RECOVERED", event: "recovered", message });
    return { next: { ...next, owedRecovery: null }, log };
  }
  if (state.givenUp && sayRecovered) {
    log.push({ tag: "RECOVERED", event: "recovered", message: `${service.name} is healthy again: no longer given up` });
  }
  return { next, log };
}
