import { servicesAt } from "../config/watched.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { usageError } from "../core/errors.ts";
import { localStamp } from "../core/time.ts";
import { isStale } from "../core/health.ts";
import { colourOf, isCalm, isWatched, viewOf, WORDS, type StateWord } from "../core/verdict.ts";
import type { Decision } from "../core/decide.ts";
import { assess, blocksNow, DependencyBoard, type AssessOptions } from "../pass/assess.ts";
import { STOPPED } from "../pass/stopping.ts";
import { bootTimeMs, isRunning, readProc, uptimeMs } from "../os/proc.ts";
import { clocks } from "../os/libc.ts";
import { systemClock } from "../os/clock.ts";
import { findGap } from "../state/heartbeat.ts";
import type { Downtime } from "../core/events.ts";
import { readHolder } from "../os/lock.ts";
import { statePaths } from "../state/dir.ts";
import { tendClock, tendNow } from "../state/clock.ts";
import { fittingConcurrency } from "../os/fdlimit.ts";
import { readHeartbeat } from "../state/heartbeat.ts";
import { limiter } from "../core/limiter.ts";
import { probeContext } from "../os/pidsource.ts";
import { probe, type ProbeResult } from "../checks/index.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import { type ProbeRecord, type ServiceState } from "../core/state.ts";
import { deadCount, readNotifyState, spoolCount } from "../notify/spool.ts";

export interface StatusRow {
  name: string;
  /**
   * The bare state word: the pass's own rule applied now to the recorded state and the probe made
   * now (nothing written); with `--cached`, what the last pass recorded (`new` before any judged it).
   */
  state: StateWord;
  /** Why it is so, and when that state ends by itself (ISO-8601). */
  reason: string | null;
  until: string | null;
  decided_at: string | null;
  /** What the last pass decided, and when (null: no pass has judged it). */
  last_pass: { state: StateWord; reason: string; at: string } | null;
  /** The last pass could not judge this service: why (the state is the last one it had). */
  error: string | null;
  /** Its process runs as another user and /proc does not show it (Android's hidepid): said, the probe judges. */
  hidden_process?: string | null;
  strikes: number;
  failures: number;
  /** The check's timeout: the latency that counts as no answer. */
  timeout_ms: number;
  probe: {
    ok: boolean;
    detail: string;
    latency_ms: number;
    at: string | null;
    /** A plugin's perfdata (check.nagios), every item as it gave it. */
    perfdata?: ProbeRecord["perfdata"];
  } | null;
  restarts: number;
  recoveries_ok: number;
  recoveries_failed: number;
  last_event: { at: string; tag: string; message: string } | null;
}

export interface StatusReport {
  last_pass: string | null;
  /** The watchdog itself: stale when its last pass is older than 2 x interval + 30 s. */
  watchdog: {
    last_pass: string | null;
    stale: boolean;
    never_ran?: boolean;
    /** A pass is running now (its record in watchdog.lock, its process alive): the PID. */
    running_pass?: number;
    expected_every_s: number;
  };
  services: StatusRow[];
  /** Services judged outside the configuration (blogtunnel) that nothing judges any more: not rows. */
  unwatched?: { name: string; last_judged: string | null }[];
  /** Notifications waiting in the spool, and the last delivery failure (cleared by a clean delivery). */
  notify: { spooled: number; dead: number; last_error: { at: string; detail: string } | null };
}

interface StatusOptions {
  names?: string[];
  /** Use the last pass's probe instead of probing now. */
  cached?: boolean;
  now?: () => number;
  read?: StateReader;
  /** When the host booted (epoch ms): a verdict from before it is not the service's state now. */
  bootedAt?: () => number;
}

/**
 * The time a status is collected and said in: tend's (core/clock.ts; the records' frame, even when
 * the wall clock stepped since the last pass), and the boot measured back from it by the uptime.
 */
