// self-update with real binaries (copies of build/tend) and broken stand-ins, a local download host.
import { afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { Sandbox, TEND } from "./helpers.ts";

let box: Sandbox;
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
  box?.cleanup();
});

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const LONG_AGO = new Date("2026-01-02T03:04:05Z");

/** An installed tend (a copy of build/tend) with an old mtime, and a live config. */
function install() {
  box = new Sandbox();
  Bun.spawnSync(["mkdir", "-p", join(box.dir, "bin")]);
  const target = join(box.dir, "bin", "tend");
  copyFileSync(TEND, target);
  chmodSync(target, 0o751);
  utimesSync(target, LONG_AGO, LONG_AGO);
  box.writeConfig(
    `[watchdog]
state_dir = "${box.state}"
[[service]]
name = "web"
[service.check]
tcp = "127.0.0.1:1"
timeout = "200ms"
`,
  );
  const selfUpdate = (...args: string[]) => box.tend(["self-update", ...args, "--target", target]);
  return { target, selfUpdate, original: sha(target) };
}

/** A stand-in "binary": a shell script around the real one, or broken on purpose. */
function standIn(name: string, body: string) {
  const path = join(box.dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}
const backups = (target: string) =>
  readdirSync(join(box.dir, "bin"))
    .filter((name) => name.startsWith("tend.bak-"))
    .map((name) => join(box.dir, "bin", name));

test("a real binary from a path: checked, backed up (mode, times kept), version and plan shown, swapped", async () => {
  const { target, selfUpdate, original } = install();
  const fresh = join(box.dir, "tend-new");
  copyFileSync(TEND, fresh);
  const result = await selfUpdate(fresh, "--yes", "--sha256", sha(fresh));
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  const version = Bun.spawnSync([TEND, "--version"]).stdout.toString().trim();
  expect(result.stdout).toContain(`version: ${version} -> ${version}`);
  expect(result.stdout).toContain("plan: no change in behaviour");
  const [saved] = backups(target);
  expect(saved).toMatch(/tend\.bak-\d{8}-\d{6}$/);
  expect(result.stdout).toContain(`backup: ${saved}`);
  expect(sha(saved)).toBe(original);
  expect(statSync(saved).mode & 0o777).toBe(0o751);
  expect(statSync(saved).mtimeMs).toBe(LONG_AGO.getTime());
  expect(sha(target)).toBe(sha(fresh));
  expect(readdirSync(join(box.dir, "bin")).filter((name) => name.includes(".new-"))).toEqual([]);
}, 60_000);

test("from a URL: version change, unified diff of `watchdog plan`; --rollback brings the old one back", async () => {
  const { target, selfUpdate, original } = install();
  // A "new version" that changes a default: verify_timeout 1m -> 2m.
  const next = standIn(
    "tend-9.9.9",
    `case "$*" in
  --version) echo "tend 9.9.9-test" ;;
  *"watchdog plan"*) "${TEND}" "$@" | sed 's/verify_timeout = "1m"/verify_timeout = "2m"/' ;;
  *) exec "${TEND}" "$@" ;;
esac`,
  );
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) =>
      new URL(request.url).pathname === "/tend" ? new Response(Bun.file(next)) : new Response("no", { status: 404 }),
  });
  const result = await selfUpdate(`http://127.0.0.1:${server.port}/tend`, "--yes");
  expect(result.stderr).toBe("");
  expect(result.stdout).toMatch(/version: tend \S+ -> tend 9\.9\.9-test/);
  expect(result.stdout).toContain("--- plan (tend ");
  expect(result.stdout).toContain("+++ plan (tend 9.9.9-test)");
  expect(result.stdout).toMatch(/@@ -\d+,\d+ \+\d+,\d+ @@/);
  expect(result.stdout).toContain('-verify_timeout = "1m"\n+verify_timeout = "2m"');
  expect(Bun.spawnSync([target, "--version"]).stdout.toString().trim()).toBe("tend 9.9.9-test");

  const back = await box.tend(["self-update", "--rollback", "--target", target]);
  expect(back.code).toBe(0);
  expect(back.stdout).toContain("restored");
  expect(sha(target)).toBe(original);

  const missing = await selfUpdate(`http://127.0.0.1:${server.port}/nothing`, "--yes");
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("HTTP 404");
}, 60_000);

