import { idEntry } from "../os/users.ts";
import { aclWriters, type AclWriters } from "../os/acl.ts";
import { closeSync, constants, lstatSync, openSync, readlinkSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { TendError } from "../core/errors.ts";
import { sharedStorage } from "../state/dir.ts";

/**
 * OpenSSH's StrictModes for the configuration: it holds command lines tend runs (checks, restarts),
 * so a file anyone else can write is someone else's commands run as tend's user (root, often).
 * Refused, exit 3, naming the file, its owner and mode, and the chmod/chown that fixes it: a file
 * or directory (and a symlink's target) writable by others, writable by a group other than the
 * owner's own private group, or owned by another user than the one running tend or root. `opened`:
 * the descriptor that is read (null: it could not be opened, its path's inode is said instead).
 */
export function refuseUnsafeConfig(
  path: string,
  opened: { fd: number; stats: Stats } | null,
  uid = process.getuid?.() ?? -1,
): void {
  if (uid < 0) return; // no POSIX owners here
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    real = path; // flipped away since it was opened: the descriptor is what is checked and read
  }
  const shared = sharedStorage(dirname(real));
  if (shared)
    throw new TendError(
      `configuration ${path} is on shared storage (${shared}): modes mean nothing there, anyone may edit ` +
        `the command lines it holds; keep it under $HOME (~/.config/tend/tend.toml)`,
      3,
      "refused",
    );
  // The file read is the file checked: its descriptor's owner, mode and ACL.
  if (opened) {
    const acl = aclAsked(opened.stats) ? aclWriters(opened.fd) : null;
    refuseIfUnsafe("configuration", real, opened.stats, acl, uid);
  } else {
    const stats = statSync(path, { throwIfNoEntry: false });
    if (!stats) return; // missing: said as such by the read
    refuseIfUnsafe("configuration", real, stats, null, uid);
  }
  for (const [what, place] of directoriesOnTheWay(path)) {
    const stats = statSync(place);
    refuseIfUnsafe(what, place, stats, aclAsked(stats) ? directoryAcl(place) : null, uid);
  }
}

/** A directory's ACL; null when it cannot be opened (mode 0711 to another user: its mode still says). */
function directoryAcl(place: string): AclWriters | null {
  let fd: number;
  try {
    fd = openSync(place, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    return aclWriters(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether an ACL could let someone but the owner write, so it is read. With named entries an ACL has a
 * mask (acl(5)) and the mode's group bits are that mask; without them the group bits are the owning
 * group's entry. Either way, no group-write bit: no entry but the owner's may write. A sticky directory
 * is safe whatever it lets others do (see unsafe). Not read then: a cron pass is spared fgetxattr's
 * dlopen, and an open and a call per directory on the way.
 */
function aclAsked(stats: Stats): boolean {
  return (stats.mode & 0o020) !== 0 && !isSticky(stats);
}

const isSticky = (stats: Stats) => stats.isDirectory() && (stats.mode & 0o1000) !== 0;

function refuseIfUnsafe(what: string, place: string, stats: Stats, acl: AclWriters | null, uid: number): void {
  const problem = unsafe(stats, acl, uid);
  const mode = (stats.mode & 0o7777).toString(8).padStart(4, "0");
  if (problem)
    throw new TendError(
      `${what} ${place} ${problem.said} (owner uid ${stats.uid}, mode ${mode}): ` +
        `the configuration holds command lines tend runs as you: refused. Fix: ${problem.fix} ${place}`,
      3,
      "refused",
    );
}

/**
 * Every directory from `/` down to the configuration, and down to each symlink on the way and its
 * target (as OpenSSH's safe_path walks up): whoever may write in one of them may swap what is below.
 */
function directoriesOnTheWay(path: string): [string, string][] {
  const found = new Map<string, string>();
  const chain = (dir: string, what: string) => {
    for (let place = dir; ; place = dirname(place)) {
      if (!found.has(place)) found.set(place, place === dir ? what : "the directory on the way");
      if (place === "/") break;
    }
  };
  let hops = 0;
  const walk = (given: string, what: string) => {
    let current = "/";
    const parts = resolve(given).split("/").filter(Boolean);
    for (const [index, part] of parts.entries()) {
      const next = join(current, part);
      let link: string | null = null;
      try {
        link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : null;
      } catch {
        break; // missing: nothing further down to check
      }
      if (link === null) {
        current = next;
        continue;
      }
      chain(current, `the directory holding the symlink ${part}`);
      if (++hops > 40) break;
      walk(join(resolve(current, link), ...parts.slice(index + 1)), what);
      return;
    }
    chain(dirname(current), what);
  };
  walk(path, "the directory holding the configuration");
  // The configuration's own directory first, then the symlinks' and the ways to them.
  return [...found.entries()].map(([place, what]) => [what, place]);
}

function unsafe(stats: Stats, acl: AclWriters | null, uid: number): { said: string; fix: string } | null {
  if (stats.uid !== uid && stats.uid !== 0) return { said: "belongs to another user", fix: `chown ${uid}` };
  // A sticky directory (/tmp): others may write in it, never replace what is yours.
  if (isSticky(stats)) return null;
  if (stats.mode & 0o002) return { said: "is writable by others", fix: "chmod o-w" };
  if (acl) {
    // With an ACL the group bits are its mask: the owning group's own entry says what the group may do.
    const others = [
      ...acl.users.filter((id) => id !== stats.uid).map((id) => `user ${id}`),
      ...acl.groups.map((id) => `group ${id}`),
    ];
    if (others.length)
      return { said: `is writable by others (its ACL lets ${others.join(", ")} write)`, fix: "setfacl -b" };
    if (acl.owningGroup && !privateGroup(stats.gid, stats.uid))
      return { said: `is writable by group ${stats.gid}, not its owner's own (its ACL)`, fix: "setfacl -b" };
    return null;
  }
  if (stats.mode & 0o020 && !privateGroup(stats.gid, stats.uid))
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
