import { launchdDomain } from "../os/launchd.ts";
import { defineRestart } from "./kind.ts";
import { runAction } from "./run-action.ts";

export type LaunchdRestart = {
  kind: "launchd";
  label: string;
};

const kickstart = (action: LaunchdRestart) => `launchctl kickstart -k ${launchdDomain()}/${action.label}`;

/** `launchctl kickstart -k DOMAIN/LABEL`: system/ as root, gui/UID for a user's agents. */
export const launchd = defineRestart<LaunchdRestart>({
  kind: "launchd",
  keys: ["launchd"],
  read(table) {
    const label = table.string("launchd");
    return label ? { kind: "launchd", label } : undefined;
  },
  restart: (service, action) =>
    runAction(["launchctl", "kickstart", "-k", `${launchdDomain()}/${action.label}`], kickstart(action), service),
  describe: kickstart,
  plan: (action) => ({ "restart.launchd": action.label }),
});
