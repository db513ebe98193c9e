// tend doctor --audit: the traps the seeds fell into, found in real-world-shaped files (test/audit/: units,
// plists, crontabs, watchdog.sh variants, Termux:Boot scripts, and the migration guide's own scripts), in
// a user's crontab and the scripts its lines run, and against the p99 tend itself measured: on this host
// and inside the phone (test/places.ts; the files copied into its HOME, the crontab cronie's).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join, relative } from "node:path";
import { controlledServer, publicCopy, removePublicCopy, ROOT, Sandbox, testUser } from "./helpers.ts";
import { openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

const CORPUS = join(ROOT, "test", "audit");
const EXPECTED: Record<string, Record<string, number>> = JSON.parse(
  readFileSync(join(CORPUS, "expected.json"), "utf8"),
).findings;
const USER = "tendaudit";
let box: Sandbox | null = null;
let place: Place | null = null;
let user: ReturnType<typeof testUser> | null = null;
const stops: (() => void)[] = [];
beforeAll(() => {
  user = testUser(USER);
});
afterEach(async () => {
  while (stops.length) stops.pop()!();
  Bun.spawnSync(["crontab", "-r", "-u", USER]);
  box?.cleanup();
  box = null;
  await place?.cleanup();
  place = null;
});
afterAll(() => {
  user?.remove();
  removePublicCopy();
});

type Finding = { severity: string; trap: string; file: string; line: number; what: string; fix: string };

function corpusFiles(dir = CORPUS): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return corpusFiles(path);
    return name === "expected.json" ? [] : [path];
  });
}

/** A place, and a file of the corpus copied into its HOME (its path as tend sees it). */
function auditAt(where: PlaceName) {
  const at = (place = openPlace(where));
  /** By its name relative to the corpus (the guide's scripts are ../../docs/...). */
  const copy = (file: string) => {
    const name = `corpus/${relative(CORPUS, file).replaceAll("../", "up/")}`;
    at.writeScratch(name, readFileSync(file), statSync(file).mode & 0o777);
    return at.scratch(name).inside;
  };
  return { at, copy };
}

