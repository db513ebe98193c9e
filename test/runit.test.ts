// restart.runit against Debian's real runit: runsvdir supervising a temp service dir, `sv` restarting it.
// termux-services are runit services: this is how tend restarts sshd or crond on a phone.
// On the phone (termux-services installed): runsvdir, runsv and sv run as the app, as Termux runs them.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { freePort, procState, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
afterEach(async () => {
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

/** A service dir with a run script serving HTTP, supervised by the test's own runsvdir (its group killed after). */
async function supervised(place: Place, port: number) {
  const svDir = place.scratch("service");
  const dir = { inside: `${svDir.inside}/blog`, outside: `${svDir.outside}/blog` };
  place.writeScratch(
    "service/blog/run",
    `#!${place.sh}\nexec 2>&1\nexec "${place.bun}" "${place.server}" ${port}\n`,
    0o755,
  );
  // Not -P: runsv and the service stay in runsvdir's process group, which cleanup() kills whole.
  await place.background(["runsvdir", svDir.inside]);
  /** The service's PID, as this test finds it (0: none). */
  const pidOf = async () => {
    const file = `${dir.outside}/supervise/pid`;
    const text = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
    return /^\d+$/.test(text) ? place.hostPid(Number(text)) : 0;
  };
  await waitFor(
    async () =>
      (await pidOf()) > 0 &&
      (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) }).catch(() => null)) !== null,
    15_000,
    "runsv started the service",
  );
  return { svDir: svDir.inside, dir, pidOf };
}

for (const where of PLACES)
  describe(where, () => {
    test("restart.runit: a frozen service restarted by sv, verified; sv down is stopped, never started", async () => {
      const place = (box = openPlace(where, { termuxServices: true }));
      const port = await freePort();
      const { svDir, dir, pidOf } = await supervised(place, port);
      place.configure({
        services: [
          {
            name: "blog",
            failures: 1,
            grace: "0s",
            verify_timeout: "20s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
            restart: { runit: "blog", sv_dir: `${svDir}` },
          },
        ],
      });
      expect((await place.tend(["watchdog", "validate"])).code).toBe(0);
      expect((await place.tend(["watchdog", "plan"])).stdout).toContain(`restart.sv_dir = "${svDir}"`);
      await place.tend(["watchdog"]);
      expect(place.stateOf("blog").verdict.word).toBe("healthy");

      // Alive by PID, frozen: the probe fails, tend restarts through sv (TERM + CONT), runsv starts a new one.
      const frozen = await pidOf();
      process.kill(frozen, "SIGSTOP");
      await waitFor(() => procState(frozen) === "T", 5000, "frozen");
      const pass = await place.tend(["watchdog"]);
      expect(pass.stdout).toContain(`[RESTART] blog: sv restart ${dir.inside}`);
      expect(pass.stdout).toMatch(/\[RECOVERED\] blog recovered [\d.]+s after restart \(HTTP 200\)/);
      expect(await pidOf()).not.toBe(frozen);
      expect(procState(frozen)).toBeNull();

      // The pid source is runsv's supervise/pid: status and check.process see the new process.
      const status = JSON.parse((await place.tend(["watchdog", "status", "--json"])).stdout);
      expect(status.services[0]).toMatchObject({ state: "healthy", restarts: 1, recoveries_ok: 1 });

      // sv down: down on purpose. The pass skips it (stopped) and never starts it, as for an inactive unit.
      expect((await place.shell(`sv down ${dir.inside}`)).code).toBe(0);
      const stat = () => readFileSync(`${dir.outside}/supervise/stat`, "utf8");
      await waitFor(() => stat().startsWith("down"), 10_000, "down");
      const skipped = await place.tend(["watchdog"]);
      expect(skipped.stdout).not.toContain("[RESTART]");
      expect(place.stateOf("blog").verdict).toMatchObject({ word: "stopped", reason: "stopped" });
      expect(stat()).toStartWith("down");
      const down = JSON.parse((await place.tend(["watchdog", "status", "--json"])).stdout);
      expect(down.services[0].state).toBe("stopped");
      expect((await place.tend(["watchdog", "status"])).code).toBe(0); // stopped on purpose needs nobody

      // `watchdog start` brings it up its backend's way (sv restart), verified.
      const started = await place.tend(["watchdog", "start", "blog"]);
      expect(started.code).toBe(0);
      expect(await pidOf()).toBeGreaterThan(0);
      await place.tend(["watchdog"]);
      expect(place.stateOf("blog").verdict.word).toBe("healthy");
    }, 90_000);
  });

test("restart.runit: sv_dir defaults to $SVDIR, then $PREFIX/var/service on Termux, then /etc/service", async () => {
  const { defaultSvDir } = await import("../lib/restarts/runit.ts");
  expect(defaultSvDir({ SVDIR: "/srv/sv" })).toBe("/srv/sv");
  expect(defaultSvDir({ PREFIX: "/data/data/com.termux/files/usr", TERMUX_VERSION: "0.118.0" })).toBe(
    "/data/data/com.termux/files/usr/var/service",
  );
  expect(defaultSvDir({ PREFIX: "/usr" })).toBe("/etc/service");
});

for (const where of PLACES)
  test(`restart.runit names a service in sv_dir, never a path (${where})`, async () => {
    const sandbox = (box = openPlace(where));
    sandbox.writeConfig(`
[[service]]
name = "sshd"
[service.check]
tcp = "127.0.0.1:8022"
[service.restart]
runit = "../sshd"
`);
    const bad = await sandbox.tend(["watchdog", "validate"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('service[0].restart.runit: "../sshd" is a service name in sv_dir');
  });
