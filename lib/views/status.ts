import { watchedServices } from "./watched.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { usageError } from "../core/errors.ts";
import { localStamp } from "../core/time.ts";
import { CALM, isStale, stateWord, type StateWord } from "../core/health.ts";
import { readHeartbeat } from "../state/heartbeat.ts";
import { limiter } from "../core/limiter.ts";
import { mainProcess } from "../os/pidsource.ts";
import { probe, type ProbeResult } from "../checks/index.ts";
import { stateReader, type StateReader } from "../state/service.ts";
import { type ServiceState } from "../core/state.ts";
import { readDead, readNotifyState, readSpool } from "../notify/spool.ts";

export interface StatusRow {
  name: string;
  state: string;
  strikes: number;
  failures: number;
  probe: { ok: boolean; detail: string; latency_ms: number; at: string | null } | null;
  restarts: number;
  recoveries_ok: number;
  recoveries_failed: number;
  last_event: { at: string; tag: string; message: string } | null;
}

export interface StatusReport {
  last_pass: string | null;
  /** The watchdog itself: stale when its last pass is older than 2 x interval + 30 s. */
  watchdog: { last_pass: string | null; stale: boolean; expected_every_s: number };
  services: StatusRow[];
  /** Notifications waiting in the spool, and the last delivery failure (cleared by a clean delivery). */
  notify: { spooled: number; dead: number; last_error: { at: string; detail: string } | null };
}

export interface StatusOptions {
  names?: string[];
  /** Use the last pass's probe instead of probing now. */
  cached?: boolean;
  now?: () => number;
  read?: StateReader;
}

/** Probe every (named) service now, with the pass's own probe, and describe it. Changes nothing. */
export async function collectStatus(
  config: Config,
  { names = [], cached = false, now = Date.now, read = stateReader(config.watchdog.stateDir) }: StatusOptions = {},
): Promise<StatusReport> {
  const all = watchedServices(config, read);
  const unknown = names.filter((name) => !all.some((service) => service.name === name));
  if (unknown.length)
    throw usageError(
      `no such service: ${unknown.join(", ")} (configured: ${all.map((s) => s.name).join(", ") || "none"})`,
    );
  const chosen = all.filter((service) => names.length === 0 || names.includes(service.name));
  const limit = limiter(config.watchdog.concurrency); // the same bound as a pass
  const rows = await Promise.all(
    chosen.map((service) =>
      limit(async () => {
        // Missing or corrupt: a fresh state (a pass repairs and logs it, status does not).
        const state = read(service.name);
        let result: ProbeResult | null = null;
        let at: number | null = null;
        if (cached) {
          if (state.lastProbe) result = { ...state.lastProbe, timedOut: false };
          at = state.lastProbe?.at ?? null;
        } else if (service.enabled) {
          const main = await mainProcess(service, state);
          result = await probe(service.check, { process: main?.info });
          at = now();
        }
        return describe(service, state, result, at, now());
      }),
    ),
  );
  const spooled = readSpool(config.watchdog.stateDir).messages.length;
  const watchdog = watchdogFreshness(config, now());
  return {
    last_pass: watchdog.last_pass,
    watchdog,
    services: rows,
    notify: {
      spooled,
      dead: readDead(config.watchdog.stateDir).length,
      last_error: readNotifyState(config.watchdog.stateDir).lastError,
    },
  };
}

/** The watchdog itself, from its heartbeat: stale when the last pass is older than 2 x interval + 30 s. */
export function watchdogFreshness(config: Config, now: number): StatusReport["watchdog"] {
  const heartbeat = readHeartbeat(config.watchdog.stateDir);
  const intervalMs = heartbeat?.intervalMs ?? config.watchdog.intervalMs;
  const lastPass = heartbeat ? Date.parse(heartbeat.at) : null;
  return {
    last_pass: heartbeat?.at ?? null,
    stale: isStale(lastPass, intervalMs, now),
    expected_every_s: Math.round(intervalMs / 1000),
  };
}

function describe(
  service: ServiceConfig,
  state: ServiceState,
  result: ProbeResult | null,
  at: number | null,
  now: number,
): StatusRow {
  return {
    name: service.name,
    state: statusWord(service, state, result, now),
    strikes: state.strikes,
    failures: service.failures,
    probe: result && {
      ok: result.ok,
      detail: result.detail,
      latency_ms: result.latencyMs,
      at: at ? new Date(at).toISOString() : null,
    },
    restarts: state.restartsTotal,
    recoveries_ok: state.recoveriesOk,
    recoveries_failed: state.recoveriesFailed,
    last_event: state.lastEvent && {
      at: new Date(state.lastEvent.at).toISOString(),
      tag: state.lastEvent.tag,
      message: state.lastEvent.message,
    },
  };
}