for (const where of PLACES)
  describe(`doctor --audit (${where})`, () => {
    test("each trap of the corpus is found at its line, and nothing in the clean files (20+ files)", async () => {
      const { at, copy } = auditAt(where);
      const sources = [
        ...corpusFiles(),
        join(ROOT, "docs/migrating/watchdog.sh"),
        join(ROOT, "docs/migrating/boot.sh"),
      ];
      expect(sources.length).toBeGreaterThanOrEqual(20);
      const files = sources.map(copy);
      const result = await at.tend(["doctor", "--audit", "--json", ...files]);
      const report = JSON.parse(result.stdout);
      expect(report.unread).toEqual([]);
      expect(report.files).toEqual(expect.arrayContaining(files));
      sources.forEach((source, index) => {
        const found: Record<string, number> = {};
        for (const finding of report.findings as Finding[])
          if (finding.file === files[index]) found[finding.trap] = finding.line;
        const file = relative(CORPUS, source);
        expect({ file, found }).toEqual({ file, found: EXPECTED[file] ?? {} });
      });
      // Each finding says what happens and the fix; the high ones are the SPEC's.
      const high = new Set([
        "kill-by-pattern",
        "start-limit-unreachable",
        "launchd-reaps-children",
        "curl-without-fail",
      ]);
      for (const finding of report.findings as Finding[]) {
        expect(finding.what.length).toBeGreaterThan(20);
        expect(finding.fix.length).toBeGreaterThan(5);
        if (high.has(finding.trap) || finding.trap === "pid-only-check") expect(finding.severity).toBe("high");
        else expect(finding.severity).toBe("medium");
      }
      expect(result.code).toBe(1); // a high finding
    });

    test("exit 0 with only medium findings; the text names severity, file:line, what happens and the fix", async () => {
      const { at, copy } = auditAt(where);
      const file = copy(join(CORPUS, "tour-jvm.service"));
      const result = await at.tend(["doctor", "--audit", file]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`MEDIUM ${file}:7  no-oom-policy-kill`);
      expect(result.stdout).toContain("fix: OOMPolicy=kill");
      expect(result.stdout).toContain("1 finding(s), 0 high");
      const unit = await at.tend(["doctor", "--audit", copy(join(CORPUS, "tunnel-burst.service"))]);
      expect(unit.code).toBe(1);
      expect(unit.stdout).toContain(
        "StartLimitBurst=5 within StartLimitIntervalSec=10s cannot be reached at RestartSec=5s ((5 - 1) x 5s >= 10s)",
      );
      const nosuch = at.scratch("nosuch.sh").inside;
      const missing = await at.tend(["doctor", "--audit", nosuch]);
      expect(missing.stdout).toContain(`not read: ${nosuch}: no such file`);
      expect((await at.tend(["doctor", "stray"])).code).toBe(2); // files are for --audit
    });

    // #62 F5, F14, F15, F16: /dev/zero read whole (memory without bound), a FIFO waited on for good, a
    // 300 MB file read whole, a file name with ESC/BEL/newline printed raw.
    test("/dev/zero, a FIFO, a 300 MB file, a name with control characters: bounded, in words", async () => {
      const { at } = auditAt(where);
      at.writeScratch("fifo-dir/keep", "");
      const fifo = at.scratch("fifo-dir/audit.fifo");
      expect(Bun.spawnSync(["mkfifo", fifo.outside]).exitCode).toBe(0);
      const big = at.scratch("big.sh");
      at.writeScratch("big.sh", "#!/bin/sh\npkill -f myapp\n");
      truncateSync(big.outside, 300 * 1024 * 1024); // sparse: 300 MB said, nothing written
      const name = "evil\u001b[2J\u0007\nline.sh";
      at.writeScratch(name, "#!/bin/sh\npkill -f myapp\n");
      const odd = at.scratch(name).inside;
      const result = await at.tend(["doctor", "--audit", "/dev/zero", fifo.inside, big.inside, odd]);
      expect(result.stdout).toContain("not read: /dev/zero: is a device, not a regular file");
      expect(result.stdout).toContain(`not read: ${fifo.inside}: is a FIFO, not a regular file`);
      expect(result.stdout).toContain(`not read: ${big.inside}: past its first MiB (only that was read)`);
      expect(result.stdout).toContain("evil\\x1b[2J\\x07\\nline.sh");
      expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/); // no control character but the newline
      expect(result.stdout).toContain("pkill"); // the big file's first MiB was read and audited
    }, 30_000);

    test("a watched unit with no Restart= whose restart is not tend's: no Restart= and no watcher (high)", async () => {
      const { at } = auditAt(where);
      at.writeScratch(
        "plain.service",
        "[Unit]\nDescription=web\n[Service]\nExecStart=/usr/bin/python3 -m http.server\n",
      );
      const file = at.scratch("plain.service").inside;
      at.configure({ services: [{ name: "web", unit: "plain.service", check: { http: "http://127.0.0.1:1/" } }] });
      const watched = JSON.parse((await at.tend(["doctor", "--audit", "--json", file])).stdout);
      const trap = watched.findings.filter((finding: Finding) => finding.trap === "no-restart-no-watcher");
      expect(trap).toHaveLength(1);
      expect(trap[0]).toMatchObject({ severity: "high", line: 3 });
      expect(trap[0].fix).toContain('restart.systemd = "plain.service"');
      at.configure({
        services: [
          {
            name: "web",
            unit: "plain.service",
            check: { http: "http://127.0.0.1:1/" },
            restart: { systemd: "plain.service" },
          },
        ],
      });
      const restarted = JSON.parse((await at.tend(["doctor", "--audit", "--json", file])).stdout);
      expect(restarted.findings.filter((finding: Finding) => finding.trap === "no-restart-no-watcher")).toEqual([]);
    });

    test("a unit tend probes (a configured service's unit) is no Restart=on-failure trap", async () => {
      const { at, copy } = auditAt(where);
      at.configure({
        services: [{ name: "api", unit: "api-on-failure.service", check: { http: "http://127.0.0.1:1/" } }],
      });
      const file = copy(join(CORPUS, "api-on-failure.service"));
      const report = JSON.parse((await at.tend(["doctor", "--audit", "--json", file])).stdout);
      expect(report.findings.filter((finding: Finding) => finding.trap === "restart-without-probe")).toEqual([]);
    });

    test("a --max-time below the p99 tend measured for the same URL cuts normal latency (seed 2)", async () => {
      const { at } = auditAt(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      control.delayMs = 400;
      at.configure({ services: [{ name: "engine", check: { http: url, timeout: "5s" } }] });
      for (let pass = 0; pass < 3; pass++) expect((await at.tend(["watchdog"])).code).toBe(0);
      at.writeScratch(
        "watchdog.sh",
        `#!/bin/sh\ncode=$(curl -s -o /dev/null -w '%{http_code}' --max-time 0.3 ${url})\n`,
        0o755,
      );
      const script = at.scratch("watchdog.sh").inside;
      const result = await at.tend(["doctor", "--audit", "--json", script]);
      const report = JSON.parse(result.stdout);
      expect(report.findings).toEqual([
        expect.objectContaining({ severity: "medium", trap: "timeout-below-p99", file: script, line: 2 }),
      ]);
      expect(report.findings[0].what).toMatch(/--max-time 0\.3 is below the p99 tend measured for .* \(0\.4s\)/);
      expect(result.code).toBe(0);
    });
  });

