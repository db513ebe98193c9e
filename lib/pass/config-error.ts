import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { defaultStateDir, expandPath, findConfig } from "../config/load.ts";
import type { Env } from "../config/types.ts";
import { readRegularFile } from "../os/files.ts";
import { ensureStateDir, statePaths } from "../state/dir.ts";
import { Logger } from "../state/logger.ts";
import type { Config } from "../config/types.ts";
import { localStamp } from "../core/time.ts";
import { eventMessage, sendEvents } from "../notify/alert.ts";

/**
 * A pass (from cron) that cannot read its configuration says so in the log of the state dir it
 * would use, when it can tell which: the file's own state_dir if that much parses, else the
 * default. Never creates the state dir; never throws (the error itself is what the caller reports).
 */
export function logConfigError(path: string | undefined, env: Env, message: string): void {
  try {
    const file = findConfig({ path, env });
    const home = env.HOME || homedir();
    let stateDir = defaultStateDir(env, home);
    try {
      const setting = /^\s*state_dir\s*=\s*"([^"]+)"/m.exec(readRegularFile(file, 65_536, { follow: true }))?.[1];
      if (setting) stateDir = expandPath(setting, home, dirname(resolve(file)));
    } catch {}
    if (!existsSync(stateDir)) return;
    ensureStateDir(stateDir); // tend's own, or nothing is written
    new Logger(statePaths(stateDir).log).write("ERROR", `configuration: ${message.split("\n").join("; ")}`);
  } catch {}
}

/**
 * `watchdog run` or `serve` found its configuration file edited into an invalid one: said once (the
 * log, and a notification through the last good configuration), and it goes on with that one.
 */
export async function sayBrokenConfig(
  config: Config,
  logger: Logger,
  message: string,
  loadedAt: number,
  now: () => number,
): Promise<void> {
  const since = localStamp(new Date(loadedAt));
  const said = `${message.split("\n").join("; ")} — still watching with the configuration loaded at ${since}`;
  logger.write("ERROR", `configuration: ${said}`);
  const note = eventMessage("watchdog", { tag: "ERROR", event: "configuration", message: said }, new Date(now()));
  if (note && config.notify.format !== "alertmanager") await sendEvents(config, [note], logger, now);
}
