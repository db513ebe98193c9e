// One truth in every view: status, --json, --nagios, /api/status, the page and metrics show what the pass
// recorded (decision, reason, until), never a rule of their own. Through the binary, against real processes,
// on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { colourOf } from "../lib/core/verdict.ts";
import {
  ageHeartbeat,
  alive,
  controlledServer,
  fixtureServer,
  freePort,
  recordingReceiver,
  waitFor,
} from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

/** Every service's series names its host: the instance both alert paths give. */
const instance = () => `instance="${box.hostname}",`;

let box: Place;
let where: PlaceName;
const stops: (() => void)[] = [];
/** The pidfiles of what tend started for these tests (in HOME): on this host, killed with the test. */
const PIDFILES = ["api", "dies", "worker", "blog", "tunnel", "recorder"].map((name) => `${name}.pid`);
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup(PIDFILES.map((name) => box.scratch(name).outside));
});
afterAll(() => closePlaces());

/** What tend wrote in a pidfile of HOME: the PID it names and this host's PID of it. */
async function pidIn(name: string) {
  const pid = Number(readFileSync(box.scratch(name).outside, "utf8"));
  return { pid, here: await box.hostPid(pid) };
}
const metricsText = () => readFileSync(box.scratch("tend.prom").outside, "utf8");

/** A service whose answer the test controls; watch only unless `restart` is given. */
function serviceConfig(url: string, { watchdog = "", service = "", restart = "" } = {}) {
  return `
[watchdog]
state_dir = "${box.state}"
metrics_file = "${box.scratch("tend.prom").inside}"
${watchdog}
[[service]]
name = "api"
${service}
[service.check]
http = "${url}"
timeout = "1s"
${restart}
`;
}

const json = async (args: string[]) => {
  const result = await box.tend(args);
  return { code: result.code, report: JSON.parse(result.stdout), stdout: result.stdout };
};

