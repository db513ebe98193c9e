import { timingSafeEqual } from "node:crypto";
import { hostname } from "node:os";
import { tailLines } from "../os/files.ts";
import { statePaths } from "../state/dir.ts";
import { renderPage, type PageData, type PeerView, type ServiceView } from "./page.ts";
import { readBounded } from "../os/net.ts";
import { shownUrl } from "../core/redact.ts";
import type { StatusReport } from "./status.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { parseDuration } from "../core/duration.ts";
import { TendError, usageError } from "../core/errors.ts";
import { parseListen } from "../core/listen.ts";
import { oneLine } from "../core/sanitize.ts";
import { parseSamples } from "../core/latency.ts";
import { stateReader, type StateCache, type StateReader } from "../state/service-state.ts";
import type { ServiceState } from "../core/state.ts";
import { watchedServices } from "../config/watched.ts";
import { readHeartbeat } from "../state/heartbeat.ts";
import { metricsRow, renderMetrics } from "../core/metrics.ts";
import { reportOf, serviceReport } from "./report.ts";
import { mapInSlices } from "../os/timer.ts";
import { statsOf, type ServiceStats } from "./stats.ts";
import { collectStatus, watchdogFreshness } from "./status.ts";
import { tendNow } from "../state/clock.ts";

/** Every answer: nothing cached, nothing sniffed, nothing framed, nothing loaded from elsewhere. */
const HEADERS = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
};

const text = (status: number, body: string, extra: Record<string, string> = {}) =>
  new Response(`${body}\n`, { status, headers: { ...HEADERS, "Content-Type": "text/plain; charset=utf-8", ...extra } });
const json = (value: unknown) =>
  new Response(`${JSON.stringify(value, null, 2)}\n`, {
    headers: { ...HEADERS, "Content-Type": "application/json; charset=utf-8" },
  });

/** Equal tokens compare in the same time whatever they hold: both sides are hashed first. */
function sameToken(given: string, token: string): boolean {
  const digest = (value: string) => new Bun.CryptoHasher("sha256").update(value).digest();
  return timingSafeEqual(digest(given), digest(token));
}

const COOKIE = "tend_session";
const SESSION_MS = 12 * 3_600_000;
const MAX_SESSIONS = 1000;
/** Session ids this server gave (the page's cookie), with when each ends; in memory, gone with the server. */
const sessions = new Map<string, number>();

function newSession(now: number): string {
  const id = Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url");
  if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!); // the oldest
  sessions.set(id, now + SESSION_MS);
  return id;
}

function validSession(id: string, now: number): boolean {
  const until = sessions.get(id);
  if (until === undefined) return false;
  if (until > now) return true;
  sessions.delete(id);
  return false;
}

