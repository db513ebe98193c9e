import type { ServiceConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { runCommand } from "../os/run.ts";
import type { RestartResult } from "./kind.ts";

/** Run a restart's argv (command, systemctl, launchctl): exit 0 means the restart was issued. */
export async function runAction(argv: string[], what: string, service: ServiceConfig): Promise<RestartResult> {
  const result = await runCommand(argv, { timeoutMs: service.verifyTimeoutMs });
  if (result.exitCode === 0) return { issued: true, detail: what };
  const why =
    result.error ??
    (result.timedOut ? `did not finish within ${humanDuration(service.verifyTimeoutMs)}` : `exit ${result.exitCode}`);
  const said = result.stderr.trim().split("\n")[0];
  return { issued: false, detail: `${what}: ${why}${said ? `: ${said}` : ""}` };
}