for (const place of PLACES)
  describe(place, () => {
    beforeAll(() => void (where = place));
    test("inside boot_delay: `starting` in status, --json, /api/status, the page and metrics", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      control.status = 503; // down: but the pass is told to wait out the boot first
      box.writeConfig(serviceConfig(url, { watchdog: 'boot_delay = "365d"' }));
      expect((await box.tend(["watchdog"])).code).toBe(0);
      expect(box.stateOf("api").verdict).toMatchObject({ kind: "skip", word: "starting", reason: "boot_delay" });

      const text = await box.tend(["watchdog", "status"]);
      expect(text.stdout).toMatch(/api\s+starting until [\d-]+ [\d:]+\s+HTTP 503 \(expected 2xx\/3xx\)\s+0\/3\s/);
      expect(text.code).toBe(0); // starting is on purpose: nobody needs to act
      const { report } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0]).toMatchObject({ state: "starting", strikes: 0, reason: "boot_delay" });
      expect(Date.parse(report.services[0].until)).toBeGreaterThan(Date.now() + 300 * 86_400_000);

      const metrics = metricsText();
      expect(metrics).toContain(`tend_service_state{${instance()}service="api",state="starting"} 1`);
      expect(metrics).toContain(`tend_service_up{${instance()}service="api"} 1`); // not down: skipped on purpose

      const base = await box.serve();
      const api = await (await fetch(`${base}/api/status`)).json();
      expect(api.services[0]).toMatchObject({ state: "starting", strikes: 0 });
      const served = await (await fetch(`${base}/metrics`)).text();
      expect(served).toContain(`tend_service_state{${instance()}service="api",state="starting"} 1`);
      const page = await (await fetch(`${base}/`)).text();
      expect(page).toContain("starting</span>");
      expect(page).not.toContain("failing");
      // Its colour the terminal's (yellow: starting, nobody acts yet), never the page's own green.
      expect(page).toContain(`<span class="state s-${colourOf("starting")}">starting</span>`);
      expect(colourOf("starting")).toBe("warn");
    });

    test("inside grace of a process tend did not start: starting (its own start time), not failing", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      control.status = 503;
      const { pidfile } = await box.startTarget([box.bun, "-e", "setInterval(() => {}, 1000)"], "api.pid");
      box.writeConfig(serviceConfig(url, { service: `pidfile = "${pidfile}"\ngrace = "1h"` }));
      await box.tend(["watchdog"]);
      const { code, report } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0]).toMatchObject({ state: "starting", reason: "grace", strikes: 0 });
      expect(code).toBe(0);
      const metrics = metricsText();
      expect(metrics).toContain(`tend_service_state{${instance()}service="api",state="starting"} 1`);
    });

    /** A watch-only service the last pass struck once (502); the answer stays the test's to change. */
    async function struckOnce() {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      control.status = 502;
      await box.tend(["watchdog"]);
      return control;
    }

    test("--json state is the bare word with strikes beside it; STRIKES and the word never disagree", async () => {
      await struckOnce();
      const { code, report } = await json(["watchdog", "status", "--json"]);
      expect(code).toBe(1);
      // Decided now: the probe made now is the second strike; the last pass's strike 1 beside it.
      expect(report.services[0]).toMatchObject({ state: "failing", strikes: 2, failures: 3, reason: "strike 2" });
      expect(report.services[0].last_pass).toMatchObject({ state: "failing", reason: "strike 1" });
      const text = await box.tend(["watchdog", "status"]);
      // Decided now by the pass's rule: the probe made now is the second strike.
      expect(text.stdout).toMatch(/api\s+failing 2\/3\s+HTTP 502 \(expected 2xx\/3xx\)\s+2\/3\s/);
      const cached = await json(["watchdog", "status", "--json", "--cached"]);
      expect(cached.report.services[0]).toMatchObject({ state: "failing", strikes: 1, failures: 3 });
      const metrics = metricsText();
      expect(metrics).toContain(`tend_service_state{${instance()}service="api",state="failing"} 1`);
      // A strike below N is not down: one blip must not page (the strikes say it).
      expect(metrics).toContain(`tend_service_up{${instance()}service="api"} 1`);
      expect(metrics).toContain(`tend_service_strikes{${instance()}service="api"} 1`);
    });

    test("before any pass: status decides now, and a watchdog that never ran is not fine", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      control.status = 500;
      const { code, report } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0]).toMatchObject({ state: "failing", strikes: 1, probe: { ok: false }, last_pass: null });
      expect(report.watchdog).toMatchObject({ last_pass: null, stale: true, never_ran: true });
      expect(code).toBe(1);
      control.status = 200;
      const healthy = await box.tend(["watchdog", "status"]);
      expect(healthy.stdout).toMatch(/^no pass has run yet: is cron or the loop running\?\n/);
      expect(healthy.stdout).toMatch(/api\s+healthy\s/);
      expect(healthy.code).toBe(1);
      const cached = await json(["watchdog", "status", "--json", "--cached"]);
      expect(cached.report.services[0]).toMatchObject({ state: "new", probe: null });
      await box.tend(["watchdog"]);
      expect((await box.tend(["watchdog", "status"])).code).toBe(0);
    });

    // Lesson 1 and 12: status asks the same question as the pass and answers it with the pass's own rule.
    test("frozen after a healthy pass: status says failing 1/3 (now), never healthy beside no answer", async () => {
      box = openPlace(where);
      const port = await freePort();
      const web = await fixtureServer(port, [], (pid) => stops.push(() => process.kill(-pid, "SIGKILL")));
      box.writeConfig(serviceConfig(`http://127.0.0.1:${port}/`));
      await box.tend(["watchdog"]);
      expect(box.stateOf("api").verdict.word).toBe("healthy");
      process.kill(web.pid, "SIGSTOP");
      stops.push(() => process.kill(web.pid, "SIGCONT"));
      const text = await box.tend(["watchdog", "status"]);
      expect(text.stdout).toMatch(/api\s+failing 1\/3 \(now\)\s+no answer within 1\.0s \(HTTP 000\)\s+1\/3\s/);
      expect(text.stdout).toMatch(/api: last pass [\d:]+: healthy/);
      expect(text.code).toBe(1);
      const { report } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0]).toMatchObject({
        state: "failing",
        strikes: 1,
        failures: 3,
        probe: { ok: false },
        last_pass: { state: "healthy" },
      });
      // --cached is the record, with its time: what the last pass decided.
      const cached = await json(["watchdog", "status", "--json", "--cached"]);
      expect(cached.report.services[0]).toMatchObject({ state: "healthy", strikes: 0 });
      // Nothing was written: the next pass strikes 1, not 2.
      expect(box.stateOf("api").strikes).toBe(0);
      process.kill(web.pid, "SIGCONT");
      await waitFor(async () => (await box.tend(["watchdog", "status"])).code === 0, 10_000, "healthy again, exit 0");
      expect((await box.tend(["watchdog", "status"])).stdout).toMatch(/api\s+healthy\s/);
    });

    test("struck 1/3 by the last pass and answering now: healthy (now), exit 0", async () => {
      const control = await struckOnce();
      expect(box.stateOf("api").strikes).toBe(1);
      control.status = 200;
      const text = await box.tend(["watchdog", "status"]);
      expect(text.stdout).toMatch(/api\s+healthy \(now\)\s+HTTP 200 \d+ms\s+0\/3\s/);
      expect(text.stdout).toMatch(/api: last pass [\d:]+: failing/);
      expect(text.code).toBe(0);
      expect(box.stateOf("api").strikes).toBe(1);
    });

    test("`paused until T` after pause --for; resume and reset clear the verdict; reset is WARN", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      await box.tend(["watchdog"]);
      expect((await box.tend(["watchdog", "pause", "api", "--for", "2h"])).code).toBe(0);
      const { report } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0].state).toBe("paused");
      expect(Date.parse(report.services[0].until) - Date.now()).toBeGreaterThan(119 * 60_000);
      // The until as status says it (TZ=UTC here): its time alone when it is today, else its date too
      // (a pause of 2 h from 22:00 on ends tomorrow).
      const until = new Date(report.services[0].until).toISOString().slice(0, 19).replace("T", " ");
      const dayBefore = new Date().toISOString().slice(0, 10);
      const said = (await box.tend(["watchdog", "status"])).stdout;
      const days = new Set([dayBefore, new Date().toISOString().slice(0, 10)]);
      const forms = [...days].map((day) => (until.startsWith(day) ? until.slice(11) : until));
      expect(forms.some((form) => new RegExp(`api\\s+paused until ${form}\\s`).test(said))).toBe(true);
      await box.tend(["watchdog"]); // the pass skips it and records the same pause
      expect(box.stateOf("api").verdict).toMatchObject({ word: "paused", reason: "paused" });
      await box.tend(["watchdog", "resume", "api"]);
      expect((await json(["watchdog", "status", "--json", "--cached"])).report.services[0].state).toBe("new");
      await box.tend(["watchdog"]);
      expect((await json(["watchdog", "status", "--json"])).report.services[0].state).toBe("healthy");
      await box.tend(["watchdog", "reset", "api"]);
      expect(box.read("watchdog.log")).toMatch(/\[WARN\] api: reset by the operator: strikes, backoff/);
      expect(box.read("watchdog.log")).not.toMatch(/\[START\] api: reset/);
    });

    test("restarting only while verified: backoff after a failed restart, healthy after a good one", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      const marker = box.scratch("restarted").inside;
      box.writeConfig(
        serviceConfig(url, {
          service: 'failures = 1\ngrace = "0s"\nverify_timeout = "1s"\nbackoff = "1h"\nbackoff_max = "2h"',
          restart: `[service.restart]\ncommand = ["touch", "${marker}"]`,
        }),
      );
      control.status = 503;
      await box.tend(["watchdog"]);
      const failed = (await json(["watchdog", "status", "--json", "--cached"])).report.services[0];
      expect(failed).toMatchObject({ state: "backoff", restarts: 1, recoveries_failed: 1 });
      expect(Date.parse(failed.until)).toBeGreaterThan(Date.now() + 50 * 60_000);
      control.status = 200;
      await box.tend(["watchdog"]);
      expect((await json(["watchdog", "status", "--json"])).report.services[0].state).toBe("healthy");
    });

    test("a service the pass cannot judge keeps its last state and says why, never `new` with up 0", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      await box.tend(["watchdog"]);
      // The state file becomes a symlink: refused, never read or written through.
      const file = box.stateFile("services/api.json");
      box.writeScratch("elsewhere.json", readFileSync(file, "utf8"));
      Bun.spawnSync(["rm", file]);
      symlinkSync(box.scratch("elsewhere.json").inside, file); // where it points, as tend sees it
      await box.tend(["watchdog"]);
      expect(box.read("watchdog.log")).toContain("[ERROR] api: state file");
      const { code, report, stdout } = await json(["watchdog", "status", "--json"]);
      expect(report.services[0].error).toMatch(/^state file .*symlink/);
      expect(code).toBe(1);
      expect(stdout).not.toContain("internal error");
      const metrics = metricsText();
      expect(metrics).not.toContain(`tend_service_up{${instance()}service="api"} 0`);
      const text = await box.tend(["watchdog", "status"]);
      expect(text.stdout).toMatch(/api: not judged by the last pass \(.*symlink/);
    });

    test("status --nagios: OK, WARNING, CRITICAL and UNKNOWN as a Nagios/Icinga/Consul check reads them", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      await box.tend(["watchdog"]);
      const ok = await box.tend(["watchdog", "status", "--nagios"]);
      expect(ok.code).toBe(0);
      expect(ok.stdout.trim().split("\n")).toHaveLength(1);
      // The plugin output convention: TEXT | perfdata, each 'label'=value[UOM];[warn];[crit];[min];[max]
      const [text, perf] = ok.stdout.trim().split(" | ");
      expect(text).toBe("TEND OK - 1 of 1 OK");
      const metrics = perf
        .split(" ")
        .map((item) => /^('?)([^=']+)\1=([\d.]+)(s|%|B|KB|MB|TB|c)?;([\d.]*);([\d.]*);([\d.]*)$/.exec(item));
      expect(metrics.every(Boolean)).toBe(true);
      expect(metrics.map((m) => m![2])).toEqual(["api", "api_strikes"]);
      expect(metrics[0]![6]).toBe("1.000"); // critical at the timeout

      // A strike below N is WARNING (lesson 3: one blip must not page), decided now by the pass's rule.
      control.status = 503;
      await box.tend(["watchdog"]);
      const warning = await box.tend(["watchdog", "status", "--nagios"]);
      expect(warning.code).toBe(1);
      expect(warning.stdout).toMatch(
        /^TEND WARNING - api failing \(HTTP 503 .*\) \| api=[\d.]+s;;1\.000;0 api_strikes=2;;3;0\n$/,
      );
      // At N strikes (watch only: never restarted) it is down: CRITICAL.
      await box.tend(["watchdog"]);
      const critical = await box.tend(["watchdog", "status", "--nagios"]);
      expect(critical.code).toBe(2);
      expect(critical.stdout).toMatch(
        /^TEND CRITICAL - api down \(HTTP 503 .*\) \| api=[\d.]+s;;1\.000;0 api_strikes=3;;3;0\n$/,
      );
      // What keeps status from running is UNKNOWN on its one stdout line, an unknown flag too.
      const bogus = await box.tend(["watchdog", "status", "--nagios", "--bogus"]);
      expect([bogus.code, bogus.stdout]).toEqual([3, expect.stringMatching(/^TEND UNKNOWN - .*--bogus.*\n$/)]);
      expect(bogus.stdout.split("\n")).toHaveLength(2);

      box.writeConfig(serviceConfig(url, { service: "timeout = 3" }).replace('timeout = "1s"', 'timeout = "1x"'));
      const unknown = await box.tend(["watchdog", "status", "--nagios"]);
      expect(unknown.code).toBe(3);
      expect(unknown.stdout).toMatch(/^TEND UNKNOWN - .*timeout/);
    });

    test("each subcommand takes only its own flags: the error names the flag and who takes it", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      const dry = await box.tend(["watchdog", "validate", "--dry-run"]);
      expect(dry.code).toBe(2);
      expect(dry.stderr).toContain("watchdog validate: --dry-run is not an option of validate (it is for: pass)");
      const resume = await box.tend(["watchdog", "resume", "api", "--for", "5m"]);
      expect(resume.code).toBe(2);
      expect(resume.stderr).toContain("--for is not an option of resume (it is for: pause)");
      const since = await box.tend(["watchdog", "status", "--since", "1d"]);
      expect(since.code).toBe(2);
      expect(since.stderr).toContain(
        "--since is not an option of status (it is for: report); status takes --json, --cached, --nagios",
      );
      expect((await box.tend(["watchdog", "logs", "api", "-f", "--json"])).stderr).toContain(
        "it is for: status, stats, report",
      );
      expect(box.read("watchdog.log")).toBe(""); // nothing was done
      expect((await box.tend(["watchdog", "pass", "--dry-run"])).code).toBe(0);
      expect((await box.tend(["watchdog", "status", "--json", "--cached"])).stderr).toBe("");
    });

    test("small words: `peers = []` in plan, 1 probe (not 1 probes), histogram labels exact to 0.1 s", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      expect((await box.tend(["watchdog", "plan"])).stdout).toContain("peers = []");
      box.writeConfig(
        serviceConfig(url, {
          watchdog: `[serve]\npeers = [{ url = "http://127.0.0.1:9/secret-path", token = "peer-token-secret-0123" }]`,
        }),
      );
      const plan = (await box.tend(["watchdog", "plan"])).stdout;
      expect(plan).toContain('peers = ["http://127.0.0.1:9/… (token …)"]');
      expect(plan).not.toContain("secret-path");
      box.writeConfig(serviceConfig(url));
      await box.tend(["watchdog"]);
      expect((await box.tend(["watchdog", "stats"])).stdout).toMatch(/^api: 1 probe {2}p50 /);

      const { renderStats } = await import("../lib/views/stats.ts");
      const plain = { ok: (t: string) => t, bad: (t: string) => t, warn: (t: string) => t, dim: (t: string) => t };
      const stats = {
        ...{ name: "api", samples: 9, timeouts: 1, hang_probes: 0, p50_ms: 9000, p90_ms: 11_000, p99_ms: 12_000 },
        ...{ max_ms: 12_400, timeout_ms: 10_000, warning: null, suggested_timeout_ms: null },
        histogram: [2500, 5000, 7500, 10_000, 12_500].map((upper) => [upper, 2] as [number, number]),
      };
      const drawn = renderStats([stats], { paint: plain, pictures: true });
      expect(drawn).toContain("10s-12.5s │");
      expect(drawn).toContain("2.5s-5s │");
      expect(drawn).not.toContain("13s");
    });

    // Ninety seconds rather than minutes: an aged heartbeat must stay inside this boot (a machine up
    // for less than the age would read it as a reboot), and a fresh machine may have been up five minutes.
    test("the entry carries its period, the heartbeat keeps it: cron every 1m with interval 10s is no 💤", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url, { watchdog: 'interval = "10s"' }));
      const line = (await box.tend(["watchdog", "install", "cron", "--interval", "10m"])).stdout;
      expect(line).toMatch(/^\*\/10 \* \* \* \* \S+ watchdog pass --interval 10m --config /);
      // The pass the line runs: its heartbeat says 1m, so 90 s later it is on time (10s would say 💤).
      await box.tend(["watchdog", "pass", "--interval", "1m"]);
      expect(box.read("heartbeat")).toContain("interval 1m\n");
      const ninetySecondsAgo = new Date(Date.now() - 90_000);
      ageHeartbeat(box.stateFile(""), ninetySecondsAgo.getTime());
      const fresh = await json(["watchdog", "status", "--json"]);
      expect(fresh.report.watchdog).toMatchObject({ stale: false, expected_every_s: 60 });
      const pass = await box.tend(["watchdog", "pass", "--interval", "1m"]);
      expect(pass.stdout).not.toContain("watchdog did not run");
      expect(box.read("downtime.log")).toBe("");
      // Without --interval the configured 10s applies: the same 90 seconds would be a gap.
      ageHeartbeat(box.stateFile(""), ninetySecondsAgo.getTime());
      writeFileSync(box.stateFile("heartbeat"), box.read("heartbeat").replace("interval 1m\n", "interval 10s\n"));
      utimesSync(box.stateFile("heartbeat"), ninetySecondsAgo, ninetySecondsAgo);
      expect((await box.tend(["watchdog"])).stdout).toContain("watchdog did not run");
    });

    test("a service that exits right after its start is FAILED at once, saying when, not at its timeout", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      const pidfile = box.scratch("dies.pid").inside;
      box.writeConfig(
        serviceConfig(url.replace(/\d+\/$/, "1/"), {
          service: `pidfile = "${pidfile}"\ngrace = "0s"\nverify_timeout = "60s"`,
          restart: `[service.restart]\nspawn = ["${box.bun}", "-e", "setTimeout(() => process.exit(3), 300)"]`,
        }),
      );
      const started = Date.now();
      const pass = await box.tend(["watchdog"]);
      expect(Date.now() - started).toBeLessThan(30_000); // not the 60 s deadline
      // Gone, or a zombie its parent (tend) has not reaped yet: exited either way.
      const exited = /\[FAILED\] api exited [\d.]+s after its first start \(pid \d+ is (gone|a zombie)\); backoff 10s/;
      expect(pass.stdout).toMatch(exited);
      expect(pass.stdout).not.toContain("within 60s");
    });

    test("fresh evidence only: a log-checked service whose restart dies at once is FAILED, not RECOVERED", async () => {
      box = openPlace(where);
      const pidfile = box.scratch("worker.pid").inside;
      const log = box.scratch("worker.log").inside;
      const config = (spawn: string) =>
        `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "worker"\npidfile = "${pidfile}"\n` +
        `grace = "0s"\nverify_timeout = "20s"\n[service.check]\nlog = "${log}"\nfresh = "5m"\n` +
        `[service.restart]\nspawn = ${spawn}\n`;
      // It runs and writes its log: healthy.
      box.writeConfig(config(`["sh", "-c", "echo working >> '${log}'; exec sleep 600"]`));
      const first = await box.tend(["watchdog"]);
      expect(first.stdout).toContain("[START] worker: started pid");
      const running = (await pidIn("worker.pid")).here;
      expect(box.stateOf("worker").verdict).toMatchObject({ word: "healthy" });
      // It crashes, and its command now dies at once: the log its old process wrote minutes ago is no answer.
      box.writeConfig(config(`["sh", "-c", "exit 3"]`));
      process.kill(running, "SIGKILL");
      await waitFor(() => !alive(running), 5000, "the worker to die");
      const started = Date.now();
      const pass = await box.tend(["watchdog"]);
      expect(Date.now() - started).toBeLessThan(15_000); // not the 20 s deadline
      // Gone, or a zombie its parent (tend) has not reaped yet (under load): exited either way.
      const exited = /\[FAILED\] worker exited [\d.]+s after the restart \(pid \d+ is (gone|a zombie)\); backoff 10s/;
      expect(pass.stdout).toMatch(exited);
      expect(pass.stdout).not.toContain("[RECOVERED]");
      // A restart that writes its log and dies at once: alive when judged, or not recovered.
      box.writeConfig(config(`["sh", "-c", "echo one last line >> '${log}'; exit 3"]`));
      const statePath = box.stateFile("services/worker.json");
      const state = box.stateOf("worker");
      writeFileSync(statePath, JSON.stringify({ ...state, backoffUntil: null })); // past its backoff
      const again = await box.tend(["watchdog"]);
      console.log(again.stdout);
      expect(again.stdout).toMatch(/\[FAILED\] worker exited [\d.]+s after the restart/);
      expect(again.stdout).not.toContain("[RECOVERED]");
    });

    test("after a reboot: services found not running are boot starts, one 🔌, no ⚠️ each, nothing counted", async () => {
      box = openPlace(where);
      const receiver = recordingReceiver();
      stops.push(receiver.stop);
      const names = ["blog", "tunnel", "recorder"];
      const service = (name: string) =>
        `[[service]]\nname = "${name}"\npidfile = "${box.scratch(`${name}.pid`).inside}"\ngrace = "0s"\n` +
        `[service.check]\nprocess = true\n[service.restart]\nspawn = ["sleep", "600"]\n`;
      box.writeConfig(
        `[watchdog]\nstate_dir = "${box.state}"\n[notify]\nurl = "${receiver.url}/topic"\n` +
          names.map(service).join(""),
      );
      const first = await box.tend(["watchdog"]);
      expect(first.stdout.match(/\[START\] \w+: started pid/g)).toHaveLength(3);
      const pids = await Promise.all(names.map(async (name) => (await pidIn(`${name}.pid`)).here));
      for (const pid of pids) process.kill(pid, "SIGKILL"); // what the reboot did to them
      await waitFor(() => pids.every((pid) => !alive(pid)), 5000, "the services to be gone");
      // The reboot as the next pass sees it: the heartbeat a minute old, of another boot (its id; the
      // boot-time clock restarts at 0 with the kernel): a reboot inside one cron period.
      ageHeartbeat(box.stateFile(""), Date.now() - 60_000, { otherBoot: true });
      // status before the pass decides with the boot in view: starting (a boot start), never down (crash).
      const status = JSON.parse((await box.tend(["watchdog", "status", "--json"])).stdout);
      for (const row of status.services) expect([row.name, row.state]).toEqual([row.name, "starting"]);
      expect((await box.tend(["watchdog", "status"])).stdout).not.toContain("crash");
      for (const row of status.services) expect(row.reason).toBe("the host rebooted: the next pass starts it");
      const before = receiver.received.length;
      const pass = await box.tend(["watchdog"]);
      for (const name of names) expect(pass.stdout).toContain(`[START] ${name}: started after reboot (started pid`);
      expect(pass.stdout).not.toContain("(crash)");
      expect(pass.stdout).not.toContain("[RESTART]");
      expect(pass.stdout).toMatch(/\[DOWNTIME\] host was unavailable for \d+s \(unexpected_shutdown_or_reboot/);
      const sent = receiver.received.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^🔌 host was down \d+s \(reboot\); started (blog|tunnel|recorder), \w+, \w+$/);
      for (const name of names) expect(box.stateOf(name)).toMatchObject({ restartsTotal: 0, outage: null });
    });

    test("status --cached after a reboot, before a pass: a verdict from before the boot is not fine", async () => {
      box = openPlace(where);
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url));
      await box.tend(["watchdog"]);
      await box.tend(["watchdog"]);
      expect((await json(["watchdog", "status", "--json", "--cached"])).report.services[0].state).toBe("healthy");
      // The state as a reboot leaves it: decided (and probed) before the host booted, no pass since.
      const bootedAt = Date.now() - (await import("node:os")).uptime() * 1000;
      const file = box.stateFile("services/api.json");
      const state = box.stateOf("api");
      state.verdict.at = bootedAt - 600_000;
      state.lastProbe.at = bootedAt - 600_000;
      writeFileSync(file, JSON.stringify(state));
      const { code, report } = await json(["watchdog", "status", "--json", "--cached"]);
      expect(code).toBe(1);
      expect(report.services[0].state).toBe("healthy"); // the word it had, said to be old
      expect(report.services[0].error).toMatch(/^decided before the host booted at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      const table = await box.tend(["watchdog", "status", "--cached"]);
      expect(table.stdout).toContain("healthy (not judged)");
      expect(table.stdout).toContain("api: not judged by the last pass (decided before the host booted at");
      // The next pass judges it: fine again.
      await box.tend(["watchdog"]);
      expect((await json(["watchdog", "status", "--json", "--cached"])).code).toBe(0);
    });

    test("slow_above: a slow healthy answer is slow in every view (🐢 once, status 0, metric), no strike", async () => {
      box = openPlace(where);
      const receiver = recordingReceiver();
      stops.push(receiver.stop);
      const { server, url, control } = controlledServer();
      stops.push(() => server.stop(true));
      control.delayMs = 700;
      box.writeConfig(
        serviceConfig(url, {
          watchdog: `[notify]\nurl = "${receiver.url}/t"`,
          service: 'slow_above = "300ms"',
        }).replace('timeout = "1s"', 'timeout = "5s"'),
      );
      const first = await box.tend(["watchdog"]);
      expect(first.stdout).toMatch(/\[WARN\] api is slow \(HTTP 200 in [\d.]+s, above 0\.3s\)/);
      const second = await box.tend(["watchdog"]);
      expect(second.stdout).not.toContain("is slow"); // once per spell, then at most hourly
      expect(receiver.received.filter((body) => body.startsWith("🐢 api is slow"))).toHaveLength(1);
      expect(box.stateOf("api")).toMatchObject({ strikes: 0, verdict: { word: "slow" } });
      const status = await box.tend(["watchdog", "status", "--json", "--cached"]);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout).services[0].state).toBe("slow");
      expect(metricsText()).toContain(`tend_service_slow{${instance()}service="api"} 1`);
      control.delayMs = 0;
      await box.tend(["watchdog"]);
      expect(box.stateOf("api").verdict.word).toBe("healthy");
      expect(metricsText()).toContain(`tend_service_slow{${instance()}service="api"} 0`);
    });

    test("given_up_retry and remind_every: a given-up service is tried once every D, and said again (🔔)", async () => {
      box = openPlace(where);
      const receiver = recordingReceiver();
      stops.push(receiver.stop);
      box.writeConfig(
        serviceConfig("http://127.0.0.1:1/", {
          watchdog: `[notify]\nurl = "${receiver.url}/t"\nmin_interval = "0s"`,
          service: ['given_up_retry = "1h"', 'remind_every = "1h"', 'verify_timeout = "1s"', 'backoff = "0s"']
            .concat(['cooldown = "0s"', 'grace = "0s"'])
            .join("\n"),
          restart: `[service.restart]\ncommand = ["true"]`,
        }),
      );
      await box.tend(["watchdog"]); // its state file
      const hour = 3_600_000;
      const statePath = box.stateFile("services/api.json");
      const givenUp = (extra: object) => {
        const state = box.stateOf("api");
        const outage = { since: Date.now() - 3 * hour, reason: "failing", notified: true };
        writeFileSync(statePath, JSON.stringify({ ...state, strikes: 3, givenUp: true, outage, ...extra }));
      };
      // Given up 61 minutes ago: one restart, verified; it does not recover, so it stays given up.
      givenUp({ givenUpAt: Date.now() - 61 * 60_000, remindedAt: Date.now() - 61 * 60_000 });
      const retry = await box.tend(["watchdog"]);
      expect(retry.stdout).toContain("given up, trying one restart again (given_up_retry 1h)");
      expect(retry.stdout).toContain("[RESTART] api");
      // The time really waited, whatever the load made it.
      expect(retry.stdout).toMatch(/\[FAILED\] api did not recover within [\d.]+s after restart/);
      expect(box.stateOf("api")).toMatchObject({ givenUp: true, verdict: { word: "backoff" } });
      // Given up 10 minutes ago, last said 61 minutes ago: no retry yet, a 🔔 that says for how long.
      givenUp({ givenUpAt: Date.now() - 10 * 60_000, remindedAt: Date.now() - 61 * 60_000, backoffUntil: null });
      const before = receiver.received.length;
      const reminded = await box.tend(["watchdog"]);
      expect(reminded.stdout).not.toContain("[RESTART]");
      expect(reminded.stdout).toContain("[WARN] api is still down after 3h (given up)");
      expect(receiver.received.slice(before)).toEqual(["🔔 api is still down after 3h (given up)"]);
      expect((await box.tend(["watchdog"])).stdout).not.toContain("still down"); // not again within the hour
    });

    test("a pass running now (its probes slow) is the watchdog running: status does not call it stale", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      box.writeConfig(serviceConfig(url, { watchdog: 'interval = "1s"' }).replace('timeout = "1s"', 'timeout = "10s"'));
      await box.tend(["watchdog"]);
      ageHeartbeat(box.stateFile(""), Date.now() - 60_000); // its last pass a minute ago: stale by 2 x 1s + 30s
      expect((await json(["watchdog", "status", "--json", "--cached"])).report.watchdog.stale).toBe(true);
      control.delayMs = 4000; // the next pass waits on its probe
      const pass = await box.spawnTend(["watchdog"]);
      await waitFor(() => box.read("watchdog.lock").startsWith("pass pid "), 5000, "the pass's record");
      // The pass's PID as the phone numbers it: this host's PID of it is the pass this test started.
      const running = Number(/^pass pid (\d+)/.exec(box.read("watchdog.lock"))![1]);
      expect(await box.hostPid(running)).toBe(pass.tendPid());
      const { report } = await json(["watchdog", "status", "--json", "--cached"]);
      expect(report.watchdog).toMatchObject({ stale: false, running_pass: running });
      expect((await box.tend(["watchdog", "status", "--cached"])).stdout).toContain(
        `(a pass is running now: pid ${running})`,
      );
      await pass.exited;
      expect((await json(["watchdog", "status", "--json", "--cached"])).report.watchdog.running_pass).toBeUndefined();
    }, 30_000);
  });
