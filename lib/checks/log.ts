import { statSync } from "node:fs";
import { formatDuration, humanDuration } from "../core/duration.ts";
import { inWords } from "../os/files.ts";
import { defineCheck, stopwatch } from "./kind.ts";

type LogCheck = {
  kind: "log";
  path: string;
  freshMs: number;
  timeoutMs: number;
};

/** The file was modified within `fresh`: a service that keeps writing its log is doing its job. */
export const log = defineCheck<LogCheck>({
  kind: "log",
  keys: ["log", "fresh", "timeout"],
  read(table, { timeoutMs, inState }) {
    const path = table.string("log");
    const freshMs = table.duration("fresh");
    if (freshMs === undefined && !table.has("fresh")) {
      table.fail("fresh", "is required with check.log (how recent the file must be)");
    }
    return path && freshMs !== undefined ? { kind: "log", path: inState(path), freshMs, timeoutMs } : undefined;
  },
  async probe(check, context) {
    const finish = stopwatch();
    const now = (context.now ?? Date.now)();
    let modified: number;
    try {
      modified = statSync(check.path).mtimeMs;
    } catch (error) {
      return finish(false, `${check.path}: ${inWords(error)}`); // in words: "no such file", not ENOENT
    }
    const age = Math.max(0, now - modified);
    // File times come from the kernel's coarse clock, a tick behind: 20 ms of slack.
    if (context.since !== undefined && modified < context.since - 20) {
      return finish(false, `log not written since the restart (last written ${humanDuration(age)} ago)`);
    }
    if (age > check.freshMs) {
      return finish(false, `log not written for ${humanDuration(age)} (fresh: ${humanDuration(check.freshMs)})`);
    }
    return finish(true, `log written ${humanDuration(age)} ago`);
  },
  describe: (check) => `log ${check.path}, fresh ${humanDuration(check.freshMs)}`,
  plan: (check) => ({ "check.log": check.path, "check.fresh": formatDuration(check.freshMs) }),
});
