import { hostname } from "node:os";
// check.tls against real TLS servers whose certificates the real openssl made, through the binary; the
// judgements also inside the Termux-shaped phone.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { makeCa, tlsServer } from "./certs.ts";
import { Sandbox } from "./helpers.ts";
import { closePlaces, openPlace, PLACES } from "./places.ts";

/** Every service's series names its host: the instance both alert paths give. */
const INSTANCE = `instance="${hostname()}",`;

const box = new Sandbox();
const servers: ReturnType<typeof Bun.serve>[] = [];
let ca = "";
let webhook: ReturnType<typeof Bun.serve>;
const received: string[] = [];

/** name -> port of a TLS server with that certificate */
const ports: Record<string, number> = {};

beforeAll(() => {
  const certs = makeCa(join(box.dir, "ca"));
  ca = certs.ca;
  const leaves = {
    in40days: certs.leaf(-1, 40),
    in10days: certs.leaf(-1, 10),
    in2days: certs.leaf(-1, 2),
    expired: certs.leaf(-30, -2),
    selfsigned: certs.selfSigned(40),
  };
  for (const [name, leaf] of Object.entries(leaves)) {
    const server = tlsServer(leaf);
    servers.push(server);
    ports[name] = server.port!;
  }
  webhook = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      received.push(await request.text());
      return new Response("ok");
    },
  });
  box.writeConfig(configText(box.state));
});

/** The corpus's configuration: one service per certificate, for a state dir where tend sees it. */
function configText(state: string) {
  const service = (name: string, target: string, extra = "") =>
    `[[service]]\nname = "${name}"\n[service.check]\ntls = "${target}"\n${extra}\n`;
  return (
    `[watchdog]\nstate_dir = "${state}"\n[notify]\nurl = "http://127.0.0.1:${webhook.port}/topic"\n` +
    service("in40days", `localhost:${ports.in40days}`) +
    service("in10days", `localhost:${ports.in10days}`) +
    service("in2days", `localhost:${ports.in2days}`) +
    service("expired", `localhost:${ports.expired}`) +
    service("expired-insecure", `localhost:${ports.expired}`, "insecure = true") +
    service("selfsigned", `localhost:${ports.selfsigned}`) +
    service("selfsigned-insecure", `localhost:${ports.selfsigned}`, "insecure = true") +
    service("wrong-name", `127.0.0.1:${ports.in40days}`, 'servername = "other.example"') +
    service("closed", `127.0.0.1:1`, 'timeout = "1s"')
  );
}

afterAll(() => {
  closePlaces();
  for (const server of servers) server.stop(true);
  webhook.stop(true);
  box.cleanup();
});

const trusted = () => ({ NODE_EXTRA_CA_CERTS: ca });

/** What each certificate is judged, as `status --json` reports it. */
function expectJudged(rows: Record<string, any>) {
  expect(rows.in40days).toMatchObject({
    ok: true,
    detail: expect.stringMatching(/^certificate valid for (39|40) days \(until /),
  });
  // Fewer than warn_days (14) left: healthy, the warning is the pass's to log.
  expect(rows.in10days).toMatchObject({
    ok: true,
    detail: expect.stringMatching(/^certificate valid for (9\.\d|10\.0) days/),
  });
  expect(rows.in2days).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/^the certificate expires in [12]\.\d days \(.*\), below fail_days 3$/),
  });
  expect(rows.expired).toMatchObject({ ok: false, detail: "TLS handshake failed: the certificate has expired" });
  // insecure accepts a chain that does not verify, never an expired certificate.
  expect(rows["expired-insecure"]).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/^the certificate expired 2\.\d days ago/),
  });
  expect(rows.selfsigned).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/^TLS handshake failed: a self-signed certificate/),
  });
  expect(rows["selfsigned-insecure"]).toMatchObject({ ok: true });
  expect(rows["wrong-name"]).toMatchObject({
    ok: false,
    detail: "TLS handshake failed: the certificate is not valid for this name",
  });
  expect(rows.closed).toMatchObject({ ok: false, detail: "no connection: connection refused" });
}

test("tls: expiry, chain and name judged (40, 10, 2 days, expired, self-signed, wrong name)", async () => {
  const run = await box.tend(["watchdog", "status", "--json"], { env: trusted() });
  expectJudged(Object.fromEntries(JSON.parse(run.stdout).services.map((row: any) => [row.name, row.probe])));
});

test("tls inside the phone (test/places.ts): the same judgements; without the CA the chain fails", async () => {
  const phone = openPlace("phone");
  try {
    phone.writeScratch("ca.pem", readFileSync(ca, "utf8"));
    phone.writeConfig(configText(phone.state));
    const status = async (env: Record<string, string>, ...names: string[]) =>
      JSON.parse((await phone.tend(["watchdog", "status", "--json", ...names], env)).stdout).services;
    const rows = await status({ NODE_EXTRA_CA_CERTS: phone.scratch("ca.pem").inside });
    expectJudged(Object.fromEntries(rows.map((row: any) => [row.name, row.probe])));
    expect((await status({}, "in40days"))[0].probe).toMatchObject({
      ok: false,
      detail: "TLS handshake failed: the chain does not verify: unable to verify the first certificate",
    });
  } finally {
    await phone.cleanup();
  }
});

test("tls: without the CA the chain does not verify (the probe checks the chain, not only the dates)", async () => {
  const run = await box.tend(["watchdog", "status", "--json", "in40days"]);
  expect(JSON.parse(run.stdout).services[0].probe).toMatchObject({
    ok: false,
    detail: "TLS handshake failed: the chain does not verify: unable to verify the first certificate",
  });
});

