// watchdog import SCRIPT: a draft tend.toml from a hand-written watchdog script, each value from the script.
// Held to two oracles: `watchdog validate` takes every draft, and for the migration guide's own example the
// draft says what the guide's hand-made tend.toml says. A user's script that is not the guide's gets its
// own rules, never the guide's (its timeout, strike limit, fail codes, socket, busy bound). On this host and
// inside the phone (test/places.ts: the scripts copied into its HOME, the crontab cronie's); the docs' example
// is this checkout's.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { publicCopy, removePublicCopy, ROOT, Sandbox, testUser } from "./helpers.ts";
import { openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

const VARIANTS = join(ROOT, "test", "import");
const GUIDE_SCRIPT = join(ROOT, "docs", "migrating", "watchdog.sh");
const USER = "tendimport";
let stopBox: Sandbox | null = null;
let place: Place | null = null;
let user: ReturnType<typeof testUser> | null = null;
beforeAll(() => {
  user = testUser(USER);
});
afterEach(async () => {
  Bun.spawnSync(["crontab", "-r", "-u", USER]);
  stopBox?.cleanup();
  stopBox = null;
  await place?.cleanup();
  place = null;
});
afterAll(() => {
  user?.remove();
  removePublicCopy();
});

type Toml = Record<string, any>;
const parse = (text: string): Toml => Bun.TOML.parse(text) as Toml;
const service = (config: Toml, name: string) => config.service.find((one: Toml) => one.name === name);
const seconds = (duration: string) => {
  const [, number, unit] = /^(\d+)(ms|s|m|h)$/.exec(duration)!;
  return Number(number) * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit as "ms" | "s" | "m" | "h"];
};

/** A place, a script copied into its HOME (its path as tend sees it), and import's draft of one. */
function importAt(where: PlaceName, options = {}) {
  const at = (place = openPlace(where, options));
  const copy = (file: string) => {
    const name = `scripts/${file.slice(ROOT.length + 1)}`;
    at.writeScratch(name, readFileSync(file), statSync(file).mode & 0o777);
    return at.scratch(name).inside;
  };
  const draftOf = async (file: string) => {
    const result = await at.tend(["watchdog", "import", copy(file)]);
    return { ...result, config: result.code === 0 ? parse(result.stdout) : null };
  };
  return { at, copy, draftOf };
}

for (const where of PLACES)
  describe(`watchdog import (${where})`, () => {
    test("every variant's draft passes validate; a script with nothing to map exits 1 (9 scripts)", async () => {
      const { at, copy } = importAt(where);
      const scripts = [GUIDE_SCRIPT, ...readdirSync(VARIANTS).map((name) => join(VARIANTS, name))].map(copy);
      expect(scripts.length).toBeGreaterThanOrEqual(9);
      for (const script of scripts) {
        const result = await at.tend(["watchdog", "import", script]);
        if (script.endsWith("backup.sh")) {
          expect(result.code).toBe(1);
          expect(result.stderr).toContain(`nothing in ${script} could be mapped to a service`);
          continue;
        }
        expect({ script, code: result.code, stderr: result.stderr }).toEqual({ script, code: 0, stderr: "" });
        at.writeScratch("draft.toml", result.stdout);
        const validated = await at.tend(["watchdog", "validate", "--config", at.scratch("draft.toml").inside]);
        expect({ script, code: validated.code, stderr: validated.stderr }).toEqual({ script, code: 0, stderr: "" });
      }
    });

    test("the guide's example: the draft says what the guide's own tend.toml says, value by value", async () => {
      const { draftOf } = importAt(where);
      const { config, stdout: draft } = await draftOf(GUIDE_SCRIPT);
      const guide = parse(readFileSync(join(ROOT, "docs", "migrating", "tend.toml"), "utf8"));
      expect(config!.notify.url).toBe(guide.notify.url);
      expect(config!.defaults.failures).toBe(guide.defaults.failures);
      for (const name of ["blog", "engine", "ngrok"]) {
        const [drafted, written] = [service(config!, name), service(guide, name)];
        expect({ name, check: { ...drafted.check, timeout: seconds(drafted.check.timeout) } }).toEqual({
          name,
          check: { ...written.check, timeout: seconds(written.check.timeout) },
        });
        expect(drafted.restart).toEqual(written.restart);
      }
      const engine = service(config!, "engine");
      expect(engine.busy.log).toBe(service(guide, "engine").busy.log);
      expect(seconds(engine.busy.fresh)).toBe(seconds(service(guide, "engine").busy.fresh));
      // The tunnel, which the guide watches with blogtunnel: its fail codes are the script's case.
      expect(service(config!, "blogtunnel").check.fail_codes).toEqual([502, 503, 504, 530, 0]);
      // What tend does itself is said, not silently dropped.
      expect(draft).toContain("#   line 25: flock -n 9 || exit 0 (tend takes its own lock)");
      expect(draft).toContain("(tend keeps its own heartbeat: status, /healthz)");
      expect(draft).toContain('max = "30m" is tend\'s default');
    });

    test("a script not the guide's gets its own rules (timeout, strikes, codes, socket, busy)", async () => {
      const { draftOf } = importAt(where);
      const { config } = await draftOf(join(VARIANTS, "user-phone.sh"));
      expect(config!.defaults.failures).toBe(2); // FAIL_LIMIT=2, not the guide's 3
      expect(config!.notify.url).toBe("https://ntfy.example.net/phone-alerts");
      const [site, indexer, tunnel] = ["site", "indexer", "tunnel"].map((name) => service(config!, name));
      for (const one of [site, indexer, tunnel]) {
        expect(one.check.timeout).toBe("8s");
        expect(one.restart.socket).toBe("/data/data/com.termux/files/usr/tmp/panes.sock");
      }
      expect(tunnel.check.fail_codes).toEqual([502, 504, 0]);
      expect(indexer.busy).toEqual({ log: "~/indexer/indexer.log", fresh: "600s" });
      expect(site.restart).toEqual({
        tmux: "web:site",
        run: "cd ~/site && hugo server -p 4000",
        socket: "/data/data/com.termux/files/usr/tmp/panes.sock",
      });
    });

    test("systemd restarts, a grep on the answer, a PID-only check (its trap on top), names by restart", async () => {
      const { draftOf } = importAt(where);
      const two = (await draftOf(join(VARIANTS, "two-services.sh"))).config!;
      expect(two.service.map((one: Toml) => [one.name, one.check.http, one.restart.systemd])).toEqual([
        ["shop-a", "http://127.0.0.1:8001/", "shop-a.service"],
        ["shop-b", "http://127.0.0.1:8002/", "shop-b.service"],
      ]);
      const grep = (await draftOf(join(VARIANTS, "grep-json.sh"))).config!;
      expect(service(grep, "worker").check).toEqual({
        http: "http://127.0.0.1:7070/status",
        timeout: "10s",
        contains: '"status":"ok"',
      });
      const pid = await draftOf(join(VARIANTS, "pidfile-kill0.sh"));
      expect(service(pid.config!, "api")).toMatchObject({ pidfile: "/run/api.pid", check: { process: true } });
      expect(pid.stdout).toContain("#   HIGH line 3: pid-only-check: probe what it serves");
      const count = await draftOf(join(VARIANTS, "gt-count.sh"));
      expect(count.config!.defaults.failures).toBe(3); // -gt 2
      expect(count.stdout).toContain("#   HIGH line 7: kill-by-pattern");
      expect(service(count.config!, "service-3000").restart).toBeUndefined(); // pkill + nohup: nothing tend can run
    });
  });

