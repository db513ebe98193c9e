// End-to-end: the compiled binary against real HTTP servers and real (frozen) processes, on this host and
// inside the Termux-shaped phone (test/places.ts); one test (strace's view of fsync) on this host only.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, utimesSync } from "node:fs";
import { dirname, join } from "node:path";
import { alive, controlledServer, freePort, killAll, procState, run, Sandbox, TEND } from "./helpers.ts";
import { fixtureServer, tomlConfig, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

/** A spawn-managed fixture service on `port`, as tend sees it where it runs. */
function spawnService(place: { state: string; bun: string; server: string }, port: number, extra = "") {
  return `
[watchdog]
state_dir = "${place.state}"
[defaults]
grace = "0s"
cooldown = "0s"
verify_timeout = "20s"
[[service]]
name = "web"
pidfile = "web.pid"
${extra}
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "1s"
[service.restart]
spawn = ["${place.bun}", "${place.server}", "${port}"]
`;
}

function checkOnly(place: { state: string }, url: string, extra = "", checkExtra = "") {
  return `
[watchdog]
state_dir = "${place.state}"
[[service]]
name = "api"
${extra}
[service.check]
http = "${url}"
${checkExtra}
`;
}

/** A fixture server on this host (the phone shares its network), killed after the test. */
const hostServers: number[] = [];
const hostServer = (port: number) => fixtureServer(port, [], (pid) => hostServers.push(pid));

// The pass's end-to-end behaviours, each run twice: on this host, and inside the Termux-shaped phone
// (test/places.ts, test/termux.ts: its own namespaces, pivot_root, the app's uid under Android's seccomp
// filter, hidepid=2, dash as sh). The one host-only test below needs what the phone has not: strace.
let at: Place;
afterAll(() => closePlaces());
for (const where of PLACES)
  describe(`the pass, end to end (${where})`, () => {
    afterEach(async () => {
      killAll(hostServers.splice(0));
      await at?.cleanup();
    });

    test("a SIGSTOP-frozen service is restarted on the 3rd strike and not before; the new one answers", async () => {
      at = openPlace(where);
      const port = await freePort();
      at.writeConfig(spawnService(at, port));

      const first = await at.tend(["watchdog"]);
      expect(first.code).toBe(0);
      // A first start is not a restart: START, no outage, not counted, no ⚠️.
      expect(first.stdout).toMatch(/\[START\] web: started pid \d+\n$/);
      expect(first.stdout).not.toMatch(/\[(RESTART|RECOVERED|DOWNTIME)\]/);
      const frozen = Number(at.read("web.pid")); // as tend sees it (the phone numbers its own)
      const frozenHere = await at.hostPid(frozen);
      expect(alive(frozenHere)).toBe(true);

      process.kill(frozenHere, "SIGSTOP");
      await waitFor(() => procState(frozenHere) === "T", 5000, "process stopped");
      for (const strike of [1, 2]) {
        const pass = await at.tend(["watchdog", "pass"]);
        expect(pass.code).toBe(0);
        expect(pass.stdout).toContain(
          `[WARN] web failed health check (no answer within 1.0s (HTTP 000), failure ${strike}/3)`,
        );
        expect(pass.stdout).not.toContain("[RESTART]");
        expect(Number(at.read("web.pid"))).toBe(frozen);
        expect(procState(frozenHere)).toBe("T");
      }
      const third = await at.tend(["watchdog", "pass"]);
      expect(third.code).toBe(0);
      const lines = third.stdout
        .trim()
        .split("\n")
        .map((line) => line.replace(/^\[[^\]]+\] /, ""));
      expect(lines[0]).toBe("[WARN] web failed health check (no answer within 1.0s (HTTP 000), failure 3/3)");
      expect(lines[1]).toStartWith("[HUNG] web failed 3 checks in a row");
      expect(lines[2]).toStartWith(`[RESTART] web: stopped pid ${frozen}`);
      expect(lines[3]).toStartWith("[RECOVERED] web recovered");
      const revived = Number(at.read("web.pid"));
      expect(revived).not.toBe(frozen);
      await waitFor(() => !alive(frozenHere), 5000, "frozen process gone");
      const answer = await fetch(`http://127.0.0.1:${port}/`);
      expect(answer.status).toBe(200);
      const state = at.stateOf("web");
      expect(state.strikes).toBe(0);
      expect(state.restartsTotal).toBe(1); // the hung restart; the first start is not counted
      expect(state.recoveriesOk).toBe(1);
      expect(at.read("downtime.log")).toMatch(
        /\[DOWNTIME\] web was unavailable for \d+s \(hung_restart, from .* UTC to .* UTC\)/,
      );
      // The freeze is the hang, not the tail: stats leaves its probes out and advises nothing.
      const [stats] = JSON.parse((await at.tend(["watchdog", "stats", "--json"])).stdout);
      expect(stats.hang_probes).toBeGreaterThanOrEqual(3);
      expect(stats.timeouts).toBe(0);
      expect(stats.warning).toBeNull();
    }, 90_000);

    test("a slow answer inside the timeout is no strike (the 8 s timeout that cut 6-9 s answers)", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      control.delayMs = 1500;
      at.writeConfig(checkOnly(at, url, "", 'timeout = "3s"'));
      await at.tend(["watchdog"]);
      const pass = await at.tend(["watchdog"]);
      server.stop(true);
      expect(pass.code).toBe(0);
      expect(pass.stdout).toBe("");
      const state = at.stateOf("api");
      expect(state.strikes).toBe(0);
      expect(state.lastProbe.ok).toBe(true);
      expect(state.lastProbe.latencyMs).toBeGreaterThanOrEqual(1400);
    }, 30_000);

    test("one success resets the strike count", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url, "failures = 3"));
      control.status = 503;
      expect((await at.tend(["watchdog"])).stdout).toContain("failure 1/3");
      expect((await at.tend(["watchdog"])).stdout).toContain("failure 2/3");
      control.status = 200;
      const healthy = await at.tend(["watchdog"]);
      expect(healthy.stdout).toContain("[RECOVERED] api is healthy again");
      expect(at.stateOf("api").strikes).toBe(0);
      control.status = 503;
      expect((await at.tend(["watchdog"])).stdout).toContain("HTTP 503 (expected 2xx/3xx), failure 1/3)");
      server.stop(true);
    }, 30_000);

    test("five concurrent passes run exactly one probe round; the others log SKIP and exit 0", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      control.delayMs = 1500;
      at.writeConfig(checkOnly(at, url, "", 'timeout = "5s"'));
      await at.tend(["watchdog", "validate"]);
      const runs = await Promise.all(Array.from({ length: 5 }, () => at.tend(["watchdog", "pass"])));
      server.stop(true);
      expect(runs.map((run) => run.code)).toEqual([0, 0, 0, 0, 0]);
      expect(control.hits).toBe(1);
      expect(runs.filter((run) => run.stdout.includes("[SKIP] another pass is running")).length).toBe(4);
    }, 30_000);

    test("gives up after max_restarts within restart_window, once, and clears itself when healthy", async () => {
      at = openPlace(where);
      const port = await freePort();
      at.writeConfig(
        tomlConfig({
          watchdog: { state_dir: at.state },
          services: [
            {
              name: "flaky",
              failures: 1,
              cooldown: "0s",
              backoff: "0s",
              grace: "0s",
              max_restarts: 2,
              verify_timeout: "1s",
              check: { http: `http://127.0.0.1:${port}/`, timeout: "500ms" },
              restart: { command: ["true"] },
            },
          ],
        }),
      );
      for (let restart = 1; restart <= 2; restart++) {
        const pass = await at.tend(["watchdog"]);
        expect(pass.stdout).toContain("[HUNG] flaky");
        expect(pass.stdout).toMatch(/\[FAILED\] flaky did not recover within [\d.]+s after restart/); // as waited
      }
      const third = await at.tend(["watchdog"]);
      expect(third.stdout).toContain("[GIVEN-UP] flaky failed 1 check in a row but was restarted 2 times within 1h");
      const fourth = await at.tend(["watchdog"]);
      expect(fourth.stdout).not.toContain("[GIVEN-UP]");
      expect(fourth.stdout).not.toContain("[HUNG]");
      const status = await at.tend(["watchdog", "status", "--json"]);
      expect(status.code).toBe(1);
      expect(JSON.parse(status.stdout).services[0].state).toBe("given-up");

      await hostServer(port);
      const healed = await at.tend(["watchdog"]);
      expect(healed.stdout).toContain("[RECOVERED] flaky is healthy again");
      const state = at.stateOf("flaky");
      expect(state.givenUp).toBe(false);
      expect(state.recoveriesFailed).toBe(2);
    }, 60_000);

    test("watchdog reset clears a given-up state; pause skips probes; resume probes again", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url, 'failures = 1\nmax_restarts = 0\n[service.restart]\ncommand = ["true"]'));
      control.status = 500;
      expect((await at.tend(["watchdog"])).stdout).toContain("[GIVEN-UP]");
      const reset = await at.tend(["watchdog", "reset", "api"]);
      expect(reset.code).toBe(0);
      expect(at.stateOf("api").givenUp).toBe(false);

      expect((await at.tend(["watchdog", "pause", "api", "--for", "1h"])).code).toBe(0);
      const hits = control.hits;
      expect((await at.tend(["watchdog"])).stdout).toBe("");
      expect(control.hits).toBe(hits);
      const paused = JSON.parse((await at.tend(["watchdog", "status", "--json", "--cached"])).stdout);
      expect(paused.services[0].state).toBe("paused");
      expect((await at.tend(["watchdog", "resume", "api"])).code).toBe(0);
      control.status = 200;
      await at.tend(["watchdog"]);
      expect(control.hits).toBe(hits + 1);
      expect((await at.tend(["watchdog", "pause", "nosuch"])).code).toBe(2);
      server.stop(true);
    }, 30_000);

    test("--dry-run probes and prints decisions but restarts nothing and writes no state", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      at.writeConfig(
        checkOnly(at, url, `failures = 1\n[service.restart]\ncommand = ["touch", "${at.scratch("restarted").inside}"]`),
      );
      control.status = 503;
      const dry = await at.tend(["watchdog", "pass", "--dry-run"]);
      server.stop(true);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain("api: restart (HTTP 503 (expected 2xx/3xx) in");
      expect(dry.stdout).toContain("would command touch");
      expect(existsSync(at.scratch("restarted").outside)).toBe(false);
      expect(at.read("services/api.json")).toBe("");
      expect(at.read("watchdog.log")).toBe("");
    });

    test("status probes now: exit 0 when healthy, 1 when not, with the JSON the spec names", async () => {
      at = openPlace(where);
      const { control, server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      const fresh = await at.tend(["watchdog", "status"]);
      expect(fresh.code).toBe(1); // no pass has run yet: nothing watches it, so nothing is fine
      expect(fresh.stdout).toMatch(/api\s+healthy\s+HTTP 200/); // decided now by the pass's rule
      expect(fresh.stdout).toContain("no pass has run yet: is cron or the loop running?");
      expect(fresh.stdout).toContain("last pass: never");
      await at.tend(["watchdog"]);
      const judged = at.read("services/api.json");
      const healthy = await at.tend(["watchdog", "status"]);
      expect(healthy.code).toBe(0);
      expect(healthy.stdout).toMatch(/api\s+healthy\s+HTTP 200/);
      control.status = 502;
      const sick = await at.tend(["watchdog", "status", "--json"]);
      expect(sick.code).toBe(1);
      const report = JSON.parse(sick.stdout);
      expect(report.last_pass).not.toBeNull();
      expect(Object.keys(report.services[0])).toEqual(
        expect.arrayContaining([
          "name",
          "state",
          "strikes",
          "failures",
          "probe",
          "restarts",
          "recoveries_ok",
          "recoveries_failed",
          "last_event",
        ]),
      );
      // The pass's rule applied to the probe made now: the first strike, never `healthy` beside a failed probe;
      // the last pass's word is beside it.
      expect(report.services[0].state).toBe("failing");
      expect(report.services[0].strikes).toBe(1);
      expect(report.services[0].last_pass).toMatchObject({ state: "healthy" });
      expect(report.services[0].probe.ok).toBe(false);
      expect(typeof report.services[0].probe.latency_ms).toBe("number");
      // status changes nothing
      expect(at.read("services/api.json")).toBe(judged);
      expect((await at.tend(["watchdog", "status", "nosuch"])).code).toBe(2);
      server.stop(true);
    });

    test("a service whose process died is started at once (crash), without strikes", async () => {
      at = openPlace(where);
      const port = await freePort();
      at.writeConfig(spawnService(at, port, 'grace = "1h"'));
      await at.tend(["watchdog"]);
      const first = Number(at.read("web.pid"));
      const firstHere = await at.hostPid(first);
      const killedAt = Date.now();
      process.kill(firstHere, "SIGKILL");
      await waitFor(() => !alive(firstHere), 5000, "killed");
      const pass = await at.tend(["watchdog"]);
      expect(pass.stdout).toMatch(
        new RegExp(`\\[WARN\\] web is not running \\(pid ${first} is (gone|a zombie)\\): starting it \\(crash\\)`),
      );
      expect(pass.stdout).not.toContain("failed health check"); // no strikes for a process that is gone
      // One RESTART line per restart: `grep -c '\[RESTART\]'` counts restarts.
      expect(pass.stdout.match(/\[RESTART\]/g)).toHaveLength(1);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
      // It was healthy before: a crash, counted, and its outage opens when it was last seen healthy.
      const state = at.stateOf("web");
      expect(state.restartsTotal).toBe(1);
      expect(state.outages).toHaveLength(1);
      expect(state.outages[0].reason).toBe("crash");
      expect(state.outages[0].from).toBeLessThan(killedAt);
    }, 30_000);

    test("a crash start that comes up hung leaves the strikes at N: the next failed probe restarts it", async () => {
      at = openPlace(where);
      const port = await freePort();
      const started = at.scratch("started-once").inside;
      // The first start answers; every later one comes up hung (listening, never answering: ngrok after a boot).
      const server = `"${at.bun}" "${at.server}" ${port}`;
      const run = `[ -e ${started} ] && exec ${server} --delay 600000; touch ${started}; exec ${server}`;
      at.writeConfig(
        spawnService(at, port, 'backoff = "1s"\nverify_timeout = "2s"').replace(
          `spawn = ["${at.bun}", "${at.server}", "${port}"]`,
          `spawn = ["sh", "-c", ${JSON.stringify(run)}]`,
        ),
      );
      await at.tend(["watchdog"]);
      const first = await at.hostPid(Number(at.read("web.pid")));
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null))?.status === 200,
        10_000,
        "up",
      );
      expect((await at.tend(["watchdog"])).stdout).toBe(""); // healthy: seen so
      process.kill(first, "SIGKILL");
      await waitFor(() => !alive(first), 5000, "killed");
      const crash = await at.tend(["watchdog"]);
      expect(crash.stdout).toContain("starting it (crash)");
      expect(crash.stdout).toMatch(/\[FAILED\] web did not recover within \d+(\.\d+)?s after restart/);
      expect(at.stateOf("web").strikes).toBe(3);
      await waitFor(() => Date.now() > at.stateOf("web").backoffUntil, 5000, "the backoff to end");
      // Not "failure 1/3": still failing at 3/3, so this pass restarts it.
      const next = await at.tend(["watchdog"]);
      expect(next.stdout).toContain("failure 3/3");
      expect(next.stdout).toContain("[HUNG] web");
    }, 60_000);

    test("a fresh install: the first start is START, report shows 100 % or no data and 0 restarts", async () => {
      at = openPlace(where);
      const port = await freePort();
      at.writeConfig(spawnService(at, port, 'grace = "0s"'));
      const pass = await at.tend(["watchdog"]);
      expect(pass.stdout).toMatch(/\[START\] watching web .*\n.*\[START\] web: started pid \d+\n$/);
      expect(at.read("downtime.log")).toBe("");
      const report = JSON.parse((await at.tend(["watchdog", "report", "--json", "--since", "1h"])).stdout);
      expect(report.services[0]).toMatchObject({ restarts: 0, outages: 0, downtime_s: 0 });
      expect([1, null]).toContain(report.services[0].availability);
      const status = JSON.parse((await at.tend(["watchdog", "status", "--json"])).stdout);
      expect(status.services[0]).toMatchObject({ state: "healthy", restarts: 0 });
      expect(status.watchdog).toMatchObject({ stale: false, expected_every_s: 300 });
    }, 30_000);
  });