/** healthy, failing n/N, busy, restarting, backoff, given-up, paused, stopped, waiting, disabled, new. */
function statusWord(service: ServiceConfig, state: ServiceState, result: ProbeResult | null, now: number): string {
  const word = stateWord(service, state, result ? result.ok : null, now);
  return word === "failing" ? `failing ${Math.max(1, state.strikes)}/${service.failures}` : word;
}

/** Exit 0 only when every service needs nobody and the watchdog itself is running. */
export const allHealthy = (report: StatusReport) =>
  !report.watchdog.stale && report.services.every((row) => CALM.has(row.state as StateWord));

export interface Paint {
  ok: (text: string) => string;
  bad: (text: string) => string;
  warn: (text: string) => string;
  dim: (text: string) => string;
}

const plain: Paint = { ok: (t) => t, bad: (t) => t, warn: (t) => t, dim: (t) => t };

/**
 * Aligned columns; on a terminal narrower than the table (a phone), two lines per service. An
 * event of today shows its time only.
 */
export function renderStatus(report: StatusReport, paint: Paint = plain, now = Date.now(), columns = Infinity): string {
  const lastPass = report.last_pass
    ? `${localStamp(new Date(report.last_pass))} ` +
      `(${humanDuration(Math.max(0, now - Date.parse(report.last_pass)))} ago)`
    : "never";
  const today = localStamp(new Date(now)).slice(0, 10);
  const when = (iso: string) => {
    const stamp = localStamp(new Date(iso));
    return stamp.startsWith(today) ? stamp.slice(11) : stamp;
  };
  const header = ["SERVICE", "STATE", "PROBE", "STRIKES", "RESTARTS", "LAST EVENT"];
  const rows = report.services.map((row) => [
    row.name,
    row.state,
    row.probe ? (row.probe.ok ? `${row.probe.detail} ${row.probe.latency_ms}ms` : row.probe.detail) : "-",
    `${row.strikes}/${row.failures}`,
    `${row.restarts} (✓${row.recoveries_ok} ✗${row.recoveries_failed})`,
    row.last_event ? `${when(row.last_event.at)} ${row.last_event.tag}` : "-",
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]))).join("  ");
  const color = (state: string, text: string) =>
    state === "healthy"
      ? paint.ok(text)
      : state.startsWith("failing") || state === "given-up"
        ? paint.bad(text)
        : paint.warn(text);
  const wide = widths.reduce((sum, width) => sum + width + 2, 0) <= columns;
  const body = rows.flatMap((cells, index) => {
    const state = report.services[index].state;
    const stateCell = color(state, cells[1].padEnd(widths[1]));
    if (wide) return [line(cells).replace(cells[1].padEnd(widths[1]), stateCell)];
    // A phone: two lines per service, the second the probe and the last event, cut to the width.
    const detail = `  ${cells[2]} · ${cells[5]}`;
    return [
      `${cells[0].padEnd(widths[0])}  ${stateCell}  ${cells[3]}  ${cells[4]}`,
      paint.dim(detail.length > columns ? detail.slice(0, columns - 1) + "…" : detail),
    ];
  });
  const { spooled, dead: deadLetters, last_error: lastError } = report.notify;
  const notify =
    spooled || lastError || deadLetters
      ? [
          paint.bad(
            `notify: ${spooled} undelivered in the spool` +
              (deadLetters ? `, ${deadLetters} refused for good (notify --spool)` : "") +
              (lastError ? `; last failure ${localStamp(new Date(lastError.at))}: ${lastError.detail}` : ""),
          ),
        ]
      : [];
  const { watchdog } = report;
  const dead = watchdog.stale
    ? [
        paint.bad(
          `the watchdog is not running: its last pass was ` +
            `${humanDuration(now - Date.parse(watchdog.last_pass!))} ago, ` +
            `expected every ${humanDuration(watchdog.expected_every_s * 1000)} (is cron or the loop running?)`,
        ),
      ]
    : [];
  return [
    ...dead,
    paint.dim(`last pass: ${lastPass}`),
    ...notify,
    ...(wide ? [paint.dim(line(header))] : []),
    ...body,
  ].join("\n");
}