export async function statusClock(stateDir: string): Promise<Required<Pick<StatusOptions, "now" | "bootedAt">>> {
  const now = await tendNow(stateDir);
  return { now, bootedAt: () => now() - uptimeMs() };
}

/** The host's reboot since the last pass, as the next pass will find it (read only), or null. */
async function rebootSinceLastPass(config: Config): Promise<Downtime | null> {
  const { stateDir, intervalMs } = config.watchdog;
  const clock = await tendClock(stateDir, systemClock);
  const gap = findGap(stateDir, intervalMs, clock.now(), await clocks(), clock.frame);
  return gap?.name === "host" ? gap : null;
}

/** Probe every (named) service now, with the pass's own probe, and describe it. Changes nothing. */
export async function collectStatus(
  config: Config,
  {
    names = [],
    cached = false,
    now: given,
    read = stateReader(config.watchdog.stateDir),
    bootedAt: givenBoot,
  }: StatusOptions = {},
): Promise<StatusReport> {
  const clock = given ? { now: given, bootedAt: bootTimeMs } : await statusClock(config.watchdog.stateDir);
  const now = clock.now;
  const bootedAt = givenBoot ?? clock.bootedAt;
  // A service nothing judges any more is no row, unless asked for by name.
  const services = servicesAt(config, read, now());
  const { unwatched } = services;
  const all = unwatched.some((one) => names.includes(one.name)) ? services.all : services.watched;
  const unknown = names.filter((name) => !all.some((service) => service.name === name));
  if (unknown.length)
    throw usageError(
      `no such service: ${unknown.join(", ")} (configured: ${all.map((s) => s.name).join(", ") || "none"})`,
    );
  const chosen = all.filter((service) => names.length === 0 || names.includes(service.name));
  const limit = limiter(fittingConcurrency(config.watchdog.concurrency)); // the same bound as a pass
  const booted = bootedAt();
  // A reboot since the last pass: the pass will start what is not running as boot starts, not crashes.
  const reboot = cached ? null : await rebootSinceLastPass(config);
  const assessing = { uptimeMs: uptimeMs(), bootDelayMs: config.watchdog.bootDelayMs, gap: reboot, now };
  // As a pass does: a dependency is decided first, and a service waits on those that fail now; one
  // not shown is assessed now as well (the pass will judge it before this one).
  const board = new DependencyBoard(
    chosen.map((service) => service.name),
    (name) =>
      blocksNow(
        all.find((other) => other.name === name)!,
        read(name),
        assessing,
      ),
  );
  const rows = await Promise.all(
    chosen.map((service) =>
      (async () => {
        // Missing or corrupt: a fresh state (a pass repairs and logs it, status does not).
        const state = read(service.name);
        if (cached) {
          const result = state.lastProbe ? { ...state.lastProbe, timedOut: false } : null;
          return describe(service, state, result, state.lastProbe?.at ?? null, now(), booted);
        }
        const failingDependencies = await board.failingFor(service);
        try {
          const decided = await limit(() => decideNow(service, state, { ...assessing, failingDependencies }));
          board.sayFrom(service.name, decided.next);
          return decided.row;
        } catch (error) {
          board.say(service.name, true);
          throw error;
        }
      })(),
    ),
  );
  const spooled = spoolCount(config.watchdog.stateDir); // counted, not parsed: asked on every request
  const watchdog = watchdogFreshness(config, now());
  return {
    last_pass: watchdog.last_pass,
    watchdog,
    services: rows,
    ...(unwatched.length && !names.length
      ? {
          unwatched: unwatched.map((one) => ({
            name: one.name,
            last_judged: one.judgedAt === null ? null : new Date(one.judgedAt).toISOString(),
          })),
        }
      : {}),
    notify: {
      spooled,
      dead: deadCount(config.watchdog.stateDir),
      last_error: readNotifyState(config.watchdog.stateDir).lastError,
    },
  };
}

