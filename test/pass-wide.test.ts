// SPEC "One owner is one module" / the state-word table: after any owner records an outcome — a
// verification's end included — the pass-wide views (metrics_file, Alertmanager's alerts, the heartbeat's
// {status}) say it before that process exits, and "down" in each is the table's (tend_service_up 0), never
// a strike below N. Each view is read where it lands: the metrics file, a receiver standing in for
// Alertmanager's /api/v2/alerts (the real one is test/alertmanager.test.ts) and a push monitor's URL.
import { afterEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, Sandbox } from "./helpers.ts";

let box: Sandbox | null = null;
const servers: { stop: (force?: boolean) => void }[] = [];
afterEach(() => {
  box?.cleanup();
  box = null;
  for (const server of servers.splice(0)) server.stop(true);
});

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
  const alerts = receiver();
  const push = receiver();
  const port = await freePort();
  const metrics = join(box.dir, "tend.prom");
  box.configure({
    watchdog: { metrics_file: metrics, heartbeat_url: `${push.url}/push?status={status}` },
    notify: { url: alerts.url, format: "alertmanager", retries: 0 },
    services: [
      {
        name: "api",
        failures: 1,
        grace: "0s",
        verify_timeout: "2s",
        check: { http: `http://127.0.0.1:${port}/`, timeout: "300ms" },
        restart: { command: ["true"] },
      },
    ],
  });
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
