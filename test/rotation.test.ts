// Logs that stay bounded (SPEC log_max_size, log_keep): tend's own logs rotate by rename; a running
// spawned service's .out is copied and truncated in place (its O_APPEND fd keeps working). Rotation and
// reading from the end run on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { controlledServer, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
afterEach(async () => {
  await box?.cleanup(["chatty.pid", "bar.pid"].map((name) => box!.scratch(name).outside));
  box = null;
});
afterAll(() => closePlaces());

const MIB = 1024 * 1024;

for (const where of PLACES)
  describe(`logs (${where})`, () => {
    test("a chatty spawned service writing 50 MB: its .out stays under log_max_size + one burst, 3 kept", async () => {
      const place = (box = openPlace(where));
      const out = place.stateFile("services/chatty.out");
      const written = place.scratch("written").outside;
      // 2 MB bursts, counted in a file of its own: what it wrote in all.
      const chatty =
        `n=0; while [ $n -lt 25 ]; do yes 'a line of output from the service' | head -c 2000000; ` +
        `n=$((n+1)); echo $n > '${place.scratch("written").inside}'; sleep 0.3; done; ` +
        `while :; do echo tick; sleep 0.2; done`;
      place.writeConfig(`[watchdog]
  state_dir = "${place.state}"
  log_max_size = "1MiB"
  log_keep = 3
  [[service]]
  name = "chatty"
  pidfile = "${place.scratch("chatty.pid").inside}"
  grace = "0s"
  [service.check]
  process = true
  [service.restart]
  spawn = ["sh", "-c", "${chatty}"]
  `);
      expect((await place.tend(["watchdog"])).stdout).toContain("[START] chatty: started pid");
      const pid = await place.hostPid(Number(readFileSync(place.scratch("chatty.pid").outside, "utf8")));
      const sizes: number[] = [];
      let rotations = 0;
      // A pass every ~0.3 s while it writes 25 bursts: the pass is what bounds the file.
      while (Number(existsSync(written) ? readFileSync(written, "utf8") : 0) < 25) {
        const before = statSync(out).size;
        await place.tend(["watchdog"]);
        const after = statSync(out).size;
        if (after < before) rotations++;
        sizes.push(after);
        await Bun.sleep(300);
      }
      await place.tend(["watchdog"]);
      const files = [out, `${out}.1`, `${out}.2`, `${out}.3`, `${out}.4`].map((file) =>
        existsSync(file) ? statSync(file).size : null,
      );
      const kept = files.filter((size) => size !== null).reduce((sum, size) => sum! + size!, 0)!;
      const shown = files.map((size) => (size === null ? "-" : (size / MIB).toFixed(1))).join(" / ");
      const count = files.filter((size) => size !== null).length;
      console.log(`50 MB written in 2 MB bursts; ${rotations} rotations seen; on disk ${(kept / MIB).toFixed(1)} MiB`);
      console.log(`  in ${count} files (.out / .1 / .2 / .3 / .4: ${shown} MiB)`);

      expect(rotations).toBeGreaterThan(3);
      expect(files[4]).toBeNull(); // log_keep = 3: .out.1 .. .out.3
      for (const rotated of files.slice(1, 4)) expect(rotated).not.toBeNull();
      // Bounded: each kept copy is at most log_max_size plus what the service wrote between two passes.
      for (const size of files.slice(1, 4)) expect(size!).toBeLessThanOrEqual(1 * MIB + 8 * 2_000_000);
      expect(kept).toBeLessThan(25 * 2_000_000);
      // The service's fd keeps working: after the truncate its writes land at the new end, not after a hole.
      await waitFor(() => statSync(out).size > 0, 10_000, "the service to write again");
      expect(readFileSync(out).subarray(0, 4).toString()).toMatch(/^(tick|a li)$/);
      expect(process.kill(pid, 0)).toBe(true);
    }, 120_000);

    test("watchdog.log and downtime.log rotate by rename at log_max_size; DOWNTIME lines are in both", async () => {
      const place = (box = openPlace(where));
      const { server, url } = controlledServer();
      place.configure({
        watchdog: { log_max_size: "64KiB", log_keep: 2 },
        services: [{ name: "web", check: { http: `${url}`, timeout: "1s" } }],
      });
      await place.tend(["watchdog"]);
      const log = place.stateFile("watchdog.log");
      const downtime = place.stateFile("downtime.log");
      const filler = "[2026-12-01 00:00:00] [WARN] an old line of the log, kept in the rotated file\n".repeat(1000);
      appendFileSync(log, filler);
      place.writeState("downtime.log", filler); // the user's, as tend's own would be
      server.stop(true); // down: a strike (a line), then up again: RECOVERED and DOWNTIME
      const down = await place.tend(["watchdog"]);
      expect(down.stdout).toContain("failure 1/3");
      expect(statSync(`${log}.1`).size).toBeGreaterThan(64 * 1024); // the old log, whole
      expect(readFileSync(log, "utf8")).toStartWith("[");
      expect(statSync(log).size).toBeLessThan(1024);
      expect(existsSync(`${log}.3`)).toBe(false);
      // downtime.log: a DOWNTIME line goes to both files (grep DOWNTIME watchdog.log keeps working).
      const again = controlledServer();
      place.editConfig((text) => text.replace(url, again.url));
      const up = await place.tend(["watchdog"]);
      again.server.stop(true);
      expect(up.stdout).toContain("[DOWNTIME] web was unavailable");
      expect(readFileSync(log, "utf8")).toContain("[DOWNTIME] web was unavailable");
      expect(readFileSync(downtime, "utf8")).toContain("[DOWNTIME] web was unavailable");
      expect(statSync(`${downtime}.1`).size).toBeGreaterThan(64 * 1024);
      const plan = (await place.tend(["watchdog", "plan"])).stdout;
      expect(plan).toContain('log_max_size = "64KiB"');
      expect(plan).toContain("log_keep = 2");
    });

    test("watchdog logs -n reads from the end, bounded: a 60 MB output without a newline", async () => {
      const place = (box = openPlace(where));
      place.writeConfig(`[watchdog]
  state_dir = "${place.state}"
  [[service]]
  name = "bar"
  pidfile = "${place.scratch("bar.pid").inside}"
  [service.check]
  process = true
  [service.restart]
  spawn = ["sleep", "600"]
  `);
      await place.tend(["watchdog", "validate"]);
      place.writeState("services/bar.out", ""); // the state dir as tend makes it, the user's
      const out = place.stateFile("services/bar.out");
      writeFileSync(out, Buffer.alloc(60 * MIB, "=")); // a progress bar that never ends its line
      appendFileSync(out, "\nlast line\n");
      const logs = await place.tend(["watchdog", "logs", "bar", "-n", "1"]);
      expect(logs.stdout).toBe("last line\n");
      writeFileSync(out, Buffer.alloc(60 * MIB, "="));
      const bar = await place.tend(["watchdog", "logs", "bar", "-n", "5"]);
      expect(bar.code).toBe(0);
      expect(bar.stdout.startsWith("…===")).toBe(true); // cut: only its last 8 MiB were read
      expect(bar.stdout.length).toBeLessThanOrEqual(8 * MIB + 8);
    }, 60_000); // 240 MB written and read on a loaded two-core machine: more than the default 5 s
  });

for (const where of PLACES)
  test(`log_max_size and log_keep are checked as configuration (${where})`, async () => {
    const sandbox = openPlace(where);
    sandbox.configure({ watchdog: { log_max_size: "1KiB", log_keep: -1 } });
    const run = await sandbox.tend(["watchdog", "validate"]);
    await sandbox.cleanup();
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('watchdog.log_max_size: "1KiB" is below the floor of 64KiB');
    expect(run.stderr).toContain("watchdog.log_keep:");
  });
