// check.disk against a real filesystem of known size: a 4 MiB tmpfs with 64 inodes, mounted for the test
// (on the phone, mounted before it boots: it is seen there under HOME, as /data is): on this host and
// inside the phone (test/places.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

afterAll(() => closePlaces());

for (const where of PLACES)
  describe(`check.disk (${where})`, () => {
    let place: Place;
    /** The small file system: its path as tend sees it, and where this test writes to fill it. */
    let mount: { inside: string; outside: string };
    beforeAll(() => {
      place = openPlace(where);
      mount = place.scratch("small");
      mkdirSync(mount.outside, { recursive: true });
      const options = `size=4m,nr_inodes=64,uid=${place.uid},gid=${place.uid}`;
      const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mount.outside], {
        stderr: "pipe",
      });
      if (mounted.exitCode !== 0) {
        throw new Error(`the disk tests need root to mount a tmpfs: ${mounted.stderr.toString().trim()}`);
      }
      place.configure({
        services: [
          { name: "space", check: { disk: `${mount.inside}`, min_free: "1MiB" } },
          { name: "share", check: { disk: `${mount.inside}/`, min_free: "50%" } },
          { name: "inodes", check: { disk: `${mount.inside}`, min_free_inodes: 40 } },
          { name: "gone", check: { disk: `${mount.inside}/missing`, min_free: "1%" } },
        ],
      });
    });

    afterAll(async () => {
      Bun.spawnSync(["umount", "-l", mount.outside]); // lazily: the phone's copy goes with the phone
      await place.cleanup();
    });

    const probes = async () => {
      const run = await place.tend(["watchdog", "status", "--json"]);
      return Object.fromEntries(JSON.parse(run.stdout).services.map((row: any) => [row.name, row.probe]));
    };

    test("disk: free space and inodes of the filesystem holding PATH, as a size or a share", async () => {
      const empty = await probes();
      expect(empty.space).toMatchObject({ ok: true, detail: "4.0 MiB free of 4.0 MiB (100.0%)" });
      expect(empty.share.ok).toBe(true);
      expect(empty.inodes).toMatchObject({ ok: true, detail: expect.stringMatching(/, 6\d of 64 inodes free \(/) });
      expect(empty.gone).toMatchObject({ ok: false, detail: `${mount.inside}/missing: no such file or directory` });

      writeFileSync(join(mount.outside, "big"), Buffer.alloc(2.5 * 1024 * 1024)); // 1.5 MiB left: above 1MiB, below 50%
      const half = await probes();
      expect(half.space.ok).toBe(true);
      expect(half.share).toMatchObject({ ok: false, detail: "1.5 MiB free of 4.0 MiB (37.5%), below min_free 50%" });

      writeFileSync(join(mount.outside, "more"), Buffer.alloc(1024 * 1024)); // 0.5 MiB left
      expect((await probes()).space).toMatchObject({
        ok: false,
        detail: "512 KiB free of 4.0 MiB (12.5%), below min_free 1.0 MiB",
      });

      for (let index = 0; index < 30; index++) writeFileSync(join(mount.outside, `f${index}`), "");
      const full = await probes();
      expect(full.inodes).toMatchObject({
        ok: false,
        detail: expect.stringMatching(/of 64 inodes free .*below min_free_inodes 40 inodes$/),
      });
    });

    test("disk: a pass strikes a disk below its floor; plan shows the floors", async () => {
      const pass = await place.tend(["watchdog"]);
      expect(pass.stdout).toContain(
        "[WARN] space failed health check (512 KiB free of 4.0 MiB (12.5%), below min_free 1.0 MiB, failure 1/3)",
      );
      const plan = (await place.tend(["watchdog", "plan"])).stdout;
      expect(plan).toContain('check.disk = "' + mount.inside + '"');
      expect(plan).toContain('check.min_free = "50%"');
      expect(plan).toContain("check.min_free_inodes = 40");
    });

    test("disk: configuration errors name the key and what is allowed", async () => {
      const bad = openPlace(where);
      bad.configure({
        services: [
          { name: "a", check: { disk: "/" } },
          { name: "b", check: { disk: "/", min_free: "5x", min_free_inodes: "150%" } },
        ],
      });
      const run = await bad.tend(["watchdog", "validate"]);
      await bad.cleanup();
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "service[0].check.min_free: is required with check.disk (or min_free_inodes, or both)",
      );
      expect(run.stderr).toContain(
        'service[1].check.min_free: "5x" is not a size (e.g. "512MiB", "1GiB", "800MB" or a number',
      );
      expect(run.stderr).toContain('service[1].check.min_free_inodes: "150%": a share must be between 0% and 100%');
    });
  });
