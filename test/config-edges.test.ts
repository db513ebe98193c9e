// Configuration edges the attack found (#39): JSON's duplicate keys are said (TOML refuses them too), and a
// number past what a duration can hold is said as itself, never as `null`.
import { afterEach, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { duplicateJsonKey } from "../lib/config/load.ts";
import { Sandbox } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

test("a JSON configuration with a key given twice: exit 2 naming its path, nothing done", async () => {
  box = new Sandbox();
  const path = join(box.dir, "tend.json");
  writeFileSync(path, `{"watchdog": {"state_dir": "${box.state}", "interval": "1s", "interval": "5s"}}`, {
    mode: 0o600,
  });
  const run = await box.tend(["watchdog", "validate", "--config", path]);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain("watchdog.interval is given twice (the second would silently win)");
  expect(duplicateJsonKey('{"service": [{"name": "a"}, {"name": "b", "check": {}, "name": "c"}]}')).toBe(
    "service[1].name",
  );
  expect(duplicateJsonKey('{"a": "x\\"", "b": {"a": 1}}')).toBeNull();
});

test("interval = 1e309 (TOML's infinity): said as itself, not `null is not a duration`", async () => {
  box = new Sandbox();
  box.writeConfig(`[watchdog]\nstate_dir = "${box.state}"\ninterval = 1e309\n`);
  const run = await box.tend(["watchdog", "validate"]);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain(
    "watchdog.interval: Infinity (a number past what a duration or count can hold) is not a duration",
  );
  expect(run.stderr).not.toContain("null");
});