function cookieValue(header: string, name: string): string | undefined {
  for (const part of header.slice(0, 4096).split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) {
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * A peer's answer, rebuilt from the fields the page shows, each of its type: anything else makes it
 * "not a tend /api/status answer" (unreachable), never a page that fails (a hostile peer's `detail`
 * may be an object whose toString is not a function).
 */
function peerStatus(answer: unknown): StatusReport | null {
  const data = answer as Record<string, any> | null;
  const text = (value: unknown) => typeof value === "string";
  if (typeof data !== "object" || data === null || !Array.isArray(data.services)) return null;
  if (typeof data.watchdog?.stale !== "boolean" || !(data.last_pass === null || text(data.last_pass))) return null;
  const services = [];
  for (const row of data.services) {
    if (typeof row !== "object" || row === null || !text(row.name) || !text(row.state)) return null;
    const probe = row.probe;
    if (probe !== null && probe !== undefined && (typeof probe !== "object" || !text(probe.detail))) return null;
    if (row.error !== undefined && row.error !== null && !text(row.error)) return null;
    services.push({
      name: row.name,
      state: row.state,
      error: row.error ?? null,
      probe: probe ? { ok: probe.ok === true, detail: probe.detail, latency_ms: Number(probe.latency_ms) || 0 } : null,
    });
  }
  return {
    last_pass: data.last_pass,
    watchdog: { stale: data.watchdog.stale, expected_every_s: Number(data.watchdog.expected_every_s) || 0 },
    services,
  } as unknown as StatusReport;
}

/** A peer's /api/status, server-side (3 s, 1 MiB, no redirects); anything else is `unreachable` and why. */
async function askPeer(peer: Config["serve"]["peers"][number]): Promise<PeerView> {
  const url = shownUrl(peer.url);
  try {
    const response = await fetch(new URL("api/status", peer.url), {
      signal: AbortSignal.timeout(3000),
      redirect: "manual",
      headers: peer.token ? { Authorization: `Bearer ${peer.token}` } : {},
    });
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => {});
      return { url, status: null, problem: `HTTP ${response.status}` };
    }
    const status = peerStatus(JSON.parse(await readBounded(response, 1024 * 1024)));
    return status ? { url, status, problem: null } : { url, status: null, problem: "not a tend /api/status answer" };
  } catch (error) {
    const name = (error as Error).name;
    const problem = name === "TimeoutError" ? "no answer within 3s" : oneLine((error as Error).message, 120);
    return { url, status: null, problem };
  }
}

// A big host's views are built a service at a time in slices of a few ms: this process may also run
// the loop, whose crash watch must not wait for a page (bench/render.ts).
async function slicedReport(
  config: Config,
  sinceMs: number,
  now: number,
  read = stateReader(config.watchdog.stateDir),
  cells = 48,
) {
  const rows = await mapInSlices(watchedServices(config, read), (service) =>
    serviceReport(service.name, read(service.name), sinceMs, now, cells),
  );
  return reportOf(rows, sinceMs, now, cells);
}

/**
 * Per service, the page's stats and what it draws besides the reports: its own events, its
 * latencies (the latency history parsed once, for both).
 */
async function serviceViews(config: Config, now: number, read: StateReader) {
  const rows = await mapInSlices(watchedServices(config, read, now), (service) => {
    const state = read(service.name);
    const samples = samplesOf(state);
    const events = state.events ?? (state.lastEvent ? [state.lastEvent] : []);
    // The whole history: the chart takes the last day of it in its one look at each sample.
    const view: ServiceView = { events, latency: samples };
    return { name: service.name, stats: statsFor(service, state, samples), view };
  });
  return {
    stats: rows.map((row) => row.stats),
    views: Object.fromEntries(rows.map((row) => [row.name, row.view])) as Record<string, ServiceView>,
  };
}
const DAY_MS = 86_400_000;

/**
 * This server's states, kept while their files are unchanged (a page asked again and again reads and
 * parses only what a pass wrote since), and each kept state's latency history, parsed once.
 */
const stateCaches = new Map<string, StateCache>();
const cachedReader = (config: Config) => {
  const dir = config.watchdog.stateDir;
  if (!stateCaches.has(dir)) stateCaches.set(dir, new Map());
  return stateReader(dir, { once: true, cache: stateCaches.get(dir) });
};
const parsedSamples = new WeakMap<ServiceState, ReturnType<typeof parseSamples>>();
/** A kept state's stats: they depend on its samples and outages and on the timeout, never on the time. */
const keptStats = new WeakMap<ServiceState, { timeoutMs: number; stats: ServiceStats }>();
function statsFor(service: ServiceConfig, state: ServiceState, samples: ReturnType<typeof parseSamples>) {
  const kept = keptStats.get(state);
  if (kept?.timeoutMs === service.check.timeoutMs) return kept.stats;
  const stats = statsOf(service, state, samples);
  if (Object.isFrozen(state)) keptStats.set(state, { timeoutMs: service.check.timeoutMs, stats });
  return stats;
}
function samplesOf(state: ServiceState) {
  let samples = parsedSamples.get(state);
  if (!samples) parsedSamples.set(state, (samples = parseSamples(state.latencyLog)));
  return samples;
}
const slicedStats = (config: Config, read = stateReader(config.watchdog.stateDir)) =>
  mapInSlices(watchedServices(config, read), (service) => statsOf(service, read(service.name)));

