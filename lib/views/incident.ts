// `watchdog incident [NAME] [--last | --at T] [--markdown] [--json]`: one outage told as the seeds'
// post-mortems tell it, second by second, each line marked with its source — tend (its log), the host
// (its boot), a notification (what the pass sent), the service (its journal, or its output file) — and
// the numbers at the end, from the same outage record report and downtime.log are made from.
import type { Config, ServiceConfig } from "../config/types.ts";
import { usageError } from "../core/errors.ts";
import { EVENTS, eventTitle, gapEventOf } from "../core/events.ts";
import { hostname } from "node:os";
import { parseSamples } from "../core/latency.ts";
import type { ServiceState } from "../core/state.ts";
import { oneLine } from "../core/sanitize.ts";
import { localStamp } from "../core/time.ts";
import { runCommand } from "../os/run.ts";
import { readRange } from "../os/files.ts";
import { ownOutputOf, serviceUnit } from "../restarts/index.ts";
import { statePaths } from "../state/dir.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import { watchedServices } from "../config/watched.ts";

export type Source = "tend" | "host" | "notification" | "service";

interface IncidentLine {
  at: number;
  source: Source;
  text: string;
}

interface Incident {
  service: string;
  outage: { from: string; to: string | null; reason: string; open: boolean };
  timeline: IncidentLine[];
  /** Seconds from the outage's start (detected, restarted) and from the restart (recovered); down: its length. */
  numbers: { detected_s: number | null; restarted_s: number | null; recovered_s: number | null; down_s: number };
}

interface Outage {
  service: ServiceConfig;
  from: number;
  to: number | null;
  reason: string;
}

/** How much of a log file is read, from its end (a log can be large; an incident is recent). */
const LOG_TAIL = 4 * 1024 * 1024;
const SECOND = 1000;

/** The last `limit` bytes of a file, as text (empty when it cannot be read). */
function tail(path: string, limit = LOG_TAIL): string {
  return tailAt(path, limit).text;
}

/** The last `limit` bytes of a file from a line's start, and the byte offset in the file where they start. */
// Through the one reader: a FIFO planted where a service's output file was is none (never waited on:
// GET /incident under `watchdog run --serve` once stopped the loop there), a symlink is not followed.
function tailAt(path: string, limit: number): { text: string; offset: number } {
  const { bytes, start } = readRange(path, -limit);
  const cut = start > 0 ? bytes.indexOf(10) + 1 : 0;
  return { text: bytes.subarray(cut).toString("utf8"), offset: start + cut };
}

/** `YYYY-MM-DD HH:MM:SS` in local time (as tend's log writes it), as epoch ms. */
function localTime(stamp: string): number {
  const [date, time] = stamp.split(" ");
  const [year, month, day] = date.split("-").map(Number);
  const [hour, minute, second] = time.split(":").map(Number);
  return new Date(year, month - 1, day, hour, minute, second).getTime();
}

/** `--at T`: an ISO time or tend's own `YYYY-MM-DD HH:MM:SS` (local), as epoch ms. */
export function parseAt(text: string): number {
  const local = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(:\d\d)?)$/.exec(text.trim());
  const at = local ? localTime(`${local[1]} ${local[2]}${local[3] ? "" : ":00"}`) : Date.parse(text);
  if (!Number.isFinite(at))
    throw usageError(`--at: ${JSON.stringify(text)} is not a time (2026-12-02 14:03:10, or ISO)`);
  return at;
}

/** The outages of a service: the closed ones, and the one open now. */
function outagesOf(service: ServiceConfig, read: StateReader): Outage[] {
  const state = read(service.name);
  const closed = state.outages.map((outage) => ({ service, from: outage.from, to: outage.to, reason: outage.reason }));
  const open = state.outage ? [{ service, from: state.outage.since, to: null, reason: state.outage.reason }] : [];
  return [...closed, ...open];
}

/** The watchdog log's lines (rotated files first), each with its time, tag and message. */
function logLines(config: Config): { at: number; tag: string; message: string }[] {
  const path = config.watchdog.log;
  const files = [
    ...Array.from({ length: config.watchdog.rotation.keep }, (_, i) => `${path}.${i + 1}`).reverse(),
    path,
  ];
  const lines: { at: number; tag: string; message: string }[] = [];
  for (const file of files) {
    for (const line of tail(file).split("\n")) {
      const parsed = /^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] \[([A-Z][A-Z-]*)\] (.*)$/.exec(line);
      if (parsed) lines.push({ at: localTime(parsed[1]), tag: parsed[2], message: parsed[3] });
    }
  }
  return lines;
}

