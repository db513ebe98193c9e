// SPEC "One owner is one module" / the state-word table: after any owner records an outcome — a
// verification's end included — the pass-wide views (metrics_file, Alertmanager's alerts, the heartbeat's
// {status}) say it before that process exits, and "down" in each is the table's (tend_service_up 0), never
// a strike below N. Each view is read where it lands: the metrics file, a receiver standing in for
// Alertmanager's /api/v2/alerts (the real one is test/alertmanager.test.ts) and a push monitor's URL.
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, Sandbox, waitFor } from "./helpers.ts";
import { closePlaces, openPlace } from "./places.ts";

let box: Sandbox | null = null;
const servers: { stop: (force?: boolean) => void }[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  box?.cleanup();
  box = null;
  for (const server of servers.splice(0)) server.stop(true);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => closePlaces());

/** A receiver that keeps every request's path and body (Alertmanager's API, a push monitor). */
function receiver() {
  const seen: { path: string; body: string }[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      seen.push({ path: url.pathname + url.search, body: await request.text() });
      return new Response("ok");
    },
  });
  servers.push(server);
  return { seen, url: `http://127.0.0.1:${server.port}` };
}

/**
 * One service, api, on a port nothing answers (failing at its first strike), its restart a `true` that
 * changes nothing; the metrics file, Alertmanager's API and a push monitor as receivers.
 */
async function failingApi(sandbox: Sandbox, verifyTimeout: string) {
  const alerts = receiver();
  const push = receiver();
  const port = await freePort();
  const metrics = join(sandbox.dir, "tend.prom");
  sandbox.configure({
    watchdog: { metrics_file: metrics, heartbeat_url: `${push.url}/push?status={status}` },
    notify: { url: alerts.url, format: "alertmanager", retries: 0 },
    services: [
      {
        name: "api",
        failures: 1,
        grace: "0s",
        verify_timeout: verifyTimeout,
        check: { http: `http://127.0.0.1:${port}/`, timeout: "300ms" },
        restart: { command: ["true"] },
      },
    ],
  });
  return { alerts, push, port, metrics };
}

const pushes = (seen: { path: string }[]) =>
  seen
    .filter((one) => one.path.startsWith("/push"))
    .map((one) => new URLSearchParams(one.path.split("?")[1]).get("status"));

test("the heartbeat's {status}: up at strikes 1/3 and 2/3 (as every other view says), down at 3/3", async () => {
  box = new Sandbox();
  const push = receiver();
  const port = await freePort();
  box.configure({
    watchdog: { heartbeat_url: `${push.url}/push?status={status}&msg={msg}` },
    services: [{ name: "web", failures: 3, check: { http: `http://127.0.0.1:${port}/`, timeout: "500ms" } }],
  });
  for (let pass = 1; pass <= 3; pass++) expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  expect(pushes(push.seen)).toEqual(["up", "up", "down"]);
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
  expect(status.services[0].state).toBe("down");
});

test("a failed verification: metrics, Alertmanager and the heartbeat say so before the pass exits", async () => {
  box = new Sandbox();
  const { alerts, push, port, metrics } = await failingApi(box, "2s");
  const pass = await box.tend(["watchdog", "pass"]);
  expect(pass.code).toBe(0);
  expect(readFileSync(box.state + "/watchdog.log", "utf8")).toContain("[FAILED] api");
  // The metrics file the pass left: the failed recovery counted, the service down.
  const exposition = readFileSync(metrics, "utf8");
  const sample = (name: string, labels = "") => new RegExp(`^${name}\\{[^}]*service="api"${labels}\\} (\\S+)$`, "m");
  expect(sample("tend_service_restarts_total").exec(exposition)?.[1]).toBe("1");
  expect(sample("tend_service_recoveries_total", ',result="failed"').exec(exposition)?.[1]).toBe("1");
  expect(sample("tend_service_up").exec(exposition)?.[1]).toBe("0");
  // Alertmanager: the failure is TendServiceDown (a condition that resolves), never a hand message.
  const posted = alerts.seen.filter((one) => one.path === "/api/v2/alerts").map((one) => JSON.parse(one.body));
  expect(posted.flat().some((alert: any) => alert.labels.alertname === "TendNotification")).toBe(false);
  const last = posted[posted.length - 1].find((alert: any) => alert.labels.service === "api");
  expect(last.labels.alertname).toBe("TendServiceDown");
  expect(Date.parse(last.endsAt)).toBeGreaterThan(Date.now());
  expect(pushes(push.seen).pop()).toBe("down");
  // It comes back: the next pass resolves the same alert (endsAt now) and the heartbeat says up.
  const server = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response("ok") });
  servers.push(server);
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  const resolved = alerts.seen
    .filter((one) => one.path === "/api/v2/alerts")
    .map((one) => JSON.parse(one.body))
    .pop()
    .find((alert: any) => alert.labels.service === "api" && alert.labels.alertname === "TendServiceDown");
  expect(Date.parse(resolved.endsAt)).toBeLessThanOrEqual(Date.now());
  expect(pushes(push.seen).pop()).toBe("up");
  expect(sample("tend_service_up").exec(readFileSync(metrics, "utf8"))?.[1]).toBe("1");
}, 30_000);

