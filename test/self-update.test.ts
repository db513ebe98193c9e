// self-update with real binaries (copies of build/tend) and broken stand-ins, a local download host.
import { afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  readdirSync,
  rmSync,
  symlinkSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { makeCa } from "./certs.ts";
import { BUN, ROOT, Sandbox, TEND } from "./helpers.ts";

let box: Sandbox;
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
  box?.cleanup();
});

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const LONG_AGO = new Date("2026-01-02T03:04:05Z");

/**
 * An installed tend with an old mtime, and a live config. The installed one is an older "version"
 * (a wrapper answering tend 0.0.9), so a real build/tend is a different binary to update to.
 */
function install() {
  box = new Sandbox();
  Bun.spawnSync(["mkdir", "-p", join(box.dir, "bin")]);
  const target = join(box.dir, "bin", "tend");
  copyFileSync(olderTend(), target);
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
const olderTend = () =>
  standIn("tend-0.0.9", `case "$1" in --version) echo "tend 0.0.9" ;; *) exec "${TEND}" "$@" ;; esac`);

/**
 * A stand-in binary: a real executable (test/standin.ts, compiled) that runs a shell script around
 * the real one, or broken on purpose. Self-update reads the header before it runs anything: a bare
 * script is refused as one.
 */
function standIn(name: string, body: string) {
  const script = join(box.dir, `${name}.sh`);
  writeFileSync(script, `${body}\n`);
  const path = join(box.dir, name);
  const built = Bun.spawnSync(
    [
      BUN,
      "build",
      "--compile",
      "--define",
      `STANDIN_SCRIPT=${JSON.stringify(script)}`,
      join(ROOT, "test", "standin.ts"),
    ].concat(["--outfile", path]),
    { cwd: box.dir, stderr: "pipe", stdout: "pipe" },
  );
  if (built.exitCode !== 0) throw new Error(`cannot build the stand-in ${name}: ${built.stderr.toString()}`);
  return path;
}
const backups = (target: string) =>
  readdirSync(join(box.dir, "bin"))
    .filter((name) => name.startsWith("tend.bak-"))
    .map((name) => join(box.dir, "bin", name));
const version = Bun.spawnSync([TEND, "--version"]).stdout.toString().trim();

test("a real binary from a path: checked, backed up (mode, times kept), version and plan shown, swapped", async () => {
  const { target, selfUpdate, original } = install();
  const fresh = join(box.dir, "tend-new");
  copyFileSync(TEND, fresh);
  const result = await selfUpdate(fresh, "--yes", "--sha256", sha(fresh));
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(`version: tend 0.0.9 -> ${version}`);
  expect(result.stdout).toContain("plan: no change in behaviour");
  const [saved] = backups(target);
  expect(saved).toMatch(/tend\.bak-\d{8}-\d{6}$/);
  expect(result.stdout).toContain(`backup: ${saved}`);
  expect(sha(saved)).toBe(original);
  expect(statSync(saved).mode & 0o777).toBe(0o751);
  expect(statSync(saved).mtimeMs).toBe(LONG_AGO.getTime());
  expect(sha(target)).toBe(sha(fresh));
  expect(readdirSync(join(box.dir, "bin")).filter((name) => name.includes(".new-"))).toEqual([]);
  // The same binary again: already installed, nothing swapped, no second backup.
  const again = await selfUpdate(fresh, "--yes");
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(
    /^already installed: .* is that binary \(sha256 [0-9a-f]{12}…\): nothing swapped, no backup\n$/,
  );
  expect(backups(target)).toHaveLength(1);
}, 60_000);

test("from a URL (with --sha256): version change, diff of `watchdog plan`; --rollback asks and says", async () => {
  const { target, selfUpdate, original } = install();
  // A "new version" that changes a default: verify_timeout 1m -> 2m.
  const next = standIn(
    "tend-9.9.9",
    `case "$*" in
  --version) echo "tend 9.9.9+test" ;;
  *"watchdog plan"*) "${TEND}" "$@" | sed 's/verify_timeout = "1m"/verify_timeout = "2m"/' ;;
  *) exec "${TEND}" "$@" ;;
esac`,
  );
  let downloads = 0;
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) =>
      new URL(request.url).pathname === "/tend"
        ? (downloads++, new Response(Bun.file(next)))
        : new Response("no", { status: 404 }),
  });
  const url = `http://127.0.0.1:${server.port}/tend`;
  // Plain HTTP without a checksum: anyone on the path could hand over anything, run as root. Refused.
  const refusedRun = await selfUpdate(url, "--yes");
  expect(refusedRun.code).toBe(3);
  expect(refusedRun.stderr).toContain("an http:// SOURCE needs --sha256");
  expect(downloads).toBe(0);
  const result = await selfUpdate(url, "--yes", "--sha256", sha(next));
  expect(result.stderr).toBe("");
  expect(result.stdout).toContain("version: tend 0.0.9 -> tend 9.9.9+test");
  expect(result.stdout).toContain("--- plan (tend 0.0.9)");
  expect(result.stdout).toContain("+++ plan (tend 9.9.9+test)");
  expect(result.stdout).toMatch(/@@ -\d+,\d+ \+\d+,\d+ @@/);
  expect(result.stdout).toContain('-verify_timeout = "1m"\n+verify_timeout = "2m"');
  expect(Bun.spawnSync([target, "--version"]).stdout.toString().trim()).toBe("tend 9.9.9+test");

  const preview = await box.tend(["self-update", "--rollback", "--target", target]);
  expect(preview.code).toBe(2); // asked like an update: no terminal, no --yes, nothing changed
  expect(preview.stdout).toContain("version: tend 9.9.9+test -> tend 0.0.9");
  const back = await box.tend(["self-update", "--rollback", "--target", target, "--yes"]);
  expect(back.code).toBe(0);
  expect(back.stdout).toMatch(/restored .*tend\.bak-\d{8}-\d{6} over .*: tend 0\.0\.9\n$/);
  expect(sha(target)).toBe(original);

  const missing = await selfUpdate(`https://127.0.0.1:${server.port}/nothing`, "--yes");
  expect(missing.code).toBe(1);
}, 60_000);

