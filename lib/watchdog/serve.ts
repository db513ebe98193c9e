import { timingSafeEqual } from "node:crypto";
import type { Config } from "../config/types.ts";
import { parseDuration } from "../core/duration.ts";
import { TendError, usageError } from "../core/errors.ts";
import { stateWord } from "../core/health.ts";
import { parseListen } from "../core/listen.ts";
import { oneLine } from "../core/sanitize.ts";
import { freshState, readState } from "../state/service.ts";
import { watchedServices } from "./external.ts";
import { readHeartbeat } from "./heartbeat.ts";
import { renderMetrics } from "./metrics.ts";
import { buildReport } from "./report.ts";
import { collectStats } from "./stats.ts";
import { collectStatus } from "./status.ts";

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

type Route = (config: Config, url: URL, now: number) => Promise<Response> | Response;

const ROUTES: Record<string, Route> = {
  async "/healthz"(config, _url, now) {
    const { watchdog } = await collectStatus(config, { cached: true, now: () => now });
    const last = watchdog.last_pass
      ? `last pass ${Math.round((now - Date.parse(watchdog.last_pass)) / 1000)}s ago`
      : "no pass yet";
    const said = `${last}, expected every ${watchdog.expected_every_s}s`;
    return watchdog.stale ? text(503, `stale: the watchdog is not running (${said})`) : text(200, `ok: ${said}`);
  },
  "/api/status": async (config, _url, now) => json(await collectStatus(config, { cached: true, now: () => now })),
  "/api/stats": (config) => json(collectStats(config)),
  "/api/report"(config, url, now) {
    const since = url.searchParams.get("since");
    const sinceMs = since === null ? 7 * 86_400_000 : parseDuration(since);
    if (sinceMs === null || sinceMs <= 0)
      return text(400, `since: "${oneLine(since ?? "", 40)}" is not a duration (30m, 24h, 7d)`);
    return json(buildReport(config, sinceMs, now));
  },
  "/metrics"(config, _url, now) {
    const rows = watchedServices(config).map((service) => {
      const loaded = readState(config.watchdog.stateDir, service.name, { repair: false });
      const state = loaded.problem && loaded.problem !== "missing" ? freshState() : loaded.state;
      return { name: service.name, state, word: stateWord(service, state, null, now) };
    });
    const heartbeat = readHeartbeat(config.watchdog.stateDir);
    // No pass yet: 0, so `time() - tend_last_pass_timestamp_seconds > N` alerts as it should.
    return new Response(renderMetrics(rows, heartbeat ? Date.parse(heartbeat.at) : 0), {
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
    const given = /^Bearer (\S+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!given || !sameToken(given, config.serve.token))
      return text(401, "unauthorized: send Authorization: Bearer TOKEN", { "WWW-Authenticate": 'Bearer realm="tend"' });
  }
  const route = Object.hasOwn(ROUTES, url.pathname) ? ROUTES[url.pathname] : undefined;
  if (!route) return text(404, `not found: ${oneLine(url.pathname, 80)} (try /healthz, /api/status, /metrics)`);
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

/** Listen on `listen` (else `[serve] listen`); loopback, or a token. */
export function startServer(config: Config, listen = config.serve.listen): Serving {
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
        return answer(config, request);
      },
      error: () => text(500, "internal error"),
    });
  } catch (error) {
    throw new TendError(`cannot listen on ${listen}: ${oneLine((error as Error).message, 200)}`, 1);
  }
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  return { url: `http://${host}:${server.port}/`, stop: () => server.stop(true) };
}
