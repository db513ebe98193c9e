import { durationFlag, paintFor, runCli, type Io } from "../lib/cli.ts";
import { loadConfig } from "../lib/config/load.ts";
import { usageError } from "../lib/core/errors.ts";
import { killRunningChecks } from "../lib/os/run.ts";
import { maintain } from "../lib/watchdog/maintenance.ts";
import { runPass } from "../lib/watchdog/pass.ts";
import { renderPlan } from "../lib/core/plan.ts";
import { HIDDEN, REVEALED } from "../lib/core/redact.ts";
import { runLoop } from "../lib/watchdog/loop.ts";
import { becomeLean } from "../lib/os/lean.ts";
import { allHealthy, collectStatus, renderStatus } from "../lib/watchdog/status.ts";
import { collectStats, renderStats } from "../lib/watchdog/stats.ts";
import { buildReport, renderReport } from "../lib/watchdog/report.ts";
import { installFiles, parseScheduler, renderInstall, writeInstall } from "../lib/watchdog/install.ts";
import { homedir } from "node:os";

const USAGE = `usage: watchdog [pass] [--dry-run]          one pass over all services (what cron runs)
       watchdog run [--interval D]           passes in a loop until SIGTERM/SIGINT
       watchdog status [NAME...] [--json] [--cached]
       watchdog stats [NAME...] [--json]      probe latency percentiles, timeouts, histogram
       watchdog report [--since D] [--json]  availability, downtime, restarts, MTTR (default: 7d)
       watchdog validate | plan [--show-secrets]
       watchdog pause NAME [--for D] | resume NAME | reset NAME
       watchdog install cron|termux-boot|systemd|launchd [--write]   print (or write) the scheduler entry
options: --config PATH, --help, --version
exit: 0 ok, 1 failed/unhealthy, 2 usage or configuration error, 3 refused`;

/** Subcommands that take service names (or, install, a scheduler). */
const TAKES_NAMES = new Set(["status", "stats", "install", "pause", "resume", "reset"]);

export function main(argv: string[], io: Io): Promise<number> {
  const spec = {
    name: "watchdog",
    usage: USAGE,
    string: ["interval", "for", "since"],
    boolean: ["dry-run", "json", "cached", "write", "show-secrets"],
  };
  return runCli(spec, argv, io, async (args) => {
    const [command = "pass", ...names] = args._.map(String);
    const config = loadConfig({ path: args.config, env: io.env });
    const one = () => {
      if (names.length !== 1) throw usageError(`watchdog ${command} takes one service name\n\n${USAGE}`);
      return names[0];
    };
    if (!TAKES_NAMES.has(command) && names.length)
      throw usageError(`watchdog ${command}: unexpected ${names.join(" ")}`);
    switch (command) {
      case "pass":
        // Stopped by a signal: the check commands this pass started go with it.
        for (const [signal, code] of [
          ["SIGTERM", 143],
          ["SIGINT", 130],
        ] as const) {
          process.once(signal, () => (killRunningChecks(), process.exit(code)));
        }
        return (await runPass({ config, dryRun: args["dry-run"], echo: io.out, env: io.env }), 0);
      case "run":
        await becomeLean(io.env);
        return runLoop({
          config,
          intervalMs: durationFlag("interval", args.interval) ?? config.watchdog.intervalMs,
          echo: io.out,
          env: io.env,
        });
      case "status": {
        const report = await collectStatus(config, { names, cached: args.cached });
        io.out(
          args.json
            ? JSON.stringify(report, null, 2)
            : renderStatus(report, paintFor(io), Date.now(), io.tty ? process.stdout.columns : Infinity),
        );
        return allHealthy(report) ? 0 : 1;
      }
      case "stats": {
        const stats = collectStats(config, names);
        io.out(
          args.json ? JSON.stringify(stats, null, 2) : renderStats(stats, { paint: paintFor(io), pictures: io.tty }),
        );
        return 0;
      }
      case "report": {
        const report = buildReport(config, durationFlag("since", args.since) ?? 7 * 86_400_000);
        io.out(
          args.json ? JSON.stringify(report, null, 2) : renderReport(report, { paint: paintFor(io), pictures: io.tty }),
        );
        return 0;
      }
      case "install": {
        const scheduler = parseScheduler(one());
        const files = installFiles(scheduler, config, {
          binary: process.execPath,
          home: io.env.HOME || homedir(),
          uid: process.getuid?.() ?? 0,
        });
        if (!args.write) return (io.out(renderInstall(scheduler, files)), 0);
        for (const line of await writeInstall(scheduler, files)) io.out(line);
        return 0;
      }
      case "validate":
        return (io.out(`${config.path}: ok (${config.services.length} services)`), 0);
      case "plan":
        return (io.out(renderPlan(config, args["show-secrets"] ? REVEALED : HIDDEN)), 0);
      case "pause":
      case "resume":
      case "reset": {
        const action =
          command === "pause" ? { kind: command, forMs: durationFlag("for", args.for) } : { kind: command };
        return (io.out(`${one()}: ${await maintain(config, one(), action)}`), 0);
      }
      default:
        throw usageError(`unknown subcommand ${JSON.stringify(command)}\n\n${USAGE}`);
    }
  });
}
