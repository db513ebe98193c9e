import { runCommand, saidBy } from "./run.ts";

/** "session:window" or "session:window.pane" */
export const TMUX_TARGET = /^[^:\s]+:[^.\s]+(\.\d+)?$/;

/** "session:window[.pane]" split into its parts. */
export function parseTarget(target: string) {
  const colon = target.indexOf(":");
  const [window, pane] = target.slice(colon + 1).split(".");
  return { session: target.slice(0, colon), window, pane: pane ?? null, numbered: /^\d+$/.test(window) };
}

/**
 * tmux matches names by prefix ("work:blog" finds a window "blogger") and display-message
 * falls back to the current pane: always address the exact session and window.
 */
export function exactWindow(target: string): string {
  const { session, window, numbered } = parseTarget(target);
  return `=${session}:${numbered ? window : `=${window}`}`;
}

export const tmux = (...args: string[]) => runCommand(["tmux", ...args], { timeoutMs: 10_000 });

export type Pane = { pid: number; dead: boolean } | { error: string };

/** The pane's PID and whether its command has exited (remain-on-exit). */
export async function findPane(target: string): Promise<Pane> {
  const result = await tmux(
    "list-panes",
    "-t",
    exactWindow(target),
    "-F",
    "#{pane_index} #{pane_active} #{pane_pid} #{pane_dead}",
  );
  if (result.error) return { error: `tmux: ${result.error}` };
  if (result.exitCode !== 0) return { error: saidBy(result) || "not found" };
  const { pane } = parseTarget(target);
  const rows = result.stdout
    .trim()
    .split("\n")
    .map((line) => line.split(" "));
  const row = rows.find(([index, active]) => (pane === null ? active === "1" : index === pane));
  if (!row) return { error: `no pane ${pane} in ${target}` };
  return { pid: Number(row[2]), dead: row[3] === "1" };
}

export interface TmuxRestart {
  issued: boolean;
  detail: string;
}

/** respawn-pane -k; creates the session or the window when missing. */
export async function respawnPane(target: string, run: string): Promise<TmuxRestart> {
  const { session, window, pane: paneIndex, numbered } = parseTarget(target);
  const must = async (what: string, ...args: string[]): Promise<TmuxRestart> => {
    const result = await tmux(...args);
    if (result.exitCode === 0) return { issued: true, detail: what };
    return {
      issued: false,
      detail: `${what}: ${result.error ?? (saidBy(result) || `tmux exit ${result.exitCode}`)}`,
    };
  };
  const named = numbered ? [] : ["-n", window];
  if ((await tmux("has-session", "-t", `=${session}`)).exitCode !== 0) {
    return must(`created tmux session ${session}`, "new-session", "-d", "-s", session, ...named, run);
  }
  const pane = await findPane(target);
  if ("error" in pane) {
    return must(
      `created tmux window ${session}:${window}`,
      "new-window",
      "-d",
      "-t",
      numbered ? `=${session}:${window}` : `=${session}:`,
      ...named,
      run,
    );
  }
  const exactPane = paneIndex === null ? exactWindow(target) : `${exactWindow(target)}.${paneIndex}`;
  return must(`tmux respawn-pane -k -t ${target}`, "respawn-pane", "-k", "-t", exactPane, run);
}
