import { show } from "../config/reader.ts";
import { respawnPane, TMUX_TARGET } from "../os/tmux.ts";
import { defineRestart } from "./kind.ts";
import { stopCurrent } from "./run-action.ts";

export type TmuxRestart = {
  kind: "tmux";
  target: string;
  run: string;
};

/** `tmux respawn-pane -k -t TARGET RUN`; creates the session or window when missing. */
export const tmux = defineRestart<TmuxRestart>({
  kind: "tmux",
  keys: ["tmux", "run"],
  read(table) {
    const target = table.string("tmux");
    const run = table.string("run");
    if (target !== undefined && !TMUX_TARGET.test(target)) {
      table.fail("tmux", `${show(target)} is not "session:window" or "session:window.pane"`);
    }
    if (run === undefined && !table.has("run"))
      table.fail("run", "is required with restart.tmux (the pane's command line)");
    return target && run && TMUX_TARGET.test(target) ? { kind: "tmux", target, run } : undefined;
  },
  async restart(_service, action) {
    try {
      return await respawnPane(action.target, action.run);
    } catch (error) {
      return { issued: false, detail: `tmux respawn-pane ${action.target}: ${(error as Error).message}` };
    }
  },
  // The pane's process; `watchdog start` respawns the pane (or recreates its window).
  stop: (service, _action, context) => stopCurrent(service, context),
  describe: (action) => `tmux respawn-pane ${action.target}`,
  plan: (action, shown) => ({
    "restart.tmux": action.target,
    "restart.run": shown.argv(action.run.split(" ")).join(" "),
  }),
});
