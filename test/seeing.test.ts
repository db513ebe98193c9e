// stats, report, metrics and status, fed by real passes against real servers (no hand-written state).
// Each runs on this host and inside the Termux-shaped phone (test/places.ts); the terminal is tmux there.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { ageHeartbeat, controlledServer, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

/** A line of the exposition format: a HELP or TYPE comment, or a sample with its labels and value. */
const SAMPLE_LINE =
  /^(# (HELP|TYPE) tend_[a-z_]+ .+|tend_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?\d+(\.\d+)?(e-?\d+)?)$/;

/** Every service's series names its host: the instance both alert paths give. */
const instance = () => `instance="${box.hostname}",`;

let box: Place;
const servers: ReturnType<typeof Bun.serve>[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) server.stop(true);
  await box?.cleanup();
});
afterAll(() => closePlaces());

function controlled() {
  const { control, server, url } = controlledServer();
  servers.push(server);
  return { control, url };
}

/** Run a command in a real terminal (tmux on the private socket) and return the screen. */
async function onTerminal(args: string[], marker = "__done__"): Promise<string> {
  return (await terminal("screen", 120, 50, args, { marker })).plain;
}

/** `tend ARGS` on a terminal of this size (tmux, the place's); the screen, plain and with its colours. */
async function terminal(
  name: string,
  width: number,
  height: number,
  args: string[],
  { marker = "__done__", join = false } = {},
): Promise<{ plain: string; colored: string }> {
  const command = `'${box.tendPath}' ${args.join(" ")}; echo ${marker}; sleep 30`;
  await box.tmux(["new-session", "-d", "-x", `${width}`, "-y", `${height}`, "-s", name, command]);
  const capture = ["capture-pane", "-p", ...(join ? ["-J"] : []), "-t", name];
  let plain = "";
  await waitFor(
    async () => (plain = (await box.tmux(capture)).stdout).includes(marker),
    10_000,
    `${args.join(" ")} on the terminal`,
  );
  const colored = (await box.tmux(["capture-pane", "-p", "-e", "-t", name])).stdout;
  await box.tmux(["kill-session", "-t", name]);
  return { plain, colored };
}

