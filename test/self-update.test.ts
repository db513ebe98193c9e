// self-update with real binaries (copies of build/tend) and broken stand-ins, a local download host: on this
// host and inside the phone (test/places.ts). The phone takes the Android build, whose header names bionic's
// linker: there, every binary is this host's build with /system/bin/linker64 in its header (the phone's
// linker64 is glibc's loader: test/termux.ts), and this host's own build is refused as glibc's.
import { afterAll, afterEach, expect, test, describe } from "bun:test";
import { createHash } from "node:crypto";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { makeCa } from "./certs.ts";
import { BUN, ROOT, Sandbox, TEND } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

let box: Sandbox | null = null;
let place: Place | null = null;
let server: ReturnType<typeof Bun.serve> | null = null;
/** Host dirs a test made (stand-ins' builds, a CA). */
const scratchDirs: string[] = [];
afterEach(async () => {
  server?.stop(true);
  server = null;
  box?.cleanup();
  box = null;
  await place?.cleanup();
  place = null;
  for (const dir of scratchDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(() => closePlaces());

const sha = (path: string | Uint8Array) =>
  createHash("sha256")
    .update(typeof path === "string" ? readFileSync(path) : path)
    .digest("hex");
const LONG_AGO = new Date("2026-01-02T03:04:05Z");
const version = Bun.spawnSync([TEND, "--version"]).stdout.toString().trim();
const hostDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "tend-su-"));
  scratchDirs.push(dir);
  return dir;
};

/** The phone's build of a binary: this host's, its interpreter (glibc's loader) renamed bionic's linker. */
function android(bytes: Uint8Array): Uint8Array {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 64 * 1024));
  const interpreter = head.match(/\/lib[^\0]*ld-linux[^\0]*/)![0];
  const copy = bytes.slice();
  copy.set(
    new TextEncoder().encode("/system/bin/linker64".padEnd(interpreter.length, "\0")),
    head.indexOf(interpreter),
  );
  return copy;
}

/**
 * An installed tend with an old mtime, and a live config, at a place. The installed one is an older
 * "version" (a wrapper answering tend 0.0.9), so this place's build is a different binary to update to.
 */
function install(where: PlaceName) {
  const at = (place = openPlace(where));
  /** A binary as this place runs it. */
  const built = (bytes: Uint8Array) => (where === "phone" ? android(bytes) : bytes);
  const file = (name: string) => at.scratch(name);
  /** A file of HOME, the user's: its path as tend sees it. */
  const put = (name: string, content: string | Uint8Array, mode = 0o755) => {
    at.writeScratch(name, content, mode);
    return file(name).inside;
  };
  /**
   * A stand-in binary: a real executable (test/standin.ts, compiled) that runs a shell script around the
   * real one, or broken on purpose. Self-update reads the header before it runs anything: a bare script is
   * refused as one.
   */
  const standIn = (name: string, body: string) => {
    const script = put(`${name}.sh`, `${body}\n`, 0o644);
    const out = join(hostDir(), name);
    const defines = ["--define", `STANDIN_SCRIPT=${JSON.stringify(script)}`];
    if (where === "phone") defines.push("--define", `STANDIN_SHELL=${JSON.stringify(at.sh)}`);
    const compiled = Bun.spawnSync(
      [BUN, "build", "--compile", ...defines, join(ROOT, "test", "standin.ts")].concat(["--outfile", out]),
      { cwd: dirname(out), stderr: "pipe", stdout: "pipe" },
    );
    if (compiled.exitCode !== 0) throw new Error(`cannot build the stand-in ${name}: ${compiled.stderr.toString()}`);
    const installed = put(name, built(readFileSync(out)));
    rmSync(out); // a compiled stand-in is 100 MB: one copy at a time (a /tmp on tmpfs is a few GB)
    return installed;
  };
  /** tend as a stand-in's script runs it there. */
  const tend = at.tendPath;
  const older = standIn("tend-0.0.9", `case "$1" in --version) echo "tend 0.0.9" ;; *) exec "${tend}" "$@" ;; esac`);
  const target = put("bin/tend", readFileSync(file("tend-0.0.9").outside), 0o751);
  utimesSync(file("bin/tend").outside, LONG_AGO, LONG_AGO);
  at.writeConfig(
    `[watchdog]
state_dir = "${at.state}"
[[service]]
name = "web"
[service.check]
tcp = "127.0.0.1:1"
timeout = "200ms"
`,
  );
  const selfUpdate = (...args: string[]) => at.tend(["self-update", ...args, "--target", target]);
  /** The backups beside the target, as tend names them. */
  const backups = () =>
    readdirSync(file("bin").outside)
      .filter((name) => name.startsWith("tend.bak-"))
      .map((name) => join(dirname(target), name));
  /** Where this test reads a file tend names. */
  const outside = (inside: string) => join(file("bin").outside, "..", inside.slice(dirname(file("bin").inside).length));
  /** This place's build of tend, written into HOME. */
  const fresh = (name = "tend-new") => put(name, built(readFileSync(TEND)));
  return {
    at,
    target,
    targetHere: file("bin/tend").outside,
    selfUpdate,
    original: sha(file("bin/tend").outside),
    file,
    put,
    standIn,
    older,
    backups,
    outside,
    fresh,
    built,
    tend,
    /** What the target says it is. */
    want: `${where === "phone" ? "android" : "linux"}-${process.arch}`,
  };
}

