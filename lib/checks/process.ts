import { show } from "../config/reader.ts";
import { isStopped, isZombie } from "../os/proc.ts";
import { defineCheck, stopwatch } from "./kind.ts";

type ProcessCheck = {
  kind: "process";
  timeoutMs: number;
};

/** The service's main PID exists and is neither a zombie nor stopped (state T). */
export const processCheck = defineCheck<ProcessCheck>({
  kind: "process",
  keys: ["process", "timeout"],
  read(table, { timeoutMs, hasPidSource }) {
    const value = table.raw("process");
    if (value !== true) return void table.fail("process", `${show(value)}: only process = true is allowed`);
    if (!hasPidSource) {
      return void table.fail("process", "needs a PID source on the service: pidfile, tmux, unit or launchd");
    }
    return { kind: "process", timeoutMs };
  },
  async probe(_check, context) {
    const finish = stopwatch();
    const info = context.process ?? null;
    if (!info && context.hiddenProcess) return finish(true, `${context.hiddenProcess}: alive`);
    if (!info) return finish(false, "no process");
    if (isZombie(info)) return finish(false, `pid ${info.pid} is a zombie (${info.state})`);
    if (isStopped(info)) return finish(false, `pid ${info.pid} is stopped (${info.state})`);
    return finish(true, `pid ${info.pid} is running (${info.state})`);
  },
  describe: (_check, service) => `process ${service.pidfile ?? service.tmux ?? service.unit ?? service.launchd}`,
  plan: () => ({ "check.process": true }),
});