/** The last alert posted for SERVICE's NAME (null: none posted). */
const lastAlert = (seen: { path: string; body: string }[], service: string, name = "TendServiceDown") =>
  seen
    .filter((one) => one.path === "/api/v2/alerts")
    .flatMap((one) => JSON.parse(one.body))
    .filter((alert: any) => alert.labels.service === service && alert.labels.alertname === name)
    .pop() ?? null;

test("an operator's restart and pause: the views say what it recorded before the command exits", async () => {
  box = new Sandbox();
  const { alerts, push, port, metrics } = await failingApi(box, "1s");
  const up = () => /^tend_service_up\{[^}]*service="api"[^}]*\} (\S+)$/m.exec(readFileSync(metrics, "utf8"))?.[1];
  const stateIs = (word: string) =>
    new RegExp(`^tend_service_state\\{[^}]*service="api"[^}]*state="${word}"[^}]*\\} 1$`, "m").test(
      readFileSync(metrics, "utf8"),
    );
  // No pass has run: the operator's restart is the first outcome recorded. Its verification fails.
  expect((await box.tend(["watchdog", "restart", "api"])).code).toBe(1);
  expect(up()).toBe("0");
  expect(Date.parse(lastAlert(alerts.seen, "api").endsAt)).toBeGreaterThan(Date.now());
  expect(pushes(push.seen)).toEqual(["down"]); // its status changed: said at once, not a pass later
  // It answers now: the operator's restart recovers it; the views follow before the command exits.
  const server = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response("ok") });
  servers.push(server);
  expect((await box.tend(["watchdog", "restart", "api"])).code).toBe(0);
  expect(up()).toBe("1");
  expect(Date.parse(lastAlert(alerts.seen, "api").endsAt)).toBeLessThanOrEqual(Date.now());
  expect(pushes(push.seen)).toEqual(["down", "up"]);
  // A pass says up again: the heartbeat is pinged (a pass always pings); a pause between passes, its status
  // unchanged, is not a ping (nothing but a pass keeps the dead-man switch quiet).
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  expect(pushes(push.seen)).toEqual(["down", "up", "up"]);
  server.stop(true);
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0); // down again, TendServiceDown firing
  expect(Date.parse(lastAlert(alerts.seen, "api").endsAt)).toBeGreaterThan(Date.now());
  expect((await box.tend(["watchdog", "pause", "api"])).code).toBe(0);
  // Paused: not down in any view (not watched: no tend_service_up), its alert resolved at once, the heartbeat told.
  expect(stateIs("paused")).toBe(true);
  expect(up()).toBeUndefined();
  expect(Date.parse(lastAlert(alerts.seen, "api").endsAt)).toBeLessThanOrEqual(Date.now());
  expect(pushes(push.seen).slice(-2)).toEqual(["down", "up"]);
}, 60_000);

test("the crash watch: its restart is in the metrics file before the next pass, no ping between passes", async () => {
  const place = openPlace("host");
  cleanups.push(() => place.cleanup());
  const push = receiver();
  const port = await freePort();
  const metrics = place.scratch("tend.prom");
  place.configure({
    watchdog: { metrics_file: metrics.inside, heartbeat_url: `${push.url}/push?status={status}` },
    defaults: { grace: "0s", cooldown: "0s" },
    services: [
      {
        name: "web",
        pidfile: "web.pid",
        check: { http: `http://127.0.0.1:${port}/` },
        restart: { spawn: [place.bun, place.server, `${port}`] },
      },
    ],
  });
  // An interval of an hour: after its first pass, only the crash watch can write anything.
  const loop = await place.spawnTend(["watchdog", "run", "--interval", "1h"]);
  cleanups.push(() => loop.kill("SIGTERM"));
  const watched = () => {
    try {
      return place.stateOf("web").watch?.pid ?? null;
    } catch {
      return null; // no state yet
    }
  };
  await waitFor(() => watched() !== null, 15_000, "web started and watched");
  const sample = (name: string) =>
    new RegExp(`^${name}\\{[^}]*service="web"[^}]*\\} (\\S+)$`, "m").exec(readFileSync(metrics.outside, "utf8"))?.[1];
  await waitFor(
    () => existsSync(metrics.outside) && sample("tend_service_up") === "1",
    15_000,
    "the first pass's metrics",
  );
  await waitFor(() => pushes(push.seen).length === 1, 10_000, "the first pass's ping");
  const restarts = Number(sample("tend_service_restarts_total"));
  const first = watched();
  const heartbeat = place.read("heartbeat");
  process.kill(await place.hostPid(first), "SIGKILL");
  await waitFor(
    () => Number(sample("tend_service_restarts_total")) === restarts + 1,
    15_000,
    "the crash watch's restart in the metrics file",
  );
  expect(sample("tend_service_up")).toBe("1");
  expect(watched()).not.toBe(first);
  // Recovered: its status never changed from the last ping's (up), so no ping between passes.
  expect(pushes(push.seen)).toEqual(["up"]);
  expect(place.read("heartbeat")).toBe(heartbeat); // no second pass ran
}, 60_000);