const mentions = (message: string, name: string) =>
  message.startsWith(`${name} `) || message.startsWith(`${name}:`) || message.startsWith(`${name}'`);

/**
 * One outage's incident: NAME's (or the newest of any service's) last outage, or the one at `at`.
 * Read only: the state, the watchdog log, the service's journal or output file.
 */
export async function collectIncident(
  config: Config,
  name: string | null,
  {
    at = null,
    now = Date.now(),
    uptimeMs = 0,
    read = stateReader(config.watchdog.stateDir),
  }: {
    at?: number | null;
    now?: number;
    uptimeMs?: number;
    read?: StateReader;
  } = {},
): Promise<Incident> {
  const services = watchedServices(config, read);
  const chosen = name === null ? services : services.filter((service) => service.name === name);
  if (name !== null && !chosen.length)
    throw usageError(`no such service: ${name} (configured: ${services.map((s) => s.name).join(", ") || "none"})`);
  const outages = chosen.flatMap((service) => outagesOf(service, read)).sort((a, b) => a.from - b.from);
  const outage =
    at === null ? outages.at(-1) : outages.find((one) => one.from - SECOND <= at && at <= (one.to ?? now) + SECOND);
  if (!outage) {
    const whose = name ?? "any service";
    throw usageError(
      at === null ? `no outage of ${whose} is recorded` : `no outage of ${whose} at ${localStamp(new Date(at))}`,
    );
  }
  const { service, from } = outage;
  const to = outage.to ?? now;
  // Around it: a period before (the last good probe, the first strikes) and a minute after.
  const before = Math.max(config.watchdog.intervalMs, 60 * SECOND) + service.failures * config.watchdog.intervalMs;
  const lo = from - before;
  const hi = to + 60 * SECOND;
  const timeline: IncidentLine[] = [];
  // A log line is stamped to the second: it happened within that second, after what is stamped finer there.
  const inSecond = new WeakSet<IncidentLine>();
  const state = read(service.name);
  const good = parseSamples(state.latencyLog)
    .filter(([when, , ok]) => ok && when < from && when >= lo)
    .at(-1);
  if (good) timeline.push({ at: good[0], source: "tend", text: `last good probe (${Math.round(good[1])}ms)` });
  const log = logLines(config).filter((line) => line.at >= Math.floor(lo / SECOND) * SECOND && line.at <= hi);
  for (const line of log) {
    const source = mentions(line.message, service.name)
      ? "tend"
      : /^(host|device) /.test(line.message) || / after reboot\b/.test(line.message)
        ? "host"
        : null;
    if (!source) continue;
    const entry: IncidentLine = { at: line.at, source, text: `[${line.tag}] ${oneLine(line.message, 400)}` };
    inSecond.add(entry);
    timeline.push(entry);
    // A gap's DOWNTIME line is said by a notification of its own (💤, 🔌: the pass's rule, core/events).
    const gap = line.tag === "DOWNTIME" ? /^(host|watchdog|device) was unavailable for /.exec(line.message) : null;
    const said = gap ? gapEventOf(gap[1]) : null;
    if (said) {
      const notice: IncidentLine = { at: line.at, source: "notification", text: eventTitle(said, gap![1], hostname()) };
      inSecond.add(notice);
      timeline.push(notice);
    }
  }
  // The host's boot, when it falls inside.
  const bootedAt = uptimeMs ? now - uptimeMs : null;
  if (bootedAt !== null && bootedAt >= lo && bootedAt <= hi)
    timeline.push({ at: bootedAt, source: "host", text: "the host booted" });
  for (const event of state.events ?? [])
    if (event.event && event.at >= lo && event.at <= hi)
      timeline.push({
        at: event.at,
        source: "notification",
        text: `${emojiOf(event.event)}${oneLine(event.message, 400)}`,
      });
  timeline.push(...(await serviceLines(service, config, state, lo, hi)));
  // A log line is placed at the very end of its second, after whatever is stamped finer there, its last
  // millisecond too (a look at 12:00:36.9992 is before a line stamped 12:00:36: +999 put it after, one
  // run of a thousand) — unless the state recorded it finer: the service's recent lines are its events,
  // each at the millisecond it was written (the k-th line of a tag in a second is that second's k-th
  // event of the tag), and at that millisecond's end: a look is timed finer. The log is in order, so a
  // line is no later than the one after it.
  const recorded = new Map<string, number[]>();
  for (const event of state.events ?? []) {
    const slot = `${Math.floor(event.at / SECOND)} ${event.tag}`;
    recorded.set(slot, [...(recorded.get(slot) ?? []), event.at]);
  }
  const logged = timeline.filter((line) => inSecond.has(line) && line.source === "tend");
  const exact = new Map<IncidentLine, number>();
  for (const line of logged) {
    const tag = /^\[([A-Z-]+)\]/.exec(line.text)?.[1];
    const times = recorded.get(`${line.at / SECOND} ${tag}`);
    const at = times?.shift();
    if (at !== undefined) exact.set(line, at + 1 - 1e-6);
  }
  const keys = new Map<IncidentLine, number>();
  let later = Infinity;
  for (const line of timeline.filter((one) => inSecond.has(one)).reverse()) {
    later = Math.min(later, exact.get(line) ?? line.at + SECOND - 1e-6);
    keys.set(line, later);
  }
  const key = (line: IncidentLine) => keys.get(line) ?? line.at;
  timeline.sort((a, b) => key(a) - key(b) || order(a.source) - order(b.source));
  // The service's own lines around the events only (at most 20 before and after each), never its whole
  // log: an access log would bury the story.
  const kept = new Set<IncidentLine>();
  timeline.forEach((line, index) => {
    if (line.source === "service") return;
    for (const [step, from] of [
      [-1, index - 1],
      [1, index + 1],
    ]) {
      let taken = 0;
      for (let at = from; at >= 0 && at < timeline.length && taken < AROUND; at += step) {
        if (timeline[at].source !== "service") continue;
        kept.add(timeline[at]);
        taken++;
      }
    }
  });
  const told = timeline.filter((line) => line.source !== "service" || kept.has(line));
  timeline.length = 0;
  timeline.push(...told);
  const first = (test: (line: IncidentLine) => boolean) =>
    timeline.find((line) => line.at >= from - SECOND && test(line));
  // Detected: tend said it down (HUNG, FAILED, a crash, a failed unit); else the 🚨/⚠️ it sent (a
  // notification is timed to the millisecond, a log line to its second: the line first, when there is one).
  const detected =
    first(
      (line) =>
        line.source === "tend" && /^\[(HUNG|FAILED|MEMORY)\]|crash|not running| is failed | is down /.test(line.text),
    ) ?? first((line) => line.source === "notification" && /^(🚨|⚠️)/u.test(line.text));
  const restarted = first((line) => line.source === "tend" && /^\[RESTART\]/.test(line.text));
  const recovered = restarted
    ? timeline.find((line) => line.at >= restarted.at && /^\[(RECOVERED|FAILED)\]/.test(line.text))
    : undefined;
  const since = (line: IncidentLine | undefined, start: number) =>
    line ? Math.max(0, Math.round((line.at - start) / SECOND)) : null;
  return {
    service: service.name,
    outage: {
      from: new Date(from).toISOString(),
      to: outage.to === null ? null : new Date(outage.to).toISOString(),
      reason: outage.reason,
      open: outage.to === null,
    },
    timeline,
    numbers: {
      detected_s: since(detected, from),
      restarted_s: since(restarted, from),
      recovered_s: restarted && recovered?.text.startsWith("[RECOVERED]") ? since(recovered, restarted.at) : null,
      // The same rounding as downtime.log's line for this outage.
      down_s: Math.round(Math.max(0, to - from) / SECOND),
    },
  };
}

