import { counted, humanDuration, latencyLabel } from "../core/duration.ts";
import { EVENTS } from "../core/events.ts";
import type { EventRecord, LatencySample } from "../core/state.ts";
import { localStamp } from "../core/time.ts";
import { escapeControls } from "../core/sanitize.ts";
import { colourOf, STATE_WORDS as KNOWN_WORDS } from "../core/verdict.ts";
import { rowIsCalm } from "./status.ts";
import { percent, type Cell, type Report, type ServiceReport } from "./report.ts";
import type { ServiceStats } from "./stats.ts";
import type { StatusReport, StatusRow } from "./status.ts";

/** What the page shows: the --json outputs, the log tails, and who is asking when. */
export interface PageData {
  host: string;
  now: number;
  status: StatusReport;
  /** The last 24 hours (48 cells), and the last 30 days (a cell a day). */
  report: Report;
  month: Report;
  stats: ServiceStats[];
  /** Per service: its recent events as the pass recorded them, and its probes' latencies. */
  views: Record<string, ServiceView>;
  /** downtime.log's last lines. */
  downtime: string[];
  /** Seconds between the page's own reloads. */
  refreshS: number;
  peers: PeerView[];
}

export interface ServiceView {
  events: EventRecord[];
  /** Its latency history (the chart draws the last 24 hours of it). */
  latency: LatencySample[];
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
  KNOWN_WORDS.has(row.state) && rowIsCalm({ state: row.state, error: row.error ?? null });

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

// The same symbols as `report` (█ up, ▒ degraded, ░ down, · no data), as shape and colour: up is
// the full bar, degraded two thirds, down a stub, no data a dot — readable without colour.
const CELL: Record<Cell, { height: number; word: string }> = {
  up: { height: 16, word: "up" },
  degraded: { height: 10, word: "degraded" },
  down: { height: 4, word: "down" },
  none: { height: 2, word: "no data" },
};

/**
 * A bar of cells as one path per kind of cell, a dashed line per run of equal cells (8 drawn, 2 apart:
 * a cell each), and one title for the bar: its spans that were not up. A rect with a title per cell
 * made a page of 100 services 7,895 shapes and 966 KB (issue #42).
 */
function bars(cells: Cell[], startMs: number, cellS: number, label: string, stamp: (at: Date) => string): string {
  const width = 10;
  const paths = new Map<Cell, string>();
  const spans: string[] = [];
  for (let from = 0; from < cells.length;) {
    const cell = cells[from];
    let to = from;
    while (to + 1 < cells.length && cells[to + 1] === cell) to++;
    const { height, word } = CELL[cell];
    paths.set(cell, `${paths.get(cell) ?? ""}M${from * width} ${16 - height / 2}h${(to + 1 - from) * width}`);
    if (cell !== "up") {
      const [first, last] = [from, to + 1].map((index) => stamp(new Date(startMs + index * cellS * 1000)));
      spans.push(`${word} ${first}–${last}`);
    }
    from = to + 1;
  }
  const title = `${label}: ${spans.length ? spans.join(", ") : "up throughout"}`;
  const shapes = [...paths].map(([cell, drawn]) => `<path class="c-${cell}" d="${drawn}"/>`).join("");
  // The title is the image's name (role img): no aria-label to say it twice.
  return (
    `<svg class="bars" viewBox="0 0 ${cells.length * width} 16" preserveAspectRatio="none" role="img">` +
    `<title>${html(title)}</title>${shapes}</svg>`
  );
}

/** Per service: availability over the time observed in the window, and the no-data share. */
function availabilityWords(report: ServiceReport, window: Report, span: string): string {
  const windowS = Math.max(1, (Date.parse(window.until) - Date.parse(window.since)) / 1000);
  const available = report.availability == null ? "no data" : `${percent(report.availability)} available`;
  const share = report.no_data_s / windowS;
  // Never "100%" for a window with something observed, nor "0%" for one with a gap.
  const noData = share > 0 && share < 0.01 ? "<1" : share < 1 && share > 0.99 ? ">99" : String(Math.round(share * 100));
  return (
    `${span}: ${available} of the ${humanDuration(report.observed_s * 1000)} observed (no data ${noData}%), ` +
    `${counted(report.outages, "outage")}, downtime ${humanDuration(report.downtime_s * 1000)}` +
    (report.flapping_spells
      ? `, flapping ${counted(report.flapping_spells, "spell")} (${humanDuration(report.flapping_s * 1000)})`
      : "")
  );
}

/** A report's rows by service name (a page of 100 cards looks up each card's rows: not 100 finds each). */
const rowsByName = new WeakMap<Report, Map<string, ServiceReport>>();
function rowOf(report: Report, name: string): ServiceReport | undefined {
  let rows = rowsByName.get(report);
  if (!rows) rowsByName.set(report, (rows = new Map(report.services.map((row) => [row.name, row]))));
  return rows.get(name);
}

function history(data: PageData, name: string): string {
  const day = rowOf(data.report, name);
  const month = rowOf(data.month, name);
  if (!day || !month) return "";
  const hour = (at: Date) => `${localStamp(at).slice(11, 16)}`;
  const date = (at: Date) => localStamp(at).slice(0, 10);
  return (
    `<div class="windows"><figure><figcaption>24 h</figcaption>` +
    `${bars(day.timeline, Date.parse(data.report.since), data.report.cell_s, "the last 24 hours", hour)}</figure>` +
    `<figure><figcaption>30 days</figcaption>` +
    bars(month.timeline, Date.parse(data.month.since), data.month.cell_s, "the last 30 days", date) +
    `</figure></div>` +
    `<p class="muted">${availabilityWords(day, data.report, "24 h")}<br>` +
    `${availabilityWords(month, data.month, "30 days")}</p>`
  );
}

/**
 * Points (whole pixels, left to right) as one path of round dots: a zero-length stroke each, moved to
 * relatively — a day of probes is a few KB, not a circle element per point. Dots of one row that touch
 * (3 px apart at most, under the 3.2 px stroke) are drawn as the one stroke they look like: a flat day
 * is a line.
 */
export function dotsPath(points: [number, number][]): string {
  let [lastX, lastY, run] = [0, 0, 0];
  let drawn = "";
  for (const [pointX, pointY] of points) {
    if (drawn && pointY === lastY && pointX - lastX <= 3) run += pointX - lastX;
    else {
      // The pen is at the run's end (the last point): each move is relative to it.
      drawn += drawn ? `h${run}m${pointX - lastX} ${pointY - lastY}` : `M${pointX} ${pointY}`;
      run = 0;
    }
    [lastX, lastY] = [pointX, pointY];
  }
  return drawn && `${drawn}h${run}`;
}

/** Probe latency over the last 24 hours, failures red, the timeout a dashed line: axes labelled. */
function latencyOverTime(samples: LatencySample[], timeoutMs: number, data: PageData): string {
  const since = Date.parse(data.report.since);
  const now = data.now;
  const [left, right, bottom] = [34, 296, 56];
  const scale = (right - left) / Math.max(1, now - since);
  // One point per two columns and outcome (the slowest): a day of 10 s probes stays ~130 dots of each.
  // The slowest sample's index by column (-1: none), one array per outcome; one look at each sample
  // (a page shows 100 of these: no closure, no array per column).
  const columns = (right >> 1) + 2;
  const slowest = [new Int32Array(columns).fill(-1), new Int32Array(columns).fill(-1)];
  let top = timeoutMs * 1.15;
  let any = false;
  for (let index = 0; index < samples.length; index++) {
    const sample = samples[index];
    const at = sample[0];
    if (at < since || at > now) continue;
    const latency = sample[1];
    any = true;
    if (latency > top) top = latency;
    const column = Math.round((left + (at - since) * scale) / 2);
    const outcome = slowest[sample[2] ? 1 : 0];
    const seen = outcome[column];
    if (seen === -1 || samples[seen][1] < latency) outcome[column] = index;
  }
  if (!any) return "";
  const y = (latency: number) => bottom - (latency / top) * (bottom - 4);
  const dots = (ok: boolean) => {
    const points: [number, number][] = [];
    const outcome = slowest[ok ? 1 : 0];
    for (let column = 0; column < columns; column++) {
      const index = outcome[column];
      if (index === -1) continue;
      const [at, latency] = samples[index];
      points.push([Math.round(left + (at - since) * scale), Math.round(y(latency))]);
    }
    const drawn = dotsPath(points);
    return drawn ? `<path class="${ok ? "p-ok" : "p-bad"}" d="${drawn}"/>` : "";
  };
  const points = [dots(true), dots(false)];
  const limit = y(timeoutMs).toFixed(1);
  return (
    `<svg class="chart" viewBox="0 0 300 72" role="img" aria-label="probe latency over 24 hours, timeout marked">` +
    `<path class="axis" d="M${left} 2V${bottom}H${right}"/>` +
    `<text class="e" x="${left - 3}" y="${bottom}">0</text>` +
    `<text class="e" x="${left - 3}" y="${Number(limit) + 4}">${ms(timeoutMs)}</text>` +
    `<path class="timeout" d="M${left} ${limit}H${right}"/>${points.join("")}` +
    `<text x="${left}" y="68">24 h ago</text><text class="e" x="${right}" y="68">now</text>` +
    `<text class="m" x="${(left + right) / 2}" y="68">latency (dashed: timeout)</text></svg>`
  );
}

function histogram(stats: ServiceStats): string {
  if (!stats.samples || !stats.histogram.length) return `<p class="muted">no probes yet</p>`;
  const top = Math.max(...stats.histogram.map(([upper]) => upper), stats.timeout_ms * 1.1);
  const most = Math.max(...stats.histogram.map(([, count]) => count), 1);
  const [left, right, bottom] = [34, 296, 56];
  const x = (value: number) => left + (value / top) * (right - left);
  const bucket = stats.histogram[0][0];
  // One path for the bars, one title for the chart (its buckets in words): not a rect and title each.
  const shown = stats.histogram.filter(([, count]) => count > 0);
  const barWidth = Math.max(1, x(bucket) - left - 1).toFixed(1);
  const drawn = shown
    .map(([upper, count]) => {
      const height = Math.max(2, (count / most) * (bottom - 6)).toFixed(1);
      return `M${x(upper - bucket).toFixed(1)} ${bottom}v-${height}h${barWidth}v${height}z`;
    })
    .join("");
  const buckets = shown.map(([upper, count]) => `${ms(upper - bucket)}–${ms(upper)}: ${count}`).join(", ");
  const line = x(stats.timeout_ms).toFixed(1);
  return (
    `<svg class="chart" viewBox="0 0 300 72" role="img" aria-label="probe latency histogram, timeout marked">` +
    `<title>probes by latency: ${buckets}</title>` +
    `<path class="axis" d="M${left} 2V${bottom}H${right}"/>` +
    `<text class="e" x="${left - 3}" y="${bottom}">0</text>` +
    `<text class="e" x="${left - 3}" y="10">${most}</text>` +
    `<path class="bar" d="${drawn}"/><path class="timeout" d="M${line} 2V${bottom}"/>` +
    `<text x="${left}" y="68">0 ms</text><text class="e" x="${right}" y="68">${ms(top)}</text>` +
    `<text class="m" x="${(left + right) / 2}" y="68">probes by latency (dashed: timeout)</text></svg>` +
    `<p class="muted">p50 ${stats.p50_ms === null ? "-" : ms(stats.p50_ms)} · p99 ` +
    `${stats.p99_ms === null ? "-" : ms(stats.p99_ms)} · timeout ${ms(stats.timeout_ms)} · ` +
    `${counted(stats.samples, "probe")}, ${counted(stats.timeouts, "timeout")}</p>` +
    (stats.warning ? `<p class="warn">${html(stats.warning)}</p>` : "")
  );
}

const TAG_ICONS: Record<string, string> = {
  START: "▶️",
  WARN: "⚠️",
  BUSY: "⏳",
  WAIT: "⏸️",
  HUNG: "⏱️",
  RESTART: "⚠️",
  RECOVERED: "✅",
  FAILED: "🚨",
  "GIVEN-UP": "⛔",
  "AUTO-RESTART": "🔁",
  MEMORY: "📈",
  ERROR: "❗",
};
/** The events that belong to an outage: the page links each to that outage's timeline. */
const OUTAGE_EVENTS = new Set(["restart", "failed", "held", "given-up", "recovered", "busy"]);
const iconOf = (event: EventRecord) => EVENTS[event.event as keyof typeof EVENTS]?.emoji ?? TAG_ICONS[event.tag] ?? "•";

/**
 * The page needs no emoji font (a fresh Debian, many a phone's browser, show one as an empty box):
 * each event's icon is a dot in its tone's colour, its emoji kept as the dot's title.
 */
const TONES: Record<string, "ok" | "warn" | "alarm"> = {
  "✅": "ok",
  "⚠️": "warn",
  "⏳": "warn",
  "📈": "warn",
  "📅": "warn",
  "🔀": "warn",
  "💤": "warn",
  "🔌": "warn",
  "🔔": "warn",
  "🚨": "alarm",
  "⛔": "alarm",
  "❗": "alarm",
  "⏱️": "alarm",
};
const iconDot = (emoji: string) =>
  `<span class="icon t-${TONES[emoji] ?? "info"}" title="${html(emoji)}" aria-hidden="true"></span>`;

/** Rows that wrap: time (month-day hour:minute), icon, words; never a line that needs a sideways scroll. */
function eventRows(list: { at: number | null; icon: string; words: string; href?: string }[], none: string): string {
  if (!list.length) return `<p class="muted">${none}</p>`;
  const row = ({ at, icon, words, href }: (typeof list)[0]) =>
    `<li><time${at === null ? "" : ` datetime="${new Date(at).toISOString()}"`}>` +
    `${at === null ? "" : localStamp(new Date(at)).slice(5, 16)}</time>` +
    `${iconDot(icon)}<span class="words">${html(words)}` +
    `${href ? ` <a href="${html(href)}">timeline</a>` : ""}</span></li>`;
  return `<ol class="rows">${list.map(row).join("")}</ol>`;
}

/** downtime.log's lines as rows: `[local time] [DOWNTIME] words`. */
function downtimeRows(lines: string[]): string {
  const list = [...lines].reverse().map((line) => {
    const match = /^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] \[DOWNTIME\] (.*)$/.exec(line);
    const at = match ? new Date(match[1].replace(" ", "T")).getTime() : NaN;
    return { at: Number.isNaN(at) ? null : at, icon: "⏱️", words: match ? match[2] : line };
  });
  return eventRows(list, "none recorded");
}

