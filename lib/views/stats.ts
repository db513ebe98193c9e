import { watchedServices } from "../config/watched.ts";
import { inSpans, mergeSpans, type Span } from "../core/spans.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { counted, humanDuration, latencyLabel } from "../core/duration.ts";
import { usageError } from "../core/errors.ts";
import { parseSamples } from "../core/latency.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import { type LatencySample, type OutageRecord, type ServiceState } from "../core/state.ts";
import type { Paint } from "./status.ts";

export interface ServiceStats {
  name: string;
  samples: number;
  /** Probes that got no answer within the timeout (their latency is the timeout: censored). */
  timeouts: number;
  /**
   * Probes inside an incident — an outage that reached N strikes (restarted or not) or waited on a
   * dependency: the incident, not the tail; left out of the percentiles and the advice.
   */
  hang_probes: number;
  /** Percentiles over every probe, a timeout counting as the timeout itself. */
  p50_ms: number | null;
  p90_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  timeout_ms: number;
  /** Set when the timeout cuts into the distribution. */
  warning: string | null;
  suggested_timeout_ms: number | null;
  /** [upper bound ms, count] per bucket, for the histogram */
  histogram: [number, number][];
}

/** Fewer samples than this under the current timeout, beside probes a shorter one cut: no advice yet. */
const MIN_ADVICE_SAMPLES = 20;

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** A round timeout above the tail: 1.5 x the larger of p99 and the slowest answer, to whole seconds. */
function suggest(p99: number, max: number): number {
  return Math.max(1000, Math.ceil((Math.max(p99, max) * 1.5) / 1000) * 1000);
}

/** An outage that is an incident: it reached N strikes or waited (records before that flag: a restart reason). */
const isIncident = (outage: OutageRecord) => outage.incident === true || outage.reason !== "failing";

/**
 * Percentiles and advice from the probes of normal operation. Probes inside an incident (a hang, a
 * frozen dependency, a rehearsal) are not the tail, and are counted apart, whether or not it ended
 * in a restart. A blip below N strikes that the next answer closed is the tail the timeout cut: kept.
 * `open`: the service's outage still open now, if any.
 */
export function serviceStats(
  service: ServiceConfig,
  samples: LatencySample[],
  outages: OutageRecord[] = [],
  buckets = 12,
  open: ServiceState["outage"] = null,
): ServiceStats {
  const timeoutMs = service.check.timeoutMs;
  const current =
    open && (open.notified || open.waited)
      ? [{ from: open.since, to: Infinity, reason: open.reason, incident: true }]
      : [];
  // Merged once, each sample found by binary search (as the page renders in the loop's process). Spans
  // hold their start, not their end: the probe that closed an outage (at its end) is kept.
  const hangs = mergeSpans([...outages.filter(isIncident), ...current].map(({ from, to }): Span => [from, to]));
  const inHang = ([at]: LatencySample) => inSpans(hangs, at);
  const latencies = samples.filter((sample) => !inHang(sample));
  const hangProbes = samples.length - latencies.length;
  // A probe cut by a timeout is "more than" that timeout (the one in force then), never a latency of
  // the timeout in force now: raising the timeout as advised must never make the advice climb.
  const cutAt = ([, ms, , , cut]: LatencySample) => cut ?? ms;
  const valueOf = (sample: LatencySample) => (sample[3] ? cutAt(sample) : sample[1]);
  const values = latencies.map(valueOf).sort((a, b) => a - b);
  const timeouts = latencies.filter(([, , , timedOut]) => timedOut).length;
  const p99 = percentile(values, 99);
  const max = values.at(-1) ?? null;
  // Advice rests only on what the current timeout would have seen: not on probes a shorter one cut.
  const shorterCut = (sample: LatencySample) => sample[3] === 1 && cutAt(sample) < timeoutMs * 0.99;
  const advisable = latencies.filter((sample) => !shorterCut(sample));
  const cutShorter = latencies.length - advisable.length;
  const basis = cutShorter ? advisable.map(valueOf).sort((a, b) => a - b) : values;
  const basisTimeouts = advisable.filter(([, , , timedOut]) => timedOut).length;
  const basisP99 = percentile(basis, 99);
  const basisMax = basis.at(-1) ?? null;
  let warning: string | null = null;
  let suggested: number | null = null;
  if (cutShorter && basis.length < MIN_ADVICE_SAMPLES) {
    warning =
      `${service.name}: not enough samples under the current timeout ${humanDuration(timeoutMs)} ` +
      `(${basis.length}; ${counted(cutShorter, "probe")} cut by a shorter one say only "more than" it)`;
  } else if (basisP99 !== null && basisMax !== null && (basisP99 >= timeoutMs || basisTimeouts / basis.length > 0.01)) {
    suggested = suggest(basisP99, basisMax);
    warning =
      `${service.name}: timeout ${humanDuration(timeoutMs)} is below the observed p99 ` +
      `(${basisTimeouts} of ${counted(basis.length, "probe")} timed out): it cuts into normal latency; ` +
      `consider timeout = "${suggested / 1000}s" and failures >= 3`;
  }
  const top = Math.max(timeoutMs * 1.25, max ?? 0, 1);
  const width = niceStep(top / buckets);
  const histogram: [number, number][] = [];
  for (let upper = width; histogram.length < buckets * 2 && upper - width < top; upper += width)
    histogram.push([upper, 0]);
  // One look at each value: its bucket is [k·width, (k+1)·width), k = ⌊value / width⌋ (past the last: not shown).
  for (const value of values) {
    const bucket = histogram[Math.floor(value / width)];
    if (bucket) bucket[1]++;
  }
  return {
    name: service.name,
    samples: values.length,
    timeouts,
    hang_probes: hangProbes,
    p50_ms: percentile(values, 50),
    p90_ms: percentile(values, 90),
    p99_ms: p99,
    max_ms: max,
    timeout_ms: timeoutMs,
    warning,
    suggested_timeout_ms: suggested,
    histogram,
  };
}

