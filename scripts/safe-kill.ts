import { durationFlag, runCli, type Io } from "../lib/cli.ts";
import { loadConfig } from "../lib/config/load.ts";
import type { Config } from "../lib/config/types.ts";
import { isTendError, usageError } from "../lib/core/errors.ts";
import { parseSignal, safeKill } from "../lib/tools/kill.ts";
import { resolveTarget } from "../lib/tools/target.ts";

const USAGE = `usage: safe-kill [-s SIGNAL] [--escalate D] [--dry-run] TARGET
TARGET: a service name from the config, a systemd unit (NAME.service), pidfile:PATH, tmux:SESSION:WINDOW
SIGNAL: TERM (default), KILL, INT, HUP, STOP, CONT, USR1, USR2 or a number
  --escalate 2s   after the signal, wait up to 2s for exit, then SIGKILL
  --dry-run       print what would be signalled
Never by pattern; refuses (exit 3) PID 0 and 1, itself and its ancestors.
Rehearse a hang: safe-kill -s STOP NAME, watch the watchdog act, safe-kill -s CONT NAME.
exit: 0 signalled, 1 no running process, 2 usage, 3 refused`;

export function main(argv: string[], io: Io): Promise<number> {
  const spec = {
    name: "safe-kill",
    usage: USAGE,
    string: ["signal", "escalate"],
    boolean: ["dry-run"],
    alias: { s: "signal" },
  };
  return runCli(spec, argv, io, async (args) => {
    if (args._.length !== 1) throw usageError(`expected one TARGET\n\n${USAGE}`);
    const target = String(args._[0]);
    const signal = parseSignal(args.signal ?? "TERM");
    const escalateMs = durationFlag("escalate", args.escalate);
    // A config is needed for service names; for pidfile:/tmux: targets it only adds recorded identities.
    const byPath = target.startsWith("pidfile:") || target.startsWith("tmux:");
    let config: Config | null = null;
    try {
      config = loadConfig({ path: args.config, env: io.env });
    } catch (error) {
      if (!byPath && !isTendError(error, "no-config")) throw error;
    }
    const resolved = await resolveTarget(target, config);
    for (const line of await safeKill(resolved, { signal, escalateMs, dryRun: args["dry-run"] })) io.out(line);
    return 0;
  });
}
