// The configuration holds command lines tend runs, so, as OpenSSH's StrictModes: a file (or its directory)
// writable by others, or owned by another user than the one running tend or root, is refused by every
// command, validate included: exit 3, naming the file, its owner and mode, and the fix (#39). On this host
// (tend as root) and inside the Termux-shaped phone (test/places.ts: tend as the app's uid 10123).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
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

    // #62 F3, F7: an ACL's mask reads as the group bits; group root is root's own private group. So a
    // `setfacl -m u:nobody:rw` on root's config passed, and nobody's command ran as root.
    test("an ACL that lets another user write the file or its directory: refused, nothing of theirs run", async () => {
      const place = (box = openPlace(where));
      const proof = place.scratch("pwned");
      place.writeScratch("pwned", "");
      place.writeScratch("acl/tend.toml", pwnConfig(place.state, proof.inside), 0o600);
      const dir = place.scratch("acl");
      chmodSync(dir.outside, 0o755);
      const config = `${dir.inside}/tend.toml`;
      const setfacl = (...args: string[]) => {
        const run = Bun.spawnSync(["setfacl", ...args]);
        if (run.exitCode !== 0) throw new Error(`setfacl ${args.join(" ")}: ${run.stderr}`);
      };
      setfacl("-m", "u:nobody:rw", `${dir.outside}/tend.toml`);
      const file = await place.tend(["watchdog", "pass", "--config", config]);
      expect(file.code).toBe(3);
      expect(file.stderr).toContain(
        `configuration ${config} is writable by others (its ACL lets user 65534 write) ` +
          `(owner uid ${place.uid}, mode 0660)`,
      );
      expect(file.stderr).toContain(`Fix: setfacl -b ${config}`);
      setfacl("-b", `${dir.outside}/tend.toml`);
      setfacl("-m", "g:nogroup:rwx", dir.outside);
      const directory = await place.tend(["watchdog", "pass", "--config", config]);
      expect(directory.code).toBe(3);
      expect(directory.stderr).toContain(`the directory holding the configuration ${dir.inside} is writable by others`);
      expect(directory.stderr).toContain("its ACL lets group 65534 write");
      // An ACL that lets only the owner write (a read entry for another user) is no reason to refuse.
      setfacl("-b", dir.outside);
      setfacl("-m", "u:nobody:r", `${dir.outside}/tend.toml`);
      expect(readFileSync(proof.outside, "utf8")).toBe("");
      expect((await place.tend(["watchdog", "validate", "--config", config])).code).toBe(0);
      // Nor one whose mask takes the write away (`chmod g-w` on a file with named entries): the group
      // bits are the mask, so with them clear no entry may write (the ACL is not even read then).
      setfacl("-m", "u:nobody:rw", `${dir.outside}/tend.toml`);
      chmodSync(`${dir.outside}/tend.toml`, 0o640);
      expect(Bun.spawnSync(["getfacl", "-c", `${dir.outside}/tend.toml`]).stdout.toString()).toContain(
        "user:nobody:rw-\t#effective:r--",
      );
      expect((await place.tend(["watchdog", "validate", "--config", config])).code).toBe(0);
      chmodSync(`${dir.outside}/tend.toml`, 0o660);
      expect((await place.tend(["watchdog", "validate", "--config", config])).code).toBe(3);
      expect(readFileSync(proof.outside, "utf8")).toBe("");
    });

    test("every directory from / down, each symlink's: a link in a directory others may write is refused", async () => {
      const place = (box = openPlace(where));
      place.writeScratch("mine/tend.toml", pwnConfig(place.state, place.scratch("proof").inside), 0o600);
      const mine = place.scratch("mine");
      chmodSync(mine.outside, 0o755);
      // A world-writable directory two levels above the configuration: anyone may rename what is below.
      place.writeScratch("open/deep/keep", "");
      const open = place.scratch("open");
      chmodSync(open.outside, 0o777);
      chmodSync(`${open.outside}/deep`, 0o755);
      Bun.spawnSync(["cp", `${mine.outside}/tend.toml`, `${open.outside}/deep/tend.toml`]);
      chmodSync(`${open.outside}/deep/tend.toml`, 0o600);
      chownSync(`${open.outside}/deep/tend.toml`, place.uid, place.uid);
      const above = await place.tend(["watchdog", "validate", "--config", `${open.inside}/deep/tend.toml`]);
      expect(above.code).toBe(3);
      expect(above.stderr).toContain(`the directory on the way ${open.inside} is writable by others`);
      // A symlink to a safe configuration, the link kept in a world-writable directory: another user may flip it.
      Bun.spawnSync(["ln", "-s", `${mine.inside}/tend.toml`, `${open.outside}/link.toml`]);
      const link = await place.tend(["watchdog", "validate", "--config", `${open.inside}/link.toml`]);
      expect(link.code).toBe(3);
      expect(link.stderr).toContain(`the directory holding the symlink link.toml ${open.inside} is writable by others`);
      // The same link kept where only its owner writes: followed, and the configuration is fine.
      Bun.spawnSync(["ln", "-s", `${mine.inside}/tend.toml`, `${mine.outside}/link.toml`]);
      expect((await place.tend(["watchdog", "validate", "--config", `${mine.inside}/link.toml`])).code).toBe(0);
    });

    // F8: a link another user flips while tend checks and reads (root read nobody's config in 16 of 300
    // runs when the check was by path): a directory of theirs on the way is refused, every time.
    // On the host only: setpriv flips the link as nobody (the phone's own user cases are above).
    if (where === "host")
      test("another user flipping a link on the way, 60 runs: refused each time, their command never run", async () => {
        const place = (box = openPlace(where));
        const proof = place.scratch("pwned");
        place.writeScratch("pwned", "");
        chmodSync(proof.outside, 0o666);
        place.writeScratch("mine/tend.toml", pwnConfig(place.state, place.scratch("fine").inside), 0o600);
        place.writeScratch("theirs/evil.toml", pwnConfig(place.state, proof.inside), 0o644);
        const [mine, theirs] = [place.scratch("mine"), place.scratch("theirs")];
        chmodSync(mine.outside, 0o755);
        chownSync(theirs.outside, 65534, 65534);
        chmodSync(dirname(theirs.outside), 0o755); // the test's own directory: nobody may reach theirs
        chownSync(`${theirs.outside}/evil.toml`, 65534, 65534);
        const link = `${theirs.outside}/tend.toml`;
        const flipper = Bun.spawn(
          [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            `while :; do ln -sfn ${mine.outside}/tend.toml ${link}.new && mv -T ${link}.new ${link}; ` +
              `ln -sfn ${theirs.outside}/evil.toml ${link}.new && mv -T ${link}.new ${link}; done`,
          ],
          // setpriv execs sh (runuser forked it, and the loop outlived the kill): the PID killed is the loop's.
          { stdout: "ignore", stderr: "ignore" },
        );
        try {
          const codes = new Set<number>();
          let last = "";
          // Named through a link in a directory of the user's own, whose target is the link they flip.
          Bun.spawnSync(["ln", "-s", `${theirs.inside}/tend.toml`, `${mine.outside}/chain.toml`]);
          for (let count = 0; count < 60; count++) {
            const run = await place.tend(["watchdog", "pass", "--config", `${mine.inside}/chain.toml`]);
            codes.add(run.code);
            last = run.stderr;
          }
          expect({ codes: [...codes], said: last }).toEqual({
            codes: [3],
            said: expect.stringContaining("belongs to another user"),
          });
          expect(readFileSync(proof.outside, "utf8")).toBe("");
        } finally {
          flipper.kill("SIGKILL");
          await flipper.exited;
          expect(Bun.spawnSync(["kill", "-0", String(flipper.pid)]).exitCode).not.toBe(0); // gone, none left
        }
      }, 120_000);
  });
