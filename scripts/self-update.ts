import { statSync } from "node:fs";
import { resolve } from "node:path";
import { runCli, type Io } from "../lib/cli.ts";
import { findConfig, loadConfig } from "../lib/config/load.ts";
import { usageError } from "../lib/core/errors.ts";
import { localStamp } from "../lib/core/time.ts";
import { RELEASE_KEY, VERSION } from "../lib/io.ts";
import { updateFromChannel } from "../lib/tools/channel.ts";
import { applyConfig, listBackups, resolveTarget, rollback, updateBinary } from "../lib/tools/update.ts";

const USAGE = `usage: self-update SOURCE [--sha256 HEX] [--target PATH] [--yes] [--keep N]   SOURCE: a path or URL
       self-update --channel URL-or-DIR [--allow-downgrade] [--target PATH] [--yes]
       self-update --apply-config NEW.toml [--yes]
       self-update --rollback [--target PATH] [--yes]
       self-update --list [--target PATH]
The new binary must prove it is tend (--version, a plan), validate the live config and complete a
dry-run pass (an http:// SOURCE needs --sha256: exit 3 without). The version change and a diff of
\`watchdog plan\` are shown; once confirmed the current one is backed up (TARGET.bak-YYYYMMDD-HHMMSS,
--keep N newest, 3 by default) and the swap is one rename; if the installed binary does not run,
the backup is restored. Without --yes and without a terminal: the preview only, exit 2.
--channel: the channel's release.json must be signed by a key of [self_update] keys (or the one built
into a release binary); an unsigned or unknown one, a downgrade or no binary for this host: exit 3.`;

export function main(argv: string[], io: Io, ask: () => Promise<string> = readLine): Promise<number> {
  const spec = {
    name: "self-update",
    usage: USAGE,
    string: ["sha256", "target", "apply-config", "keep", "channel"],
    boolean: ["yes", "rollback", "list", "allow-downgrade"],
  };
  return runCli(spec, argv, io, async (args) => {
    // A symlinked target (~/bin/tend -> ~/opt/tend-1.2): the file it names is replaced, the link kept.
    const target = resolveTarget(resolve(args.target ?? process.execPath));
    const modes = [args._.length > 0, Boolean(args["apply-config"]), args.rollback, args.list, args.channel];
    if (modes.filter(Boolean).length !== 1 || args._.length > 1)
      throw usageError(`give one of SOURCE, --channel, --apply-config, --rollback, --list\n\n${USAGE}`);
    if (args["allow-downgrade"] && !args.channel) throw usageError("--allow-downgrade goes with --channel");
    const keep = args.keep === undefined ? undefined : Number(args.keep);
    if (keep !== undefined && (!Number.isInteger(keep) || keep < 1))
      throw usageError(`--keep: ${JSON.stringify(args.keep)} is not a count >= 1`);
    const confirm = async () => {
      if (args.yes) return "yes" as const;
      if (!process.stdin.isTTY) return "preview" as const; // the preview is shown; nothing is written
      io.out("install? [y/N]");
      return /^y(es)?$/i.test((await ask()).trim()) ? ("yes" as const) : ("no" as const);
    };
    const updateIo = { say: io.out, confirm, keep };
    if (args.list) {
      const config = (() => {
        try {
          return findConfig({ path: args.config, env: io.env });
        } catch {
          return null;
        }
      })();
      for (const path of [...listBackups(target), ...(config ? listBackups(resolve(config)) : [])]) {
        const info = statSync(path);
        io.out(`${localStamp(info.mtime)}  ${String(info.size).padStart(10)}  ${path}`);
      }
      return 0;
    }
    if (args.rollback) return (await rollback(target, updateIo), 0);
    const config = resolve(findConfig({ path: args.config, env: io.env }));
    if (args["apply-config"])
      return (
        await applyConfig({ config, next: resolve(args["apply-config"]), binary: process.execPath }, updateIo),
        0
      );
    if (args.channel) {
      const keys = [
        ...loadConfig({ path: config, env: io.env }).selfUpdate.keys,
        ...(RELEASE_KEY ? [RELEASE_KEY] : []),
      ];
      const channel = /^https?:\/\//i.test(args.channel) ? args.channel : resolve(args.channel);
      const downgrade = Boolean(args["allow-downgrade"]);
      await updateFromChannel({ channel, target, config, keys, current: VERSION, allowDowngrade: downgrade }, updateIo);
      return 0;
    }
    await updateBinary({ source: String(args._[0]), target, sha256: args.sha256 ?? null, config }, updateIo);
    return 0;
  });
}

async function readLine(): Promise<string> {
  for await (const line of console) return line;
  return "";
}
