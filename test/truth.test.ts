// Service truth against real processes: busy vs hung, dependencies, DNS, memory growth, launchd, reboot gaps.
// Dependencies and DNS, memory growth, the heartbeat's gaps and a stale status run on this host and inside the
// Termux-shaped phone (test/places.ts: there /proc/stat is EACCES, no resolv.conf, RSS from VmRSS). Busy
// runs here only: busy.port reads /proc/net, refused on a phone (termux.test.ts: what it degrades to there).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ageHeartbeat, alive, BUN, freePort, recordingReceiver, Sandbox, TEND, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox;
let place: Place | null = null;
afterEach(async () => {
  box?.cleanup();
  await place?.cleanup([place.stateFile("proxy.pid")]);
  place = null;
});
afterAll(() => closePlaces());

/** Listens on the port and accepts, never answers; appends to its log every 200 ms until SIGUSR2. */
const BUSY_ENGINE = `
const [port, log] = process.argv.slice(-2);
require("node:net").createServer(() => {}).listen(Number(port), "127.0.0.1");
const timer = setInterval(() => require("node:fs").appendFileSync(log, "indexing\\n"), 200);
process.on("SIGUSR2", () => clearInterval(timer));
`;

async function startBusyEngine(port: number, log: string) {
  const script = join(box.dir, "engine.js");
  writeFileSync(script, BUSY_ENGINE);
  const child = Bun.spawn([BUN, script, String(port), log], { detached: true, stdout: "ignore", stderr: "inherit" });
  box.track(child.pid);
  await waitFor(
    () =>
      existsSync(log) &&
      readFileSync("/proc/net/tcp", "utf8").includes(
        `:${port.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`,
      ),
    10_000,
    "engine listening",
  );
  return child;
}

/** A busy engine and a service watching it: restart.command touches a marker (no real restart needed). */
async function busyEngineService(serviceExtra: string, checkExtra: string, busyExtra: string) {
  box = new Sandbox();
  const port = await freePort();
  const log = join(box.dir, "engine.log");
  const marker = join(box.dir, "restarted");
  const engine = await startBusyEngine(port, log);
  box.writeConfig(`
[watchdog]
state_dir = "${box.state}"
[[service]]
name = "engine"
grace = "0s"
verify_timeout = "1s"
${serviceExtra}
[service.check]
http = "http://127.0.0.1:${port}/"
${checkExtra}
[service.busy]
port = ${port}
log = "${log}"
${busyExtra}
[service.restart]
command = ["touch", "${marker}"]
`);
  return { port, log, marker, engine };
}

test("busy is not hung: no strike while it listens and logs; strikes once the log goes stale", async () => {
  const { port, log, marker, engine } = await busyEngineService(
    "failures = 2",
    'timeout = "500ms"',
    'fresh = "1s"\nmax = "1h"',
  );
  const first = await box.tend(["watchdog"]);
  expect(first.stdout).toContain(
    `[BUSY] engine failed health check (no answer within 0.5s (HTTP 000)) ` +
      `but is busy (pid ${engine.pid} listens on port ${port}, log written`,
  );
  expect(box.stateOf("engine").strikes).toBe(0);
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json"])).stdout);
  expect(status.services[0].state).toBe("busy");
  const second = await box.tend(["watchdog"]);
  expect(second.stdout).toBe(""); // BUSY at most every 5 minutes
  expect(box.stateOf("engine").strikes).toBe(0);

  process.kill(engine.pid, "SIGUSR2"); // it stops writing its log: no longer shows work
  await waitFor(() => Date.now() - statSync(log).mtimeMs > 1200, 10_000, "log to go stale");
  expect((await box.tend(["watchdog"])).stdout).toContain("failure 1/2");
  const hung = await box.tend(["watchdog"]);
  expect(hung.stdout).toContain("failure 2/2");
  expect(hung.stdout).toContain("[HUNG] engine failed 2 checks in a row");
  expect(existsSync(marker)).toBe(true);
}, 60_000);

test("busy longer than busy.max is hung: restarted at once (busy_timeout), downtime says so", async () => {
  const { port, engine, marker } = await busyEngineService("", 'timeout = "300ms"', 'max = "1s"');
  expect((await box.tend(["watchdog"])).stdout).toContain("[BUSY] engine");
  const busySince = box.stateOf("engine").busySince;
  await waitFor(() => Date.now() - busySince > 1100, 5000, "busy.max to pass");
  const hung = await box.tend(["watchdog"]);
  expect(hung.stdout).toMatch(
    /\[HUNG\] engine has been busy for [\d.]+s, longer than busy.max 1.0s: restarting \(busy_timeout\)/,
  );
  expect(hung.stdout).not.toContain("[WARN]");
  expect(existsSync(marker)).toBe(true);
  expect(box.stateOf("engine").outage.reason).toBe("busy_timeout");
  // The operator replaces the engine by hand; the next pass closes the outage with its reason.
  process.kill(engine.pid, "SIGKILL");
  await waitFor(() => !alive(engine.pid), 5000, "engine gone");
  const server = await box.server(port);
  await box.tend(["watchdog"]);
  expect(box.read("downtime.log")).toMatch(
    /\[DOWNTIME\] engine was unavailable for \d+s \(busy_timeout, from .* UTC to .* UTC\)/,
  );
  server.kill();
}, 60_000);