test("only tend is installed: a script answering like tend is refused before anything changes", async () => {
  const { target, selfUpdate, original } = install();
  const cases: [string, string][] = [
    [
      standIn("two-liner", `echo "tend 9.9.9"\nexit 0`),
      "the new binary is not tend: its `watchdog plan` is not a plan",
    ],
    [standIn("hello", `echo "hello 1.0"`), 'the new binary is not tend: its --version says "hello 1.0"'],
    [standIn("dead", "exit 1"), "the new binary's --version: exit 1"],
    [
      standIn(
        "no-validate",
        `[ "$1" = --version ] && { echo "tend 0.0.1"; exit 0; }\necho "validate: nope" >&2\nexit 2`,
      ),
      "the new binary's watchdog validate: exit 2: validate: nope",
    ],
    [
      standIn(
        "no-pass",
        `[ "$1" = --version ] && { echo "tend 0.0.2"; exit 0; }\n[ "$2" = validate ] && exit 0\nexit 1`,
      ),
      "the new binary's watchdog pass --dry-run: exit 1",
    ],
    [join(box.dir, "missing-file"), "missing-file: no such file"], // in words, not ENOENT
  ];
  // Refused from the header alone, before anything runs: each would touch `ran` if it were run.
  const ran = join(box.dir, "ran");
  const raw = (name: string, content: string | Uint8Array) => {
    const path = join(box.dir, name);
    writeFileSync(path, content, { mode: 0o755 });
    return path;
  };
  // This binary's header for the other machine (e_machine): the build for another platform.
  const [machine, otherArch] = process.arch === "x64" ? [183, "arm64"] : [62, "x64"];
  const otherBuild = new Uint8Array(readFileSync(TEND).subarray(0, 256 * 1024));
  new DataView(otherBuild.buffer).setUint16(18, machine, true);
  cases.push(
    [
      raw("script", `#!/bin/sh\ntouch ${ran}\necho "tend 9.9.9"\n`),
      'the new binary is not an executable for this host: a script ("#!/bin/sh"); this host needs an executable ' +
        `for linux-${process.arch} (not run)`,
    ],
    [raw("page.html", "<!DOCTYPE html><title>404</title>"), "an HTML or XML page (an error page from the server?)"],
    [raw("empty", ""), "an empty file"],
    [raw("other-arch", otherBuild), `an ELF for linux-${otherArch}; this host is linux-${process.arch}`],
  );
  for (const [source, message] of cases) {
    const result = await selfUpdate(source, "--yes");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(sha(target)).toBe(original);
    expect(backups(target)).toEqual([]);
  }
  expect(existsSync(ran)).toBe(false);
  const good = join(box.dir, "tend-good");
  copyFileSync(TEND, good);
  const mismatch = await selfUpdate(good, "--yes", "--sha256", "0".repeat(64));
  expect(mismatch.stderr).toContain("sha256 mismatch: expected 0000");
  // No --yes and no terminal: the preview (version change, plan diff), then exit 2 with nothing written.
  const preview = await selfUpdate(good);
  expect(preview.code).toBe(2);
  expect(preview.stdout).toContain(`version: tend 0.0.9 -> ${version}`);
  expect(preview.stderr).toContain("no terminal to confirm on and no --yes: nothing changed");
  expect(sha(target)).toBe(original);
  expect(backups(target)).toEqual([]);
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

test("keeps the 3 newest backups by default, --keep N otherwise; --list shows them", async () => {
  const { target, selfUpdate } = install();
  const fresh = join(box.dir, "tend-new");
  copyFileSync(TEND, fresh);
  const older = olderTend();
  for (let update = 0; update < 6; update++) {
    expect((await selfUpdate(update % 2 ? older : fresh, "--yes")).code).toBe(0);
  }
  const kept = backups(target);
  expect(kept.length).toBe(3);
  const list = await box.tend(["self-update", "--list", "--target", target]);
  expect(list.stdout.trim().split("\n").length).toBe(3);
  for (const path of kept) expect(list.stdout).toContain(path);
  expect((await selfUpdate(fresh, "--yes", "--keep", "1")).code).toBe(0);
  expect(backups(target).length).toBe(1);
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

  // NEW's relative paths resolve against the live config's directory, where it will live.
  const elsewhere = join(box.dir, "drafts");
  Bun.spawnSync(["mkdir", elsewhere]);
  const relative = join(elsewhere, "next.toml");
  writeFileSync(relative, live.replace(`state_dir = "${box.state}"`, 'state_dir = "state-here"'));
  const moved = await box.tend(["self-update", "--apply-config", relative, "--yes", "--target", target]);
  expect(moved.code).toBe(0);
  expect(moved.stdout).toContain(`+state_dir = "${join(box.dir, "state-here")}"`);
}, 60_000);

test("redirects: never to a weaker scheme, and none at all without --sha256 (curl --proto-redir)", async () => {
  const { target, selfUpdate, original } = install();
  const certs = makeCa(join(box.dir, "ca"));
  const leaf = certs.leaf(-1, 30);
  const hits: string[] = [];
  const plain = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => (hits.push(`http ${new URL(request.url).pathname}`), new Response(Bun.file(TEND))),
  });
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(leaf.cert), key: Bun.file(leaf.key) },
    fetch(request) {
      const path = new URL(request.url).pathname;
      hits.push(`https ${path}`);
      if (path === "/down") return Response.redirect(`http://127.0.0.1:${plain.port}/tend`, 302);
      if (path === "/moved") return Response.redirect(`https://127.0.0.1:${server!.port}/tend`, 302);
      return new Response(Bun.file(TEND));
    },
  });
  const env = { NODE_EXTRA_CA_CERTS: certs.ca };
  // By address (the certificate names it too): a host without /etc/hosts resolves no "localhost" for fetch.
  const base = `https://127.0.0.1:${server.port}`;
  try {
    const down = await box.tend(["self-update", `${base}/down`, "--yes", "--sha256", sha(TEND), "--target", target], {
      env,
    });
    expect(down.code).toBe(3);
    expect(down.stderr).toContain(`redirected to http://127.0.0.1:${plain.port}/…, a weaker scheme: refused`);
    const moved = await box.tend(["self-update", `${base}/moved`, "--yes", "--target", target], { env });
    expect(moved.code).toBe(3);
    expect(moved.stderr).toContain("without --sha256 a redirect is not followed");
    expect(hits).toEqual(["https /down", "https /moved"]); // the http binary was never fetched, nothing ran
    expect(sha(target)).toBe(original);
    // Pinned by its hash, an https -> https redirect is followed.
    const pinned = await box.tend(
      ["self-update", `${base}/moved`, "--yes", "--sha256", sha(TEND), "--target", target],
      { env },
    );
    expect(pinned.stderr).toBe("");
    expect(sha(target)).toBe(sha(TEND));
    void selfUpdate;
  } finally {
    plain.stop(true);
  }
}, 60_000);

