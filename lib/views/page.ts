import { counted, humanDuration, latencyLabel } from "../core/duration.ts";
import { escapeControls } from "../core/sanitize.ts";
import { STATE_WORDS as KNOWN_WORDS } from "../core/verdict.ts";
import { rowIsCalm } from "./status.ts";
import type { Cell, Report } from "./report.ts";
import type { ServiceStats } from "./stats.ts";
import type { StatusReport, StatusRow } from "./status.ts";

/** What the page shows: the --json outputs, the log tails, and who is asking when. */
export interface PageData {
  host: string;
  now: number;
  status: StatusReport;
  /** The last 24 hours. */
  report: Report;
  stats: ServiceStats[];
  events: string[];
  downtime: string[];
  /** Seconds between the page's own reloads. */
  refreshS: number;
  peers: PeerView[];
}

/** Another host's `watchdog serve`, as its /api/status answered (or why it did not). */
export interface PeerView {
  /** Shown without its secrets. */
  url: string;
  status: StatusReport | null;
  problem: string | null;
}

/** Outside text into HTML: controls made visible first, then the five HTML characters. */
export const html = (text: string) => escapeControls(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A row's calm, by the same rule as status's exit code; a peer's unknown word is not calm. */
const calmRow = (row: StatusRow) =>
  KNOWN_WORDS.has(row.state) && rowIsCalm({ state: row.state, error: row.error ?? null, probe: row.probe });

const ago = (iso: string | null, now: number) => {
  if (!iso) return "never";
  const at = Date.parse(String(iso));
  if (Number.isNaN(at)) return "at an unknown time";
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  return seconds < 120
    ? `${seconds}s ago`
    : seconds < 7200
      ? `${Math.round(seconds / 60)} min ago`
      : `${Math.round(seconds / 3600)} h ago`;
};
const ms = latencyLabel;

// Shape as well as colour: up is a low bar, degraded a middle one, down the full height, no data an outline.
const CELL: Record<Cell, { height: number; word: string }> = {
  up: { height: 6, word: "up" },
  degraded: { height: 11, word: "degraded" },
  down: { height: 16, word: "down" },
  none: { height: 16, word: "no data" },
};

function timeline(cells: Cell[], report: Report): string {
  const width = 10;
  const start = Date.parse(report.since);
  const rects = cells.map((cell, index) => {
    const { height, word } = CELL[cell];
    const at = new Date(start + index * report.cell_s * 1000).toISOString().slice(11, 16);
    return (
      `<rect class="c-${cell}" x="${index * width}" y="${16 - height}" width="${width - 1}" height="${height}">` +
      `<title>${at} UTC: ${word}</title></rect>`
    );
  });
  return (
    `<svg class="timeline" viewBox="0 0 ${cells.length * width} 16" preserveAspectRatio="none" role="img" ` +
    `aria-label="the last 24 hours">${rects.join("")}</svg>`
  );
}

function histogram(stats: ServiceStats): string {
  if (!stats.samples || !stats.histogram.length) return `<p class="muted">no probes yet</p>`;
  const top = Math.max(...stats.histogram.map(([upper]) => upper), stats.timeout_ms * 1.1);
  const most = Math.max(...stats.histogram.map(([, count]) => count), 1);
  const x = (value: number) => (value / top) * 300;
  const bucket = stats.histogram[0][0];
  const bars = stats.histogram
    .filter(([, count]) => count > 0)
    .map(([upper, count]) => {
      const height = Math.max(2, (count / most) * 60);
      return (
        `<rect class="bar" x="${x(upper - bucket).toFixed(1)}" y="${(60 - height).toFixed(1)}" ` +
        `width="${Math.max(1, x(bucket) - 1).toFixed(1)}" height="${height.toFixed(1)}">` +
        `<title>${ms(upper - bucket)}–${ms(upper)}: ${count}</title></rect>`
      );
    });
  const line = x(stats.timeout_ms).toFixed(1);
  return (
    `<svg class="histogram" viewBox="0 0 300 76" role="img" aria-label="probe latency, timeout marked">` +
    `${bars.join("")}<line class="timeout" x1="${line}" x2="${line}" y1="0" y2="62"/>` +
    `<text x="${Math.min(Number(line), 200)}" y="74">timeout ${ms(stats.timeout_ms)}</text></svg>` +
    `<p class="muted">p50 ${stats.p50_ms === null ? "-" : ms(stats.p50_ms)} · p99 ` +
    `${stats.p99_ms === null ? "-" : ms(stats.p99_ms)} · ` +
    `${counted(stats.samples, "probe")}, ${counted(stats.timeouts, "timeout")}</p>` +
    (stats.warning ? `<p class="warn">⚠ ${html(stats.warning)}</p>` : "")
  );
}

function card(row: StatusRow, data: PageData): string {
  const report = data.report.services.find((service) => service.name === row.name);
  const stats = data.stats.find((service) => service.name === row.name);
  const calm = calmRow(row);
  const probe = row.probe
    ? `${html(row.probe.detail)} · ${ms(row.probe.latency_ms)} · ${ago(row.probe.at, data.now)}`
    : "not probed yet";
  const availability =
    report?.availability == null ? "no data" : `${(report.availability * 100).toFixed(2)}% available`;
  // Over the time observed, said with how much of the 24 h window that was (the rest is no data).
  const windowS = Math.max(1, (Date.parse(data.report.until) - Date.parse(data.report.since)) / 1000);
  const observed = report ? Math.round((report.observed_s / windowS) * 100) : 0;
  const day = report
    ? `24 h: ${availability} of the ${humanDuration(report.observed_s * 1000)} observed (${observed}%; ` +
      `no data ${humanDuration(report.no_data_s * 1000)}), ${report.outages} outage(s), downtime ${report.downtime_s}s`
    : "";
  const recoveries = `(✓${row.recoveries_ok} ✗${row.recoveries_failed})`;
  return `<section class="card ${calm ? "calm" : "alarm"}">
<h2>${html(row.name)} <span class="state s-${calm ? "calm" : "alarm"}">${calm ? "" : "⚠ "}${html(row.state)}</span></h2>
<p>${probe}</p>
<p>strikes ${row.strikes}/${row.failures} · restarts ${row.restarts} ${recoveries}</p>
${report ? `${timeline(report.timeline, data.report)}<p class="muted">${day}</p>` : ""}
${stats ? histogram(stats) : ""}
${row.last_event ? `<p class="muted">last: ${html(row.last_event.tag)} ${html(row.last_event.message)}</p>` : ""}
</section>`;
}

function peer(view: PeerView, now: number): string {
  if (!view.status)
    return (
      `<section class="peer"><h3>${html(view.url)} <span class="state s-alarm">⚠ unreachable</span></h3>` +
      `<p class="muted">${html(view.problem ?? "")}</p></section>`
    );
  const { status } = view;
  const rows = status.services.map((row) => {
    const calm = calmRow(row);
    return (
      `<tr><td>${html(row.name)}</td><td><span class="state s-${calm ? "calm" : "alarm"}">${calm ? "" : "⚠ "}` +
      `${html(row.state)}</span></td><td>${row.probe ? html(String(row.probe.detail)) : "-"}</td></tr>`
    );
  });
  const fresh = status.watchdog.stale
    ? `<span class="state s-alarm">⚠ stale</span> last pass ${ago(status.last_pass, now)}`
    : `last pass ${ago(status.last_pass, now)}`;
  return `<section class="peer"><h3>${html(view.url)}</h3><p class="muted">${fresh}</p>
<table><tr><th>service</th><th>state</th><th>last probe</th></tr>${rows.join("")}</table></section>`;
}

/** One self-contained page: inline CSS (allowed by its nonce), inline SVG, no script, no outside fetch. */
export function renderPage(data: PageData, nonce: string): string {
  const { status } = data;
  const fresh = status.watchdog.stale
    ? `<p class="banner">⚠ STALE: the watchdog is not running — last pass ${ago(status.last_pass, data.now)}, ` +
      `expected every ${status.watchdog.expected_every_s}s</p>`
    : `<p>last pass ${ago(status.last_pass, data.now)} · expected every ${status.watchdog.expected_every_s}s</p>`;
  const notify = status.notify;
  const spool =
    `notify: ${notify.spooled} waiting in the spool, ${notify.dead} dead letter(s)` +
    (notify.last_error
      ? ` · last error ${ago(notify.last_error.at, data.now)}: ${html(notify.last_error.detail)}`
      : "");
  const peers = data.peers.length
    ? `<h2 class="hosts">Other hosts</h2>${data.peers.map((view) => peer(view, data.now)).join("\n")}`
    : "";
  const lines = (list: string[], none: string) =>
    list.length ? `<pre>${list.map(html).join("\n")}</pre>` : `<p class="muted">${none}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${data.refreshS}">
<title>tend · ${html(data.host)}</title>
<style nonce="${nonce}">
body{font:15px/1.4 system-ui,sans-serif;margin:0;padding:12px;background:#f6f6f4;color:#1d1d1b}
header h1{font-size:20px;margin:0 0 4px}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px;margin:12px 0}
.card{background:#fff;border:1px solid #d6d6d0;border-left-width:6px;border-radius:6px;padding:10px 12px;min-width:0}
.card.calm{border-left-color:#2e7d32}.card.alarm{border-left-color:#c62828}
.card h2{font-size:17px;margin:0 0 6px;overflow-wrap:anywhere}.card p{margin:4px 0;overflow-wrap:anywhere}
.state{font-size:13px;font-weight:600;padding:1px 6px;border-radius:4px;text-transform:uppercase}
.s-calm{background:#e3f1e4;color:#1b5e20}.s-alarm{background:#fde3e3;color:#8e1212}
.muted{color:#5f5f5a;font-size:13px}.warn{color:#8a5300;font-size:13px}
.banner{background:#c62828;color:#fff;padding:8px;border-radius:6px;font-weight:600}
svg{display:block;width:100%}.timeline{height:18px;margin-top:6px}.histogram{height:80px}
.c-up{fill:#2e7d32}.c-degraded{fill:#ef9a00}.c-down{fill:#c62828}.c-none{fill:none;stroke:#9e9e98;stroke-dasharray:2 2}
.bar{fill:#3f6fb5}.timeout{stroke:#c62828;stroke-width:2;stroke-dasharray:4 3}text{font-size:11px;fill:#5f5f5a}
pre{background:#fff;border:1px solid #d6d6d0;border-radius:6px;padding:8px;overflow-x:auto;font-size:12px}
h3{font-size:16px;margin:16px 0 6px;overflow-wrap:anywhere}.state{white-space:nowrap}
.peer{background:#fff;border:1px solid #d6d6d0;border-radius:6px;padding:4px 12px 8px;margin:8px 0;overflow-x:auto}
table{border-collapse:collapse;font-size:14px}td,th{text-align:left;padding:3px 10px 3px 0;vertical-align:top}
.hosts{font-size:18px;margin:16px 0 6px}
</style></head>
<body><header><h1>tend · ${html(data.host)}</h1>${fresh}<p class="muted">${spool}</p></header>
<main>
${status.services.map((row) => card(row, data)).join("\n") || `<p>no services configured</p>`}
</main>
${peers}
<h3>Recent events</h3>${lines(data.events, "none yet")}
<h3>Downtime</h3>${lines(data.downtime, "none recorded")}
<p class="muted">read-only · reloads every ${data.refreshS}s · ${new Date(data.now).toISOString()}</p>
</body></html>
`;
}
