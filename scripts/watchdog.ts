import { givenFlags, runCli, type Io } from "../lib/cli.ts";
import { errorMessage } from "../lib/core/errors.ts";
import { oneLine } from "../lib/core/sanitize.ts";
import { defaultConfig, loadConfig } from "../lib/config/load.ts";
import { killRunningChecks } from "../lib/os/run.ts";
import { subcommand } from "../lib/subcommands.ts";
import { logConfigError } from "../lib/pass/config-error.ts";

const USAGE = `usage: watchdog [pass] [--dry-run] [--interval D]  one pass (what cron runs; D: the period it runs at)
       watchdog run [--interval D] [--serve]  passes in a loop until SIGTERM/SIGINT (--serve: and serve)
       watchdog serve [--listen ADDR:PORT]    read-only HTTP: the page /, /healthz, /api/status
       watchdog status [NAME...] [--json] [--cached] [--nagios]
       watchdog stats [NAME...] [--json]      probe latency percentiles, timeouts, histogram
       watchdog report [NAME...] [--since D] [--json]  availability, downtime, restarts, MTTR (default: 7d)
       watchdog validate | plan [--show-secrets]
       watchdog pause NAME [--for D] | resume NAME | reset NAME
       watchdog restart NAME | stop NAME | start NAME   verified; stop pauses, start resumes
       watchdog logs NAME [-n N] [-f]         the service's own output (spawn output, tmux pane, journal)
       watchdog install cron|termux-boot|systemd|launchd [--write] [--interval D] [--replace PATTERN] [--loop]
       watchdog uninstall cron|termux-boot|systemd|launchd [--write]   remove exactly what install wrote
       watchdog import SCRIPT [--out FILE]    a draft tend.toml from a hand-written watchdog script
       watchdog incident [NAME] [--last | --at T] [--markdown | --json]   one outage's timeline, second by second
options: --config PATH, --help, --version
exit: 0 ok, 1 failed/unhealthy, 2 usage or configuration error, 3 refused`;

export async function main(argv: string[], io: Io): Promise<number> {
  if (!argv.includes("--nagios")) return watchdog(argv, io);
  // A Nagios-style check reads one stdout line: whatever keeps status from running (an unknown flag,
  // a usage error) is UNKNOWN (3) on that line, never exit 2 with nothing on stdout.
  const said: string[] = [];
  let answered = false; // CRITICAL is exit 2 too: only a status that said nothing on stdout failed to run
  const out = (text: string) => ((answered = true), io.out(text));
  const code = await watchdog(argv, { ...io, out, err: (text) => said.push(text) });
  if (code !== 2 || answered) return (said.forEach(io.err), code);
  io.out(`TEND UNKNOWN - ${oneLine((said[0] ?? "usage error").split("\n\n")[0])}`);
  return 3;
}

/** A pass stopped by a signal has exited by then, whatever it was waiting for. */
const STOP_WITHIN_MS = 4500;

function watchdog(argv: string[], io: Io): Promise<number> {
  const spec = {
    name: "watchdog",
    usage: USAGE,
    string: ["interval", "for", "since", "n", "replace", "listen", "out", "at"],
    boolean: ["dry-run", "json", "cached", "write", "show-secrets", "f", "serve", "nagios", "loop", "last", "markdown"],
  };
  return runCli(spec, argv, io, async (args) => {
    const [name = "pass", ...names] = args._.map(String);
    const command = subcommand(name, names, USAGE, givenFlags(argv));
    // A draft from a script needs no configuration: there may be none yet.
    if (name === "import") return command.run({ args, names, config: defaultConfig(io.env), io });
    let config;
    try {
      config = loadConfig({ path: args.config, env: io.env });
    } catch (error) {
      // From cron, stderr may be lost: say it in the watchdog's own log too, where it can.
      if (name === "pass" || name === "run") logConfigError(args.config, io.env, (error as Error).message);
      // A Nagios-style check that cannot run is UNKNOWN (3), said on its one line.
      if (args.nagios) return (io.out(`TEND UNKNOWN - ${oneLine(errorMessage(error))}`), 3);
      throw error;
    }
    if (name !== "pass") return command.run({ args, names, config, io });
    // Stopped by a signal: the check commands it started go at once; it records what it did and
    // exits within 5 s (a restart action that hangs past that is finished by the next pass).
    const stopping = new AbortController();
    let stoppedWith: number | null = null;
    for (const [signal, code] of [
      ["SIGTERM", 143],
      ["SIGINT", 130],
    ] as const) {
      process.once(signal, () => {
        stoppedWith ??= code;
        stopping.abort(signal);
        killRunningChecks();
        setTimeout(() => process.exit(code), STOP_WITHIN_MS).unref();
      });
    }
    const code = await command.run({ args, names, config, io, stop: stopping.signal });
    return stoppedWith ?? code;
  });
}
