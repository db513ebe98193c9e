// Issue #45 through the binary: a service answering 502 on every other request, ten passes, failures = 3.
// In a row (the default) it is never restarted, but it is flapping: said once (🔀), the word in every
// view, status exits 1. With failures_within = 5 (monit's "3 times within 5 cycles") it is restarted
// at its 5th probe.
// The two behaviours run on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { openPlace, closePlaces, PLACES, type Place, type PlaceName } from "./places.ts";

/** Every service's series names its host: the instance both alert paths give. */
const instance = () => `instance="${box!.hostname}",`;

let box: Place | null = null;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

async function world(where: PlaceName, service: Record<string, string | number> = {}) {
  await box?.cleanup(); // a test that builds two worlds leaves nothing of the first
  box = openPlace(where);
  let turn = 0;
  const flappy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => (turn++ % 2 === 0 ? new Response("bad gateway", { status: 502 }) : new Response("ok")),
  });
  const got: { event: string; message: string }[] = [];
  const hook = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const body = await request.json();
      got.push({ event: body.event, message: body.message });
      return new Response("ok");
    },
  });
  stops.push(
    () => flappy.stop(true),
    () => hook.stop(true),
  );
  box.configure({
    watchdog: { metrics_file: box.scratch("tend.prom").inside },
    notify: { url: `http://127.0.0.1:${hook.port}/`, format: "json", min_interval: "0s" },
    defaults: { grace: "0s", cooldown: "0s", verify_timeout: "1s" },
    services: [
      {
        name: "flappy",
        failures: 3,
        ...service,
        check: { http: `http://127.0.0.1:${flappy.port}/`, timeout: "1s" },
        restart: { command: ["true"] },
      },
    ],
  });
  return got;
}

async function passes(count: number) {
  for (let i = 0; i < count; i++) expect((await box!.tend(["watchdog"])).code).toBe(0);
}

for (const where of PLACES)
  describe(`flapping (${where})`, () => {
    test("in a row (the default): never restarted, but flapping: 🔀 once, the word everywhere, status 1", async () => {
      const got = await world(where);
      await passes(10);
      const log = box!.read("watchdog.log");
      expect(log).not.toContain("[RESTART]");
      expect(log.match(/\[WARN\] flappy is flapping \(\d+ of \d+ probes failed, \d+ changes\)/g)).toHaveLength(1);
      expect(got.filter((message) => message.event === "flapping")).toEqual([
        {
          event: "flapping",
          message: expect.stringMatching(/^🔀 flappy is flapping \(4 of 7 probes failed, 6 changes\)$/),
        },
      ]);
      const status = await box!.tend(["watchdog", "status", "--json", "--cached"]);
      expect(JSON.parse(status.stdout).services[0].state).toBe("flapping");
      expect(status.code).toBe(1);
      const nagios = await box!.tend(["watchdog", "status", "--nagios", "--cached"]);
      expect(nagios.stdout).toMatch(/^TEND WARNING - flappy flapping/);
      const metrics = readFileSync(box!.scratch("tend.prom").outside, "utf8");
      expect(metrics).toContain(`tend_service_state{${instance()}service="flappy",state="flapping"} 1`);
      expect(metrics).toContain(`tend_service_up{${instance()}service="flappy"} 1`); // a flap is not down: it warns
      const report = JSON.parse((await box!.tend(["watchdog", "report", "--json", "--since", "1h"])).stdout);
      expect(report.services[0]).toMatchObject({ restarts: 0, flapping_spells: 1 });
    });

    test("failures_within = 5: 3 failed of the last 5 probes, restarted at the 5th probe", async () => {
      const got = await world(where, { failures_within: 5 });
      await passes(5);
      const log = box!.read("watchdog.log");
      expect(log).toContain(
        "[WARN] flappy failed health check (HTTP 502 (expected 2xx/3xx), failure 1/3 within the last 5 probes)",
      );
      expect(log).toContain(
        "[WARN] flappy failed health check (HTTP 502 (expected 2xx/3xx), failure 3/3 within the last 5 probes)",
      );
      expect(log).toContain(
        "[HUNG] flappy failed 3 of the last 5 checks (last: HTTP 502 (expected 2xx/3xx)): restarting",
      );
      expect(log.match(/\[RESTART\] flappy: command true/g)).toHaveLength(1);
      expect(box!.stateOf("flappy").restartsTotal).toBe(1);
      expect(got.filter((message) => message.event === "restart")).toHaveLength(1);
      // Before the 5th probe, no restart: the first four passes only struck or answered.
      const lines = log.split("\n");
      const restartAt = lines.findIndex((line) => line.includes("[RESTART]"));
      expect(lines.slice(0, restartAt).filter((line) => line.includes("failed health check"))).toHaveLength(3);
    });
  });

test("failures_within below failures, or above the 20 probes kept: a configuration error naming the key", async () => {
  await world("host", { failures_within: 2 });
  const low = await box!.tend(["watchdog", "validate"]);
  expect(low.code).toBe(2);
  expect(low.stderr).toContain("failures_within = 2 is below failures = 3 (N of the last M: M >= N)");
  await world("host", { failures_within: 21 });
  const high = await box!.tend(["watchdog", "validate"]);
  expect(high.code).toBe(2);
  expect(high.stderr).toContain("failures_within = 21 is above 20");
});
