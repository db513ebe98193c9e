// check.nagios with the real monitoring-plugins (Debian's monitoring-plugins-basic): check_tcp and
// check_http against local servers, check_disk on a tmpfs the test mounts and fills; and
// `watchdog status --nagios` run as Nagios/Icinga run a check (exit code, one line, perfdata). The plugins are
// Debian's (monitoring-plugins-basic), on this host; a plugin killed by a signal is judged inside the phone too.
import { afterAll, afterEach, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, Sandbox } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

const PLUGINS = "/usr/lib/nagios/plugins";
let box: Sandbox;
let place: Place | null = null;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  box?.cleanup();
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

function service(name: string, argv: string[]) {
  return `
[[service]]
name = "${name}"
failures = 1
[service.check]
nagios = ${JSON.stringify(argv)}
timeout = "5s"
`;
}

test("check_tcp, check_http: OK is healthy, its line the detail, perfdata time its latency; 2 fails", async () => {
  box = new Sandbox();
  const answer = { status: 200 };
  const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok", answer) });
  cleanups.push(() => web.stop(true));
  const closed = await freePort();
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\n` +
      service("tcp", [`${PLUGINS}/check_tcp`, "-H", "127.0.0.1", "-p", String(web.port)]) +
      service("http", [`${PLUGINS}/check_http`, "-H", "127.0.0.1", "-p", String(web.port), "-u", "/"]) +
      service("closed", [`${PLUGINS}/check_tcp`, "-H", "127.0.0.1", "-p", String(closed)]),
  );
  const pass = await box.tend(["watchdog"]);
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
  const row = (name: string) => status.services.find((entry: { name: string }) => entry.name === name);
  expect(row("tcp")).toMatchObject({ state: "healthy" });
  expect(row("tcp").probe.detail).toMatch(/^TCP OK - [\d.]+ second response time on 127\.0\.0\.1 port \d+$/);
  expect(row("http").probe.detail).toMatch(/^HTTP OK: HTTP\/1\.1 200 OK - \d+ bytes in [\d.]+ second response time$/);
  // perfdata time=0.000123s: the latency is the plugin's measure (under a second), not its run time.
  expect(row("http").probe.latency_ms).toBeLessThan(1000);
  expect(pass.stdout).toMatch(
    /\[FAILED\] closed is down \(connect to address 127\.0\.0\.1 and port \d+: Connection refused\)/,
  );
  answer.status = 500;
  const failing = await box.tend(["watchdog"]);
  expect(failing.stdout).toMatch(/\[FAILED\] http is down \(HTTP CRITICAL: HTTP\/1\.1 500 Internal Server Error/);
}, 60_000);

test("check_disk on a tmpfs: WARNING is a WARN line and 🟠 (no strike, at most daily); CRITICAL fails", async () => {
  box = new Sandbox();
  const mount = join(box.dir, "small");
  mkdirSync(mount);
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount]);
  expect(mounted.exitCode).toBe(0); // as root, as the suite runs
  cleanups.push(() => void Bun.spawnSync(["umount", "-l", mount]));
  const received: string[] = [];
  const ntfy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => (received.push(await request.text()), new Response("ok")),
  });
  cleanups.push(() => ntfy.stop(true));
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\n[notify]\nurl = "http://127.0.0.1:${ntfy.port}/t"\nretries = 0\n` +
      service("disk", [`${PLUGINS}/check_disk`, "-w", "30%", "-c", "10%", "-p", mount]),
  );
  writeFileSync(join(mount, "fill"), Buffer.alloc(800 * 1024)); // 20% free: WARNING
  const warned = await box.tend(["watchdog"]);
  expect(warned.stdout).toMatch(new RegExp(`\\[WARN\\] disk: DISK WARNING - free space: ${mount} \\d+`));
  expect(warned.stdout).not.toContain("failed health check");
  const state = box.stateOf("disk");
  expect(state.strikes).toBe(0);
  expect(received.filter((body) => body.startsWith("🟠"))).toHaveLength(1);
  expect((await box.tend(["watchdog"])).stdout).toBe(""); // said at most daily
  writeFileSync(join(mount, "fill"), Buffer.alloc(980 * 1024)); // about 4% free: CRITICAL
  const critical = await box.tend(["watchdog"]);
  expect(critical.stdout).toMatch(new RegExp(`\\[FAILED\\] disk is down \\(DISK CRITICAL - free space: ${mount} \\d+`));
  console.log(`check_disk on a tmpfs:\n${warned.stdout}${critical.stdout}`);
}, 60_000);

test("watchdog status --nagios, run as Nagios runs a check: exit 0/1/2, one line, perfdata parsed", async () => {
  box = new Sandbox();
  const answer = { status: 200 };
  const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok", answer) });
  cleanups.push(() => web.stop(true));
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\nmetrics_file = "${join(box.dir, "tend.prom")}"\n` +
      service("web", [`${PLUGINS}/check_tcp`, "-H", "127.0.0.1", "-p", String(web.port)]),
  );
  await box.tend(["watchdog"]);
  // Every perfdata the plugin gave is passed on: in /metrics, and on --nagios's line under the service.
  const metricsFile = readFileSync(join(box.dir, "tend.prom"), "utf8");
  expect(metricsFile).toMatch(
    /^tend_plugin_perfdata\{instance="[^"]+",service="web",label="time",uom="s"\} [\d.e-]+$/m,
  );
  // As Nagios does: the exit code is the state, stdout's first line the text, perfdata after |.
  const asNagios = async () => {
    const run = await box.tend(["watchdog", "status", "--nagios"]);
    const [text, perfdata = ""] = run.stdout.split("\n")[0].split("|");
    const metrics = Object.fromEntries(
      perfdata
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map((item) => [item.split("=")[0].replace(/^'|'$/g, ""), item.split("=")[1]]),
    );
    return { code: run.code, lines: run.stdout.trim().split("\n").length, text: text.trim(), metrics };
  };
  const ok = await asNagios();
  expect(ok.code).toBe(0);
  expect(ok.lines).toBe(1);
  expect(ok.text).toStartWith("TEND OK");
  expect(Object.keys(ok.metrics).length).toBeGreaterThan(0);
  // check_tcp's own `time=0.000123s;;;0.000000;10.000000`, thresholds as it gave them.
  expect(ok.metrics.web_time).toMatch(/^[\d.e-]+s;;;0(\.0+)?;10(\.0+)?$/);
  web.stop(true);
  await box.tend(["watchdog"]);
  const critical = await asNagios();
  expect(critical.code).toBe(2);
  expect(critical.text).toStartWith("TEND CRITICAL");
  expect(critical.text).toContain("web");
}, 60_000);

for (const where of PLACES)
  test(`a plugin killed by a signal is said as that (UNKNOWN, a failure), never 'exit null' (${where})`, async () => {
    const box = (place = openPlace(where));
    box.writeConfig(
      `[watchdog]\nstate_dir = "${box.state}"\n` +
        service("killed", ["bash", "-c", 'echo "OK - half a line"; kill -KILL $$']) +
        service("termed", ["bash", "-c", "kill -TERM $$"]),
    );
    const pass = await box.tend(["watchdog"]);
    expect(pass.code).toBe(0);
    expect(box.stateOf("killed").lastProbe).toMatchObject({
      ok: false,
      detail: "plugin killed by SIGKILL: OK - half a line",
    });
    expect(box.stateOf("termed").lastProbe).toMatchObject({ ok: false, detail: "plugin killed by SIGTERM" });
    expect(pass.stdout).not.toContain("exit null");
  });
