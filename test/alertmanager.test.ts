// Alerts that close: tend against Debian's real Alertmanager (unpacked by make test), started here
// on 127.0.0.1 with a null receiver and a short resolve_timeout, queried through /api/v2/alerts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { makeCa, tlsServer } from "./certs.ts";
import { controlledServer, freePort, Sandbox, waitFor } from "./helpers.ts";
import { parseConfig } from "../lib/config/load.ts";
import type { ClockSource } from "../lib/os/clock.ts";
import { runPass } from "../lib/pass/pass.ts";
import { syncAlerts } from "../lib/notify/alertmanager.ts";
import { freshState } from "../lib/core/state.ts";
import { Logger } from "../lib/state/logger.ts";

const ALERTMANAGER = process.env.ALERTMANAGER ?? "build/tools/alertmanager";
const box = new Sandbox();
let port = 0;

beforeAll(async () => {
  if (!existsSync(ALERTMANAGER)) {
    throw new Error(`Alertmanager not found at ${ALERTMANAGER}: run make build/tools/alertmanager (make test does)`);
  }
  port = await freePort();
  const config = join(box.dir, "alertmanager.yml");
  writeFileSync(
    config,
    `global:\n  resolve_timeout: 1s\nroute:\n  receiver: "null"\n  group_wait: 0s\nreceivers:\n  - name: "null"\n`,
  );
  const child = Bun.spawn(
    [
      ALERTMANAGER,
      `--config.file=${config}`,
      `--storage.path=${join(box.dir, "am-data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--cluster.listen-address=",
    ],
    { stdout: "ignore", stderr: "ignore", detached: true },
  );
  box.track(child.pid);
  const ready = async () => (await fetch(`http://127.0.0.1:${port}/-/ready`).catch(() => null))?.status === 200;
  await waitFor(ready, 20_000, "Alertmanager to be ready");
});
afterAll(() => box.cleanup());

/** The alerts Alertmanager holds as active now. */
async function active() {
  const alerts = (await (await fetch(`http://127.0.0.1:${port}/api/v2/alerts?active=true`)).json()) as any[];
  return alerts.filter((alert) => alert.status.state === "active");
}

test("TendServiceDown fires, stays firing past resolve_timeout while it holds; the recovery resolves it", async () => {
  const web = controlledServer();
  web.control.status = 500;
  box.configure({
    watchdog: { interval: "1m" },
    notify: { url: `http://127.0.0.1:${port}`, format: "alertmanager" },
    services: [{ name: "web", failures: 1, check: { http: web.url } }],
  });
  await box.tend(["watchdog"]);
  const firing = await active();
  expect(firing).toHaveLength(1);
  const [alert] = firing;
  expect(alert.labels).toEqual({
    alertname: "TendServiceDown",
    service: "web",
    instance: hostname(),
    severity: "critical",
  });
  expect(alert.annotations.summary).toBe("web is down: HTTP 500 (expected 2xx/3xx)");
  expect(alert.annotations.description).toContain("web has been failing since");
  // endsAt three intervals ahead: Alertmanager's own resolve_timeout (1 s) does not end it.
  expect(Date.parse(alert.endsAt) - Date.now()).toBeGreaterThan(2 * 60_000);
  const startsAt = alert.startsAt;
  await waitFor(() => Date.now() - Date.parse(alert.updatedAt) > 2500, 10_000, "longer than resolve_timeout");
  expect(await active()).toHaveLength(1);
  await box.tend(["watchdog"]); // still down: sent again, same labels, same startsAt
  const again = await active();
  expect(again).toHaveLength(1);
  expect(again[0].startsAt).toBe(startsAt);
  console.log(`alert while down:\n${JSON.stringify(again[0], null, 2)}`);

  web.control.status = 200;
  await box.tend(["watchdog"]);
  expect(await active()).toEqual([]); // resolved: the same labels with endsAt = now
  const all = (await (await fetch(`http://127.0.0.1:${port}/api/v2/alerts?active=false`)).json()) as any[];
  console.log(`after recovery (active=false):\n${JSON.stringify(all, null, 2)}`);
  web.server.stop(true);
}, 60_000);

test("one alert per service and condition: a certificate near its end is TendCertificateExpiring", async () => {
  const certs = makeCa(join(box.dir, "ca"));
  const tls = tlsServer(certs.leaf(-1, 10));
  const dead = await freePort();
  box.configure({
    watchdog: { interval: "1m" },
    notify: { url: `http://127.0.0.1:${port}`, format: "alertmanager" },
    services: [
      { name: "site", check: { tls: `localhost:${tls.port}` } },
      { name: "api", failures: 1, check: { tcp: `127.0.0.1:${dead}` } },
    ],
  });
  await box.tend(["watchdog"], { env: { NODE_EXTRA_CA_CERTS: certs.ca } });
  const alerts = await active();
  const names = alerts.map((alert) => `${alert.labels.alertname} ${alert.labels.service} ${alert.labels.severity}`);
  expect(names.sort()).toEqual(["TendCertificateExpiring site warning", "TendServiceDown api critical"]);
  const cert = alerts.find((alert) => alert.labels.alertname === "TendCertificateExpiring")!;
  expect(cert.annotations.summary).toMatch(/^site: the certificate for localhost expires in (9\.\d|10\.0) days/);
  tls.stop(true);
}, 30_000);

test("a clock step back (injected clock): the resolve Alertmanager gets never starts after it ends", async () => {
  const web = controlledServer();
  web.control.status = 500;
  const text = `
[watchdog]
state_dir = "${box.state}"
interval = "1m"
[notify]
url = "http://127.0.0.1:${port}"
format = "alertmanager"
[[service]]
name = "stepped"
failures = 1
[service.check]
http = "${web.url}"
`;
  box.writeConfig(text);
  const config = parseConfig(text, box.config, box.env());
  const clock = { stepMs: 0 };
  const source: ClockSource = {
    read: async () => ({
      wallMs: Date.now() + clock.stepMs,
      bootMs: performance.now(),
      bootId: "a1b2c3d4-0000-4000-8000-000000000009",
    }),
    monotonic: () => performance.now(),
  };
  const lines: string[] = [];
  await runPass({ config, echo: (line) => lines.push(line), clock: source });
  expect((await active()).filter((alert) => alert.labels.service === "stepped")).toHaveLength(1);
  // An hour back, and healthy: resolved with endsAt now, an hour before the startsAt it fired with.
  clock.stepMs = -3_600_000;
  web.control.status = 200;
  await runPass({ config, echo: (line) => lines.push(line), clock: source });
  expect(lines.join("\n")).toContain("the clock stepped -3600s");
  expect(lines.join("\n")).not.toContain("could not post");
  expect((await active()).filter((alert) => alert.labels.service === "stepped")).toEqual([]);
  web.server.stop(true);
}, 60_000);

test("TendMemoryGrowth holds while the samples project the limit; a restart that drops it resolves it", async () => {
  const text = `
[watchdog]
state_dir = "${box.state}"
interval = "1m"
[notify]
url = "http://127.0.0.1:${port}"
format = "alertmanager"
[[service]]
name = "leaky"
pidfile = "${join(box.dir, "leaky.pid")}"
[service.check]
http = "http://127.0.0.1:1/"
[service.memory]
limit = "400MiB"
warn_within = "1h"
`;
  const config = parseConfig(text, box.config, box.env());
  const service = config.services[0];
  const logger = new Logger(null);
  const now = Date.now();
  const MiB = 1024 * 1024;
  // Ten samples a minute apart, 10 MiB more each: 400 MiB within the hour.
  const rising = Array.from(
    { length: 10 },
    (_, i) => [now - (13 - i) * 60_000, (100 + 10 * i) * MiB] as [number, number],
  );
  const growth = async () =>
    (await active()).filter(
      (alert) => alert.labels.service === "leaky" && alert.labels.alertname === "TendMemoryGrowth",
    );
  await syncAlerts(config, [{ service, state: { ...freshState(), rss: rising } }], null, logger, now);
  const firing = await growth();
  expect(firing).toHaveLength(1);
  expect(firing[0].annotations.summary).toMatch(/^leaky memory grows .* reaches the limit 400 MiB in /);
  // Restarted: the new process starts small again; the trend is no longer toward the limit.
  const dropped = [...rising, ...[2, 1, 0].map((i) => [now - i * 60_000, 60 * MiB] as [number, number])];
  await syncAlerts(config, [{ service, state: { ...freshState(), rss: dropped } }], null, logger, Date.now());
  await waitFor(async () => (await growth()).length === 0, 10_000, "TendMemoryGrowth resolved");
}, 30_000);
