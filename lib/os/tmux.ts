import { openAppend } from "./files.ts";
import { closeSync } from "node:fs";
import { runCommand, saidBy } from "./run.ts";

/** The tmux server a pane lives on: null = tmux's default; a name = `-L NAME`; an absolute path = `-S PATH`. */
type TmuxSocket = string | null;

/** The argv that selects the server. */
/** A tmux socket name for -L: a file name in tmux's socket dir (else an absolute path, -S). */
export const TMUX_SOCKET_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export const serverArgs = (socket: TmuxSocket): string[] =>
  socket === null ? [] : socket.startsWith("/") ? ["-S", socket] : ["-L", socket];

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

export const tmux = (socket: TmuxSocket, ...args: string[]) =>
  runCommand(["tmux", ...serverArgs(socket), ...args], { timeoutMs: 10_000 });

export type Pane = { pid: number; dead: boolean } | { error: string };

/** The pane's PID and whether its command has exited (remain-on-exit). */
export async function findPane(target: string, socket: TmuxSocket = null): Promise<Pane> {
  const result = await tmux(
    socket,
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

/** What a new pane runs until it is piped and respawned with its command (within one tmux command). */
const IDLE = "exec sleep 86400";

/** A path in single quotes for the shell tmux runs pipe-pane's command with. */
const shellQuoted = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

interface RespawnOptions {
  socket?: TmuxSocket;
  /** Append the pane's output here (pipe-pane), from its first byte: the file outlives the pane. */
  output?: string | null;
}

/**
 * respawn-pane -k; creates the session or the window when missing. Creation is idempotent: another
 * service of the same pass (or a person) creating the same session first is not a failure: it is
 * used, and this pane is made in it (tried again, at most 3 times).
 */
export async function respawnPane(target: string, run: string, options: RespawnOptions = {}): Promise<TmuxRestart> {
  const socket = options.socket ?? null;
  const { session, window, pane: paneIndex, numbered } = parseTarget(target);
  const named = numbered ? [] : ["-n", window];
  const exactPane = paneIndex === null ? exactWindow(target) : `${exactWindow(target)}.${paneIndex}`;
  // The pipe must be open before the command's first byte: a new pane starts idle, is piped, then
  // respawned with RUN, all in one tmux command (the pipe survives respawn-pane; -o keeps an open one).
  // A dead pane (remain-on-exit: its command exited) cannot be piped ("target pane has exited"): it is
  // respawned idle first, in the same command.
  let piped = (command: string[], _dead: boolean) => [...command, run];
  if (options.output) {
    closeSync(openAppend(options.output)); // created here, never through a symlink
    const pipe = ["pipe-pane", "-o", "-t", exactPane, `exec cat >> ${shellQuoted(options.output)}`];
    const respawn = ["respawn-pane", "-k", "-t", exactPane, run];
    piped = (command, dead) =>
      command[0] === "respawn-pane" && !dead
        ? [...pipe, ";", ...respawn]
        : [...command, IDLE, ";", ...pipe, ";", ...respawn];
  }
  const attempt = async (what: string, command: string[], dead = false) => {
    const result = await tmux(socket, ...piped(command, dead));
    const said = result.error ?? (saidBy(result) || `tmux exit ${result.exitCode}`);
    return { ok: result.exitCode === 0, what, said };
  };
  let last = { ok: false, what: `tmux ${target}`, said: "not attempted" };
  for (let round = 0; round < 3; round++) {
    if ((await tmux(socket, "has-session", "-t", `=${session}`)).exitCode !== 0) {
      last = await attempt(`created tmux session ${session}`, ["new-session", "-d", "-s", session, ...named]);
      if (last.ok) return { issued: true, detail: last.what };
      if (/duplicate session/.test(last.said)) continue; // created meanwhile: use it
      break;
    }
    const found = await findPane(target, socket);
    if ("error" in found) {
      const where = numbered ? `=${session}:${window}` : `=${session}:`;
      last = await attempt(`created tmux window ${session}:${window}`, ["new-window", "-d", "-t", where, ...named]);
      if (last.ok) return { issued: true, detail: last.what };
      if (!("error" in (await findPane(target, socket)))) continue; // created meanwhile: respawn it
      break;
    }
    const respawn = ["respawn-pane", "-k", "-t", exactPane];
    last = await attempt(`tmux respawn-pane -k -t ${target}`, respawn, found.dead);
    if (last.ok) return { issued: true, detail: last.what };
    if ("error" in (await findPane(target, socket))) continue; // its window went away meanwhile
    break;
  }
  return { issued: false, detail: `${last.what}: ${last.said}` };
}
