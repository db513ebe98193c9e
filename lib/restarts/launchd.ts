import { launchdDomain } from "../os/launchd.ts";
import type { ServiceConfig } from "../config/types.ts";
import { managerRestart, runAction } from "./run-action.ts";

/** `launchctl kickstart -k DOMAIN/LABEL`: system/ as root, gui/UID for a user's agents. */
export const launchd = {
  ...managerRestart("launchd", "label", (label) => ["launchctl", "kickstart", "-k", `${launchdDomain()}/${label}`]),
  // SIGTERM to the job, which stays loaded so `watchdog start` can kickstart it (KeepAlive may restart it:
  // `launchctl bootout` unloads a job for good).
  stop: (service: ServiceConfig, action: { label: string }) =>
    runAction(
      ["launchctl", "kill", "SIGTERM", `${launchdDomain()}/${action.label}`],
      `launchctl kill SIGTERM ${launchdDomain()}/${action.label}`,
      service,
    ),
};