function card(row: StatusRow, data: PageData): string {
  const stats = data.stats.find((service) => service.name === row.name);
  const view = data.views[row.name];
  const calm = calmRow(row);
  const probe = row.probe
    ? `${html(row.probe.detail)} · ${ms(row.probe.latency_ms)} · ${ago(row.probe.at, data.now)}`
    : "not probed yet";
  const recoveries = `(${row.recoveries_ok} recovered, ${row.recoveries_failed} failed)`;
  // The service's own events, newest first.
  const events = [...(view?.events ?? [])].reverse().map((event) => ({
    at: event.at,
    icon: iconOf(event),
    words: event.message,
    // An event of an outage links to its timeline (watchdog incident).
    href: OUTAGE_EVENTS.has(event.event ?? "")
      ? `/incident?service=${encodeURIComponent(row.name)}&at=${encodeURIComponent(new Date(event.at).toISOString())}`
      : undefined,
  }));
  return `<section class="card ${calm ? "calm" : "alarm"}">
<h2>${html(row.name)} <span class="state s-${colourOf(row.state)}">${html(row.state)}</span></h2>
<p>${probe}</p>
<p>strikes ${row.strikes}/${row.failures} · restarts ${row.restarts} ${recoveries}</p>
${history(data, row.name)}
${stats && view ? latencyOverTime(view.latency, stats.timeout_ms, data) : ""}
${stats ? histogram(stats) : ""}
<h3>Recent events</h3>${eventRows(events, "none yet")}
</section>`;
}