for (const where of PLACES)
  describe(where, () => {
    test("stats: percentiles, timeouts, a WARN where the timeout cuts the distribution; the histogram", async () => {
      box = openPlace(where);
      const slow = controlled();
      const fast = controlled();
      box.configure({
        services: [
          { name: "tunnel", failures: 100, check: { http: slow.url, timeout: "900ms" } },
          { name: "api", check: { http: fast.url, timeout: "2s" } },
        ],
      });
      // The tunnel answers in 100 ms..1.3 s: the 900 ms timeout cuts the tail off
      // (400 ms of headroom for a loaded machine).
      for (const delay of [100, 200, 300, 400, 500, 1300, 1300]) {
        slow.control.delayMs = delay;
        expect((await box.tend(["watchdog"])).code).toBe(0);
      }
      const stats = JSON.parse((await box.tend(["watchdog", "stats", "--json"])).stdout);
      const tunnel = stats.find((s: { name: string }) => s.name === "tunnel");
      expect(tunnel.samples).toBe(7);
      expect(tunnel.timeouts).toBe(2);
      expect(tunnel.p50_ms).toBeGreaterThanOrEqual(400);
      expect(tunnel.p99_ms).toBeGreaterThanOrEqual(900);
      expect(tunnel.max_ms).toBeGreaterThanOrEqual(900);
      expect(tunnel.warning).toContain("timeout 0.9s is below the observed p99 (2 of 7 probes timed out)");
      expect(tunnel.suggested_timeout_ms).toBeGreaterThanOrEqual(1000);
      const api = stats.find((s: { name: string }) => s.name === "api");
      expect(api.samples).toBe(7);
      expect(api.timeouts).toBe(0);
      expect(api.warning).toBeNull();

      const text = (await box.tend(["watchdog", "stats"])).stdout;
      expect(text).toMatch(/^tunnel: 7 probes {2}p50 \d+ms {2}p90 .* {2}timeouts 2 {2}\(timeout 900ms\)$/m);
      expect(text).toContain("WARN tunnel: timeout 0.9s is below the observed p99");
      expect(text).not.toContain("│"); // no pictures when stdout is not a terminal
      const screen = await onTerminal(["watchdog", "stats", "tunnel"]);
      expect(screen).toContain("├" + "─".repeat(30));
      expect(screen).toContain("timeout 900ms: slower answers count as failures");
      expect(screen).toMatch(/100ms-200ms │█+ 1/);
    }, 60_000);

    test("report: availability, downtime, restarts, recoveries, MTTR from real passes; a timeline", async () => {
      box = openPlace(where);
      const web = controlled();
      box.configure({
        services: [
          {
            name: "web",
            failures: 2,
            grace: "0s",
            cooldown: "0s",
            verify_timeout: "1s",
            check: { http: web.url, timeout: "500ms" },
            restart: { command: ["true"] },
          },
        ],
      });
      await box.tend(["watchdog"]); // healthy: first seen
      web.control.status = 503;
      await box.tend(["watchdog"]); // strike 1: the outage opens
      const failed = await box.tend(["watchdog"]); // strike 2: restart; 503 persists: FAILED
      expect(failed.stdout).toContain("[FAILED] web");
      web.control.status = 200;
      await waitFor(
        async () => (await box.tend(["watchdog"])).stdout.includes("[RECOVERED] web is healthy again"),
        20_000,
        "recovery",
      );

      const report = JSON.parse((await box.tend(["watchdog", "report", "--since", "10m", "--json"])).stdout);
      const row = report.services[0];
      expect(row.name).toBe("web");
      expect(row.outages).toBe(1);
      expect(row.restarts).toBe(1);
      expect(row.recoveries_failed).toBe(1);
      expect(row.recoveries_ok).toBe(0);
      expect(row.downtime_s).toBeGreaterThanOrEqual(1);
      expect(row.mttr_s).toBe(row.downtime_s);
      expect(row.availability).toBeGreaterThan(0);
      expect(row.availability).toBeLessThan(1);
      expect(row.timeline[0]).toBe("none"); // before tend watched it
      expect(["down", "degraded"]).toContain(row.timeline.at(-1)); // 12.5 s cells: the whole test sits in the last one

      // With short cells the picture shows the outage between healthy time.
      const recoveredAt = Date.now();
      await waitFor(() => Date.now() - recoveredAt > 1500, 5000, "a little healthy time");
      const fine = JSON.parse((await box.tend(["watchdog", "report", "--since", "30s", "--json"])).stdout).services[0]
        .timeline as string[];
      expect(fine.at(-1)).toBe("up");
      const firstBad = fine.findIndex((cell) => cell === "down" || cell === "degraded");
      expect(firstBad).toBeGreaterThan(0);
      expect(fine.slice(0, firstBad).every((cell) => cell === "none" || cell === "up")).toBe(true);

      // The watchdog's own restarts do not change the figures: they come from files.
      const again = JSON.parse((await box.tend(["watchdog", "report", "--since", "10m", "--json"])).stdout).services[0];
      const moving = { availability: 0, timeline: [], observed_s: 0, no_data_s: 0 }; // time goes on between the two
      expect({ ...again, ...moving }).toEqual({ ...row, ...moving });
      expect(again.observed_s + again.no_data_s).toBe(600); // the window, observed or not

      const screen = await onTerminal(["watchdog", "report", "--since", "10m"]);
      expect(screen).toMatch(/web\s+\d+\.\d+%\s+\d/);
      expect(screen).toContain("█ up  ▒ degraded  ░ down  · no data");
      expect(screen).toMatch(/·+[░▒█]+/);
    }, 60_000);

    test("report: a host gap (heartbeat older than 2 x interval) is no data, not downtime", async () => {
      box = openPlace(where);
      const web = controlled();
      box.writeConfig(
        `[watchdog]
  state_dir = "${box.state}"
  interval = "1m"
  [[service]]
  name = "web"
  [service.check]
  http = "${web.url}"
  `,
      );
      await box.tend(["watchdog"]);
      ageHeartbeat(box.stateFile(""), Date.now() - 20 * 60_000);
      const state = box.stateOf("web");
      state.firstSeenAt = Date.now() - 30 * 60_000; // watched for 30 minutes
      writeFileSync(box.stateFile("services/web.json"), JSON.stringify(state));
      await box.tend(["watchdog"]);
      const row = JSON.parse((await box.tend(["watchdog", "report", "--since", "1h", "--json"])).stdout).services[0];
      expect(row.availability).toBe(1);
      expect(row.downtime_s).toBe(0);
      expect(row.timeline.filter((cell: string) => cell === "none").length).toBeGreaterThan(24);
    });

    test("metrics_file: Prometheus text, written atomically each pass, promtool-valid, right figures", async () => {
      box = openPlace(where);
      const web = controlled();
      box.writeScratch("textfile/.made", ""); // node_exporter's textfile dir, the user's
      const metrics = box.scratch("textfile/tend.prom").outside;
      box.configure({
        watchdog: { metrics_file: box.scratch("textfile/tend.prom").inside },
        services: [
          {
            name: "web",
            failures: 1,
            grace: "0s",
            verify_timeout: "1s",
            check: { http: web.url, timeout: "500ms" },
            restart: { command: ["true"] },
          },
          { name: "db", check: { http: web.url } },
          { name: "old", enabled: false, check: { http: web.url } },
          { name: "held", check: { http: web.url } },
        ],
      });
      web.control.status = 500;
      await box.tend(["watchdog"]);
      await box.tend(["watchdog", "pause", "held"]);
      const before = Date.now();
      web.control.status = 200;
      await box.tend(["watchdog"]);
      const text = await Bun.file(metrics).text();
      expect(text).toContain(`tend_service_up{${instance()}service="web"} 1`);
      expect(text).toContain(`tend_service_restarts_total{${instance()}service="web"} 1`);
      expect(text).toContain(`tend_service_recoveries_total{${instance()}service="web",result="failed"} 1`);
      expect(text).toContain(`tend_service_recoveries_total{${instance()}service="web",result="ok"} 0`);
      expect(text).toContain(`tend_service_strikes{${instance()}service="db"} 0`);
      // `up` only for watched services: a disabled or paused one must not fire an `up == 0` alert.
      expect(text).not.toContain(`tend_service_up{${instance()}service="old"}`);
      expect(text).not.toContain(`tend_service_up{${instance()}service="held"}`);
      expect(text).toContain(`tend_service_state{${instance()}service="web",state="healthy"} 1`);
      expect(text).toContain(`tend_service_state{${instance()}service="old",state="disabled"} 1`);
      expect(text).toContain(`tend_service_state{${instance()}service="held",state="paused"} 1`);
      expect(text.match(/^tend_service_state\{/gm)).toHaveLength(4); // one series per service
      expect(text).toContain(`tend_service_auto_restarts_total{${instance()}service="web"} 0`);
      expect(text).toMatch(/tend_probe_duration_seconds\{instance="[^"]+",service="web"\} 0(\.\d+)?\n/);
      const stamp = Number(/^tend_last_pass_timestamp_seconds (\d+)$/m.exec(text)?.[1]);
      expect(stamp * 1000).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
      expect(statSync(metrics).mode & 0o777).toBe(0o644);
      // No temp file left behind.
      expect(readdirSync(box.scratch("textfile").outside).filter((name) => name !== ".made")).toEqual(["tend.prom"]);

      // Every sample line follows the exposition grammar, and promtool (Prometheus's own checker) agrees.
      for (const line of text.trim().split("\n")) {
        expect(line).toMatch(SAMPLE_LINE);
      }
      const promtool = process.env.PROMTOOL ?? "build/tools/promtool";
      if (!existsSync(promtool))
        throw new Error(`promtool not found at ${promtool}: run make build/tools/promtool (make test does)`);
      const check = Bun.spawnSync([promtool, "check", "metrics"], { stdin: new TextEncoder().encode(text) });
      expect(check.stderr.toString() + check.stdout.toString()).toBe("");
      expect(check.exitCode).toBe(0);
    }, 30_000);

    test("status reads at a glance on a terminal: aligned columns, colour by state, the last pass's age", async () => {
      box = openPlace(where);
      const ok = controlled();
      const bad = controlled();
      bad.control.status = 503;
      box.writeConfig(
        `[watchdog]
  state_dir = "${box.state}"
  [[service]]
  name = "blog"
  [service.check]
  http = "${ok.url}"
  [[service]]
  name = "tunnel-public"
  [service.check]
  http = "${bad.url}"
  `,
      );
      await box.tend(["watchdog"]);
      const { plain, colored } = await terminal("screen", 100, 20, ["watchdog", "status"]);
      const lines = plain.split("\n");
      expect(lines[0]).toMatch(/^last pass: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+\.\ds ago\)/);
      const header = lines.find((line) => line.startsWith("SERVICE"))!;
      const blog = lines.find((line) => line.startsWith("blog"))!;
      const tunnel = lines.find((line) => line.startsWith("tunnel-public"))!;
      for (const column of ["STATE", "PROBE", "STRIKES"]) {
        const at = header.indexOf(column);
        expect(blog[at - 1]).toBe(" ");
        expect(tunnel[at - 1]).toBe(" ");
        expect(blog[at]).not.toBe(" ");
      }
      expect(blog).toContain("healthy");
      // Decided now: the strikes in the word and beside it.
      expect(tunnel).toMatch(/failing 2\/3\s+HTTP 503 .*\s2\/3\s/);
      expect(colored).toMatch(/\x1b\[32mhealthy/); // green
      // Yellow: a strike below N is a warning, not down (the one table).
      expect(colored).toMatch(/\x1b\[33mfailing 2\/3/);
      const noColor = await box.tend(["watchdog", "status"], { NO_COLOR: "1" });
      expect(noColor.stdout).not.toContain("\x1b[");

      // A phone-width terminal: two lines per service, nothing wider than the screen.
      const phone = (await terminal("phone", 44, 20, ["watchdog", "status"], { join: true })).plain;
      const shown = phone.split("\n").filter((line) => line && line !== "__done__");
      expect(shown.every((line) => line.length <= 44)).toBe(true);
      expect(shown.find((line) => line.startsWith("tunnel-public"))).toMatch(
        /^tunnel-public\s+failing 2\/3\s+2\/3\s+0 \(✓0 ✗0\)$/,
      );
      const detail = shown[shown.findIndex((line) => line.startsWith("tunnel-public")) + 1];
      expect(detail).toMatch(/^ {2}HTTP 503 \(expected 2xx\/3xx\) · \d\d:\d\d:\d\d WA…$/); // cut to the width
      // Its header too, in two lines as the rows are.
      const titles = shown.findIndex((line) => line.startsWith("SERVICE"));
      expect(shown[titles]).toMatch(/^SERVICE\s+STATE\s+STRIKES\s+RESTAR/); // cut to the width, as rows are
      expect(shown[titles + 1]).toBe("  PROBE · LAST EVENT");
    }, 30_000);

    test("stats leaves out every probe inside an incident (a WAIT on a frozen dependency), keeps a blip", async () => {
      box = openPlace(where);
      const db = controlled();
      const app = controlled();
      const tunnel = controlled();
      box.configure({
        services: [
          { name: "db", check: { http: db.url, timeout: "2s" } },
          { name: "app", depends_on: ["db"], check: { http: app.url, timeout: "1s" } },
          { name: "tunnel", failures: 100, check: { http: tunnel.url, timeout: "1s" } },
        ],
      });
      expect((await box.tend(["watchdog"])).code).toBe(0); // all healthy
      // The database is down; the app, waiting on it, times out: the incident, not the app's tail.
      db.control.status = 503;
      app.control.delayMs = 2500;
      tunnel.control.delayMs = 2500; // the tunnel: one slow answer the timeout cuts, then normal again
      const waiting = await box.tend(["watchdog"]);
      expect(waiting.stdout).toContain("[WAIT] app failed health check");
      tunnel.control.delayMs = 0;
      expect((await box.tend(["watchdog"])).stdout).toContain("[WAIT] app failed health check");
      db.control.status = 200;
      app.control.delayMs = 0;
      await box.tend(["watchdog"]);
      const stats = JSON.parse((await box.tend(["watchdog", "stats", "--json"])).stdout);
      const of = (name: string) => stats.find((s: { name: string }) => s.name === name);
      expect(of("app")).toMatchObject({ samples: 2, timeouts: 0, hang_probes: 2, warning: null });
      // A blip below N strikes, closed by the next answer, is the tail the timeout cut: kept, and advised on.
      expect(of("tunnel")).toMatchObject({ samples: 4, timeouts: 1, hang_probes: 0 });
      expect(of("tunnel").warning).toContain("timeout 1.0s is below the observed p99");
      const text = (await box.tend(["watchdog", "stats", "app"])).stdout;
      expect(text).toContain("2 probes inside outages (the incident, not the tail) left out");
    }, 60_000);
  });
