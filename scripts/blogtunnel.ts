import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { durationFlag, runCli, type Io } from "../lib/cli.ts";
import { isHttpUrl } from "../lib/core/redact.ts";
import { usageError } from "../lib/core/errors.ts";
import { Logger } from "../lib/state/logger.ts";
import { TMUX_SOCKET_NAME, TMUX_TARGET } from "../lib/os/tmux.ts";
import { checkTunnel, tunnelDependencies, watchTunnel } from "../lib/tools/tunnel.ts";
import { findConfig, loadConfig } from "../lib/config/load.ts";
import { SERVICE_NAME } from "../lib/config/service-table.ts";
import type { Config } from "../lib/config/types.ts";
import { statePaths } from "../lib/state/dir.ts";

/** The configuration when the usual lookup finds one (then blogtunnel is part of the watch), else null. */
function configIfAny(path: string | undefined, io: Io): Config | null {
  let found: string;
  try {
    found = findConfig({ path, env: io.env });
  } catch {
    return null;
  }
  return path || existsSync(found) ? loadConfig({ path, env: io.env }) : null;
}

const USAGE = `usage: blogtunnel [--url U] [--timeout 20s] [--strikes 3] [--counter FILE]
                  [--fail-codes 502,503,504,530,000] [--pane TARGET --command CMD [--socket S]]
                  [--name blogtunnel] [--requires-dns NAME] [--depends-on NAME]
The public-URL tunnel check for crontab: a status in the fail codes (000 = no answer) is a strike,
counted in a plain-integer file (default ~/.blogtunnel-fail-count); any other answer writes 0.
At the Nth consecutive strike the tmux pane is respawned with CMD and the counter reset
(--socket: the pane's tmux server, a name as tmux -L takes, or a path as -S).
With a configuration (the usual lookup) it is part of the watch: the watchdog's rules (cooldown,
backoff, max_restarts), its lines in the watchdog log under --name, its restart notified, shown
by status and report; --depends-on: WAIT (no strike) while that configured service is failing.
URL: --url or $BLOG_URL.   exit: 0 healthy, 1 failing (struck or restarted), 2 usage`;

export function main(argv: string[], io: Io): Promise<number> {
  const spec = {
    name: "blogtunnel",
    usage: USAGE,
    string: ["url", "timeout", "strikes", "counter", "fail-codes", "pane", "command", "socket", "name"].concat([
      "requires-dns",
      "depends-on",
    ]),
  };
  return runCli(spec, argv, io, async (args) => {
    if (args._.length) throw usageError(`unexpected ${args._.join(" ")}\n\n${USAGE}`);
    const url = args.url ?? io.env.BLOG_URL;
    if (!url) throw usageError("no URL: pass --url or set BLOG_URL");
    if (!isHttpUrl(url)) throw usageError(`--url: not an http:// or https:// URL`);
    const timeoutMs = durationFlag("timeout", args.timeout) ?? 20_000;
    const strikes = Number(args.strikes ?? 3);
    if (!Number.isInteger(strikes) || strikes < 1)
      throw usageError(`--strikes: ${JSON.stringify(args.strikes)} is not an integer >= 1`);
    const failCodes = String(args["fail-codes"] ?? "502,503,504,530,000")
      .split(",")
      .map((code) => code.trim());
    const badCode = failCodes.find((code) => !/^(000|[1-5]\d\d)$/.test(code));
    if (badCode !== undefined)
      throw usageError(`--fail-codes: ${JSON.stringify(badCode)} is not an HTTP status (100-599) or 000`);
    if (Boolean(args.pane) !== Boolean(args.command))
      throw usageError("--pane and --command go together (the pane to respawn and its command line)");
    if (args.pane && !TMUX_TARGET.test(args.pane))
      throw usageError(`--pane: ${JSON.stringify(args.pane)} is not "session:window" or "session:window.pane"`);
    const counter = args.counter ?? join(io.env.HOME || homedir(), ".blogtunnel-fail-count");
    if (args.socket !== undefined && !args.pane) throw usageError("--socket names the tmux server of --pane");
    if (args.socket !== undefined && !args.socket.startsWith("/") && !TMUX_SOCKET_NAME.test(args.socket))
      throw usageError(`--socket: ${JSON.stringify(args.socket)} is neither a socket name nor an absolute path`);
    const pane = args.pane ? { target: args.pane, command: args.command, socket: args.socket ?? null } : null;
    const config = configIfAny(args.config, io);
    if (!config && args["depends-on"] !== undefined)
      throw usageError("--depends-on names a configured service: it needs a configuration (--config)");
    if (!config) {
      const result = await checkTunnel({ url, timeoutMs, strikes, counter, failCodes, pane }, new Logger(null, io.out));
      return result.healthy ? 0 : 1;
    }
    const name = args.name ?? "blogtunnel";
    if (!SERVICE_NAME.test(name))
      throw usageError(`--name: ${JSON.stringify(name)} is not a service name (1-64 of A-Z a-z 0-9 _ . @ -)`);
    if (config.services.some((service) => service.name.toLowerCase() === name.toLowerCase())) {
      throw usageError(`--name: a configured service is already named ${name}: give the tunnel its own (--name)`);
    }
    const dependsOn = tunnelDependencies(args["depends-on"], config);
    const httpCodes = failCodes.filter((code) => code !== "000").map(Number);
    const requiresDns = args["requires-dns"] ?? null;
    const record = { url, timeoutMs, strikes, failCodes: httpCodes, pane, requiresDns, dependsOn };
    // Its cron line may append to cron.log too: then each line is written once, to the log.
    const stdoutIsLog = (await io.stdoutIs?.(statePaths(config.watchdog.stateDir).cronLog)) ?? false;
    return (await watchTunnel(config, name, record, counter, io.out, { stdoutIsLog })).healthy ? 0 : 1;
  });
}
