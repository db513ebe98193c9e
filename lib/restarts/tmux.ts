import { show } from "../config/reader.ts";
import { respawnPane, TMUX_SOCKET_NAME, TMUX_TARGET } from "../os/tmux.ts";
import { defineRestart } from "./kind.ts";
import { stopCurrent } from "./run-action.ts";

export type TmuxRestart = {
  kind: "tmux";
  target: string;
  run: string;
  /** The tmux server: null = tmux's default (TMUX_TMPDIR as tmux resolves it), a name (-L), a path (-S). */
  socket: string | null;
  /** Where the pane's output is piped (pipe-pane): STATE_DIR/services/NAME.out. */
  output: string;
};

const SHELL_WORDS = new Set(["cd", "exec", "export", "set", "source", ".", "eval", "test", "[", "true", "false", ":"]);
const SHELL_WORDS_ALSO = new Set(["if", "then", "else", "fi", "for", "while", "do", "done", "echo", "printf", "read"]);

/** The programs a shell command line (tmux `run`) starts: each segment's first word, past builtins and VAR=. */
function shellPrograms(line: string): string[] {
  return line.split(/&&|\|\||[;|]/).flatMap((segment) => {
    const words = segment
      .trim()
      .split(/\s+/)
      .filter((word) => !/^\w+=/.test(word));
    while (words[0] === "exec" || words[0] === "nohup") words.shift();
    const first = words[0];
    return first && !SHELL_WORDS.has(first) && !SHELL_WORDS_ALSO.has(first) && !/[$`'"(){}]/.test(first) ? [first] : [];
  });
}

/** `tmux respawn-pane -k -t TARGET RUN`; creates the session or window when missing. */
export const tmux = defineRestart<TmuxRestart>({
  kind: "tmux",
  keys: ["tmux", "run", "socket"],
  read(table, { paths, name }) {
    const target = table.string("tmux");
    const run = table.string("run");
    const socket = table.string("socket") ?? null;
    if (socket !== null && !socket.startsWith("/") && !TMUX_SOCKET_NAME.test(socket)) {
      table.fail("socket", `${show(socket)} is neither a socket name (letters, digits, _ . -) nor an absolute path`);
    }
    if (target !== undefined && !TMUX_TARGET.test(target)) {
      table.fail("tmux", `${show(target)} is not "session:window" or "session:window.pane"`);
    }
    if (run === undefined && !table.has("run"))
      table.fail("run", "is required with restart.tmux (the pane's command line)");
    return target && run && TMUX_TARGET.test(target)
      ? { kind: "tmux", target, run, socket, output: paths.serviceOutput(name) }
      : undefined;
  },
  async restart(_service, action) {
    try {
      return await respawnPane(action.target, action.run, { socket: action.socket, output: action.output });
    } catch (error) {
      return { issued: false, detail: `tmux respawn-pane ${action.target}: ${(error as Error).message}` };
    }
  },
  // The pane's process; `watchdog start` respawns the pane (or recreates its window).
  stop: (service, _action, context) => stopCurrent(service, context),
  // restart.tmux alone makes the pane the pid source: a pane whose process is gone is started at once.
  pidSource: (action) => ({ tmux: action.target, socket: action.socket }),
  sourceKey: "tmux",
  // The piped output outlives the pane (why a pane that died, died); its scrollback when nothing was piped yet.
  output: (action) => ({ pane: action.target, socket: action.socket, file: action.output }),
  ownOutput: (action) => action.output,
  programs: (action) => shellPrograms(action.run),
  tools: ["tmux"],
  doctor: {
    name: "tmux",
    affects: "restart.tmux, tmux pid sources, safe-kill tmux:TARGET, watchdog logs of a pane",
    async check(probe) {
      const tmux = await probe("tmux", "-V");
      return tmux.code === 0 ? { status: "ok", detail: tmux.said } : { status: "missing", detail: "not found" };
    },
  },
  describe: (action) => `tmux respawn-pane ${action.target}`,
  plan: (action, shown) => ({
    "restart.tmux": action.target,
    "restart.run": shown.argv(action.run.split(" ")).join(" "),
    "restart.socket": action.socket ?? "(tmux's default)",
  }),
});