test("--rollback restores only a regular file that proves it is tend; a symlink or junk is refused", async () => {
  const { target, selfUpdate, original } = install();
  expect((await selfUpdate(TEND, "--yes")).code).toBe(0); // a real update: one real backup
  const [saved] = backups(target);
  // A symlink planted where the newest backup would be: named and recorded as the newest (the
  // order backups were made in is kept beside the target, .tend.backups).
  const planted = `${target}.bak-29991231-235959`;
  const manifest = join(box.dir, "bin", ".tend.backups");
  writeFileSync(manifest, `${readFileSync(manifest, "utf8")}tend.bak-29991231-235959\n`);
  symlinkSync("/etc/hostname", planted);
  const linked = await selfUpdate("--rollback", "--yes");
  expect(linked.code).toBe(3);
  expect(linked.stderr).toContain("is not a regular file (a symlink?): not restored");
  rmSync(planted);
  // A script is no binary of this host: refused from its header, never run.
  const ran = join(box.dir, "ran");
  writeFileSync(planted, `#!/bin/sh\ntouch ${ran}\necho tend 0.0.1\n`, { mode: 0o755 });
  const script = await selfUpdate("--rollback", "--yes");
  expect(script.code).toBe(3);
  expect(script.stderr).toContain('is not an executable for this host: a script ("#!/bin/sh")');
  expect(existsSync(ran)).toBe(false);
  // A truncated copy (as a full disk left it): its header is whole, it does not answer as tend.
  writeFileSync(planted, readFileSync(TEND).subarray(0, 256 * 1024), { mode: 0o755 });
  const junk = await selfUpdate("--rollback", "--yes");
  expect(junk.code).toBe(3);
  expect(junk.stderr).toContain("does not answer --version as tend does");
  rmSync(planted);
  expect(sha(target)).toBe(sha(TEND));
  expect((await selfUpdate("--rollback", "--yes")).code).toBe(0); // the real backup: restored
  expect(sha(target)).toBe(original);
  void saved;
});