test("restart.launchd runs launchctl kickstart -k system/LABEL (STAND-IN launchctl: no launchd on Linux)", async () => {
  box = new Sandbox();
  const port = await freePort();
  const bin = join(box.dir, "bin");
  const calls = join(box.dir, "launchctl.calls");
  Bun.spawnSync(["mkdir", bin]);
  writeFileSync(join(bin, "launchctl"), `#!/bin/sh\necho "$*" >> '${calls}'\n`, { mode: 0o755 });
  box.configure({
    services: [
      {
        name: "web",
        failures: 1,
        verify_timeout: "1s",
        check: { http: `http://127.0.0.1:${port}/`, timeout: "300ms" },
        restart: { launchd: "org.example.web" },
      },
    ],
  });
  const pass = await box.tend(["watchdog"], { env: { PATH: `${bin}:${process.env.PATH}` } });
  expect(pass.stdout).toContain("[RESTART] web: launchctl kickstart -k system/org.example.web");
  expect(readFileSync(calls, "utf8")).toBe("kickstart -k system/org.example.web\n"); // as root: the system domain
}, 30_000);

for (const where of PLACES)
  describe(where, () => {
    test("no futile restarts: a failing dependency or an unresolvable name means WAIT, not restart", async () => {
      const box = (place = openPlace(where));
      const dbPort = await freePort();
      const webPort = await freePort();
      const marker = box.scratch("restarted");
      box.writeConfig(`
  [watchdog]
  state_dir = "${box.state}"
  [defaults]
  failures = 1
  grace = "0s"
  [[service]]
  name = "db"
  [service.check]
  tcp = "127.0.0.1:${dbPort}"
  timeout = "500ms"
  ${["web", "worker"]
    .map(
      (name) => `
  [[service]]
  name = "${name}"
  depends_on = ["db"]
  [service.check]
  http = "http://127.0.0.1:${webPort}/"
  timeout = "500ms"
  [service.restart]
  command = ["touch", "${marker.inside}"]`,
    )
    .join("\n")}
  [[service]]
  name = "tunnel"
  requires = { dns = "tend-test-name.invalid" }
  [service.check]
  http = "http://127.0.0.1:${webPort}/"
  timeout = "500ms"
  [service.restart]
  command = ["touch", "${marker.inside}"]
  `);
      const pass = await box.tend(["watchdog"]);
      expect(pass.stdout).toContain("[WARN] db failed health check");
      expect(pass.stdout).toContain(
        "[WAIT] web failed health check (no answer: connection refused (HTTP 000)) " +
          "but dependency db is failing: not counted, not restarted",
      );
      expect(pass.stdout).toContain("[WAIT] worker failed health check");
      expect(pass.stdout).toContain(
        "[WAIT] tunnel failed health check (no answer: connection refused (HTTP 000)) " +
          "but tend-test-name.invalid does not resolve",
      );
      expect(pass.stdout).not.toContain("[HUNG]");
      expect(existsSync(marker.outside)).toBe(false);
      expect(
        JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached", "web"])).stdout).services[0].state,
      ).toBe("waiting");
    }, 30_000);

    test("memory growth: MEMORY with rate and ETA, then a preventive restart: 📈 once, ⚠️ (memory), ✅", async () => {
      const box = (place = openPlace(where));
      const receiver = recordingReceiver();
      const grower = box.scratch("grower.js").inside;
      // About 40 MB/s, up to 400 MB; exits on SIGTERM.
      box.writeScratch(
        "grower.js",
        "const kept = []; setInterval(() => { if (kept.length < 100) kept.push(Buffer.alloc(4e6, 1)); }, 100);",
      );
      box.writeConfig(`
  [watchdog]
  state_dir = "${box.state}"
  [notify]
  url = "${receiver.url}/"
  [[service]]
  name = "proxy"
  pidfile = "proxy.pid"
  grace = "0s"
  cooldown = "0s"
  verify_timeout = "5s"
  [service.check]
  process = true
  [service.memory]
  limit = "2GiB"
  warn_within = "1h"
  restart_above = "200MiB"
  [service.restart]
  spawn = ["${box.bun}", "${grower}"]
  `);
      await box.tend(["watchdog"]);
      const first = await box.hostPid(Number(box.read("proxy.pid")));
      let output = "";
      await waitFor(
        async () => {
          output += (await box.tend(["watchdog"])).stdout;
          return output.includes("[RESTART] proxy: stopped pid");
        },
        60_000,
        "a preventive restart",
      );
      expect(output).toMatch(
        /\[MEMORY\] proxy memory grows \d+ MiB\/h \(\d+ MiB now\): reaches the limit 2048 MiB in /,
      );
      expect(output).toMatch(
        /\[MEMORY\] proxy uses \d+ MiB \(RSS of its process tree\), above restart_above 200 MiB: restarting \(memory\)/,
      );
      const second = await box.hostPid(Number(box.read("proxy.pid")));
      expect(second).not.toBe(first);
      await waitFor(() => !alive(first), 5000, "the bloated process gone");
      expect(box.stateOf("proxy").rss.length).toBeGreaterThanOrEqual(4);
      // Seed 004: the growth warning (📈) and the restart (⚠️) are two events, each its own dedup key:
      // min_interval (15m by default) must not swallow the restart behind the warning, nor its ✅ come alone.
      receiver.stop();
      const said = receiver.received.map((body) => body.split("\n")[0]);
      expect(said.filter((line) => line.startsWith("📈")).length).toBe(1);
      expect(said.filter((line) => line.startsWith("⚠️"))).toEqual([
        expect.stringMatching(/^⚠️ .*proxy uses \d+ MiB .*restarting \(memory\)/),
      ]);
      expect(said.filter((line) => line.startsWith("✅"))).toEqual([expect.stringMatching(/^✅ .*proxy recovered/)]);
      expect(said.findIndex((line) => line.startsWith("⚠️"))).toBeLessThan(
        said.findIndex((line) => line.startsWith("✅")),
      );
      expect(box.read("notify-state.json")).not.toContain('suppressed":1');
    }, 90_000);

    test("a heartbeat gap: booted since, the host was down; up all along, the watchdog did not run (💤)", async () => {
      const box = (place = openPlace(where));
      // This host's boot (the phone's boots in a time namespace of offset 0: the same; tend reads no /proc/stat there).
      const bootedAt = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]) * 1000;
      const received: string[] = [];
      const server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          if (request.method === "POST") received.push(await request.text());
          return new Response("ok");
        },
      });
      box.writeConfig(
        `[watchdog]
  state_dir = "${box.state}"
  interval = "1s"
  [notify]
  url = "http://127.0.0.1:${server.port}/topic"
  [[service]]
  name = "api"
  [service.check]
  http = "http://127.0.0.1:${server.port}/"
  `,
      );
      await box.tend(["watchdog"]);
      const age = (at: number, otherBoot = false) => ageHeartbeat(box.stateFile(""), at, { otherBoot });
      // The last heartbeat of an earlier boot: the host was down (no notification of its own).
      age(bootedAt - 60_000, true);
      const reboot = await box.tend(["watchdog"]);
      expect(reboot.stdout).toMatch(
        /\[DOWNTIME\] host was unavailable for \d+s \(unexpected_shutdown_or_reboot, from .* UTC to .* UTC\)/,
      );
      // After the boot, older than 2 x 1 s + 30 s: the watchdog did not run, notified 💤.
      age(Math.max(bootedAt + 1000, Date.now() - 40_000));
      const gap = await box.tend(["watchdog"]);
      expect(gap.stdout).toMatch(
        /\[DOWNTIME\] watchdog did not run for \d+s \(watchdog_not_running, from .* UTC to .* UTC\)/,
      );
      expect(box.read("downtime.log")).toContain("watchdog did not run");
      expect(received.filter((body) => body.startsWith("💤 watchdog did not run for"))).toHaveLength(1);
      // Both are no data for the service, not downtime.
      expect(box.stateOf("api").gaps.map((gap: { reason: string }) => gap.reason)).toEqual([
        "unexpected_shutdown_or_reboot",
        "watchdog_not_running",
      ]);
      // An ordinary gap (one interval) is neither.
      age(Date.now() - 1000);
      expect((await box.tend(["watchdog"])).stdout).toBe("");
      server.stop(true);
    }, 30_000);

    test("status says first, in words, that the watchdog is not running; --json stale; exit 1", async () => {
      const box = (place = openPlace(where));
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
      box.writeConfig(
        `[watchdog]
  state_dir = "${box.state}"
  interval = "10s"
  [[service]]
  name = "api"
  [service.check]
  http = "http://127.0.0.1:${server.port}/"
  `,
      );
      await box.tend(["watchdog"]);
      const old = new Date(Date.now() - 66_000).toISOString();
      writeFileSync(box.stateFile("heartbeat"), `${old}\ninterval 10s\n`);
      const text = await box.tend(["watchdog", "status", "--cached"]);
      expect(text.code).toBe(1);
      expect(text.stdout.split("\n")[0]).toMatch(
        /^the watchdog is not running: its last pass was 6\d?s ago, expected every 10s/,
      );
      const json = JSON.parse((await box.tend(["watchdog", "status", "--cached", "--json"])).stdout);
      expect(json.watchdog).toEqual({ last_pass: old, stale: true, expected_every_s: 10 });
      expect(json.services[0].state).toBe("healthy");
      server.stop(true);
    });
  });