for (const where of PLACES)
  describe(`the pass and the loop, against real processes (${where})`, () => {
    let place: Place | null = null;
    afterEach(async () => {
      await place?.cleanup();
      place = null;
    });

    test("a quiet pass writes nothing to stdout or the log but refreshes the heartbeat", async () => {
      const at = (place = openPlace(where));
      const { server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      await at.tend(["watchdog"]);
      const log = at.read("watchdog.log");
      const heartbeat = at.stateFile("heartbeat");
      utimesSync(heartbeat, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
      const quiet = await at.tend(["watchdog"]);
      server.stop(true);
      expect(quiet.stdout).toBe("");
      expect(at.read("watchdog.log")).toBe(log);
      expect(Date.now() - statSync(heartbeat).mtimeMs).toBeLessThan(30_000);
      const [time, interval] = at.read("heartbeat").split("\n");
      expect(Date.parse(time)).toBeGreaterThan(Date.now() - 30_000);
      expect(interval).toBe("interval 5m"); // the interval the pass ran for
      expect(statSync(at.stateFile("")).mode & 0o777).toBe(0o700);
    }, 30_000);

    test("files of an earlier version (NAME.json, NAME.out beside tend's own) move into services/, kept", async () => {
      const at = (place = openPlace(where));
      const { server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      at.writeState("api.json", JSON.stringify({ version: 1, restartsTotal: 7, firstSeenAt: 1 }), 0o600);
      at.writeState("api.out", "old output\n", 0o600);
      at.writeState("gone.json", "{}", 0o600); // no such service: left alone
      chmodSync(at.stateFile(""), 0o700);
      const pass = await at.tend(["watchdog"]);
      server.stop(true);
      expect(pass.code).toBe(0);
      expect(pass.stdout).not.toContain("[START]"); // its history came along: not a new service
      expect(at.stateOf("api").restartsTotal).toBe(7);
      expect(at.read("services/api.out")).toBe("old output\n");
      expect(readdirSync(at.stateFile(""))).toContain("gone.json");
      expect(readdirSync(at.stateFile("")).filter((name) => name.startsWith("api."))).toEqual([]);
    }, 30_000);

    test("a corrupt state file is logged and reset, never a crash", async () => {
      const at = (place = openPlace(where));
      const { server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      await at.tend(["watchdog"]);
      at.writeState("services/api.json", "{ half a file", 0o600);
      const pass = await at.tend(["watchdog"]);
      server.stop(true);
      expect(pass.code).toBe(0);
      expect(pass.stdout).toMatch(/\[ERROR\] api: corrupt state file reset \(not JSON/);
      expect(pass.stderr).toBe("");
      expect(at.stateOf("api").version).toBe(1);
    }, 30_000);

    test("a state dir that is a symlink is refused: exit 1, nothing written through it", async () => {
      const at = (place = openPlace(where));
      const { server, url } = controlledServer();
      const elsewhere = at.scratch("elsewhere").inside;
      const made = await at.shell(
        `mkdir -p '${elsewhere}' '${dirname(at.state)}' && ln -s '${elsewhere}' '${at.state}'`,
      );
      expect(made).toMatchObject({ code: 0, stderr: "" });
      at.writeConfig(checkOnly(at, url));
      const pass = await at.tend(["watchdog"]);
      server.stop(true);
      expect(pass.code).toBe(1);
      expect(pass.stderr).toContain("is a symlink");
      expect(readdirSync(at.scratch("elsewhere").outside)).toEqual([]);
    });

    test("run --interval loops until SIGTERM and exits 0, lean (baseline JIT only) in the same process", async () => {
      const at = (place = openPlace(where));
      const { control, server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      const loop = await at.spawnTend(["watchdog", "run", "--interval", "1s"]);
      try {
        await waitFor(() => control.hits >= 3, 20_000, "three passes");
        // Same PID, re-executed without the optimizing JITs (RSS stays flat over long runs: bench P5).
        const environ = readFileSync(`/proc/${loop.tendPid()}/environ`, "utf8").split("\0");
        expect(environ).toContain("BUN_JSC_useDFGJIT=0");
        expect(environ).toContain("BUN_JSC_useFTLJIT=0");
        loop.kill("SIGTERM");
        expect(await loop.exited).toBe(0);
      } finally {
        server.stop(true);
      }
    }, 30_000);

    test("run: a pass that fails is logged and the loop goes on", async () => {
      const at = (place = openPlace(where));
      const { control, server, url } = controlledServer();
      at.writeConfig(checkOnly(at, url));
      const loop = await at.spawnTend(["watchdog", "run", "--interval", "1s"]);
      try {
        await waitFor(() => control.hits >= 1, 10_000, "first pass");
        // Make the state dir writable by others, atomically (a pass may be running): passes now fail
        // (refused), and the loop must survive them.
        chmodSync(at.stateFile(""), 0o777);
        const reader = loop.stdout.getReader();
        let seen = "";
        while (!seen.includes("[ERROR] pass failed")) {
          const { done, value } = await reader.read();
          if (done) throw new Error(`the loop ended: ${seen}`);
          seen += new TextDecoder().decode(value);
        }
        expect(seen).toContain("is writable by group or others (mode 0777): refusing to write there");
        chmodSync(at.stateFile(""), 0o700);
        const hits = control.hits;
        await waitFor(() => control.hits > hits, 10_000, "a pass after the failed ones");
        loop.kill("SIGTERM");
        expect(await loop.exited).toBe(0);
      } finally {
        server.stop(true);
      }
    }, 30_000);

    test("the spawned service is in its own session and outlives the watchdog's killed process group", async () => {
      const at = (place = openPlace(where));
      const port = await freePort();
      at.writeConfig(spawnService(at, port));
      // The pass runs in a process group of its own, as launchd or cron would run it; the group is then killed.
      const job = await at.spawnShell(`'${at.tendPath}' watchdog pass; echo done; sleep 60`);
      const reader = job.stdout.getReader();
      let seen = "";
      while (!seen.includes("done")) seen += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
      job.killGroup();
      await job.exited;
      const service = await at.hostPid(Number(at.read("web.pid")));
      try {
        const stat = readFileSync(`/proc/${service}/stat`, "utf8").split(") ")[1].split(" ");
        expect(Number(stat[3])).toBe(service); // session leader: pgid = sid = pid
        expect(Number(stat[2])).toBe(service);
        expect(alive(service)).toBe(true);
        expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
      } finally {
        killAll([service]);
      }
    }, 30_000);
  });

describe("watchdog pass against real processes (this host: strace)", () => {
  test("fsync only for decisions: a repeat healthy pass syncs no state file, a strike syncs it (strace)", async () => {
    box = new Sandbox();
    const { control, server, url } = controlledServer();
    box.writeConfig(checkOnly(box, url));
    /** The files a pass fsyncs, as strace -y names them. */
    const synced = async () => {
      const trace = join(box.dir, "fsync.trace");
      const argv = ["strace", "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", trace, TEND, "watchdog", "pass"];
      const pass = await run(argv, { env: box.env() });
      expect(pass.code).toBe(0);
      return readFileSync(trace, "utf8")
        .split("\n")
        .filter((line) => /fsync|fdatasync/.test(line) && line.includes("= 0"));
    };
    const stateTemp = /<[^>]*\/services\/\.api\.json\.[^>]*\.tmp>/;
    expect((await synced()).filter((line) => stateTemp.test(line))).toHaveLength(1); // START: first seen
    expect((await synced()).filter((line) => stateTemp.test(line))).toHaveLength(0); // answered as before
    expect(box.stateOf("api").latencyCount).toBe(2); // still recorded: the sample is in the journal
    control.status = 500;
    expect((await synced()).filter((line) => stateTemp.test(line))).toHaveLength(1); // a strike
    server.stop(true);
    expect(box.stateOf("api").strikes).toBe(1);
  }, 30_000);
});
