import { hostname } from "node:os";
import { runCli, type Io } from "../lib/cli.ts";
import { loadConfig } from "../lib/config/load.ts";
import type { Config } from "../lib/config/types.ts";
import { errorMessage, usageError } from "../lib/core/errors.ts";
import { stateReader } from "../lib/state/service-state.ts";
import { statsOf } from "../lib/views/stats.ts";
import { sendDirect } from "../lib/notify/spool.ts";
import { diagnose, healthy, renderDoctor } from "../lib/tools/doctor.ts";

const USAGE = `usage: tend doctor [--json] [--send-test]
       tend doctor --audit [--json] [FILE...]
What this host offers tend, one row per capability: ok, missing or limited, and what it affects.
--send-test delivers one test notification to the configured target.
--audit: the traps in the watched services' supervisors (systemctl cat, launchd plists), the crontab
and the scripts it runs, and each FILE (a unit, a plist, a crontab, a script): read only.
exit: 0 when everything the configuration uses works, 1 otherwise; --audit: 1 when a finding is high`;

export function main(argv: string[], io: Io): Promise<number> {
  const spec = { name: "doctor", usage: USAGE, boolean: ["json", "send-test", "audit"] };
  return runCli(spec, argv, io, async (args) => {
    if (args._.length && !args.audit) throw usageError(`unexpected ${args._.join(" ")} (files are for --audit)`);
    if (args.audit && args["send-test"]) throw usageError("--send-test is not for --audit");
    let config: Config | null = null;
    let configProblem: string | null = null;
    try {
      config = loadConfig({ path: args.config, env: io.env });
    } catch (error) {
      configProblem = errorMessage(error).split("\n").join("; ");
    }
    if (args.audit) {
      const { auditHost, hasHigh, renderAudit } = await import("../lib/tools/audit.ts");
      const report = await auditHost(config, args._.map(String), { p99ForUrl: config ? p99Of(config) : undefined });
      io.out(args.json ? JSON.stringify(report, null, 2) : renderAudit(report));
      return hasHigh(report) ? 1 : 0;
    }
    const { url, format, timeoutMs, retries } = config?.notify ?? {};
    const channel = url && format ? { url, format, timeoutMs: timeoutMs!, retries: retries! } : null;
    const test = { message: `tend doctor: a test notification from ${hostname()}`, title: "tend doctor" };
    const message = {
      ...test,
      priority: null,
      tags: ["tend"],
      event: null,
      service: null,
      time: new Date().toISOString(),
    };
    const sendTest = args["send-test"] && channel ? () => sendDirect(message, channel) : undefined;
    const rows = await diagnose({ config, configProblem, env: io.env, sendTest });
    io.out(args.json ? JSON.stringify({ ok: healthy(rows), capabilities: rows }, null, 2) : renderDoctor(rows));
    return healthy(rows) ? 0 : 1;
  });
}

/** The p99 latency tend measured for an http check's URL (its configured services' records). */
function p99Of(config: Config) {
  const read = stateReader(config.watchdog.stateDir);
  return (url: string) => {
    const service = config.services.find((one) => "url" in one.check && one.check.url === url);
    return service ? statsOf(service, read(service.name)).p99_ms : null;
  };
}
