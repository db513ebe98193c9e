import { watchedServices } from "../config/watched.ts";
import { coveredBy, mergeSpans, overlap, type Span } from "../core/spans.ts";
import type { Config } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { usageError } from "../core/errors.ts";
import { localStamp } from "../core/time.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import type { ServiceState } from "../core/state.ts";
import type { Paint } from "./status.ts";

export type Cell = "up" | "degraded" | "down" | "none";

export interface ServiceReport {
  name: string;
  /** Share of the observed time the service was available (0..1); null with no observed time. */
  availability: number | null;
  /** The time the watchdog saw the service in the window, and the rest (gaps, before it was first seen). */
  observed_s: number;
  no_data_s: number;
  downtime_s: number;
  outages: number;
  restarts: number;
  auto_restarts: number;
  recoveries_ok: number;
  recoveries_failed: number;
  /** Mean time to recovery: the mean length of the outages that ended in the window. */
  mttr_s: number | null;
  /** Flapping spells (6+ changes in 20 probes) that touch the window, and their time in it. */
  flapping_spells: number;
  flapping_s: number;
  timeline: Cell[];
}

export interface Report {
  since: string;
  until: string;
  cell_s: number;
  services: ServiceReport[];
}

/**
 * Per service over [now - since, now]: availability, downtime, restarts, systemd auto-restarts,
 * recoveries and MTTR, from the outages and gaps recorded in the state files (so it survives the watchdog's own
 * restarts). Time before tend first watched a service, and the host's own gaps, are "no data".
 */
export function buildReport(
  config: Config,
  sinceMs: number,
  now = Date.now(),
  cells = 48,
  read: StateReader = stateReader(config.watchdog.stateDir),
  names: string[] = [],
): Report {
  const all = watchedServices(config, read);
  const unknown = names.filter((name) => !all.some((service) => service.name === name));
  if (unknown.length)
    throw usageError(
      `no such service: ${unknown.join(", ")} (configured: ${all.map((s) => s.name).join(", ") || "none"})`,
    );
  const rows = all
    .filter((service) => !names.length || names.includes(service.name))
    .map((service) => serviceReport(service.name, read(service.name), sinceMs, now, cells));
  return reportOf(rows, sinceMs, now, cells);
}

/** The report around its rows (the page builds the rows a slice at a time). */
export function reportOf(services: ServiceReport[], sinceMs: number, now: number, cells = 48): Report {
  return {
    since: new Date(now - sinceMs).toISOString(),
    until: new Date(now).toISOString(),
    cell_s: Math.round(sinceMs / cells / 1000),
    services,
  };
}

/** One service's row of the report, from its state. */
export function serviceReport(
  name: string,
  state: ServiceState,
  sinceMs: number,
  now: number,
  cells = 48,
): ServiceReport {
  const window: Span = [now - sinceMs, now];
  const cellMs = sinceMs / cells;
  const hostGaps: Span[] = mergeSpans(
    state.gaps.map((gap) => [gap.from, gap.to]),
    window,
  );
  const outageSpans: Span[] = state.outages.map((outage) => [outage.from, outage.to]);
  if (state.outage) outageSpans.push([state.outage.since, now]);
  const spans = mergeSpans(outageSpans, window);
  // Observed from the first probe that told something: healthy, or the start of an outage. Before
  // that (a new service's first start, a service tend has not judged yet) is no data.
  const firstSeen = Math.min(state.firstHealthyAt ?? now, ...outageSpans.map(([from]) => from));
  const observedSpan: Span = [Math.max(window[0], firstSeen), window[1]];
  const observedMs = Math.max(0, observedSpan[1] - observedSpan[0]) - coveredBy(hostGaps, observedSpan);
  const downMs =
    coveredBy(spans, observedSpan) -
    coveredBy(
      mergeSpans(
        hostGaps.flatMap((gap) => spans.map(([a, b]) => [Math.max(a, gap[0]), Math.min(b, gap[1])] as Span)),
        window,
      ),
      observedSpan,
    );
  const inWindow = (at: number) => at >= window[0] && at <= window[1];
  const ended = state.outages.filter((outage) => inWindow(outage.to));
  // The history's entries in the window, counted by what they were: one look at each.
  const counted = new Map<string, number>();
  for (const entry of state.history)
    if (inWindow(entry.at)) counted.set(entry.what, (counted.get(entry.what) ?? 0) + (entry.count ?? 1));
  const count = (what: string) => counted.get(what) ?? 0;
  // Nothing down and no gap in the window (most services, most days): each cell is up where it was seen.
  const calm = spans.length === 0 && hostGaps.length === 0;
  const timeline = Array.from({ length: cells }, (_, index): Cell => {
    const cell: Span = [window[0] + index * cellMs, window[0] + (index + 1) * cellMs];
    if (calm) return overlap(cell, observedSpan) > 0 ? "up" : "none";
    const seen = Math.max(
      0,
      overlap(cell, observedSpan) -
        coveredBy(hostGaps, [Math.max(cell[0], observedSpan[0]), Math.min(cell[1], observedSpan[1])]),
    );
    if (seen <= 0) return "none";
    const down = coveredBy(spans, [Math.max(cell[0], observedSpan[0]), Math.min(cell[1], observedSpan[1])]);
    return down <= 0 ? "up" : down >= seen * 0.999 ? "down" : "degraded";
  });
  return {
    name,
    availability: observedMs > 0 ? Math.max(0, 1 - Math.max(0, downMs) / observedMs) : null,
    observed_s: Math.round(Math.max(0, observedMs) / 1000),
    // The rest of the window, so the two always add up to it.
    no_data_s: Math.max(0, Math.round(sinceMs / 1000) - Math.round(Math.max(0, observedMs) / 1000)),
    downtime_s: Math.round(Math.max(0, downMs) / 1000),
    // Inclusive: an outage shorter than the log's one-second resolution still counts.
    outages: outageSpans.filter(([from, to]) => from <= observedSpan[1] && to >= observedSpan[0]).length,
    restarts: count("restart"),
    auto_restarts: count("auto-restart"),
    recoveries_ok: count("recovered"),
    recoveries_failed: count("failed"),
    ...flappingIn(state, window),
    mttr_s: ended.length
      ? Math.round(ended.reduce((sum, outage) => sum + (outage.to - outage.from), 0) / ended.length / 1000)
      : null,
    timeline,
  };
}

