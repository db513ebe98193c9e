// Which file systems write a renamed file's data before the rename (a cut leaves the old file or
// the new one without an fsync) — decided on real mounts made here: ext4 as the host formats it,
// ext4 mounted noauto_da_alloc (stock Android /data), tmpfs. Where it does not, a write tend
// calls not durable (an observation, the heartbeat) is fsynced all the same. The pidfile of the last boot is
// judged on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir, uptime } from "node:os";
import { join } from "node:path";
import { renameOrdersData } from "../lib/os/atomic.ts";
import { alive, run, Sandbox } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox | null = null;
let place: Place | null = null;
const mounts: string[] = [];
afterEach(async () => {
  for (const point of mounts.splice(0).reverse()) Bun.spawnSync(["umount", point]);
  box?.cleanup();
  await place?.cleanup();
  box = place = null;
});
afterAll(() => closePlaces());

async function mountExt4(box: Sandbox, name: string, options: string) {
  const image = join(box.dir, `${name}.img`);
  const point = join(box.dir, name);
  mkdirSync(point);
  expect((await run(["truncate", "-s", "16M", image])).code).toBe(0);
  expect((await run(["mkfs.ext4", "-q", "-F", image])).code).toBe(0);
  const mounted = await run(["mount", "-o", `loop,${options}`, image, point]);
  expect(mounted.stderr).toBe("");
  mounts.push(point);
  return point;
}

/**
 * Why a loop mount cannot be made here (a container without loop devices, or not allowed to mount
 * them: EPERM), or null. Only those are a skip; anything else fails the test as it is.
 */
function loopMountRefused(): string | null {
  const dir = mkdtempSync(join(tmpdir(), "tend-test-loop-"));
  try {
    const image = join(dir, "probe.img");
    Bun.spawnSync(["truncate", "-s", "16M", image]);
    Bun.spawnSync(["mkfs.ext4", "-q", "-F", image]);
    mkdirSync(join(dir, "point"));
    const mounted = Bun.spawnSync(["mount", "-o", "loop", image, join(dir, "point")], { stderr: "pipe" });
    if (mounted.exitCode === 0) {
      Bun.spawnSync(["umount", join(dir, "point")]);
      return null;
    }
    const said = mounted.stderr.toString().trim().split("\n").at(-1) ?? "";
    return /permission denied|not permitted|loop device/i.test(said) ? said : null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const refused = loopMountRefused();
if (refused) console.log(`skipped: the ext4 test: no loop mount here (${refused})`);

test.skipIf(refused !== null)(
  "ext4 orders a rename after its data, ext4 noauto_da_alloc does not (so a write there is fsynced)" +
    (refused ? ` — skipped: no loop mount here (${refused})` : ""),
  async () => {
    const sandbox = (box = new Sandbox());
    const ordered = await mountExt4(sandbox, "ext4", "rw");
    const android = await mountExt4(sandbox, "data", "rw,noauto_da_alloc");
    const ram = join(sandbox.dir, "ram");
    mkdirSync(ram);
    expect((await run(["mount", "-t", "tmpfs", "tmpfs", ram])).code).toBe(0);
    mounts.push(ram);
    expect(renameOrdersData(ordered)).toBe(true);
    expect(renameOrdersData(android)).toBe(false);
    expect(renameOrdersData(ram)).toBe(true);
    // A subdirectory is on its mount's file system.
    mkdirSync(join(android, "state"));
    expect(renameOrdersData(join(android, "state"))).toBe(false);
    // Not durable asked, durable done: the write is fsynced where the rename could outlive the data.
    const atomicModule = join(import.meta.dir, "..", "lib", "os", "atomic.ts");
    const traced = await run([
      "strace",
      "-f",
      "-e",
      "trace=fsync",
      "-o",
      join(sandbox.dir, "trace"),
      process.execPath,
      "-e",
      `const { writeFileAtomic } = await import(${JSON.stringify(atomicModule)});
     writeFileAtomic(${JSON.stringify(join(android, "state", "a.json"))}, "{}", 0o600, { durable: false });
     writeFileAtomic(${JSON.stringify(join(ordered, "b.json"))}, "{}", 0o600, { durable: false });`,
    ]);
    expect(traced.code).toBe(0);
    const fsyncs = (await Bun.file(join(sandbox.dir, "trace")).text())
      .split("\n")
      .filter((line) => line.includes("fsync("));
    expect(fsyncs.length).toBe(2); // a.json's file and its directory; b.json none
  },
  60_000,
);

for (const where of PLACES)
  test(`a pidfile written before the host booted names the last boot's PID, not the service's (${where})`, async () => {
    place = openPlace(where);
    // A live process that holds the PID the pidfile names, as a process of this boot might after a reboot.
    const holder = await place.startTarget(["sleep", "600"], "holder.pid");
    const pidfile = place.scratch("svc.pid");
    place.writeScratch("svc.pid", `${holder.pid}\n`);
    // The phone boots in a time namespace of its own clocks' offset 0 here: its boot is this host's.
    const bootedAt = Date.now() - uptime() * 1000;
    utimesSync(pidfile.outside, new Date(bootedAt - 60_000), new Date(bootedAt - 60_000));
    place.configure({
      services: [
        { name: "svc", pidfile: pidfile.inside, check: { process: true }, restart: { spawn: ["sleep", "600"] } },
      ],
    });
    const pass = await place.tend(["watchdog"]);
    expect(pass.stdout).toMatch(/\[START\] svc: started pid (\d+)/);
    const started = Number(readFileSync(pidfile.outside, "utf8"));
    expect(started).not.toBe(holder.pid);
    expect(alive(holder.here)).toBe(true); // never signalled: it is not tend's
    await place.cleanup([pidfile.outside, place.scratch("holder.pid").outside]);
  }, 30_000);
