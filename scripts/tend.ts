import { processIo, VERSION, type Io } from "../lib/io.ts";
import { allClosed } from "../lib/os/closing.ts";

type Main = (argv: string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, () => Promise<{ main: Main }>> = {
  watchdog: () => import("./watchdog.ts"),
  "safe-kill": () => import("./safe-kill.ts"),
  notify: () => import("./notify.ts"),
  blogtunnel: () => import("./blogtunnel.ts"),
  "self-update": () => import("./self-update.ts"),
  doctor: () => import("./doctor.ts"),
};

const USAGE = `usage: tend COMMAND [ARGS...]   (or call a copy/symlink named after the command)

commands:
  watchdog     probe services, restart the hung ones, report (watchdog --help)
  safe-kill    signal a service's verified main process, never by pattern
  notify       send a message (curl -f semantics, retries, a spool that loses nothing)
  blogtunnel   the public-URL tunnel check for crontab (fail codes, counter file, tmux respawn)
  self-update  replace the binary or the config: validated, backed up, diffed, atomic, reversible
  doctor       what this host offers tend (flock, /proc, tmux, systemd, cron, Termux, state dir, notify)

tend --version prints the version.`;

/** Multi-call dispatch: a binary named `watchdog` runs watchdog; `tend watchdog ...` too. */
export async function dispatch(invokedAs: string, argv: string[], io: Io): Promise<number> {
  let name = invokedAs.slice(invokedAs.lastIndexOf("/") + 1).replace(/\.(ts|js|exe)$/, "");
  let rest = argv;
  if (rest[0] === "--version") return (io.out(`tend ${VERSION}`), 0); // before any command's code is loaded
  if (name in COMMANDS && rest[0] === name) rest = rest.slice(1); // `watchdog watchdog plan` = `tend watchdog plan`
  if (!(name in COMMANDS)) {
    [name, ...rest] = argv;
    if (name === undefined || name === "--help" || name === "-h" || name === "help")
      return (io.out(USAGE), name === undefined ? 2 : 0);
  }
  const load = COMMANDS[name];
  if (!load) return (io.err(`tend: unknown command ${JSON.stringify(name)}\n\n${USAGE}`), 2);
  return (await load()).main(rest, io);
}

if (import.meta.main) {
  // In a compiled binary only argv0 carries the name it was invoked by.
  const io = processIo();
  const code = await dispatch(process.argv0 === "bun" ? "tend" : process.argv0, process.argv.slice(2), io);
  // A probe's body read on to its end, to close with FIN (SPEC "Answers"): each within its probe's timeout.
  await allClosed();
  await io.close();
  process.exit(code);
}
