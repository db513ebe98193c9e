import { defineRestart } from "./kind.ts";
import { runAction } from "./run-action.ts";

export type SystemdRestart = {
  kind: "systemd";
  unit: string;
};

/** `systemctl restart UNIT`; the pass leaves an inactive unit alone and only reports a failed one. */
export const systemd = defineRestart<SystemdRestart>({
  kind: "systemd",
  keys: ["systemd"],
  read(table) {
    const unit = table.string("systemd");
    return unit ? { kind: "systemd", unit } : undefined;
  },
  restart: (service, action) =>
    runAction(["systemctl", "restart", "--", action.unit], `systemctl restart ${action.unit}`, service),
  describe: (action) => `systemctl restart ${action.unit}`,
  plan: (action) => ({ "restart.systemd": action.unit }),
  unit: (action) => action.unit,
});
