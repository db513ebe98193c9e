import { humanDuration } from "../core/duration.ts";
import { runCommand, saidBy } from "../os/run.ts";
import { defineCheck, stopwatch } from "./kind.ts";

type CommandCheck = {
  kind: "command";
  argv: string[];
  timeoutMs: number;
};

/** Exit 0 within the timeout is healthy (no shell; the whole process group is killed on timeout). */
export const command = defineCheck<CommandCheck>({
  kind: "command",
  keys: ["command", "timeout"],
  read(table, { timeoutMs }) {
    const argv = table.argv("command");
    return argv && { kind: "command", argv, timeoutMs };
  },
  async probe(check) {
    const finish = stopwatch();
    const result = await runCommand(check.argv, { timeoutMs: check.timeoutMs, check: true });
    if (result.error) return finish(false, `cannot run ${check.argv[0]}: ${result.error}`);
    if (result.timedOut) {
      return finish(false, `command did not finish within ${humanDuration(check.timeoutMs)}`, { timedOut: true });
    }
    if (result.exitCode === 0) return finish(true, "exit 0");
    const said = saidBy(result);
    const how = result.signal ? `killed by ${result.signal}` : `exit ${result.exitCode}`;
    return finish(false, `${how}${said ? `: ${said}` : ""}`);
  },
  programs: (check) => [check.argv[0]],
  describe: (check) => `command ${check.argv[0]}, timeout ${humanDuration(check.timeoutMs)}`,
  plan: (check, shown) => ({ "check.command": shown.argv(check.argv) }),
});
