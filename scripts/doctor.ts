import { hostname } from "node:os";
import { runCli, type Io } from "../lib/cli.ts";
import { loadConfig } from "../lib/config/load.ts";
import type { Config } from "../lib/config/types.ts";
import { errorMessage } from "../lib/core/errors.ts";
import { sendDirect } from "../lib/notify/spool.ts";
import { diagnose, healthy, renderDoctor } from "../lib/tools/doctor.ts";

const USAGE = `usage: tend doctor [--json] [--send-test]
What this host offers tend, one row per capability: ok, missing or limited, and what it affects.
--send-test delivers one test notification to the configured target.
exit: 0 when everything the configuration uses works, 1 otherwise`;

export function main(argv: string[], io: Io): Promise<number> {
  const spec = { name: "doctor", usage: USAGE, boolean: ["json", "send-test"] };
  return runCli(spec, argv, io, async (args) => {
    let config: Config | null = null;
    let configProblem: string | null = null;
    try {
      config = loadConfig({ path: args.config, env: io.env });
    } catch (error) {
      configProblem = errorMessage(error).split("\n").join("; ");
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
