import { statSync } from "node:fs";
import { resolve } from "node:path";
import { runCli, type Io } from "../lib/cli.ts";
import { findConfig } from "../lib/config/load.ts";
import { usageError } from "../lib/core/errors.ts";
import { localStamp } from "../lib/core/time.ts";
import { applyConfig, listBackups, rollback, updateBinary } from "../lib/tools/update.ts";

const USAGE = `usage: self-update SOURCE [--sha256 HEX] [--target PATH] [--yes]   SOURCE: a path or http(s) URL
       self-update --apply-config NEW.toml [--yes]
       self-update --rollback [--target PATH]
       self-update --list [--target PATH]
The new binary must answer --version, validate the live config and complete a dry-run pass; then
the current one is backed up (TARGET.bak-YYYYMMDD-HHMMSS, 5 kept), the version change and a diff of
\`watchdog plan\` are shown, and the swap is one rename. If the installed binary does not run, the
backup is restored. --yes confirms without asking (needed when stdin is not a terminal).`;

export function main(argv: string[], io: Io, ask: () => Promise<string> = readLine): Promise<number> {
  const spec = {
    name: "self-update",
    usage: USAGE,
    string: ["sha256", "target", "apply-config"],
    boolean: ["yes", "rollback", "list"],
  };
  return runCli(spec, argv, io, async (args) => {
    const target = resolve(args.target ?? process.execPath);
    const modes = [args._.length > 0, Boolean(args["apply-config"]), args.rollback, args.list].filter(Boolean).length;
    if (modes !== 1 || args._.length > 1)
      throw usageError(`give one of SOURCE, --apply-config, --rollback, --list\n\n${USAGE}`);
    if ((args._.length || args["apply-config"]) && !args.yes && !process.stdin.isTTY)
      throw usageError("stdin is not a terminal: pass --yes to confirm the swap");
    const confirm = async () => {
      if (args.yes) return true;
      io.out("install? [y/N]");
      return /^y(es)?$/i.test((await ask()).trim());
    };
    const updateIo = { say: io.out, confirm };
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
    if (args.rollback) return (rollback(target, updateIo), 0);
    const config = resolve(findConfig({ path: args.config, env: io.env }));
    if (args["apply-config"])
      return (
        await applyConfig({ config, next: resolve(args["apply-config"]), binary: process.execPath }, updateIo),
        0
      );
    await updateBinary({ source: String(args._[0]), target, sha256: args.sha256 ?? null, config }, updateIo);
    return 0;
  });
}

async function readLine(): Promise<string> {
  for await (const line of console) return line;
  return "";
}
