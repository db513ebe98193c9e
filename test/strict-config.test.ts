// The configuration holds command lines tend runs, so, as OpenSSH's StrictModes: a file (or its directory)
// writable by others, or owned by another user than the one running tend or root, is refused by every
// command, validate included: exit 3, naming the file, its owner and mode, and the fix (#39). On this host
// (tend as root) and inside the Termux-shaped phone (test/places.ts: tend as the app's uid 10123).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, readFileSync } from "node:fs";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
afterEach(async () => {
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

const pwnConfig = (state: string, proof: string) =>
  `[watchdog]\nstate_dir = "${state}"\n[[service]]\nname = "x"\n` +
  `[service.check]\ncommand = ["sh", "-c", "id > ${proof}"]\n`;

for (const where of PLACES)
  describe(where, () => {
    test("writable by others, or another user's: refused with the fix, nothing run; fixed, it runs", async () => {
      const place = (box = openPlace(where));
      const { inside: config, outside } = place.configFile;
      const proof = place.scratch("pwned");
      place.writeScratch("pwned", "");
      place.writeConfig(pwnConfig(place.state, proof.inside));
      chmodSync(outside, 0o666);
      for (const args of [
        ["watchdog", "validate"],
        ["watchdog", "pass"],
        ["watchdog", "status"],
        ["notify", "x"],
      ]) {
        const run = await place.tend(args);
        expect({ args, code: run.code }).toEqual({ args, code: 3 });
        expect(run.stderr).toContain(
          `configuration ${config} is writable by others (owner uid ${place.uid}, mode 0666): the configuration ` +
            `holds command lines tend runs as you: refused. Fix: chmod o-w ${config}`,
        );
      }
      // doctor says it in its config row, with the fix, and fails (exit 1): the one place to look.
      const doctor = await place.tend(["doctor"]);
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(
        new RegExp(
          `config\\s+missing\\s+configuration .* is writable by others \\(owner uid ${place.uid}, mode 0666\\)`,
        ),
      );
      expect(doctor.stdout).toContain("Fix: chmod o-w");
      chmodSync(outside, 0o600);
      chownSync(outside, 65534, 65534); // nobody's
      const theirs = await place.tend(["watchdog", "pass"]);
      expect(theirs.code).toBe(3);
      expect(theirs.stderr).toContain(`belongs to another user (owner uid 65534, mode 0600)`);
      expect(theirs.stderr).toContain(`Fix: chown ${place.uid} ${config}`);
      expect(readFileSync(proof.outside, "utf8")).toBe(""); // nothing of theirs ran
      chownSync(outside, place.uid, place.uid);
      expect((await place.tend(["watchdog", "pass"])).code).toBe(0);
      expect(readFileSync(proof.outside, "utf8")).toContain(`uid=${place.uid}`);
    });

    test("a directory others may write (not sticky) holding it is refused; a sticky one (/tmp) is not", async () => {
      const place = (box = openPlace(where));
      place.writeScratch("open/tend.toml", pwnConfig(place.state, place.scratch("proof").inside), 0o600);
      const open = place.scratch("open");
      chmodSync(open.outside, 0o777);
      const config = `${open.inside}/tend.toml`;
      const run = await place.tend(["watchdog", "validate", "--config", config]);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(`the directory holding the configuration ${open.inside} is writable by others`);
      chmodSync(open.outside, 0o1777);
      expect((await place.tend(["watchdog", "validate", "--config", config])).code).toBe(0);
    });
  });