function peer(view: PeerView, now: number): string {
  if (!view.status)
    return (
      `<section class="peer"><h3>${html(view.url)} <span class="state s-bad">unreachable</span></h3>` +
      `<p class="muted">${html(view.problem ?? "")}</p></section>`
    );
  const { status } = view;
  const rows = status.services.map((row) => {
    return (
      `<tr><td>${html(row.name)}</td><td><span class="state s-${colourOf(row.state)}">` +
      `${html(row.state)}</span></td><td>${row.probe ? html(String(row.probe.detail)) : "-"}</td></tr>`
    );
  });
  const fresh = status.watchdog.stale
    ? `<span class="state s-bad">stale</span> last pass ${ago(status.last_pass, now)}`
    : `last pass ${ago(status.last_pass, now)}`;
  return `<section class="peer"><h3>${html(view.url)}</h3><p class="muted">${fresh}</p>
<table><tr><th>service</th><th>state</th><th>last probe</th></tr>${rows.join("")}</table></section>`;
}

/** One self-contained page: inline CSS (allowed by its nonce), inline SVG, no script, no outside fetch. */
export function renderPage(data: PageData, nonce: string): string {
  const { status } = data;
  const since = status.last_pass ? ` since ${localStamp(new Date(status.last_pass))}` : "";
  const fresh = status.watchdog.stale
    ? `<p class="banner">STALE: the watchdog is not running${since} — ` +
      `last pass ${ago(status.last_pass, data.now)}, ` +
      `expected every ${status.watchdog.expected_every_s}s; what follows is as it last saw it</p>`
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
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${data.refreshS}">
<title>tend · ${html(data.host)}</title>
<style nonce="${nonce}">
body{font:15px/1.4 system-ui,sans-serif;margin:0;padding:12px;background:#f6f6f4;color:#1d1d1b;overflow-wrap:anywhere}
header h1{font-size:20px;margin:0 0 4px}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,320px),1fr));gap:12px;margin:12px 0}
main.stale .card{filter:grayscale(1);opacity:.6}
.card{background:#fff;border:1px solid #d6d6d0;border-left-width:6px;border-radius:6px;padding:10px 12px;min-width:0}
.card.calm{border-left-color:#2e7d32}.card.alarm{border-left-color:#c62828}
.card h2{font-size:17px;margin:0 0 6px;overflow-wrap:anywhere}.card p{margin:4px 0;overflow-wrap:anywhere}
.state{font-size:13px;font-weight:600;padding:1px 6px;border-radius:4px;text-transform:uppercase}
.s-ok{background:#e3f1e4;color:#1b5e20}.s-warn{background:#fff1d6;color:#7a4a00}
.s-bad{background:#fde3e3;color:#8e1212}.s-dim{background:#ececea;color:#4a4a46}
.muted{color:#5f5f5a;font-size:13px}.warn{color:#8a5300;font-size:13px}
.banner{background:#c62828;color:#fff;padding:8px;border-radius:6px;font-weight:600}
svg{display:block;width:100%}.bars{height:18px}.chart{height:auto;margin-top:8px}
.windows{display:grid;grid-template-columns:3fr 2fr;gap:10px;margin-top:6px}
figure{margin:0;min-width:0}figcaption{font-size:12px;color:#5f5f5a}
.bars path{stroke-dasharray:8 2}.c-up{stroke:#2e7d32;stroke-width:16}.c-degraded{stroke:#ef9a00;stroke-width:10}
.c-down{stroke:#c62828;stroke-width:4}.c-none{stroke:#9e9e98;stroke-width:2}
.bar{fill:#3f6fb5}.timeout{stroke:#c62828;stroke-width:1.5;stroke-dasharray:4 3}.axis{stroke:#9e9e98;stroke-width:1}
.axis,.timeout,.p-ok,.p-bad{fill:none}.p-ok,.p-bad{stroke-width:3.2;stroke-linecap:round}
.p-ok{stroke:#3f6fb5}.p-bad{stroke:#c62828}
text{font-size:9px;fill:#5f5f5a}text.e{text-anchor:end}text.m{text-anchor:middle}
.rows{list-style:none;margin:4px 0;padding:0;font-size:13px}
.rows li{display:flex;gap:6px;padding:2px 0;border-top:1px solid #ecece8}
.rows time{flex:none;color:#5f5f5a;font-variant-numeric:tabular-nums}.rows .words{min-width:0}
.rows .icon{flex:none;width:.7em;height:.7em;margin-top:.35em;border-radius:50%;background:#8a8a85}
.rows .t-ok{background:#2e7d32}.rows .t-warn{background:#d89a00}.rows .t-alarm{background:#c62828}
h3{font-size:16px;margin:16px 0 6px;overflow-wrap:anywhere}.state{white-space:nowrap}
.peer{background:#fff;border:1px solid #d6d6d0;border-radius:6px;padding:4px 12px 8px;margin:8px 0}
table{border-collapse:collapse;font-size:14px;width:100%;table-layout:fixed}
td,th{text-align:left;padding:3px 10px 3px 0;vertical-align:top}
.hosts{font-size:18px;margin:16px 0 6px}
</style></head>
<body><header><h1>tend · ${html(data.host)}</h1>${fresh}<p class="muted">${spool}</p></header>
<main${status.watchdog.stale ? ` class="stale"` : ""}>
${status.services.map((row) => card(row, data)).join("\n") || `<p>no services configured</p>`}
</main>
${peers}
<h3>Downtime</h3>${downtimeRows(data.downtime)}
<p class="muted">read-only · reloads every ${data.refreshS}s · ${new Date(data.now).toISOString()}</p>
</body></html>
`;
}
