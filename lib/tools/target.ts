import { statSync } from "node:fs";
import { resolve } from "node:path";
import { refuseUnsafe } from "../os/signal.ts";
import type { Config } from "../config/types.ts";
import { refused, TendError, usageError } from "../core/errors.ts";
import { fromPidfile, fromTmux, fromUnit, mainProcess, readPidfile, type MainProcess } from "../os/pidsource.ts";
import type { ProcInfo } from "../os/proc.ts";
import { stateReader } from "../state/service-state.ts";
import { isUnitName } from "../os/systemd.ts";
import { TMUX_TARGET } from "../os/tmux.ts";

/** A process found by identity, never by pattern. */
export interface KillTarget {
  label: string;
  source: string;
  info: ProcInfo;
}

/**
 * TARGET: a configured service name, a systemd unit, `pidfile:PATH` or `tmux:TARGET`.
 * `config` is needed for service names, and used for pidfiles to find the start time tend
 * recorded when it started the process. Throws TendError: 2 unknown target, 1 nothing running.
 */
export async function resolveTarget(target: string, config: Config | null, cwd = process.cwd()): Promise<KillTarget> {
  let label = target;
  let found: MainProcess;
  if (target.startsWith("pidfile:")) {
    const path = resolve(cwd, target.slice("pidfile:".length));
    if (path === resolve(cwd)) throw usageError("pidfile: needs a path, e.g. pidfile:/run/app.pid");
    // A configured service's pidfile, however it is named: checked against the start time tend recorded.
    const owner = config?.services.find((service) => service.pidfile && sameFile(service.pidfile, path));
    const recorded = owner ? stateReader(config!.watchdog.stateDir)(owner.name) : undefined;
    label = owner?.name ?? path;
    const named = readPidfile(path);
    if ("pid" in named) refuseUnsafe(named.pid); // 0, 1, self, ancestors: exit 3 before anything else
    found = fromPidfile(path, recorded, { strict: Boolean(owner) });
  } else if (target.startsWith("tmux:")) {
    label = target.slice("tmux:".length);
    if (!TMUX_TARGET.test(label)) throw usageError(`tmux:${label}: expected tmux:SESSION:WINDOW[.PANE]`);
    // A configured service's pane lives on that service's tmux server (its `socket`), not tmux's default.
    const owner = config?.services.find((service) => service.tmux === label);
    found = await fromTmux(label, owner?.tmuxSocket ?? null);
  } else {
    const service = config?.services.find((candidate) => candidate.name === target);
    if (service) {
      const main = await mainProcess(service, stateReader(config!.watchdog.stateDir)(service.name));
      if (!main) throw usageError(`service ${target} has no PID source (set pidfile, tmux, unit or launchd)`);
      found = main;
    } else if (isUnitName(target)) {
      found = await fromUnit(target);
    } else {
      const known = config
        ? `configured services: ${config.services.map((s) => s.name).join(", ") || "none"}`
        : "no configuration found";
      throw usageError(
        `unknown target ${JSON.stringify(target)}: not a service (${known}), ` +
          `not a unit (NAME.service), not pidfile:PATH or tmux:TARGET`,
      );
    }
  }
  if (found.hidden)
    throw refused(
      `${label}: ${found.detail}: its start time cannot be read, so its identity cannot be checked: not signalled`,
    );
  if (!found.running || !found.info) throw new TendError(`${label} has no running process (${found.detail})`, 1);
  return { label, source: found.source, info: found.info };
}

/** The same file under two names (a symlink, `..`, a bind path): same device and inode. */
function sameFile(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    const [left, right] = [statSync(a), statSync(b)];
    return left.dev === right.dev && left.ino === right.ino;
  } catch {
    return false;
  }
}
