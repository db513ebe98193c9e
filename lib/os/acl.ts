/**
 * A file's POSIX ACL (Linux, Android), read on its descriptor: who besides the owner it lets write.
 * With an ACL the mode's group bits are the ACL's mask, not the owning group's permission — the mask
 * of `setfacl -m u:nobody:rw` reads as "group may write" while the group is root's own — so StrictModes
 * asks the ACL itself (lib/config/strict.ts). Read with fgetxattr(2) through bun:ffi; null when there is
 * no ACL or it cannot be read (macOS's ACLs are another kind: not read here).
 */

/** Whom an ACL lets write: named users, named groups, and the owning group (each through the mask). */
export interface AclWriters {
  users: number[];
  groups: number[];
  owningGroup: boolean;
}

// The kernel's xattr form (linux/posix_acl_xattr.h): a u32 version 2, then {u16 tag, u16 perm, u32 id}.
const TAG = { userObj: 0x01, user: 0x02, groupObj: 0x04, group: 0x08, mask: 0x10, other: 0x20 };
const WRITE = 0x02;

/** Parse the `system.posix_acl_access` value; null when it is not one. */
function aclWritersOf(value: Uint8Array): AclWriters | null {
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  if (value.byteLength < 4 || (value.byteLength - 4) % 8 !== 0 || view.getUint32(0, true) !== 2) return null;
  const entries: { tag: number; perm: number; id: number }[] = [];
  for (let at = 4; at < value.byteLength; at += 8)
    entries.push({
      tag: view.getUint16(at, true),
      perm: view.getUint16(at + 2, true),
      id: view.getUint32(at + 4, true),
    });
  const mask = entries.find((entry) => entry.tag === TAG.mask);
  // Named entries and the owning group get no more than the mask (acl(5)); no mask: no named entries.
  const writes = (perm: number) => (perm & WRITE) !== 0 && (!mask || (mask.perm & WRITE) !== 0);
  return {
    users: entries.filter((entry) => entry.tag === TAG.user && writes(entry.perm)).map((entry) => entry.id),
    groups: entries.filter((entry) => entry.tag === TAG.group && writes(entry.perm)).map((entry) => entry.id),
    owningGroup: entries.some((entry) => entry.tag === TAG.groupObj && writes(entry.perm)),
  };
}

type Fgetxattr = (fd: number, name: Uint8Array, value: Uint8Array, size: number) => number;
let fgetxattr: Fgetxattr | null | undefined;

function load(): Fgetxattr | null {
  if (fgetxattr !== undefined) return fgetxattr;
  fgetxattr = null;
  if (process.platform !== "linux" && (process.platform as string) !== "android") return null;
  try {
    // Synchronous: StrictModes runs before anything async (the configuration's first read).
    const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
    for (const name of ["libc.so.6", "libc.so"]) {
      try {
        const { symbols } = dlopen(name, {
          fgetxattr: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
        });
        fgetxattr = (fd, key, value, size) => Number(symbols.fgetxattr(fd, ptr(key), ptr(value), size));
        break;
      } catch {}
    }
  } catch {}
  return fgetxattr;
}

const ACCESS_ACL = new TextEncoder().encode("system.posix_acl_access\0");

/** The ACL's writers of the file open as `fd`; null: no ACL (or none readable here). */
export function aclWriters(fd: number): AclWriters | null {
  const call = load();
  if (!call) return null;
  const value = new Uint8Array(4 + 8 * 64);
  const size = call(fd, ACCESS_ACL, value, value.byteLength);
  if (size <= 0) return null; // ENODATA: no ACL; ENOTSUP: none on this file system
  return aclWritersOf(value.subarray(0, size));
}