type Route = (config: Config, url: URL, now: number) => Promise<Response> | Response;

const ROUTES: Record<string, Route> = {
  async "/"(config, _url, now) {
    const read = cachedReader(config); // one read per file, three views
    await mapInSlices(watchedServices(config, read, now), (service) => read(service.name));
    const status = await collectStatus(config, { cached: true, now: () => now, read });
    const { stats, views } = await serviceViews(config, now, read);
    const data: PageData = {
      host: hostname(),
      now,
      status,
      report: await slicedReport(config, DAY_MS, now, read),
      month: await slicedReport(config, 30 * DAY_MS, now, read, 30),
      stats,
      views,
      downtime: tailLines(statePaths(config.watchdog.stateDir).downtime, 10),
      refreshS: Math.min(60, Math.max(10, Math.round(config.watchdog.intervalMs / 1000))),
      peers: await Promise.all(config.serve.peers.map(askPeer)),
    };
    const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
    return new Response(renderPage(data, nonce), {
      headers: {
        ...HEADERS,
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy":
          `default-src 'none'; style-src 'nonce-${nonce}'; ` +
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      },
    });
  },

  "/healthz"(config, _url, now) {
    const watchdog = watchdogFreshness(config, now); // what monitors poll: the heartbeat only
    const last = watchdog.last_pass
      ? `last pass ${Math.max(0, Math.round((now - Date.parse(watchdog.last_pass)) / 1000))}s ago`
      : "no pass yet";
    const said = `${last}, expected every ${watchdog.expected_every_s}s`;
    return watchdog.stale ? text(503, `stale: the watchdog is not running (${said})`) : text(200, `ok: ${said}`);
  },
  "/api/status": async (config, _url, now) => json(await collectStatus(config, { cached: true, now: () => now })),
  "/api/stats": async (config) => json(await slicedStats(config)),
  // One outage's timeline (watchdog incident), linked from the page's events: ?service=NAME&at=ISO.
  async "/incident"(config, url, now) {
    const { collectIncident, parseAt, renderIncident } = await import("./incident.ts");
    const service = url.searchParams.get("service");
    const when = url.searchParams.get("at");
    try {
      const at = when === null ? null : parseAt(when);
      return text(200, renderIncident(await collectIncident(config, service, { at, now })));
    } catch (error) {
      if (error instanceof TendError) return text(404, oneLine(error.message, 200));
      throw error;
    }
  },
  async "/api/report"(config, url, now) {
    const since = url.searchParams.get("since");
    const sinceMs = since === null ? 7 * 86_400_000 : parseDuration(since);
    if (sinceMs === null || sinceMs <= 0 || sinceMs > 365 * 86_400_000)
      return text(400, `since: "${oneLine(since ?? "", 40)}" is not a duration up to 365d (30m, 24h, 7d)`);
    return json(await slicedReport(config, sinceMs, now));
  },
  async "/metrics"(config, _url, now) {
    const read = stateReader(config.watchdog.stateDir);
    const rows = await mapInSlices(watchedServices(config, read, now), (service) =>
      metricsRow(service, read(service.name)),
    );
    const heartbeat = readHeartbeat(config.watchdog.stateDir);
    // No pass yet: 0, so `time() - tend_last_pass_timestamp_seconds > N` alerts as it should.
    return new Response(renderMetrics(rows, heartbeat ? Date.parse(heartbeat.at) : 0, hostname()), {
      headers: { ...HEADERS, "Content-Type": "text/plain; version=0.0.4; charset=utf-8" },
    });
  },
};

