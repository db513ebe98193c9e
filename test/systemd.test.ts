// Against a REAL systemd (PID 1 of a container): safe-kill by MainPID, systemd restarts the unit.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { bootSystemd, shutdownSystemd, type Systemd } from "./systemd.ts";
import { waitFor } from "./helpers.ts";

let systemd: Systemd;
beforeAll(() => {
  systemd = bootSystemd();
}, 300_000);
afterAll(() => shutdownSystemd(), 60_000);

const UNIT = "tour.service";

test("safe-kill -s KILL UNIT kills systemd's MainPID; systemd restarts it (NRestarts 0 -> 1)", async () => {
  systemd.installUnit(UNIT, "[Service]\nExecStart=/usr/bin/sleep infinity\nRestart=on-failure\nRestartSec=200ms\n");
  systemd.ct("systemctl", "restart", UNIT);
  await waitFor(() => systemd.show(UNIT, "SubState") === "running", 10_000, "unit running");
  const before = Number(systemd.show(UNIT, "MainPID"));
  expect(systemd.show(UNIT, "NRestarts")).toBe("0");

  const dry = systemd.ct(systemd.tend, "safe-kill", "--dry-run", "-s", "KILL", UNIT);
  expect(dry.stdout).toBe(`would send SIGKILL to ${UNIT} (pid ${before}: /usr/bin/sleep infinity)\n`);
  expect(systemd.show(UNIT, "MainPID")).toBe(String(before));

  const killed = systemd.ct(systemd.tend, "safe-kill", "-s", "KILL", UNIT);
  expect(killed.stderr).toBe("");
  expect(killed.code).toBe(0);
  expect(killed.stdout).toBe(`sent SIGKILL to ${UNIT} (pid ${before}: /usr/bin/sleep infinity)\n`);
  await waitFor(() => systemd.show(UNIT, "NRestarts") === "1", 10_000, "NRestarts 1");
  await waitFor(() => systemd.show(UNIT, "SubState") === "running", 10_000, "running again");
  expect(Number(systemd.show(UNIT, "MainPID"))).not.toBe(before);

  systemd.ct("systemctl", "stop", UNIT);
  const stopped = systemd.ct(systemd.tend, "safe-kill", UNIT);
  expect(stopped.code).toBe(1);
  expect(stopped.stderr).toContain(`${UNIT} has no running process`);
}, 60_000);
