import { homedir } from "node:os";
import { join } from "node:path";
import { durationFlag, runCli, type Io } from "../lib/cli.ts";
import { isHttpUrl } from "../lib/core/redact.ts";
import { usageError } from "../lib/core/errors.ts";
import { Logger } from "../lib/state/logger.ts";
import { TMUX_TARGET } from "../lib/os/tmux.ts";
import { checkTunnel } from "../lib/tools/tunnel.ts";

const USAGE = `usage: blogtunnel [--url U] [--timeout 20s] [--strikes 3] [--counter FILE]
                  [--fail-codes 502,503,504,530,000] [--pane TARGET --command CMD]
The public-URL tunnel check for crontab: a status in the fail codes (000 = no answer) is a strike,
counted in a plain-integer file (default ~/.blogtunnel-fail-count); any other answer writes 0.
At the Nth consecutive strike the tmux pane is respawned with CMD and the counter reset.
URL: --url or $BLOG_URL.   exit: 0 healthy, 1 failing (struck or restarted), 2 usage`;

export function main(argv: string[], io: Io): Promise<number> {
  const spec = {
    name: "blogtunnel",
    usage: USAGE,
    string: ["url", "timeout", "strikes", "counter", "fail-codes", "pane", "command"],
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
    const pane = args.pane ? { target: args.pane, command: args.command } : null;
    const result = await checkTunnel({ url, timeoutMs, strikes, counter, failCodes, pane }, new Logger(null, io.out));
    return result.healthy ? 0 : 1;
  });
}