function niceStep(raw: number): number {
  const steps = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 15_000, 30_000, 60_000];
  return steps.find((step) => step >= raw) ?? Math.ceil(raw / 60_000) * 60_000;
}

export function collectStats(
  config: Config,
  names: string[] = [],
  read: StateReader = stateReader(config.watchdog.stateDir),
): ServiceStats[] {
  const all = watchedServices(config, read);
  const unknown = names.filter((name) => !all.some((service) => service.name === name));
  if (unknown.length) throw usageError(`no such service: ${unknown.join(", ")}`);
  return all
    .filter((service) => !names.length || names.includes(service.name))
    .map((service) => statsOf(service, read(service.name)));
}

/** One service's stats, from its state (its latency history parsed here, unless the caller has it parsed). */
export const statsOf = (
  service: ServiceConfig,
  { latencyLog, outages, outage }: ServiceState,
  samples: LatencySample[] = parseSamples(latencyLog),
): ServiceStats => serviceStats(service, samples, outages, 12, outage);

const ms = (value: number | null) => (value === null ? "-" : value < 1000 ? `${value}ms` : humanDuration(value));

/** One line per service; WARN lines; on a terminal, the histogram with the timeout marked. */
export function renderStats(stats: ServiceStats[], { paint, pictures }: { paint: Paint; pictures: boolean }): string {
  const out: string[] = [];
  for (const s of stats) {
    out.push(
      `${s.name}: ${counted(s.samples, "probe")}  p50 ${ms(s.p50_ms)}  p90 ${ms(s.p90_ms)}  p99 ${ms(s.p99_ms)}  ` +
        `max ${ms(s.max_ms)}  timeouts ${s.timeouts}  (timeout ${ms(s.timeout_ms)})` +
        (s.hang_probes
          ? `; ${counted(s.hang_probes, "probe")} inside outages (the incident, not the tail) left out`
          : ""),
    );
    if (s.warning) out.push(paint.bad(`WARN ${s.warning}`));
    if (pictures && s.samples) out.push(...histogram(s, paint), "");
  }
  return out.join("\n");
}

/** Bars per latency bucket; the configured timeout drawn as a line where it cuts the distribution. */
function histogram(s: ServiceStats, paint: Paint): string[] {
  const peak = Math.max(...s.histogram.map(([, count]) => count), 1);
  const label = (upper: number, width: number) => `${latencyLabel(upper - width)}-${latencyLabel(upper)}`.padStart(13);
  const width = s.histogram[0]?.[0] ?? 1;
  const lines: string[] = [];
  let marked = false;
  for (const [upper, count] of s.histogram) {
    if (!marked && upper - width >= s.timeout_ms) {
      lines.push(
        paint.bad(
          `${"".padStart(13)} ├${"─".repeat(30)} timeout ${ms(s.timeout_ms)}: slower answers count as failures`,
        ),
      );
      marked = true;
    }
    const bar = "█".repeat(Math.round((count / peak) * 30));
    const text = `${label(upper, width)} │${bar}${count ? ` ${count}` : ""}`;
    lines.push(upper > s.timeout_ms ? paint.bad(text) : paint.ok(text));
  }
  return lines;
}
