import { redactArgv, shortArgv } from "../core/redact.ts";
import { defineRestart } from "./kind.ts";
import { runAction } from "./run-action.ts";

type CommandRestart = {
  kind: "command";
  argv: string[];
};

/** Run the argv (no shell); exit 0 means the restart was issued. */
export const command = defineRestart<CommandRestart>({
  kind: "command",
  keys: ["command"],
  read(table) {
    const argv = table.argv("command");
    return argv && { kind: "command", argv };
  },
  restart: (service, action) =>
    runAction(
      action.argv,
      `command ${shortArgv(action.argv)}`,
      service,
      `command ${redactArgv(action.argv).join(" ")}`,
    ),
  describe: (action) => `command ${shortArgv(action.argv)}`,
  // The argv's own program is the operator's: doctor resolves it on cron's PATH.
  tools: [],
  programs: (action) => [action.argv[0]],
  plan: (action, shown) => ({ "restart.command": shown.argv(action.argv) }),
});
