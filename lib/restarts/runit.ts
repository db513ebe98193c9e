import { readBounded, readRegularFile } from "../os/files.ts";
import { isTermux } from "../core/platform.ts";
import { isAbsolute, join } from "node:path";
import { show } from "../config/reader.ts";
import type { Env, ServiceConfig } from "../config/types.ts";
import { defineRestart } from "./kind.ts";
import { runAction } from "./run-action.ts";

type RunitRestart = {
  kind: "runit";
  service: string;
  /** The service's directory: SV_DIR/SERVICE. */
  dir: string;
};

/** sv's own default: $SVDIR, then termux-services' $PREFIX/var/service on Termux, then /etc/service. */
export function defaultSvDir(env: Env): string {
  if (env.SVDIR) return env.SVDIR;
  if (env.PREFIX && isTermux(env)) return join(env.PREFIX, "var", "service");
  return join("/", "etc", "service");
}

/**
 * runsv keeps its state in SERVICE/supervise/: `stat` says run/down/finish, byte 17 of `status`
 * what is wanted ('u' up, 'd' down). Down and wanted down (`sv down`, or a `down` file at start):
 * stopped on purpose. Down and wanted up is a crash runsv is already restarting.
 */
function downOnPurpose(dir: string): string | null {
  try {
    const stat = readRegularFile(join(dir, "supervise", "stat"), 64);
    const status = readBounded(join(dir, "supervise", "status"), 64).bytes;
    if (stat.startsWith("down") && status.length >= 18 && status[17] === "d".charCodeAt(0))
      return `runit service ${dir} is down on purpose (sv down or a down file)`;
  } catch {} // not supervised (yet): the probe and the restart say so
  return null;
}

/** `sv restart SV_DIR/SERVICE` (runit, s6's sv, termux-services); a service down on purpose is never started. */
export const runit = defineRestart<RunitRestart>({
  kind: "runit",
  keys: ["runit", "sv_dir"],
  read(table, { env }) {
    const service = table.string("runit");
    const svDir = table.string("sv_dir") ?? defaultSvDir(env);
    if (service !== undefined && (service === "" || service.includes("/") || service.startsWith(".")))
      table.fail("runit", `${show(service)} is a service name in sv_dir (no / and not starting with .)`);
    if (!isAbsolute(svDir)) table.fail("sv_dir", `${show(svDir)} is not an absolute path`);
    return service && !service.includes("/") && !service.startsWith(".") && isAbsolute(svDir)
      ? { kind: "runit", service, dir: join(svDir, service) }
      : undefined;
  },
  restart: (service: ServiceConfig, action) =>
    runAction(["sv", "restart", action.dir], `sv restart ${action.dir}`, service),
  stop: (service: ServiceConfig, action) => runAction(["sv", "down", action.dir], `sv down ${action.dir}`, service),
  stoppedOnPurpose: (action) => downOnPurpose(action.dir),
  // runsv restarts a process that exits (as systemd's Restart=): tend leaves a crash to it, judges hangs.
  pidSource: (action) => ({ runit: action.dir }),
  sourceKey: "runit",
  output: (action) => ({ file: join(action.dir, "log", "main", "current") }),
  tools: ["sv"],
  doctor: {
    name: "sv (runit)",
    affects: "restart.runit (termux-services: sshd, crond, ...)",
    async check(probe) {
      const sv = await probe("sv", "-V");
      // sv -V prints its usage with the version and exits 100.
      return sv.code === 127 || sv.code === -1
        ? { status: "missing", detail: "no sv on PATH (apt-get install runit; Termux: pkg install termux-services)" }
        : { status: "ok", detail: sv.said || "sv found" };
    },
  },
  describe: (action) => `sv restart ${action.dir}`,
  plan: (action) => ({
    "restart.runit": action.service,
    "restart.sv_dir": action.dir.slice(0, -action.service.length - 1),
  }),
});