test("root updating a user's symlinked tend replaces the file the link names, keeping its owner", async () => {
  const { target } = install();
  const real = join(box.dir, "bin", "tend-real");
  (await import("node:fs")).renameSync(target, real);
  symlinkSync(real, target);
  const nobody = Number(Bun.spawnSync(["id", "-u", "nobody"]).stdout.toString().trim());
  (await import("node:fs")).chownSync(real, nobody, nobody);
  const result = await box.tend(["self-update", TEND, "--yes", "--target", target]);
  expect(result.code).toBe(0);
  expect((await import("node:fs")).lstatSync(target).isSymbolicLink()).toBe(true); // the link kept
  expect(sha(real)).toBe(sha(TEND));
  expect(statSync(real).uid).toBe(nobody); // not made root's
});

test("the header check, host by host: the ELF's machine and linker, the Mach-O's CPU, anything else", async () => {
  const { executableProblem } = await import("../lib/core/executable.ts");
  const real = new Uint8Array(readFileSync(TEND).subarray(0, 64 * 1024));
  const patched = (edit: (bytes: Uint8Array, view: DataView) => void) => {
    const bytes = real.slice();
    edit(bytes, new DataView(bytes.buffer));
    return bytes;
  };
  // This binary's PT_INTERP names glibc's loader; the Android build names bionic's.
  const interpreter = new TextDecoder().decode(real).match(/\/lib[^\0]*ld-linux[^\0]*/)![0];
  const at = new TextDecoder("latin1").decode(real).indexOf(interpreter);
  const bionic = patched((bytes) =>
    bytes.set(new TextEncoder().encode("/system/bin/linker64".padEnd(interpreter.length, "\0")), at),
  );
  const elfFor = (source: Uint8Array, value: number) => {
    const bytes = source.slice();
    new DataView(bytes.buffer).setUint16(18, value, true);
    return bytes;
  };
  const macho = (cpu: number) => {
    const bytes = new Uint8Array(4096);
    new DataView(bytes.buffer).setUint32(0, 0xfeedfacf, true);
    new DataView(bytes.buffer).setUint32(4, cpu, true);
    return bytes;
  };
  const linux = { platform: "linux", arch: "x64", android: false };
  const linuxArm = { platform: "linux", arch: "arm64", android: false };
  const termux = { platform: "android", arch: "arm64", android: true };
  const mac = { platform: "darwin", arch: "arm64", android: false };
  const rows: [string, Uint8Array, typeof linux, string | null][] = [
    ["glibc x64 on linux-x64", elfFor(real, 62), linux, null],
    ["glibc arm64 on linux-arm64", elfFor(real, 183), linuxArm, null],
    ["glibc arm64 on linux-x64", elfFor(real, 183), linux, "an ELF for linux-arm64; this host is linux-x64"],
    ["android arm64 on Termux", elfFor(bionic, 183), termux, null],
    [
      "glibc arm64 on Termux",
      elfFor(real, 183),
      termux,
      "an ELF for linux-arm64 (glibc's, which Termux cannot run); take the linux-arm64-android build",
    ],
    [
      "android arm64 on linux-arm64",
      elfFor(bionic, 183),
      linuxArm,
      "an ELF for android-arm64 (bionic's linker /system/bin/linker64); this host is linux-arm64",
    ],
    ["an ELF on a Mac", elfFor(real, 183), mac, "an ELF for linux-arm64; this host is darwin-arm64"],
    ["32-bit ELF", patched((bytes) => (bytes[4] = 1)), linux, "a 32-bit or big-endian ELF; this host is linux-x64"],
    ["Mach-O arm64 on a Mac", macho(0x0100000c), mac, null],
    ["Mach-O x64 on an arm64 Mac", macho(0x01000007), mac, "a Mach-O for darwin-x64; this host is darwin-arm64"],
    ["Mach-O on linux", macho(0x0100000c), linux, "a Mach-O for darwin-arm64; this host is linux-x64"],
    ["gzip", new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0]), linux, "a gzip archive (unpack it first)"],
    ["40 bytes of ELF", real.slice(0, 40), linux, "40 bytes (a truncated download?)"],
  ];
  for (const [name, head, host, expected] of rows) {
    const problem = executableProblem(head, host);
    expect({ name, problem: problem && problem.replace(/; this host needs an executable for .*/, "") }).toEqual({
      name,
      problem: expected,
    });
  }
});

