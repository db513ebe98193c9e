import type { ServiceConfig } from "../config/types.ts";
import { runCommand } from "../os/run.ts";
import type { DoctorRow, RestartContext } from "./kind.ts";
import { managerRestart, runAction } from "./run-action.ts";

const doctor: DoctorRow = {
  name: "systemctl",
  affects: "restart.systemd, unit pid sources, NRestarts tracking, install systemd (--user needs the user bus)",
  async check(probe) {
    const systemctl = await probe("systemctl", "show", "-p", "Version", "--value");
    if (systemctl.code !== 0)
      return { status: "missing", detail: systemctl.code === 127 ? "not found" : systemctl.said };
    const system = `systemd ${systemctl.said}`;
    // Root restarts system units (restart.systemd) and installs a system timer: no user bus is needed (#64).
    if (process.getuid?.() === 0) return { status: "ok", detail: `${system} (system units, as root)` };
    const userBus = await probe("systemctl", "--user", "show", "-p", "Version", "--value");
    return userBus.code === 0
      ? { status: "ok", detail: system }
      : { status: "limited", detail: `${system}; no user bus (${userBus.said})` };
  },
};

/** `systemctl restart UNIT`; the pass leaves an inactive unit alone and only reports a failed one. */
const restartUnit = managerRestart("systemd", "unit", (unit) => ["systemctl", "restart", "--", unit]);

export const systemd = {
  ...restartUnit,
  // A failed unit (a crash with Restart=no) is reset first: its failed state and start counter must not
  // hold the restart systemd itself will never make. (One systemd gave up on is never restarted: decide.)
  async restart(service: ServiceConfig, action: { kind: "systemd"; unit: string }, context: RestartContext) {
    await runCommand(["systemctl", "reset-failed", "--", action.unit], { timeoutMs: 10_000 });
    return restartUnit.restart(service, action, context);
  },
  // The unit whose ActiveState (inactive, failed) and NRestarts a pass reads; its journal is the output.
  pidSource: (action: { unit: string }) => ({ unit: action.unit }),
  sourceKey: "unit" as const,
  output: (action: { unit: string }) => ({ unit: action.unit }),
  tools: ["systemctl", "journalctl"],
  doctor,
  stop: (service: ServiceConfig, action: { unit: string }) =>
    runAction(["systemctl", "stop", "--", action.unit], `systemctl stop ${action.unit}`, service),
};
