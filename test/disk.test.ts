// check.disk against a real filesystem of known size: a 4 MiB tmpfs with 64 inodes, mounted for the test.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox } from "./helpers.ts";

const box = new Sandbox();
const mount = join(box.dir, "small");

beforeAll(() => {
  mkdirSync(mount);
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=64", "tmpfs", mount], {
    stderr: "pipe",
  });
  if (mounted.exitCode !== 0) {
    throw new Error(`the disk tests need root to mount a tmpfs: ${mounted.stderr.toString().trim()}`);
  }
  box.configure({
    services: [
      { name: "space", check: { disk: `${mount}`, min_free: "1MiB" } },
      { name: "share", check: { disk: `${mount}/`, min_free: "50%" } },
      { name: "inodes", check: { disk: `${mount}`, min_free_inodes: 40 } },
      { name: "gone", check: { disk: `${mount}/missing`, min_free: "1%" } },
    ],
  });
});

afterAll(() => {
  Bun.spawnSync(["umount", mount]);
  box.cleanup();
});

const probes = async () => {
  const run = await box.tend(["watchdog", "status", "--json"]);
  return Object.fromEntries(JSON.parse(run.stdout).services.map((row: any) => [row.name, row.probe]));
};

test("disk: free space and inodes of the filesystem holding PATH, as a size or a share", async () => {
  const empty = await probes();
  expect(empty.space).toMatchObject({ ok: true, detail: "4.0 MiB free of 4.0 MiB (100.0%)" });
  expect(empty.share.ok).toBe(true);
  expect(empty.inodes).toMatchObject({ ok: true, detail: expect.stringMatching(/, 6\d of 64 inodes free \(/) });
  expect(empty.gone).toMatchObject({ ok: false, detail: `${mount}/missing: no such file or directory` });

  writeFileSync(join(mount, "big"), Buffer.alloc(2.5 * 1024 * 1024)); // 1.5 MiB left: above 1MiB, below 50%
  const half = await probes();
  expect(half.space.ok).toBe(true);
  expect(half.share).toMatchObject({ ok: false, detail: "1.5 MiB free of 4.0 MiB (37.5%), below min_free 50%" });

  writeFileSync(join(mount, "more"), Buffer.alloc(1024 * 1024)); // 0.5 MiB left
  expect((await probes()).space).toMatchObject({
    ok: false,
    detail: "512 KiB free of 4.0 MiB (12.5%), below min_free 1.0 MiB",
  });

  for (let index = 0; index < 30; index++) writeFileSync(join(mount, `f${index}`), "");
  const full = await probes();
  expect(full.inodes).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/of 64 inodes free .*below min_free_inodes 40 inodes$/),
  });
});

test("disk: a pass strikes a disk below its floor; plan shows the floors", async () => {
  const pass = await box.tend(["watchdog"]);
  expect(pass.stdout).toMatch(
    /\[WARN\] space failed health check \(512 KiB free of 4\.0 MiB \(12\.5%\), below min_free 1\.0 MiB, failure 1\/3\)/,
  );
  const plan = (await box.tend(["watchdog", "plan"])).stdout;
  expect(plan).toContain('check.disk = "' + mount + '"');
  expect(plan).toContain('check.min_free = "50%"');
  expect(plan).toContain("check.min_free_inodes = 40");
});

test("disk: configuration errors name the key and what is allowed", async () => {
  const bad = new Sandbox();
  bad.configure({
    services: [
      { name: "a", check: { disk: "/" } },
      { name: "b", check: { disk: "/", min_free: "5x", min_free_inodes: "150%" } },
    ],
  });
  const run = await bad.tend(["watchdog", "validate"]);
  bad.cleanup();
  expect(run.code).toBe(2);
  expect(run.stderr).toContain("service[0].check.min_free: is required with check.disk (or min_free_inodes, or both)");
  expect(run.stderr).toContain(
    'service[1].check.min_free: "5x" is not a size (e.g. "512MiB", "1GiB", "800MB" or a number',
  );
  expect(run.stderr).toContain('service[1].check.min_free_inodes: "150%": a share must be between 0% and 100%');
});