for (const where of PLACES)
  describe(`self-update (${where})`, () => {
    test("a binary from a path: checked, backed up (mode, times kept), version and plan shown, swapped", async () => {
      const { targetHere, selfUpdate, original, backups, outside, fresh, file } = install(where);
      const next = fresh();
      const result = await selfUpdate(next, "--yes", "--sha256", sha(outside(next)));
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`version: tend 0.0.9 -> ${version}`);
      expect(result.stdout).toContain("plan: no change in behaviour");
      const [saved] = backups();
      expect(saved).toMatch(/tend\.bak-\d{8}-\d{6}$/);
      expect(result.stdout).toContain(`backup: ${saved}`);
      expect(sha(outside(saved))).toBe(original);
      expect(statSync(outside(saved)).mode & 0o777).toBe(0o751);
      expect(statSync(outside(saved)).mtimeMs).toBe(LONG_AGO.getTime());
      expect(sha(targetHere)).toBe(sha(outside(next)));
      expect(readdirSync(file("bin").outside).filter((name) => name.includes(".new-"))).toEqual([]);
      // The same binary again: already installed, nothing swapped, no second backup.
      const again = await selfUpdate(next, "--yes");
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(
        /^already installed: .* is that binary \(sha256 [0-9a-f]{12}…\): nothing swapped, no backup\n$/,
      );
      expect(backups()).toHaveLength(1);
    }, 60_000);

    test("from a URL (with --sha256): version change, diff of `watchdog plan`; --rollback asks and says", async () => {
      const { at, target, targetHere, selfUpdate, original, standIn, outside, tend } = install(where);
      // A "new version" that changes a default: verify_timeout 1m -> 2m.
      const next = outside(
        standIn(
          "tend-9.9.9",
          `case "$*" in
  --version) echo "tend 9.9.9+test" ;;
  *"watchdog plan"*) "${tend}" "$@" | sed 's/verify_timeout = "1m"/verify_timeout = "2m"/' ;;
  *) exec "${tend}" "$@" ;;
esac`,
        ),
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
      expect((await at.shell(`'${target}' --version`)).stdout.trim()).toBe("tend 9.9.9+test");

      const preview = await at.tend(["self-update", "--rollback", "--target", target]);
      expect(preview.code).toBe(2); // asked like an update: no terminal, no --yes, nothing changed
      expect(preview.stdout).toContain("version: tend 9.9.9+test -> tend 0.0.9");
      const back = await at.tend(["self-update", "--rollback", "--target", target, "--yes"]);
      expect(back.code).toBe(0);
      expect(back.stdout).toMatch(/restored .*tend\.bak-\d{8}-\d{6} over .*: tend 0\.0\.9\n$/);
      expect(sha(targetHere)).toBe(original);

      const missing = await selfUpdate(`https://127.0.0.1:${server.port}/nothing`, "--yes");
      expect(missing.code).toBe(1);
    }, 60_000);

    test("only tend is installed: a script answering like tend is refused before anything changes", async () => {
      const { targetHere, selfUpdate, original, standIn, put, file, backups, fresh, built, want } = install(where);
      // Each stand-in is made when its case runs and removed after it: 100 MB each, one at a time.
      const cases: [string | (() => string), string][] = [
        [
          () => standIn("two-liner", `echo "tend 9.9.9"\nexit 0`),
          "the new binary is not tend: its `watchdog plan` is not a plan",
        ],
        [() => standIn("hello", `echo "hello 1.0"`), 'the new binary is not tend: its --version says "hello 1.0"'],
        [() => standIn("dead", "exit 1"), "the new binary's --version: exit 1"],
        [
          () =>
            standIn(
              "no-validate",
              `[ "$1" = --version ] && { echo "tend 0.0.1"; exit 0; }\necho "validate: nope" >&2\nexit 2`,
            ),
          "the new binary's watchdog validate: exit 2: validate: nope",
        ],
        [
          () =>
            standIn(
              "no-pass",
              `[ "$1" = --version ] && { echo "tend 0.0.2"; exit 0; }\n[ "$2" = validate ] && exit 0\nexit 1`,
            ),
          "the new binary's watchdog pass --dry-run: exit 1",
        ],
        [file("missing-file").inside, "missing-file: no such file"], // in words, not ENOENT
      ];
      // Refused from the header alone, before anything runs: each would touch `ran` if it were run.
      const ran = file("ran");
      // This place's build for the other machine (e_machine): the build for another platform.
      const [machine, otherArch] = process.arch === "x64" ? [183, "arm64"] : [62, "x64"];
      const otherBuild = built(new Uint8Array(readFileSync(TEND).subarray(0, 256 * 1024)));
      new DataView(otherBuild.buffer).setUint16(18, machine, true);
      const kind = where === "phone" ? "android" : "linux";
      cases.push(
        [
          put("script", `#!/bin/sh\ntouch ${ran.inside}\necho "tend 9.9.9"\n`),
          `the new binary is not an executable for this host: a script ("#!/bin/sh"); this host needs an ` +
            `executable for ${want} (not run)`,
        ],
        [put("page.html", "<!DOCTYPE html><title>404</title>"), "an HTML or XML page (an error page from the server?)"],
        [put("empty", ""), "an empty file"],
        [put("other-arch", otherBuild), `an ELF for ${kind}-${otherArch}; this host is ${want}`],
      );
      // On the phone, this host's own build (glibc's): Termux cannot run it.
      if (where === "phone")
        cases.push([
          put("glibc-build", readFileSync(TEND)),
          `an ELF for linux-${process.arch} (glibc's, which Termux cannot run); take the linux-arm64-android build`,
        ]);
      for (const [made, message] of cases) {
        const source = typeof made === "function" ? made() : made;
        const result = await selfUpdate(source, "--yes");
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(message);
        expect(sha(targetHere)).toBe(original);
        expect(backups()).toEqual([]);
        rmSync(file(basename(source)).outside, { force: true });
      }
      expect(existsSync(ran.outside)).toBe(false);
      const good = fresh("tend-good");
      const mismatch = await selfUpdate(good, "--yes", "--sha256", "0".repeat(64));
      expect(mismatch.stderr).toContain("sha256 mismatch: expected 0000");
      // No --yes and no terminal: the preview (version change, plan diff), then exit 2 with nothing written.
      const preview = await selfUpdate(good);
      expect(preview.code).toBe(2);
      expect(preview.stdout).toContain(`version: tend 0.0.9 -> ${version}`);
      expect(preview.stderr).toContain("no terminal to confirm on and no --yes: nothing changed");
      expect(sha(targetHere)).toBe(original);
      expect(backups()).toEqual([]);
      expect((await selfUpdate(good, "--yes", "--sha256", "xyz")).code).toBe(2);
    }, 240_000); // ~15 self-updates of 116 MB binaries in the phone: 90 s ran out beside two busy cores

    test("a binary that passes its checks but does not run once installed is rolled back from the backup", async () => {
      const { targetHere, selfUpdate, original, standIn, tend } = install(where);
      // Works from its temp name, fails from the target path: the failure step (6) catches.
      const sly = standIn("sly", `case "$0" in */bin/tend) exit 7 ;; esac\nexec "${tend}" "$@"`);
      const result = await selfUpdate(sly, "--yes");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("the installed binary's --version: exit 7");
      expect(result.stderr).toContain("restored");
      expect(sha(targetHere)).toBe(original);
      expect(statSync(targetHere).mode & 0o777).toBe(0o751);
    }, 60_000);

    test("keeps the 3 newest backups by default, --keep N otherwise; --list shows them", async () => {
      const { at, target, selfUpdate, older, fresh, backups } = install(where);
      const next = fresh();
      for (let update = 0; update < 6; update++) {
        expect((await selfUpdate(update % 2 ? older : next, "--yes")).code).toBe(0);
      }
      const kept = backups();
      expect(kept.length).toBe(3);
      const list = await at.tend(["self-update", "--list", "--target", target]);
      expect(list.stdout.trim().split("\n").length).toBe(3);
      for (const path of kept) expect(list.stdout).toContain(path);
      expect((await selfUpdate(next, "--yes", "--keep", "1")).code).toBe(0);
      expect(backups().length).toBe(1);
    }, 120_000);

    test("--apply-config: validated, backed up, plan diff, swapped; an invalid one changes nothing", async () => {
      const { at, target, put, file } = install(where);
      const config = at.configFile;
      const live = readFileSync(config.outside, "utf8");
      const next = put("next.toml", live.replace('timeout = "200ms"', 'timeout = "2s"'), 0o644);
      const applied = await at.tend(["self-update", "--apply-config", next, "--yes", "--target", target]);
      expect(applied.stderr).toBe("");
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain('-timeout = "200ms"\n+timeout = "2s"');
      expect(readFileSync(config.outside, "utf8")).toBe(readFileSync(file("next.toml").outside, "utf8"));
      const configBackups = readdirSync(dirname(config.outside)).filter((name) =>
        name.startsWith(`${basename(config.outside)}.bak-`),
      );
      expect(configBackups.length).toBe(1);
      expect(readFileSync(join(dirname(config.outside), configBackups[0]), "utf8")).toBe(live);

      const broken = put("broken.toml", "[watchdog]\nconcurrency = 0\n", 0o644);
      const refused = await at.tend(["self-update", "--apply-config", broken, "--yes", "--target", target]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("watchdog.concurrency: 0 is not an integer");
      expect(readFileSync(config.outside, "utf8")).toBe(readFileSync(file("next.toml").outside, "utf8"));
      expect(existsSync(file("broken.toml").outside)).toBe(true);

      // NEW's relative paths resolve against the live config's directory, where it will live.
      const relative = put("drafts/next.toml", live.replace(`state_dir = "${at.state}"`, 'state_dir = "state-here"'));
      const moved = await at.tend(["self-update", "--apply-config", relative, "--yes", "--target", target]);
      expect(moved.code).toBe(0);
      expect(moved.stdout).toContain(`+state_dir = "${join(dirname(config.inside), "state-here")}"`);
    }, 60_000);

    test("redirects: never to a weaker scheme, and none at all without --sha256 (curl --proto-redir)", async () => {
      const { at, target, targetHere, original, put, built } = install(where);
      const certs = makeCa(hostDir());
      const leaf = certs.leaf(-1, 30);
      const binary = new Uint8Array(built(readFileSync(TEND))); // a copy: an ArrayBuffer of its own, as a body needs
      const hits: string[] = [];
      const plain = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) => (hits.push(`http ${new URL(request.url).pathname}`), new Response(binary)),
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
          return new Response(binary);
        },
      });
      const env = { NODE_EXTRA_CA_CERTS: put("ca.pem", readFileSync(certs.ca), 0o644) };
      // By address (the certificate names it too): a host without /etc/hosts resolves no "localhost" for fetch.
      const base = `https://127.0.0.1:${server.port}`;
      const update = (...args: string[]) => at.tend(["self-update", ...args, "--yes", "--target", target], env);
      try {
        const down = await update(`${base}/down`, "--sha256", sha(binary));
        expect(down.code).toBe(3);
        expect(down.stderr).toContain(`redirected to http://127.0.0.1:${plain.port}/…, a weaker scheme: refused`);
        const moved = await update(`${base}/moved`);
        expect(moved.code).toBe(3);
        expect(moved.stderr).toContain("without --sha256 a redirect is not followed");
        expect(hits).toEqual(["https /down", "https /moved"]); // the http binary was never fetched, nothing ran
        expect(sha(targetHere)).toBe(original);
        // Pinned by its hash, an https -> https redirect is followed.
        const pinned = await update(`${base}/moved`, "--sha256", sha(binary));
        expect(pinned.stderr).toBe("");
        expect(sha(targetHere)).toBe(sha(binary));
      } finally {
        plain.stop(true);
      }
    }, 60_000);

    test("--rollback restores only a regular file that proves it is tend; a symlink or junk is refused", async () => {
      const { targetHere, selfUpdate, original, fresh, put, file, built } = install(where);
      const next = fresh();
      expect((await selfUpdate(next, "--yes")).code).toBe(0); // a real update: one real backup
      // A symlink planted where the newest backup would be: named and recorded as the newest (the
      // order backups were made in is kept beside the target, .tend.backups).
      const planted = file("bin/tend.bak-29991231-235959");
      const manifest = file("bin/.tend.backups").outside;
      writeFileSync(manifest, `${readFileSync(manifest, "utf8")}tend.bak-29991231-235959\n`);
      symlinkSync("/etc/hostname", planted.outside);
      const linked = await selfUpdate("--rollback", "--yes");
      expect(linked.code).toBe(3);
      expect(linked.stderr).toContain("is not a regular file (a symlink?): not restored");
      rmSync(planted.outside);
      // A script is no binary of this host: refused from its header, never run.
      const ran = file("ran");
      put("bin/tend.bak-29991231-235959", `#!/bin/sh\ntouch ${ran.inside}\necho tend 0.0.1\n`);
      const script = await selfUpdate("--rollback", "--yes");
      expect(script.code).toBe(3);
      expect(script.stderr).toContain('is not an executable for this host: a script ("#!/bin/sh")');
      expect(existsSync(ran.outside)).toBe(false);
      // A truncated copy (as a full disk left it): its header is whole, it does not answer as tend.
      put("bin/tend.bak-29991231-235959", built(readFileSync(TEND).subarray(0, 256 * 1024)));
      const junk = await selfUpdate("--rollback", "--yes");
      expect(junk.code).toBe(3);
      expect(junk.stderr).toContain("does not answer --version as tend does");
      rmSync(planted.outside);
      expect(sha(targetHere)).toBe(sha(file("tend-new").outside));
      expect((await selfUpdate("--rollback", "--yes")).code).toBe(0); // the real backup: restored
      expect(sha(targetHere)).toBe(original);
    }, 60_000);
  });

test("root updating a user's symlinked tend replaces the file the link names, keeping its owner (host)", async () => {
  // This host only: the phone's app is no root, and has no second user.
  const { target, file, fresh, at } = install("host");
  const real = file("bin/tend-real").outside;
  renameSync(target, real);
  symlinkSync(real, target);
  const nobody = Number(Bun.spawnSync(["id", "-u", "nobody"]).stdout.toString().trim());
  chownSync(real, nobody, nobody);
  const next = fresh();
  const result = await at.tend(["self-update", next, "--yes", "--target", target]);
  expect(result.code).toBe(0);
  expect(lstatSync(target).isSymbolicLink()).toBe(true); // the link kept
  expect(sha(real)).toBe(sha(next));
  expect(statSync(real).uid).toBe(nobody); // not made root's
}, 120_000); // a stand-in compiled and a 116 MB binary swapped: past the default 5 s beside busy cores

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
