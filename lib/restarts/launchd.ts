import { launchdDomain } from "../os/launchd.ts";
import { managerRestart } from "./run-action.ts";

/** `launchctl kickstart -k DOMAIN/LABEL`: system/ as root, gui/UID for a user's agents. */
export const launchd = managerRestart("launchd", "label", (label) => [
  "launchctl",
  "kickstart",
  "-k",
  `${launchdDomain()}/${label}`,
]);