/** A notification as it was sent: its event's emoji first. */
const emojiOf = (event: string) => (event in EVENTS ? `${EVENTS[event as keyof typeof EVENTS].emoji} ` : "");

/** How many of the service's own lines are told before and after each event. */
const AROUND = 20;

const order = (source: Source) => ["host", "tend", "service", "notification"].indexOf(source);

/** The service's own words: its unit's journal (timed), else its output file's lines that carry a time. */
async function serviceLines(
  service: ServiceConfig,
  config: Config,
  state: ServiceState,
  lo: number,
  hi: number,
): Promise<IncidentLine[]> {
  const unit = serviceUnit(service);
  if (unit) {
    const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC";
    const journal = await runCommand(
      ["journalctl", "-u", unit, "--since", iso(lo), "--until", iso(hi), "-o", "short-unix", "--no-pager", "-n", "200"],
      { timeoutMs: 10_000 },
    );
    return journal.exitCode === 0
      ? journal.stdout.split("\n").flatMap((line) => {
          const parsed = /^(\d+(?:\.\d+)?) \S+ \S+: (.*)$/.exec(line);
          return parsed
            ? [{ at: Number(parsed[1]) * SECOND, source: "service" as const, text: oneLine(parsed[2], 400) }]
            : [];
        })
      : [];
  }
  // The output file tend made (spawn's, a pane's pipe): a line with a time of its own is placed at
  // it; one without, between the two looks of the passes around its end (the state's outputMarks).
  const path = ownOutputOf(service) ?? statePaths(config.watchdog.stateDir).serviceOutput(service.name);
  const { text, offset } = tailAt(path, 256 * 1024);
  const marks = state.outputMarks ?? [];
  let end = offset;
  return text.split("\n").flatMap((line) => {
    end += Buffer.byteLength(line) + 1;
    if (!line) return [];
    const stamp = /^\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,]\d+)?(Z|[+-]\d\d:?\d\d)?\]?\s+(.*)$/.exec(line);
    if (stamp) {
      const at = stamp[3] ? Date.parse(`${stamp[1]}T${stamp[2]}${stamp[3]}`) : localTime(`${stamp[1]} ${stamp[2]}`);
      return at >= lo && at <= hi ? [{ at, source: "service" as const, text: oneLine(stamp[4], 400) }] : [];
    }
    // The first look that found the file past this line's end; the look before it had not.
    const seen = marks.findIndex(([, bytes]) => bytes >= end - 1);
    if (seen <= 0) return []; // before the first look, or after the last: when is unknown
    const [after, before] = [marks[seen - 1][0], marks[seen][0]];
    if (before < lo || after > hi) return [];
    const time = (at: number) => localStamp(new Date(at)).slice(11, 19);
    const between = `written between ${time(after)} and ${time(before)}`;
    return [{ at: before, source: "service" as const, text: `${oneLine(line, 400)} (${between})` }];
  });
}