/** One request: method, token, route; never a stack trace. */
export async function answer(config: Config, request: Request, now = Date.now()): Promise<Response> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return text(400, "bad request");
  }
  if (config.serve.token !== null) {
    const asked = url.searchParams.get("token");
    // The page's link form: ?token= becomes a cookie and leaves the URL (and the history) at once.
    // The cookie is a random session id of this server (named for its port, 12 h), never the token.
    const cookieName = `${COOKIE}_${url.port || "80"}`;
    if (url.pathname === "/" && asked !== null && sameToken(asked, config.serve.token)) {
      const session = newSession(now);
      const cookie = `${cookieName}=${session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MS / 1000}`;
      return new Response(null, { status: 303, headers: { ...HEADERS, Location: "/", "Set-Cookie": cookie } });
    }
    // The scheme is case-insensitive (RFC 9110): "bearer" and "BEARER" are Bearer.
    const bearer = /^Bearer +(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    const session = cookieValue(request.headers.get("cookie") ?? "", cookieName);
    const allowed = bearer
      ? sameToken(bearer, config.serve.token)
      : session !== undefined && validSession(session, now);
    if (!allowed)
      return text(401, "unauthorized: send Authorization: Bearer TOKEN (the page: /?token=TOKEN)", {
        "WWW-Authenticate": 'Bearer realm="tend"',
      });
  }
  const route = Object.hasOwn(ROUTES, url.pathname) ? ROUTES[url.pathname] : undefined;
  if (!route) return text(404, `not found: ${oneLine(url.pathname, 80)} (try /, /healthz, /api/status, /metrics)`);
  if (request.method !== "GET" && request.method !== "HEAD")
    return text(405, `method not allowed: ${oneLine(request.method, 16)}`, { Allow: "GET, HEAD" });
  try {
    return await route(config, url, now);
  } catch {
    return text(500, "internal error: see `watchdog status` on the host");
  }
}

export interface Serving {
  url: string;
  stop: () => void;
}

/** A Host header that names this loopback server: localhost, 127.0.0.1 or [::1], with its port or none. */
function loopbackHost(host: string | null, port: number | undefined): boolean {
  const match = /^(localhost|127\.0\.0\.1|\[::1\])(?::(\d+))?$/i.exec(host?.trim() ?? "");
  return match !== null && (match[2] === undefined || Number(match[2]) === port);
}

/** Listen on `listen` (else `[serve] listen`); loopback, or a token. */
export function startServer(
  config: Config,
  listen = config.serve.listen,
  current: () => Config = () => config,
): Serving {
  const address = parseListen(listen);
  if (!address) throw usageError(`--listen: ${JSON.stringify(listen)} is not ADDR:PORT (127.0.0.1:9841, [::1]:9841)`);
  if (!address.loopback && config.serve.token === null)
    throw usageError(
      `--listen ${listen} is not loopback: set [serve] token first (anyone on the network could read it)`,
    );
  let server: ReturnType<typeof Bun.serve>;
  let answered = 0;
  try {
    server = Bun.serve({
      hostname: address.hostname,
      port: address.port,
      fetch: (request) => {
        // A server that runs for months must not grow: collect fully every 1000 answers (~1 ms).
        if (++answered % 1000 === 0) Bun.gc(true);
        // DNS rebinding: a page on evil.example resolved to 127.0.0.1 would read /api/status. A loopback
        // listener answers only requests addressed to a loopback name.
        if (address.loopback && !loopbackHost(request.headers.get("host"), server.port))
          return text(421, "misdirected request: this server answers only localhost, 127.0.0.1 and [::1]");
        // tend's time: the records' frame, whatever the wall clock did since the last pass.
        // The configuration as its file says now (an edit shows at once; an invalid one keeps the last good).
        const latest = current();
        return tendNow(latest.watchdog.stateDir).then((now) => answer(latest, request, now()));
      },
      error: () => text(500, "internal error"),
    });
  } catch (error) {
    throw new TendError(`cannot listen on ${listen}: ${oneLine((error as Error).message, 200)}`, 1);
  }
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  return { url: `http://${host}:${server.port}/`, stop: () => server.stop(true) };
}
