import { launchdDomain } from "../os/launchd.ts";
import type { ServiceConfig } from "../config/types.ts";
import type { DoctorRow } from "./kind.ts";
import { managerRestart, runAction } from "./run-action.ts";

const doctor: DoctorRow = {
  name: "launchctl",
  affects: "restart.launchd, launchd pid sources, install launchd",
  async check(probe) {
    if (process.platform !== "darwin") return { status: "missing", detail: "not macOS" };
    const launchctl = await probe("launchctl", "version");
    return launchctl.code === 0
      ? { status: "ok", detail: launchctl.said }
      : { status: "missing", detail: launchctl.said || "not found" };
  },
};

/** `launchctl kickstart -k DOMAIN/LABEL`: system/ as root, gui/UID for a user's agents. */
export const launchd = {
  ...managerRestart("launchd", "label", (label) => ["launchctl", "kickstart", "-k", `${launchdDomain()}/${label}`]),
  sourceKey: "launchd" as const,
  // The job's StandardOutPath.
  output: (action: { label: string }) => ({ launchd: action.label }),
  tools: ["launchctl"],
  doctor,
  // SIGTERM to the job, which stays loaded so `watchdog start` can kickstart it (KeepAlive may restart it:
  // `launchctl bootout` unloads a job for good).
  stop: (service: ServiceConfig, action: { label: string }) =>
    runAction(
      ["launchctl", "kill", "SIGTERM", `${launchdDomain()}/${action.label}`],
      `launchctl kill SIGTERM ${launchdDomain()}/${action.label}`,
      service,
    ),
};
