// Configuration edges the attack found (#39): JSON's duplicate keys are said (TOML refuses them too), and a
// number past what a duration can hold is said as itself, never as `null`. On this host and inside the phone.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { duplicateJsonKey } from "../lib/config/load.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let place: Place | null = null;
afterEach(async () => {
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

test("duplicateJsonKey names the path of a key given twice, and nothing in strings or other objects", () => {
  expect(duplicateJsonKey('{"service": [{"name": "a"}, {"name": "b", "check": {}, "name": "c"}]}')).toBe(
    "service[1].name",
  );
  expect(duplicateJsonKey('{"a": "x\\"", "b": {"a": 1}}')).toBeNull();
});

for (const where of PLACES)
  describe(`configuration edges (${where})`, () => {
    test("a JSON configuration with a key given twice: exit 2 naming its path, nothing done", async () => {
      const at = (place = openPlace(where));
      at.writeScratch(
        "tend.json",
        `{"watchdog": {"state_dir": "${at.state}", "interval": "1s", "interval": "5s"}}`,
        0o600,
      );
      const run = await at.tend(["watchdog", "validate", "--config", at.scratch("tend.json").inside]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("watchdog.interval is given twice (the second would silently win)");
    });

    test("interval = 1e309 (TOML's infinity): said as itself, not `null is not a duration`", async () => {
      const at = (place = openPlace(where));
      at.writeConfig(`[watchdog]\nstate_dir = "${at.state}"\ninterval = 1e309\n`);
      const run = await at.tend(["watchdog", "validate"]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "watchdog.interval: Infinity (a number past what a duration or count can hold) is not a duration",
      );
      expect(run.stderr).not.toContain("null");
    });
  });