test("tls: under warn_days left: WARN and 📅 once a day, without a strike; under fail_days: fails", async () => {
  const first = await box.tend(["watchdog"], { env: trusted() });
  expect(first.code).toBe(0);
  const warn = first.stdout.split("\n").filter((line) => line.includes("in10days:"));
  expect(warn).toHaveLength(1);
  expect(warn[0]).toMatch(
    new RegExp(
      String.raw`\[WARN\] in10days: the certificate for localhost expires in (9\.\d|10\.0) days ` +
        String.raw`\(\d{4}-\d\d-\d\d\), below warn_days 14$`,
    ),
  );
  expect(box.stateOf("in10days").strikes).toBe(0);
  expect(first.stdout).toMatch(
    /\[WARN\] in2days failed health check \(the certificate expires in [12]\.\d days .*failure 1\/3\)/,
  );
  expect(first.stdout.split("\n").filter((line) => line.includes("in40days") && !line.includes("[START]"))).toEqual([]);
  expect(received.filter((body) => body.startsWith("📅 in10days:"))).toHaveLength(1);

  const second = await box.tend(["watchdog"], { env: trusted() });
  expect(second.stdout).not.toContain("[WARN] in10days");
  expect(box.stateOf("in10days").strikes).toBe(0);
  expect(received.filter((body) => body.startsWith("📅"))).toHaveLength(1);
});

for (const where of PLACES)
  test(`tls: configuration errors name the key (${where})`, async () => {
    const bad = openPlace(where);
    bad.writeConfig(
      `[watchdog]\nstate_dir = "${bad.state}"\n[[service]]\nname = "a"\n[service.check]\ntls = "localhost"\n` +
        `[[service]]\nname = "b"\n[service.check]\ntls = "localhost:443"\nwarn_days = 2\nfail_days = 5\n` +
        `[[service]]\nname = "c"\n[service.check]\ntls = "localhost:443"\nexpect = [200]\n`,
    );
    const run = await bad.tend(["watchdog", "validate"]);
    await bad.cleanup();
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('service[0].check.tls: "localhost" is not "host:port" (port 1-65535)');
    expect(run.stderr).toContain("service[1].check.fail_days: 5 is more than warn_days 2: it must not be");
    expect(run.stderr).toContain(
      "service[2].check.expect: does not apply to a tls check " +
        "(it takes: tls, servername, warn_days, fail_days, insecure, timeout)",
    );
  });

test("watch only (no [service.restart]): at N strikes FAILED and 🚨 once per outage, never a restart", async () => {
  while (box.stateOf("in2days").strikes < 3) await box.tend(["watchdog"], { env: trusted() });
  const log = box.read("watchdog.log");
  const failed = log.split("\n").filter((line) => line.includes("[FAILED] in2days"));
  expect(failed).toHaveLength(1);
  expect(failed[0]).toMatch(/\[FAILED\] in2days is down \(the certificate expires in .*\): watch only, not restarted$/);
  expect(received.filter((body) => body.startsWith("🚨 in2days is down"))).toHaveLength(1);
  const again = await box.tend(["watchdog"], { env: trusted() });
  expect(again.stdout).toMatch(/\[WARN\] in2days failed health check \(.*failure 3\/3\)/);
  expect(again.stdout).not.toContain("[FAILED]");
  expect(box.read("watchdog.log")).not.toMatch(/\[(HUNG|RESTART)\]/);
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "in2days"], { env: trusted() })).stdout);
  expect(status.services[0]).toMatchObject({ state: "down", strikes: 3, restarts: 0 });
  const report = JSON.parse((await box.tend(["watchdog", "report", "--json", "--since", "1h"])).stdout);
  expect(report.services.find((row: any) => row.name === "in2days")).toMatchObject({ outages: 1, restarts: 0 });
});

test("tls: tend_tls_cert_expiry_timestamp_seconds per TLS check, promtool check metrics agrees", async () => {
  const metrics = join(box.dir, "tend.prom");
  const { readFileSync, writeFileSync, existsSync } = await import("node:fs");
  const config = readFileSync(box.config, "utf8");
  writeFileSync(box.config, config.replace("[watchdog]\n", `[watchdog]\nmetrics_file = "${metrics}"\n`));
  try {
    await box.tend(["watchdog"], { env: trusted() });
    const text = readFileSync(metrics, "utf8");
    const expiry = (name: string) =>
      Number(
        new RegExp(`^tend_tls_cert_expiry_timestamp_seconds\\{${INSTANCE}service="${name}"\\} (\\d+)$`, "m").exec(
          text,
        )?.[1],
      );
    // The peer certificate's notAfter, to the second: 40 and 10 days ahead, and the expired one's too.
    expect(expiry("in40days") * 1000 - Date.now()).toBeGreaterThan(39 * 86_400_000);
    expect(expiry("in10days") * 1000 - Date.now()).toBeLessThan(11 * 86_400_000);
    // An expired one is seen where the handshake goes on (insecure); verified, it fails before any date.
    expect(expiry("expired-insecure") * 1000).toBeLessThan(Date.now());
    // No handshake, no date.
    expect(text).not.toContain(`tend_tls_cert_expiry_timestamp_seconds{${INSTANCE}service="closed"}`);
    const promtool = process.env.PROMTOOL ?? "build/tools/promtool";
    if (!existsSync(promtool)) throw new Error(`promtool not found at ${promtool}: run make build/tools/promtool`);
    const check = Bun.spawnSync([promtool, "check", "metrics"], { stdin: new TextEncoder().encode(text) });
    expect(check.stderr.toString() + check.stdout.toString()).toBe("");
    expect(check.exitCode).toBe(0);
  } finally {
    writeFileSync(box.config, config);
  }
});
