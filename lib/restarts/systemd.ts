import type { ServiceConfig } from "../config/types.ts";
import { managerRestart, runAction } from "./run-action.ts";

/** `systemctl restart UNIT`; the pass leaves an inactive unit alone and only reports a failed one. */
export const systemd = {
  ...managerRestart("systemd", "unit", (unit) => ["systemctl", "restart", "--", unit]),
  unit: (action: { unit: string }) => action.unit,
  stop: (service: ServiceConfig, action: { unit: string }) =>
    runAction(["systemctl", "stop", "--", action.unit], `systemctl stop ${action.unit}`, service),
};