/** The watchdog itself, from its heartbeat: stale when the last pass is older than 2 x interval + 30 s. */
export function watchdogFreshness(config: Config, now: number): StatusReport["watchdog"] {
  const heartbeat = readHeartbeat(config.watchdog.stateDir);
  const intervalMs = heartbeat?.intervalMs ?? config.watchdog.intervalMs;
  const lastPass = heartbeat ? Date.parse(heartbeat.at) : null;
  // A pass running right now (a long one: slow probes) is the watchdog running, not a stale one.
  const holder = readHolder(statePaths(config.watchdog.stateDir).lock);
  const running = holder?.who === "pass" && isRunning(readProc(holder.pid)) ? holder.pid : null;
  // Never run (no heartbeat yet) is said as stale is: nothing watches, so nothing is fine.
  return {
    last_pass: heartbeat?.at ?? null,
    stale: running === null && (lastPass === null || isStale(lastPass, intervalMs, now)),
    ...(lastPass === null && running === null ? { never_ran: true } : {}),
    ...(running !== null ? { running_pass: running } : {}),
    expected_every_s: Math.round(intervalMs / 1000),
  };
}

function describe(
  service: ServiceConfig,
  state: ServiceState,
  result: ProbeResult | null,
  at: number | null,
  now: number,
  bootedAt: number,
): StatusRow {
  const { word, verdict } = viewOf(service.enabled, state.verdict);
  // Decided before the host booted (a phone's reboot, before the first pass since): what the pass
  // saw then, not the service now — it may never have been started since. Not calm until judged.
  // A second of slack: the boot time is now minus the uptime, to the second.
  const beforeBoot =
    verdict && verdict.at < bootedAt - 1000 && isWatched(word)
      ? `decided before the host booted at ${localStamp(new Date(bootedAt))}`
      : null;
  const iso = (at: number | null | undefined) => (at === null || at === undefined ? null : new Date(at).toISOString());
  return {
    name: service.name,
    state: word,
    reason: verdict?.reason ?? null,
    until: iso(verdict?.until),
    decided_at: iso(verdict?.at),
    last_pass: verdict && { state: verdict.word, reason: verdict.reason, at: iso(verdict.at)! },
    error: verdict?.error ?? beforeBoot,
    strikes: state.strikes,
    failures: service.failures,
    timeout_ms: service.check.timeoutMs,
    probe: result && {
      ok: result.ok,
      detail: result.detail,
      latency_ms: result.latencyMs,
      at: at ? new Date(at).toISOString() : null,
      ...(result.perfdata?.length ? { perfdata: result.perfdata } : {}),
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

/**
 * The pass's own rule, applied now: the facts a pass gathers, the probe it makes, and the one pure
 * decide() over the recorded state — written nowhere. A frozen service the last pass found healthy
 * is `failing 1/3` now; one struck 1/3 that answers now is `healthy`. Two words are what a pass is
 * doing rather than what it would decide: a restart being verified right now stays `restarting`,
 * and a restart the next pass would make is `down` until it is made.
 */
async function decideNow(
  service: ServiceConfig,
  state: ServiceState,
  options: Omit<AssessOptions, "logger">,
): Promise<{ row: StatusRow; next: ServiceState }> {
  const recorded = state.verdict;
  const assessed = await assess(service, state, { ...options, logger: null });
  if (assessed === STOPPED) throw new Error("status is never stopped mid-probe"); // no stop signal is given
  const { facts, main, step } = assessed;
  let { result } = assessed;
  // Shown, though not judged by it: one starting (grace, boot_delay: the pass skips it too), or one
  // decided without a probe (its process is gone). Not one paused or stopped on purpose.
  const aside = step.kind === "skip" && (step.reason === "paused" || step.reason === "stopped");
  if (result === null && service.enabled && !aside) {
    result = await probe(service.check, probeContext(main));
    facts.now = options.now();
  }
  const decision = step as Decision;
  const verifying = recorded?.kind === "restart" && recorded.until !== null && recorded.until > facts.now;
  let verdict = decision.next.verdict!;
  if (verifying) verdict = recorded!;
  else if (decision.kind === "restart") {
    const first = decision.reason === "start";
    const boot = decision.reason === "boot";
    const reason = first
      ? "never started: the next pass starts it"
      : boot
        ? "the host rebooted: the next pass starts it"
        : `the next pass restarts it (${decision.reason})`;
    const word = decision.reason === "memory" ? "healthy" : first ? "new" : boot ? "starting" : "down";
    verdict = { ...verdict, word, reason };
  }
  const row = describe(service, { ...decision.next, verdict }, result, result ? facts.now : null, facts.now, 0);
  const lastPass = recorded && {
    state: recorded.word,
    reason: recorded.reason,
    at: new Date(recorded.at).toISOString(),
  };
  return {
    row: {
      ...row,
      strikes: verifying ? state.strikes : decision.next.strikes,
      last_pass: lastPass,
      error: recorded?.error ?? null,
      hidden_process: main?.hidden ? main.detail : null,
    },
    next: decision.next,
  };
}

/** Needs nobody: its word's meaning in the one table (core/verdict.ts), unless it could not be judged. */
export const rowIsCalm = (row: Pick<StatusRow, "state" | "error">) => isCalm({ word: row.state, error: row.error });

/** Exit 0 only when every service needs nobody and the watchdog itself is running. */
export const allHealthy = (report: StatusReport) => !report.watchdog.stale && report.services.every(rowIsCalm);

/**
 * Nagios / Icinga / Consul script-check levels: 0 OK, 1 WARNING, 2 CRITICAL (3 UNKNOWN: status could
 * not run), from the one table; a service the pass could not judge is CRITICAL.
 */
const nagiosLevel = (row: StatusRow): 0 | 1 | 2 => (row.error ? 2 : WORDS[row.state].nagios);

/** A perfdata label: quoted when it holds anything but letters, digits, _ . - (Nagios plugin guidelines). */
const perfLabel = (name: string) => (/^[A-Za-z0-9_.-]+$/.test(name) ? name : `'${name.replace(/'/g, "''")}'`);
const seconds = (ms: number) => (ms / 1000).toFixed(3);

/**
 * `status --nagios`: one line, `TEND OK|WARNING|CRITICAL - what | perfdata`, and the plugin exit
 * code. Perfdata per service: its latency in seconds (critical at its timeout) and its strikes
 * (critical at `failures`).
 */
export function renderNagios(report: StatusReport, now = Date.now()): { line: string; code: 0 | 1 | 2 } {
  const levels = report.services.map(nagiosLevel);
  let code = Math.max(0, ...levels) as 0 | 1 | 2;
  const said: string[] = [];
  if (report.watchdog.never_ran) {
    code = 2;
    said.push("no pass has run yet: is cron or the loop running?");
  } else if (report.watchdog.stale) {
    code = 2;
    const ago = report.watchdog.last_pass ? Math.round((now - Date.parse(report.watchdog.last_pass)) / 1000) : 0;
    said.push(`the watchdog is not running (last pass ${Math.max(0, ago)}s ago)`);
  }
  report.services.forEach((row, index) => {
    if (levels[index] === 0) return;
    const why = row.error ? `not judged: ${row.error}` : row.probe ? row.probe.detail : (row.reason ?? "");
    said.push(`${row.name} ${row.state}${why ? ` (${why})` : ""}`);
  });
  const calm = levels.filter((level) => level === 0).length;
  if (calm) said.push(`${calm} of ${report.services.length} OK`);
  if (!report.services.length) said.push("no services");
  const perfdata = report.services.flatMap((row) => {
    const label = perfLabel(row.name);
    const latency = row.probe ? [`${label}=${seconds(row.probe.latency_ms)}s;;${seconds(row.timeout_ms)};0`] : [];
    const strikesLabel = perfLabel(`${row.name}_strikes`);
    // Every perfdata a plugin gave, under the service's name, thresholds as it gave them.
    const plugin = (row.probe?.perfdata ?? []).map(({ label: item, value, uom, warn, crit, min, max }) =>
      `${perfLabel(`${row.name}_${item}`)}=${value}${uom};${warn};${crit};${min};${max}`.replace(/;+$/, ""),
    );
    return [...latency, `${strikesLabel}=${row.strikes};;${row.failures};0`, ...plugin];
  });
  const word = ["OK", "WARNING", "CRITICAL"][code];
  return { line: `TEND ${word} - ${said.join("; ")}${perfdata.length ? ` | ${perfdata.join(" ")}` : ""}`, code };
}

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
    stateCell(row, when),
    row.probe ? (row.probe.ok ? `${row.probe.detail} ${row.probe.latency_ms}ms` : row.probe.detail) : "-",
    `${row.strikes}/${row.failures}`,
    `${row.restarts} (✓${row.recoveries_ok} ✗${row.recoveries_failed})`,
    row.last_event ? `${when(row.last_event.at)} ${row.last_event.tag}` : "-",
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]))).join("  ");
  const color = (state: StateWord, text: string) => paint[colourOf(state)](text);
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
  // Narrow, the header is two lines too, cut to the width like the rows under it.
  const cut = (text: string) => (text.length > columns ? text.slice(0, columns - 1) + "…" : text);
  const narrowHeader = [
    cut(`${header[0].padEnd(widths[0])}  ${header[1].padEnd(widths[1])}  ${header[3]}  ${header[4]}`),
    `  ${header[2]} · ${header[5]}`,
  ];
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
  const dead = watchdog.never_ran
    ? [paint.bad("no pass has run yet: is cron or the loop running?")]
    : watchdog.stale
      ? [
          paint.bad(
            `the watchdog is not running: its last pass was ` +
              `${humanDuration(now - Date.parse(watchdog.last_pass!))} ago, ` +
              `expected every ${humanDuration(watchdog.expected_every_s * 1000)} (is cron or the loop running?)`,
          ),
        ]
      : [];
  const unwatched = (report.unwatched ?? []).map((one) =>
    paint.dim(
      `${one.name}: ${one.last_judged ? `last judged ${when(one.last_judged)}` : "never judged"}, not since: ` +
        `not watched (blogtunnel run by hand, or its crontab line is gone)`,
    ),
  );
  const notJudged = report.services
    .filter((row) => row.error)
    .map((row) => paint.bad(`${row.name}: not judged by the last pass (${row.error}); shown as it was`));
  const lastPasses = report.services
    .filter(differsFromLastPass)
    .map((row) => paint.dim(`${row.name}: last pass ${when(row.last_pass!.at)}: ${row.last_pass!.state}`));
  const hidden = report.services
    .filter((row) => row.hidden_process)
    .map((row) => paint.dim(`${row.name}: ${row.hidden_process}: the probe judges it, tend never signals it`));
  return [
    ...dead,
    paint.dim(
      `last pass: ${lastPass}${watchdog.running_pass ? ` (a pass is running now: pid ${watchdog.running_pass})` : ""}`,
    ),
    ...notify,
    ...(wide ? [line(header)] : narrowHeader).map((text) => paint.dim(text)),
    ...body,
    ...notJudged,
    ...lastPasses,
    ...hidden,
    ...unwatched,
  ].join("\n");
}

/** The STATE column: the word, and until when for a state that ends by itself (a pause for a time, backoff). */
function stateCell(row: StatusRow, when: (iso: string) => string): string {
  const timed = row.state === "paused" || row.state === "backoff" || row.state === "starting";
  const counted = row.state === "failing" ? `failing ${row.strikes}/${row.failures}` : row.state;
  // Decided now, and not what the last pass recorded: `failing 1/3 (now)`.
  const word = row.error ? `${counted} (not judged)` : differsFromLastPass(row) ? `${counted} (now)` : counted;
  return timed && row.until ? `${word} until ${when(row.until)}` : word;
}

const differsFromLastPass = (row: StatusRow) => row.last_pass !== null && row.last_pass.state !== row.state;
