import { idEntry } from "../os/users.ts";
import { lstatSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { TendError } from "../core/errors.ts";
import { sharedStorage } from "../state/dir.ts";

/**
 * OpenSSH's StrictModes for the configuration: it holds command lines tend runs (checks, restarts),
 * so a file anyone else can write is someone else's commands run as tend's user (root, often).
 * Refused, exit 3, naming the file, its owner and mode, and the chmod/chown that fixes it: a file
 * or directory (and a symlink's target) writable by others, writable by a group other than the
 * owner's own private group, or owned by another user than the one running tend or root.
 */
export function refuseUnsafeConfig(path: string, uid = process.getuid?.() ?? -1): void {
  if (uid < 0) return; // no POSIX owners here
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return; // missing: said as such by the read that follows
  }
  const shared = sharedStorage(dirname(real));
  if (shared)
    throw new TendError(
      `configuration ${path} is on shared storage (${shared}): modes mean nothing there, anyone may edit ` +
        `the command lines it holds; keep it under $HOME (~/.config/tend/tend.toml)`,
      3,
      "refused",
    );
  const places: [string, string][] = [
    ["configuration", real],
    ["the directory holding the configuration", dirname(real)],
  ];
  if (real !== path && lstatSync(path).isSymbolicLink())
    places.push(["the directory holding the configuration's symlink", dirname(path)]);
  for (const [what, place] of places) {
    const stats = statSync(place);
    const problem = unsafe(stats, uid);
    const mode = (stats.mode & 0o7777).toString(8).padStart(4, "0");
    if (problem)
      throw new TendError(
        `${what} ${place} ${problem.said} (owner uid ${stats.uid}, mode ${mode}): ` +
          `the configuration holds command lines tend runs as you: refused. Fix: ${problem.fix} ${place}`,
        3,
        "refused",
      );
  }
}

function unsafe(stats: Stats, uid: number): { said: string; fix: string } | null {
  if (stats.uid !== uid && stats.uid !== 0) return { said: "belongs to another user", fix: `chown ${uid}` };
  // A sticky directory (/tmp): others may write in it, never replace what is yours.
  const sticky = stats.isDirectory() && (stats.mode & 0o1000) !== 0;
  if (stats.mode & 0o002 && !sticky) return { said: "is writable by others", fix: "chmod o-w" };
  if (stats.mode & 0o020 && !sticky && !privateGroup(stats.gid, stats.uid))
    return { said: `is writable by group ${stats.gid}, not its owner's own`, fix: "chmod g-w" };
  return null;
}

/** The owner's private group: named as the user, and no one else in it (Debian's user groups). */
function privateGroup(gid: number, owner: number): boolean {
  const user = idEntry("/etc/passwd", owner);
  const group = idEntry("/etc/group", gid);
  // No /etc/group to tell (Termux): not known to be private.
  if (!user || !group) return false;
  const members = (group[3] ?? "").split(",").filter(Boolean);
  return group[0] === user[0] && members.every((member) => member === user[0]);
}
