// flock(2) through libc: held is a skip; any other error is said as itself (Android's shared storage: ENOSYS).
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { tryLock } from "../lib/os/lock.ts";
import { Sandbox } from "./helpers.ts";

describe("flock errors are said as themselves, never taken for another pass (FAT storage gives ENOSYS)", () => {
  const box = new Sandbox();
  const path = join(box.dir, "watchdog.lock");
  mkdirSync(box.dir, { recursive: true });
  // The real libc is used everywhere else; here flock(2) answers as it does on Android's shared storage.
  const failing = (errno: number) => ({ flock: () => -1, errno: () => errno, clock: () => null });
  test("ENOSYS: an error that names it, exit 1", async () => {
    await expect(tryLock(path, { lib: failing(38) })).rejects.toThrow(
      `cannot lock ${path}: flock(2) failed: function not implemented (ENOSYS`,
    );
    await expect(tryLock(path, { lib: failing(38) })).rejects.toMatchObject({ code: "lock-failed", exitCode: 1 });
  });
  test("EWOULDBLOCK: held by another (the one case that is a skip)", async () => {
    expect(await tryLock(path, { lib: failing(11) })).toBeNull();
  });
  test("the real flock: taken, then held for a second taker, then free again", async () => {
    const first = await tryLock(path);
    expect(first).not.toBeNull();
    expect(await tryLock(path)).toBeNull();
    first!.release();
    const again = await tryLock(path);
    expect(again).not.toBeNull();
    again!.release();
    box.cleanup();
  });
});
