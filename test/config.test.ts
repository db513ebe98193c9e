// Configuration: lookup order, defaults, and a table of malformed configs, each run through the binary, on
// this host and inside the phone (test/places.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../lib/config/load.ts";
import { formatDuration, parseDuration } from "../lib/core/duration.ts";
import { MALFORMED, service } from "./malformed.ts";
import { closePlaces, openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

/** One place of each kind for the whole file: each test writes in a directory of its own there. */
const opened: Partial<Record<PlaceName, Place>> = {};
const placeOf = (where: PlaceName) => (opened[where] ??= openPlace(where));
afterAll(async () => {
  for (const place of Object.values(opened)) await place.cleanup();
  closePlaces();
});
/** A file of the place's HOME: its path as tend sees it (the user's, 0644). */
const put = (where: PlaceName, name: string, text: string) => {
  placeOf(where).writeScratch(name, text);
  return placeOf(where).scratch(name).inside;
};

test("there are at least 30 malformed configurations", () => expect(MALFORMED.length).toBeGreaterThanOrEqual(30));

for (const where of PLACES)
  describe(`malformed configurations: exit 2, the key path named, nothing done (${where})`, () => {
    test.each(MALFORMED)("%s", async (_name, text, message) => {
      const dir = `case-${Math.random().toString(36).slice(2)}`;
      const path = put(where, `${dir}/${text.startsWith("{") ? "tend.json" : "tend.toml"}`, text);
      // The state dir lives inside the case dir: a pass that acted at all would create it.
      const state = placeOf(where).scratch(`${dir}/state`);
      const env = { TEND_STATE_DIR: state.inside };
      const validate = await placeOf(where).tend(["watchdog", "validate", "--config", path], env);
      expect(validate.code).toBe(2);
      expect(validate.stderr).toContain(message);
      const pass = await placeOf(where).tend(["watchdog", "pass", "--config", path], env);
      expect(pass.code).toBe(2);
      expect(pass.stdout).toBe("");
      expect(existsSync(state.outside)).toBe(false);
    });
    test("a pass from cron logs the config error in the existing state dir, and does nothing else", async () => {
      const at = placeOf(where);
      const state = at.scratch("cron-case/state");
      expect((await at.shell(`mkdir -p '${state.inside}' && chmod 700 '${state.inside}'`)).code).toBe(0);
      const path = put(
        where,
        "cron-case/tend.toml",
        `state_dir = "${state.inside}"\n[[service]]\nname = "web"\ncheck = { http = "nope://x\\u001b[31m" }\n`,
      );
      const pass = await at.tend(["watchdog", "pass", "--config", path]);
      expect(pass.code).toBe(2);
      const log = readFileSync(join(state.outside, "watchdog.log"), "utf8");
      expect(log).toMatch(/\[ERROR\] configuration: .*service\[0\]\.check\.http/);
      expect(log).not.toContain("\u001b");
      expect(readdirSync(state.outside).filter((name) => name !== "services")).toEqual(["watchdog.log"]);
      expect(existsSync(join(state.outside, "services", "web.json"))).toBe(false);
    });
  });

for (const where of PLACES)
  describe(`configuration lookup and plan (${where})`, () => {
    test("--config > $TEND_CONFIG > $XDG_CONFIG_HOME/tend/tend.toml > /etc/tend/tend.toml", async () => {
      const at = placeOf(where);
      const xdg = at.scratch("xdg").inside;
      put(where, "xdg/tend/tend.toml", service("", 'tcp = "127.0.0.1:1"').replace('"web"', '"from-xdg"'));
      const viaEnv = put(where, "env.toml", service("", 'tcp = "127.0.0.1:1"').replace('"web"', '"from-env"'));
      const viaFlag = put(
        where,
        "flag.json",
        JSON.stringify({ service: [{ name: "from-flag", check: { tcp: "127.0.0.1:1" } }] }),
      );
      const plan = async (args: string[], env: Record<string, string>) =>
        (await at.tend(["watchdog", "plan", ...args], env)).stdout;
      expect(await plan(["--config", viaFlag], { TEND_CONFIG: viaEnv, XDG_CONFIG_HOME: xdg })).toContain(
        '[service "from-flag"]',
      );
      expect(await plan([], { TEND_CONFIG: viaEnv, XDG_CONFIG_HOME: xdg })).toContain('[service "from-env"]');
      expect(await plan([], { TEND_CONFIG: "", XDG_CONFIG_HOME: xdg })).toContain('[service "from-xdg"]');
      const none = await at.tend(["watchdog", "validate"], {
        TEND_CONFIG: "",
        XDG_CONFIG_HOME: at.scratch("nothing").inside,
      });
      // The phone has no /etc/tend; this host may have one (an installed tend's).
      if (where === "phone" || !existsSync("/etc/tend/tend.toml")) {
        expect(none.code).toBe(2);
        expect(none.stderr).toContain("no configuration found");
      }
    });

    test("plan is stable: sorted keys, every default filled in", async () => {
      const at = placeOf(where);
      const path = put(
        where,
        "plan.toml",
        `[watchdog]\nstate_dir = "/s"\n` + service('pidfile = "web.pid"\n[service.restart]\nspawn = ["srv"]'),
      );
      const first = await at.tend(["watchdog", "plan", "--config", path]);
      expect(first.code).toBe(0);
      expect(first.stdout).toBe((await at.tend(["watchdog", "plan", "--config", path])).stdout);
      const block = first.stdout.split('[service "web"]\n')[1].trim().split("\n");
      const keys = block.map((line) => line.split(" = ")[0]);
      expect(keys).toEqual([...keys].sort());
      expect(block).toContain('verify_timeout = "1m"');
      expect(block).toContain('restart.output = "/s/services/web.out"');
      expect(block).toContain('pidfile = "/s/web.pid"');
    });
  });

describe("defaults", () => {
  test("[defaults] fill every service; the service and then the check override them", () => {
    const config = parseConfig(
      `[defaults]
timeout = "7s"
failures = 4
cooldown = "1m"
[[service]]
name = "a"
failures = 2
[service.check]
tcp = "h:1"
[[service]]
name = "b"
[service.check]
tcp = "h:1"
timeout = "250ms"
`,
      "/x/tend.toml",
      { HOME: "/home/u" },
    );
    const [a, b] = config.services;
    expect([a.failures, a.timeoutMs, a.cooldownMs, a.graceMs]).toEqual([2, 7000, 60_000, 30_000]);
    expect([b.failures, b.timeoutMs, b.check.timeoutMs]).toEqual([4, 250, 250]);
    expect(config.watchdog.stateDir).toBe("/home/u/.local/state/tend");
    expect(config.watchdog.log).toBe("/home/u/.local/state/tend/watchdog.log");
  });

  test("state_dir: the key, else $TEND_STATE_DIR, else $XDG_STATE_HOME/tend; ~ expands", () => {
    const text = (dir?: string) => (dir ? `[watchdog]\nstate_dir = "${dir}"\n` : "");
    expect(parseConfig(text("~/st"), "/c/t.toml", { HOME: "/h", TEND_STATE_DIR: "/e" }).watchdog.stateDir).toBe(
      "/h/st",
    );
    expect(parseConfig(text(), "/c/t.toml", { HOME: "/h", TEND_STATE_DIR: "/e" }).watchdog.stateDir).toBe("/e");
    expect(parseConfig(text(), "/c/t.toml", { HOME: "/h", XDG_STATE_HOME: "/x" }).watchdog.stateDir).toBe("/x/tend");
  });
});

describe("durations", () => {
  test.each([
    ["250ms", 250],
    ["20s", 20_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1d", 86_400_000],
    [30, 30_000],
    ["1.5s", 1500],
    ["0s", 0],
  ] as [string | number, number][])("%p = %p ms", (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each(["20x", "", "5 m", "-1s", "1m30s", "s"])("%p is not a duration", (text) =>
    expect(parseDuration(text)).toBeNull(),
  );
  test("format round-trips", () => {
    for (const ms of [250, 20_000, 300_000, 3_600_000, 86_400_000, 90_000])
      expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});

for (const where of PLACES)
  describe(`bundled examples (${where})`, () => {
    test("examples/tend.toml, the annotated reference, is a valid configuration", async () => {
      const example = readFileSync(join(import.meta.dir, "..", "examples", "tend.toml"), "utf8");
      const result = await placeOf(where).tend([
        "watchdog",
        "validate",
        "--config",
        put(where, "example.toml", example),
      ]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("ok (5 services)");
    });
  });

for (const where of PLACES)
  test(`fail_codes may list no answer as 0 or "000" (blogtunnel --fail-codes); it still fails (${where})`, async () => {
    const at = placeOf(where);
    const state = at.scratch("fail-codes/state").inside;
    const config = (codes: string) =>
      `[watchdog]\nstate_dir = "${state}"\n[[service]]\nname = "tunnel"\n` +
      `[service.check]\nhttp = "http://127.0.0.1:1/"\nfail_codes = ${codes}\n`;
    const path = at.scratch("fail-codes/tend.toml").inside;
    for (const codes of ["[502, 503, 504, 530, 0]", '[502, 530, "000"]']) {
      put(where, "fail-codes/tend.toml", config(codes));
      expect((await at.tend(["watchdog", "validate", "--config", path])).code).toBe(0);
      expect((await at.tend(["watchdog", "plan", "--config", path])).stdout).toContain("check.fail_codes = [");
    }
    // Nothing answers on port 1: no answer fails whether or not it is listed.
    const pass = await at.tend(["watchdog", "pass", "--config", path]);
    expect(pass.stdout).toContain("tunnel failed health check (no answer: connection refused (HTTP 000), failure 1/3)");
    put(where, "fail-codes/tend.toml", config("[502, 1]"));
    const bad = await at.tend(["watchdog", "validate", "--config", path]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("service[0].check.fail_codes: [502,1] is not a non-empty array of HTTP status codes");
    expect(bad.stderr).toContain('(100-599, and 0 or "000" for no answer)');
  });
