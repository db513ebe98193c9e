// The configuration holds command lines tend runs, so, as OpenSSH's StrictModes: a file (or its directory)
// writable by others, or owned by another user than the one running tend or root, is refused by every
// command, validate included: exit 3, naming the file, its owner and mode, and the fix (#39).
import { afterEach, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

const pwnConfig = (state: string, proof: string) =>
  `[watchdog]\nstate_dir = "${state}"\n[[service]]\nname = "x"\n` +
  `[service.check]\ncommand = ["sh", "-c", "id > ${proof}"]\n`;

test("writable by others, or another user's: refused with the fix, nothing run; fixed, it runs", async () => {
  box = new Sandbox();
  const proof = join(box.dir, "pwned");
  box.writeConfig(pwnConfig(box.state, proof));
  chmodSync(box.config, 0o666);
  for (const args of [
    ["watchdog", "validate"],
    ["watchdog", "pass"],
    ["watchdog", "status"],
    ["notify", "x"],
  ]) {
    const run = await box.tend(args);
    expect({ args, code: run.code }).toEqual({ args, code: 3 });
    expect(run.stderr).toContain(
      `configuration ${box.config} is writable by others (owner uid 0, mode 0666): the configuration holds ` +
        `command lines tend runs as you: refused. Fix: chmod o-w ${box.config}`,
    );
  }
  // doctor says it in its config row, with the fix, and fails (exit 1): the one place to look.
  const doctor = await box.tend(["doctor"]);
  expect(doctor.code).toBe(1);
  expect(doctor.stdout).toMatch(/config\s+missing\s+configuration .* is writable by others \(owner uid 0, mode 0666\)/);
  expect(doctor.stdout).toContain("Fix: chmod o-w");
  chmodSync(box.config, 0o600);
  chownSync(box.config, 65534, 65534); // nobody's
  const theirs = await box.tend(["watchdog", "pass"]);
  expect(theirs.code).toBe(3);
  expect(theirs.stderr).toContain(`belongs to another user (owner uid 65534, mode 0600)`);
  expect(theirs.stderr).toContain(`Fix: chown 0 ${box.config}`);
  expect(Bun.file(proof).size).toBe(0); // nothing of theirs ran
  chownSync(box.config, 0, 0);
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  expect(await Bun.file(proof).text()).toContain("uid=0");
});

test("a directory others can write (not sticky) holding it is refused too; a sticky one like /tmp is not", async () => {
  box = new Sandbox();
  const open = join(box.dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const config = join(open, "tend.toml");
  writeFileSync(config, pwnConfig(box.state, join(box.dir, "proof")), { mode: 0o600 });
  const run = await box.tend(["watchdog", "validate", "--config", config]);
  expect(run.code).toBe(3);
  expect(run.stderr).toContain(`the directory holding the configuration ${open} is writable by others`);
  chmodSync(open, 0o1777);
  expect((await box.tend(["watchdog", "validate", "--config", config])).code).toBe(0);
});
