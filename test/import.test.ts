// watchdog import SCRIPT: a draft tend.toml from a hand-written watchdog script, each value from the script.
// Held to two oracles: `watchdog validate` takes every draft, and for the migration guide's own example the
// draft says what the guide's hand-made tend.toml says. A user's script that is not the guide's gets its
// own rules, never the guide's (its timeout, strike limit, fail codes, socket, busy bound). On this host and
// inside the phone (test/places.ts: the scripts copied into its HOME, the crontab cronie's); the docs' example
// is this checkout's.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { publicCopy, removePublicCopy, ROOT, Sandbox, TEND, testUser } from "./helpers.ts";
import { openPlace, PLACES, type Place, type PlaceName } from "./places.ts";
import { CORPUS, scoreCorpus, scoreDraft, table } from "./import-corpus.ts";
import { importScript } from "../lib/tools/import.ts";
import { parseConfig } from "../lib/config/load.ts";

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

// The corpus (test/import-corpus.ts): every script's draft scored value by value against the one written
// by hand, through the binary; the table is printed so a failure shows what moved.
test("the corpus: 20+ real-shaped scripts, 90 % of values right, no dangerous draft, every draft validates", () => {
  const scores = scoreCorpus(TEND);
  console.log(table(scores));
  expect(scores.length).toBeGreaterThanOrEqual(21);
  const right = scores.reduce((n, s) => n + s.right, 0);
  const all = scores.reduce((n, s) => n + s.right + s.missing.length + s.wrong.length, 0);
  expect(right / all).toBeGreaterThanOrEqual(0.9);
  expect(scores.flatMap((s) => s.dangerous.map((why) => `${s.script}: ${why}`))).toEqual([]);
  expect(scores.filter((s) => !s.validates && s.exit.got !== 2).map((s) => s.script)).toEqual([]);
  expect(scores.map((s) => [s.script, s.exit.got])).toEqual(scores.map((s) => [s.script, s.exit.want]));
}, 120_000);

test("no shape aborts the draft: every corpus script cut anywhere still gives a draft that validates", () => {
  const scripts = readdirSync(CORPUS)
    .filter((file) => file.endsWith(".sh"))
    .map((file) => join(CORPUS, file));
  let drafts = 0;
  for (const file of [GUIDE_SCRIPT, ...scripts]) {
    const text = readFileSync(file, "utf8");
    const cuts = new Set([...text.matchAll(/\n/g)].map((match) => match.index!));
    for (let at = 0; at < text.length; at += 41) cuts.add(at);
    for (const cut of cuts) {
      const { draft } = importScript(file, text.slice(0, cut));
      expect(() => parseConfig(draft, `${file} cut at ${cut}`, {})).not.toThrow();
      drafts++;
    }
  }
  expect(drafts).toBeGreaterThan(1000);
});

test("the scorer fails a draft that restarts what the script did not, or drops a restart without a word", () => {
  const expected = { service: [{ name: "api", check: { http: "http://127.0.0.1:1/" }, restart: { systemd: "api" } }] };
  const other = { service: [{ name: "api", check: { http: "http://127.0.0.1:1/" }, restart: { systemd: "nginx" } }] };
  expect(scoreDraft("x", expected, other, 0, "", true).dangerous.length).toBe(1);
  const dropped = { service: [{ name: "api", check: { http: "http://127.0.0.1:1/" } }] };
  expect(scoreDraft("x", expected, dropped, 0, "", true).dangerous.length).toBe(1);
  expect(scoreDraft("x", expected, dropped, 1, "", true).dangerous.length).toBe(0);
  const spurious = {
    service: [...expected.service, { name: "b", check: { tcp: "h:1" }, restart: { command: ["x"] } }],
  };
  expect(scoreDraft("x", expected, spurious, 0, "", true).dangerous.length).toBe(1);
});

