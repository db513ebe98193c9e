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