test("backups are ordered as they were made, not by their names' wall-clock dates (1970, DST fall-back)", async () => {
  const { backup, listBackups } = await import("../lib/tools/update.ts");
  box = new Sandbox();
  Bun.spawnSync(["mkdir", "-p", join(box.dir, "bin")]);
  const target = join(box.dir, "bin", "tend");
  const made: string[] = [];
  const make = (version: string, at: Date) => {
    writeFileSync(target, version);
    made.push(backup(target, at, 3));
  };
  make("v1", new Date("2026-11-30T10:00:00"));
  make("v2", new Date("2026-11-30T11:00:00"));
  // The phone booted at 1970 and has no network time yet: this backup is the newest all the same.
  make("v3", new Date(0));
  expect(listBackups(target)).toEqual([made[2], made[1], made[0]]);
  expect(readFileSync(listBackups(target)[0], "utf8")).toBe("v3");
  // One more: the oldest made (v1) goes, not the one with the oldest name (v3, "1970").
  make("v4", new Date("2026-11-30T12:00:00"));
  expect(listBackups(target)).toEqual([made[3], made[2], made[1]]);
  expect(existsSync(made[0])).toBe(false);
  // A DST fall-back: 01:30 local comes twice; the second backup of that name is the newer.
  make("v5", new Date("2026-11-30T01:30:00"));
  make("v6", new Date("2026-11-30T01:30:00"));
  expect(readFileSync(listBackups(target)[0], "utf8")).toBe("v6");
  expect(listBackups(target).map((path) => readFileSync(path, "utf8"))).toEqual(["v6", "v5", "v4"]);
});