for (const where of PLACES)
  describe(`watchdog import (${where})`, () => {
    test("every variant's draft passes validate; a script with nothing to map exits 1", async () => {
      const { at, copy } = importAt(where);
      const scripts = [
        GUIDE_SCRIPT,
        ...readdirSync(VARIANTS)
          .filter((name) => name.endsWith(".sh"))
          .map((name) => join(VARIANTS, name)),
      ].map(copy);
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
      for (const name of ["blog", "engine", "ngrok"]) {
        const [drafted, written] = [service(config!, name), service(guide, name)];
        expect(drafted.failures).toBe(guide.defaults.failures); // the script's -ge 3, on each service
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
      expect(service(config!, "blogtunnel").check.fail_codes).toEqual([0, 502, 503, 504, 530]);
      // What tend does itself is said, not silently dropped; every default it applied is listed on top.
      expect(draft).toContain("#   line 25: flock -n 9 || exit 0 (tend takes its own lock)");
      expect(draft).toContain("(tend keeps its own heartbeat: status, /healthz)");
      expect(draft).toContain('max = "30m" is tend\'s default');
      expect(draft).toContain("#   grace 30s, cooldown 10m, backoff 10s doubling to 5m, max_restarts 5 within 1h");
      // Every value says the line it came from.
      const values = draft.split("\n").filter((line) => /^\w+ = /.test(line));
      expect(values.filter((line) => !/  # (line \d+|.+)/.test(line))).toEqual([]);
      expect(draft).toContain('timeout = "20s"  # line 30: curl --max-time 20 in check_http()');
    });

    test("a script not the guide's gets its own rules (timeout, strikes, codes, socket, busy)", async () => {
      const { draftOf } = importAt(where);
      const { config } = await draftOf(join(VARIANTS, "user-phone.sh"));
      expect(config!.notify.url).toBe("https://ntfy.example.net/phone-alerts");
      const [site, indexer, tunnel] = ["site", "indexer", "tunnel"].map((name) => service(config!, name));
      for (const one of [site, indexer, tunnel]) {
        expect(one.failures).toBe(2); // FAIL_LIMIT=2, not the guide's 3
        expect(one.check.timeout).toBe("8s");
        expect(one.restart.socket).toBe("/data/data/com.termux/files/usr/tmp/panes.sock");
      }
      expect(tunnel.check.fail_codes).toEqual([0, 502, 504]);
      expect(indexer.busy).toEqual({ log: "~/indexer/indexer.log", fresh: "10m" });
      expect(site.restart).toEqual({
        tmux: "web:site",
        run: "cd ~/site && hugo server -p 4000",
        socket: "/data/data/com.termux/files/usr/tmp/panes.sock",
      });
    });

    test("a restart import cannot carry: watch only, said on stderr with its line, exit 1 with the draft", async () => {
      const { at } = importAt(where);
      at.writeScratch(
        "scripts/env-unit.sh",
        [
          "#!/bin/sh",
          "# the unit comes from the environment",
          'curl -sf -m 5 http://127.0.0.1:7000/ > /dev/null || systemctl restart "$APP_UNIT"',
          "",
        ].join("\n"),
      );
      const run = await at.tend(["watchdog", "import", at.scratch("scripts/env-unit.sh").inside]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        'not carried over: line 3: systemctl restart "$APP_UNIT": its unit is not set in the script',
      );
      const draft = parse(run.stdout);
      expect(draft.service[0].restart).toBeUndefined();
      expect(draft.service[0].check.http).toBe("http://127.0.0.1:7000/");
      expect(run.stdout).toContain("# Restarts the script makes that this draft does not (carry them over by hand):");
    });

    test("a pane command with $(...), backquotes, a leading #: exact or not at all, no placeholder", async () => {
      const { at } = importAt(where);
      at.writeScratch(
        "scripts/hostile.sh",
        [
          "#!/bin/bash",
          'code=$(curl -s -o /dev/null -w "%{http_code}" -m 4 http://127.0.0.1:4100/)',
          'if [ "$code" != 200 ]; then tmux respawn-pane -k -t main:a "rm -rf $(cat ~/.dir)/cache && cd `pwd`"; fi',
          "nc -z -w 2 127.0.0.1 4200 || tmux respawn-pane -k -t main:b '#!literal $(kept) `as is`'",
          "nc -z -w 2 127.0.0.1 4300 || tmux respawn-pane -k -t main:c '# a comment first'",
          "",
        ].join("\n"),
      );
      const run = await at.tend(["watchdog", "import", at.scratch("scripts/hostile.sh").inside]);
      expect(run.code).toBe(1); // the first pane's command depends on the run: not carried
      expect(run.stdout).not.toContain(" _ ");
      const draft = parse(run.stdout);
      expect(draft.service.find((one: Toml) => one.check.http === "http://127.0.0.1:4100/").restart).toBeUndefined();
      expect(service(draft, "b").restart.run).toBe("#!literal $(kept) `as is`");
      expect(service(draft, "c").restart.run).toBe("# a comment first");
      at.writeScratch("draft.toml", run.stdout);
      expect((await at.tend(["watchdog", "validate", "--config", at.scratch("draft.toml").inside])).code).toBe(0);
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

test("docs/migrating.md starts from import: its draft is import's of today for the trial-shaped script", async () => {
  const box = (stopBox = new Sandbox());
  const guide = readFileSync(join(ROOT, "docs", "migrating.md"), "utf8");
  expect(guide.indexOf("tend watchdog import")).toBeLessThan(guide.indexOf("## The guide's example"));
  const script = "test/import/corpus/20-trial-shape.sh";
  const shown = /tend watchdog import test\/import\/corpus\/20-trial-shape\.sh\n\n```toml\n([\s\S]*?)```/.exec(guide);
  expect(shown).not.toBeNull();
  const run = await box.tend(["watchdog", "import", join(ROOT, script)]);
  expect(run.code).toBe(0);
  expect(shown![1]).toBe(run.stdout.replaceAll(`${ROOT}/`, ""));
});
