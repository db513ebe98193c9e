// #61: a phone boots with its wall clock at 1970 and steps it when the network answers. A service the user
// started meanwhile has a pidfile stamped 1970; after the step, comparing that mtime with now − uptime
// called its live process "from before the host booted" and started a second copy beside it. Here the
// clock is wrong for real where it can be on this host: tend runs under libfaketime (Debian's faketime, the
// wall clock only: DONT_FAKE_MONOTONIC keeps the boot-time clock the kernel's), then under the real clock.
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { uptime } from "node:os";
import { join } from "node:path";
import { run, Sandbox, TEND, waitFor } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

test("started while the clock read 1970: after the clock is set, the same process, never a second copy", async () => {
  box = new Sandbox();
  const pidfile = join(box.dir, "api.pid");
  const restarts = join(box.dir, "restarts.log");
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\nheartbeat_url = ""\n[[service]]\nname = "api"\npidfile = "${pidfile}"\n` +
      `failures = 1\ngrace = "0s"\n[service.check]\nprocess = true\n` +
      `[service.restart]\ncommand = ["sh", "-c", "echo restarted >> ${restarts}"]\n`,
  );
  // The user's service, started while the clock read 1970 (its pidfile stamped so: the kernel stamps
  // files with the real clock, so the stamp is set as a 1970 clock would have written it).
  const api = Bun.spawn(["sleep", "600"], { stdout: "ignore", stderr: "ignore" });
  box.track(api.pid);
  writeFileSync(pidfile, `${api.pid}\n`);
  const fake = 600; // 1970-01-01 00:10:00, a few seconds after the service started there
  utimesSync(pidfile, fake, fake);
  const at1970 = await run(["faketime", `@${fake}`, TEND, "watchdog", "pass"], {
    env: box.env({ DONT_FAKE_MONOTONIC: "1" }),
    timeoutMs: 60_000,
  });
  expect({ code: at1970.code, stderr: at1970.stderr }).toEqual({ code: 0, stderr: "" });
  expect(at1970.stdout).not.toContain("[RESTART]");
  // The network set the clock: the next passes run with the real one.
  for (let pass = 0; pass < 3; pass++) {
    const after = await box.tend(["watchdog", "pass"]);
    expect({ code: after.code, stdout: after.stdout }).toEqual({ code: 0, stdout: expect.any(String) });
    expect(after.stdout).not.toContain("from before the host booted");
    expect(after.stdout).not.toContain("[RESTART]");
  }
  expect(existsSync(restarts)).toBe(false);
  const status = await box.tend(["watchdog", "status"]);
  expect(status.stdout).toMatch(/api\s+healthy/);
  // And when it really dies, it is restarted (the record is of its process, not a blanket pass).
  api.kill("SIGKILL");
  await waitFor(() => api.exitCode !== null || api.signalCode !== null, 10_000, "the service gone");
  await api.exited;
  const gone = await box.tend(["watchdog", "pass"]);
  expect(gone.stdout).toContain("[RESTART] api");
  expect(readFileSync(restarts, "utf8")).toBe("restarted\n");
}, 120_000);

// The common case on a phone: Termux:Boot's own script starts the service while the clock reads 1970, the
// network sets the clock, and crond's first pass comes after: no pass saw the pidfile before the step.
// Its stamp is 1970 plus the seconds since boot: the boot-time clock dates it; a stamp that cannot be such
// a clock's (further from the epoch than this boot is old) is still the last boot's.
test("a pidfile stamped by a clock at 1970 at boot, first seen after the clock is set: that process", async () => {
  box = new Sandbox();
  const service = (name: string) =>
    `[[service]]\nname = "${name}"\npidfile = "${join(box.dir, `${name}.pid`)}"\nfailures = 1\ngrace = "0s"\n` +
    `[service.check]\nprocess = true\n[service.restart]\ncommand = ["true"]\n`;
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\nheartbeat_url = ""\n` +
      `${service("api")}${service("old")}${service("reused")}`,
  );
  const pids: Record<string, number> = {};
  for (const name of ["api", "old", "reused"]) {
    const process = Bun.spawn(["sleep", "600"], { stdout: "ignore", stderr: "ignore" });
    box.track(process.pid);
    pids[name] = process.pid;
    writeFileSync(join(box.dir, `${name}.pid`), `${process.pid}\n`);
  }
  const stamp = (name: string, seconds: number) => utimesSync(join(box.dir, `${name}.pid`), seconds, seconds);
  // api: as a clock that read 1970-01-01 00:00:00 at this host's boot stamps it (the seconds since boot).
  stamp("api", uptime());
  // old: a 1970 stamp further from the epoch than this boot is old: not written in this boot.
  stamp("old", uptime() + 3600);
  // reused: such a clock's stamp from long before its process started (a PID reused since).
  stamp("reused", 1);
  const pass = await box.tend(["watchdog", "pass"]);
  expect({ code: pass.code, stderr: pass.stderr }).toEqual({ code: 0, stderr: "" });
  expect(pass.stdout).not.toMatch(/\[(RESTART|START|FAILED)\] api/);
  expect(pass.stdout).toContain(`pid ${pids.old} is from before the host booted`);
  expect(pass.stdout).toContain(`pid ${pids.reused} started after ${join(box.dir, "reused.pid")} was written`);
  const status = await box.tend(["watchdog", "status"]);
  expect(status.stdout).toMatch(/api\s+healthy/);
}, 120_000);