const clock = (at: number) => localStamp(new Date(at));

function numbersLine({ numbers, outage }: Incident): string {
  const said = [
    outage.open ? `open: down since ${clock(Date.parse(outage.from))}, not yet recovered` : null,
    numbers.detected_s !== null ? `detected after ${numbers.detected_s}s` : "not detected as down",
    numbers.restarted_s !== null ? `restarted after ${numbers.restarted_s}s` : "not restarted",
    numbers.recovered_s !== null ? `recovered ${numbers.recovered_s}s after the restart` : null,
    `down ${numbers.down_s}s`,
  ];
  return said.filter(Boolean).join("; ");
}

export function renderIncident(incident: Incident): string {
  const { outage } = incident;
  const head =
    `${incident.service}: outage ${clock(Date.parse(outage.from))} → ` +
    `${outage.to ? clock(Date.parse(outage.to)) : "now (still down)"} (${outage.reason})`;
  const width = Math.max(...incident.timeline.map((line) => line.source.length), 4);
  const lines = incident.timeline.map((line) => `  ${clock(line.at)}  ${line.source.padEnd(width)}  ${line.text}`);
  return [head, ...lines, numbersLine(incident)].join("\n");
}

/** Markdown for a post-mortem: a heading, the timeline as a table, the numbers. */
export function renderIncidentMarkdown(incident: Incident): string {
  const { outage } = incident;
  const cell = (text: string) => text.replace(/\|/g, "\\|");
  return [
    `## ${incident.service}: outage of ${clock(Date.parse(outage.from))} (${outage.reason})`,
    "",
    "| time | source | what |",
    "| --- | --- | --- |",
    ...incident.timeline.map((line) => `| ${clock(line.at)} | ${line.source} | ${cell(line.text)} |`),
    "",
    `**Numbers:** ${numbersLine(incident)}.`,
  ].join("\n");
}