test("--out: written once, 0600, never over a file (exit 3); the crontab line gives the period", async () => {
  const box = (stopBox = new Sandbox());
  chmodSync(box.dir, 0o1777);
  const script = join(box.dir, "watchdog.sh");
  copyFileSync(GUIDE_SCRIPT, script);
  chmodSync(script, 0o755);
  Bun.spawnSync(["crontab", "-u", USER, "-"], {
    stdin: new TextEncoder().encode(`*/10 * * * * ${script} >> /dev/null 2>&1\n`),
  });
  const out = join(box.dir, "draft.toml");
  const asUser = (...args: string[]) =>
    Bun.spawnSync(["runuser", "-u", USER, "--", "env", `HOME=${box.dir}`, publicCopy().tend(), "watchdog", ...args], {
      cwd: "/",
    });
  const first = asUser("import", script, "--out", out);
  expect(first.exitCode).toBe(0);
  expect(first.stdout.toString()).toContain(`${out}: written (4 services`);
  expect(statSync(out).mode & 0o777).toBe(0o600);
  const draft = parse(readFileSync(out, "utf8"));
  expect(draft.watchdog.interval).toBe("10m");
  const again = asUser("import", script, "--out", out);
  expect(again.exitCode).toBe(3);
  expect(again.stderr.toString()).toContain("exists: the draft is never written over a file");
  expect(readFileSync(out, "utf8")).toContain("# A draft tend.toml from");
  expect(existsSync(`${out}.tmp`)).toBe(false);
  expect((await box.tend(["watchdog", "import", join(box.dir, "nosuch.sh")])).code).toBe(2);
});

test("on the phone, --out: written once, 0600, never over a file; cronie's crontab line gives the period", async () => {
  const { at, copy } = importAt("phone", { termuxServices: true });
  const script = copy(GUIDE_SCRIPT);
  at.writeScratch("crontab.txt", `*/10 * * * * ${script} >> /dev/null 2>&1\n`);
  expect((await at.shell(`crontab - < ${at.scratch("crontab.txt").inside}`)).code).toBe(0);
  const out = at.scratch("draft.toml");
  const first = await at.tend(["watchdog", "import", script, "--out", out.inside]);
  expect(first.code).toBe(0);
  expect(first.stdout).toContain(`${out.inside}: written (4 services`);
  expect(statSync(out.outside).mode & 0o777).toBe(0o600);
  expect(parse(readFileSync(out.outside, "utf8")).watchdog.interval).toBe("10m");
  const again = await at.tend(["watchdog", "import", script, "--out", out.inside]);
  expect(again.code).toBe(3);
  expect(again.stderr).toContain("exists: the draft is never written over a file");
  expect(existsSync(`${out.outside}.tmp`)).toBe(false);
});

test("docs/watchdog.md's example draft is what import writes today for test/import/user-phone.sh", async () => {
  const box = (stopBox = new Sandbox());
  const docs = readFileSync(join(ROOT, "docs", "watchdog.md"), "utf8");
  const shown = /`tend watchdog import test\/import\/user-phone\.sh`[^`]*?```toml\n([\s\S]*?)```/.exec(docs);
  expect(shown).not.toBeNull();
  const draft = (await box.tend(["watchdog", "import", join(VARIANTS, "user-phone.sh")])).stdout;
  expect(shown![1]).toBe(draft.replaceAll(`${ROOT}/`, ""));
});