test("broken stand-ins are refused before anything changes: no answer, bad validate, wrong sha256", async () => {
  const { target, selfUpdate, original } = install();
  const cases: [string, string[], string][] = [
    [standIn("dead", "exit 1"), [], "the new binary's --version: exit 1"],
    [
      standIn(
        "no-validate",
        `[ "$1" = --version ] && { echo "tend 0.0.1"; exit 0; }\necho "validate: nope" >&2\nexit 2`,
      ),
      [],
      "the new binary's watchdog validate: exit 2: validate: nope",
    ],
    [
      standIn(
        "no-pass",
        `[ "$1" = --version ] && { echo "tend 0.0.2"; exit 0; }\n[ "$2" = validate ] && exit 0\nexit 1`,
      ),
      [],
      "the new binary's watchdog pass --dry-run: exit 1",
    ],
    [join(box.dir, "missing-file"), [], "missing-file: ENOENT"],
  ];
  const good = join(box.dir, "tend-good");
  copyFileSync(TEND, good);
  cases.push([good, ["--sha256", "0".repeat(64)], "sha256 mismatch: expected 0000"]);
  for (const [source, extra, message] of cases) {
    const result = await selfUpdate(source, "--yes", ...extra);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(sha(target)).toBe(original);
    expect(backups(target)).toEqual([]);
  }
  const notTty = await selfUpdate(good);
  expect(notTty.code).toBe(2);
  expect(notTty.stderr).toContain("pass --yes");
  expect((await selfUpdate(good, "--yes", "--sha256", "xyz")).code).toBe(2);
}, 60_000);

test("a binary that passes its checks but does not run once installed is rolled back from the backup", async () => {
  const { target, selfUpdate, original } = install();
  // Works from its temp name, fails from the target path: the failure step (6) catches.
  const sly = standIn("sly", `case "$0" in */bin/tend) exit 7 ;; esac\nexec "${TEND}" "$@"`);
  const result = await selfUpdate(sly, "--yes");
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("the installed binary's --version: exit 7");
  expect(result.stderr).toContain("restored");
  expect(sha(target)).toBe(original);
  expect(statSync(target).mode & 0o777).toBe(0o751);
}, 60_000);

test("keeps the 5 newest backups; --list shows them", async () => {
  const { target, selfUpdate } = install();
  const fresh = join(box.dir, "tend-new");
  copyFileSync(TEND, fresh);
  for (let update = 0; update < 7; update++) expect((await selfUpdate(fresh, "--yes")).code).toBe(0);
  const kept = backups(target);
  expect(kept.length).toBe(5);
  const list = await box.tend(["self-update", "--list", "--target", target]);
  expect(list.stdout.trim().split("\n").length).toBe(5);
  for (const path of kept) expect(list.stdout).toContain(path);
}, 120_000);

test("--apply-config: validated, backed up, plan diff, swapped; an invalid one changes nothing", async () => {
  const { target } = install();
  const live = readFileSync(box.config, "utf8");
  const next = join(box.dir, "next.toml");
  writeFileSync(next, live.replace('timeout = "200ms"', 'timeout = "2s"'));
  const applied = await box.tend(["self-update", "--apply-config", next, "--yes", "--target", target]);
  expect(applied.stderr).toBe("");
  expect(applied.code).toBe(0);
  expect(applied.stdout).toContain('-timeout = "200ms"\n+timeout = "2s"');
  expect(readFileSync(box.config, "utf8")).toBe(readFileSync(next, "utf8"));
  const configBackups = readdirSync(box.dir).filter((name) => name.startsWith("tend.toml.bak-"));
  expect(configBackups.length).toBe(1);
  expect(readFileSync(join(box.dir, configBackups[0]), "utf8")).toBe(live);

  const broken = join(box.dir, "broken.toml");
  writeFileSync(broken, "[watchdog]\nconcurrency = 0\n");
  const refused = await box.tend(["self-update", "--apply-config", broken, "--yes", "--target", target]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("watchdog.concurrency: 0 is not an integer");
  expect(readFileSync(box.config, "utf8")).toBe(readFileSync(next, "utf8"));
  expect(existsSync(join(box.dir, "broken.toml"))).toBe(true);
}, 60_000);
