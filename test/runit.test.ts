// restart.runit against Debian's real runit: runsvdir supervising a temp service dir, `sv` restarting it.
// termux-services are runit services: this is how tend restarts sshd or crond on a phone.
import { afterEach, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, freePort, procState, Sandbox, SERVER, waitFor } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

/** A service dir with a run script serving HTTP, supervised by the test's own runsvdir (its group killed after). */
async function supervised(port: number) {
  const svDir = join(box.dir, "service");
  const dir = join(svDir, "blog");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "run"), `#!/bin/sh\nexec 2>&1\nexec "${BUN}" "${SERVER}" ${port}\n`);
  chmodSync(join(dir, "run"), 0o755);
  // Not -P: runsv and the service stay in runsvdir's process group, which cleanup() kills whole.
  const runsvdir = Bun.spawn(["runsvdir", svDir], { detached: true, stdout: "ignore", stderr: "ignore" });
  box.track(runsvdir.pid);
  const pidOf = () => {
    const file = join(dir, "supervise", "pid");
    const text = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
    return /^\d+$/.test(text) ? Number(text) : 0;
  };
  await waitFor(
    async () =>
      pidOf() > 0 &&
      (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) }).catch(() => null)) !== null,
    15_000,
    "runsv started the service",
  );
  return { svDir, dir, pidOf };
}

test("restart.runit: a frozen service is restarted by sv and verified; sv down is stopped, never started", async () => {
  box = new Sandbox();
  const port = await freePort();
  const { svDir, dir, pidOf } = await supervised(port);
  box.configure({
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
  expect((await box.tend(["watchdog", "validate"])).code).toBe(0);
  expect((await box.tend(["watchdog", "plan"])).stdout).toContain(`restart.sv_dir = "${svDir}"`);
  await box.tend(["watchdog"]);
  expect(box.stateOf("blog").verdict.word).toBe("healthy");

  // Alive by PID, frozen: the probe fails, tend restarts through sv (TERM + CONT), runsv starts a new one.
  const frozen = pidOf();
  process.kill(frozen, "SIGSTOP");
  await waitFor(() => procState(frozen) === "T", 5000, "frozen");
  const pass = await box.tend(["watchdog"]);
  expect(pass.stdout).toContain(`[RESTART] blog: sv restart ${dir}`);
  expect(pass.stdout).toMatch(/\[RECOVERED\] blog recovered [\d.]+s after restart \(HTTP 200\)/);
  expect(pidOf()).not.toBe(frozen);
  expect(procState(frozen)).toBeNull();

  // The pid source is runsv's supervise/pid: status and check.process see the new process.
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json"])).stdout);
  expect(status.services[0]).toMatchObject({ state: "healthy", restarts: 1, recoveries_ok: 1 });

  // sv down: down on purpose. The pass skips it (stopped) and never starts it, as for an inactive unit.
  expect(Bun.spawnSync(["sv", "down", dir]).exitCode).toBe(0);
  await waitFor(() => readFileSync(join(dir, "supervise", "stat"), "utf8").startsWith("down"), 10_000, "down");
  const skipped = await box.tend(["watchdog"]);
  expect(skipped.stdout).not.toContain("[RESTART]");
  expect(box.stateOf("blog").verdict).toMatchObject({ word: "stopped", reason: "stopped" });
  expect(readFileSync(join(dir, "supervise", "stat"), "utf8")).toStartWith("down");
  const down = JSON.parse((await box.tend(["watchdog", "status", "--json"])).stdout);
  expect(down.services[0].state).toBe("stopped");
  expect((await box.tend(["watchdog", "status"])).code).toBe(0); // stopped on purpose needs nobody

  // `watchdog start` brings it up its backend's way (sv restart), verified.
  const started = await box.tend(["watchdog", "start", "blog"]);
  expect(started.code).toBe(0);
  expect(pidOf()).toBeGreaterThan(0);
  await box.tend(["watchdog"]);
  expect(box.stateOf("blog").verdict.word).toBe("healthy");
}, 90_000);

test("restart.runit: sv_dir defaults to $SVDIR, then $PREFIX/var/service on Termux, then /etc/service", async () => {
  const { defaultSvDir } = await import("../lib/restarts/runit.ts");
  expect(defaultSvDir({ SVDIR: "/srv/sv" })).toBe("/srv/sv");
  expect(defaultSvDir({ PREFIX: "/data/data/com.termux/files/usr", TERMUX_VERSION: "0.118.0" })).toBe(
    "/data/data/com.termux/files/usr/var/service",
  );
  expect(defaultSvDir({ PREFIX: "/usr" })).toBe("/etc/service");
  box = new Sandbox();
  box.writeConfig(`
[[service]]
name = "sshd"
[service.check]
tcp = "127.0.0.1:8022"
[service.restart]
runit = "../sshd"
`);
  const bad = await box.tend(["watchdog", "validate"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('service[0].restart.runit: "../sshd" is a service name in sv_dir');
});