/** The flapping spells recorded (and one open now) inside the window. */
function flappingIn(state: ServiceState, window: Span): { flapping_spells: number; flapping_s: number } {
  const spells: Span[] = (state.flaps ?? []).map(({ from, to }) => [from, to]);
  if (state.flappingSince) spells.push([state.flappingSince, window[1]]);
  const inside = spells.filter(([from, to]) => to >= window[0] && from <= window[1]);
  return {
    flapping_spells: inside.length,
    flapping_s: Math.round(coveredBy(mergeSpans(inside, window), window) / 1000),
  };
}

/** Availability as `report` and the page say it ("no data" without observed time). */
export const percent = (value: number | null) =>
  value === null ? "no data" : `${(value * 100).toFixed(value >= 0.9995 && value < 1 ? 3 : 2)}%`;

export function renderReport(report: Report, { paint, pictures }: { paint: Paint; pictures: boolean }): string {
  const header = [
    "SERVICE",
    "AVAILABILITY",
    "OBSERVED",
    "DOWNTIME",
    "OUTAGES",
    "RESTARTS",
    "AUTO",
    "RECOVERIES",
    "MTTR",
    "FLAPPING",
  ];
  const windowS = (Date.parse(report.until) - Date.parse(report.since)) / 1000;
  const rows = report.services.map((s) => [
    s.name,
    percent(s.availability),
    // Availability is over the observed time: how much of the window that was, the rest no data.
    `${humanDuration(s.observed_s * 1000)} (${windowS > 0 ? Math.round((s.observed_s / windowS) * 100) : 0}%)`,
    s.downtime_s ? humanDuration(s.downtime_s * 1000) : "0s",
    String(s.outages),
    String(s.restarts),
    String(s.auto_restarts),
    `${s.recoveries_ok} ok/${s.recoveries_failed} failed`,
    s.mttr_s === null ? "-" : humanDuration(s.mttr_s * 1000),
    s.flapping_spells ? `${s.flapping_spells} (${humanDuration(s.flapping_s * 1000)})` : "-",
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]))
      .join("  ")
      .trimEnd();
  const out = [
    paint.dim(
      `report ${localStamp(new Date(report.since))} .. ${localStamp(new Date(report.until))} ` +
        `(${humanDuration(windowS * 1000)}; availability is over the observed time, the rest is no data)`,
    ),
    paint.dim(line(header)),
  ];
  const glyph: Record<Cell, (text: string) => string> = {
    up: paint.ok,
    degraded: paint.warn,
    down: paint.bad,
    none: paint.dim,
  };
  const char: Record<Cell, string> = { up: "█", degraded: "▒", down: "░", none: "·" };
  report.services.forEach((service, index) => {
    out.push(line(rows[index]));
    if (pictures)
      out.push(
        `  ${service.timeline.map((cell) => glyph[cell](char[cell])).join("")}  ` +
          `(${humanDuration(report.cell_s * 1000)} per cell)`,
      );
  });
  if (pictures)
    out.push(paint.dim(`  ${char.up} up  ${char.degraded} degraded  ${char.down} down  ${char.none} no data`));
  return out.join("\n");
}