test("the user's crontab and the scripts its lines run, each finding at its own file and line", async () => {
  box = new Sandbox();
  chmodSync(box.dir, 0o755);
  const bin = join(box.dir, "bin");
  mkdirSync(bin);
  const script = join(bin, "check.sh");
  copyFileSync(join(CORPUS, "watchdog-kill0.sh"), script);
  chmodSync(script, 0o755);
  const crontab = `*/10 * * * * ${script} >> ${box.dir}/check.log 2>&1\n0 * * * * curl -s -d up https://ntfy.sh/t\n`;
  Bun.spawnSync(["crontab", "-u", USER, "-"], { stdin: new TextEncoder().encode(crontab) });
  const run = Bun.spawnSync(
    [
      "runuser",
      "-u",
      USER,
      "--",
      "env",
      `HOME=${box.dir}`,
      publicCopy().tend(), // the user cannot enter a checkout in /root: a copy anyone may run
      "doctor",
      "--audit",
      "--json",
      "--config",
      "/nonexistent",
    ],
    { cwd: "/" },
  );
  const report = JSON.parse(run.stdout.toString());
  expect(report.files).toEqual(["crontab -l", script]);
  const found = report.findings.map((finding: Finding) => `${finding.file}:${finding.line} ${finding.trap}`);
  expect(found).toEqual(["crontab -l:2 curl-without-fail", `${script}:3 pid-only-check`]);
  expect(run.exitCode).toBe(1);
});

test("on the phone: cronie's crontab of the app and the scripts its lines run, each finding at its line", async () => {
  const at = (place = openPlace("phone", { termuxServices: true }));
  at.writeScratch("bin/check.sh", readFileSync(join(CORPUS, "watchdog-kill0.sh")), 0o755);
  const script = at.scratch("bin/check.sh").inside;
  const log = at.scratch("check.log").inside;
  const crontab = `*/10 * * * * ${script} >> ${log} 2>&1\n0 * * * * curl -s -d up https://ntfy.sh/t\n`;
  at.writeScratch("crontab.txt", crontab);
  expect((await at.shell(`crontab - < ${at.scratch("crontab.txt").inside}`)).code).toBe(0);
  const run = await at.tend(["doctor", "--audit", "--json", "--config", `${at.scratch("none.toml").inside}`]);
  const report = JSON.parse(run.stdout);
  expect(report.files).toEqual(["crontab -l", script]);
  const found = report.findings.map((finding: Finding) => `${finding.file}:${finding.line} ${finding.trap}`);
  expect(found).toEqual(["crontab -l:2 curl-without-fail", `${script}:3 pid-only-check`]);
  expect(run.code).toBe(1);
});
