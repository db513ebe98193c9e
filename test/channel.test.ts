// self-update --channel: a release channel, from a directory and from a local HTTP server, its release.json
// signed by the real openssl (an Ed25519 key openssl generated: tend's verification is held to openssl's
// signing, not to tend's own). The channel's binaries are stand-ins (test/standin.ts: real executables)
// answering the release's version around the real tend. Every refusal is exit 3 with nothing run or changed:
// no signature, a bad one, an unknown key, a tampered release.json, a tampered binary, a replayed older
// release, no binary for this host; a channel that cannot be fetched is exit 1.
import { afterAll, afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { appendFileSync, chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, readdirSync } from "node:fs";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, ROOT, Sandbox, TEND } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox;
/** The place a test opened (the phone, or this host as a place). */
let phone: Place | null = null;
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(async () => {
  server?.stop(true);
  server = null;
  box?.cleanup();
  await phone?.cleanup();
  phone = null;
});
afterAll(() => closePlaces());

const sha = (bytes: Uint8Array | string) =>
  createHash("sha256")
    .update(typeof bytes === "string" ? readFileSync(bytes) : bytes)
    .digest("hex");
const HOST_TARGET = process.arch === "arm64" ? "linux-arm64" : "linux-x64";

function openssl(...args: string[]) {
  const done = Bun.spawnSync(["openssl", ...args], { stdout: "pipe", stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${done.stderr}`);
  return done.stdout;
}

/** An Ed25519 key made by openssl: its PEM path and its public key as tend's config says it. */
function keyPair(name: string) {
  const pem = join(box.dir, `${name}.pem`);
  openssl("genpkey", "-algorithm", "ed25519", "-out", pem);
  const der = openssl("pkey", "-in", pem, "-pubout", "-outform", "DER");
  return { pem, key: `ed25519:${Buffer.from(der.subarray(der.length - 32)).toString("base64")}` };
}

/** The base64 of openssl's raw Ed25519 signature over a file. */
function signFile(pem: string, file: string) {
  const out = `${file}.raw`;
  openssl("pkeyutl", "-sign", "-rawin", "-inkey", pem, "-in", file, "-out", out);
  return Buffer.from(readFileSync(out)).toString("base64");
}

/** One stand-in per version and test (each is a 100 MB Bun binary): linked into the channels, never copied. */
const standIns = new Map<string, string>();
function standIn(name: string, version: string) {
  const key = `${box.dir} ${version}`;
  if (standIns.has(key)) return standIns.get(key)!;
  const script = join(box.dir, `${name}.sh`);
  // Each run of a channel's binary is noted: a refusal comes before any.
  const ran = join(box.dir, "ran.log");
  writeFileSync(
    script,
    `echo "$0" >> ${ran}\ncase "$1" in --version) echo "tend ${version}" ;; *) exec "${TEND}" "$@" ;; esac\n`,
  );
  const path = join(box.dir, name);
  const built = Bun.spawnSync(
    [BUN, "build", "--compile", "--define", `STANDIN_SCRIPT=${JSON.stringify(script)}`, "--outfile", path].concat(
      join(ROOT, "test", "standin.ts"),
    ),
    { cwd: box.dir, stderr: "pipe", stdout: "pipe" },
  );
  if (built.exitCode !== 0) throw new Error(`cannot build the stand-in ${name}: ${built.stderr.toString()}`);
  standIns.set(key, path);
  return path;
}

/** A channel directory holding a release of `version` (this host's target unless `targets` says otherwise). */
function channel(dir: string, version: string, pem: string, targets = [HOST_TARGET]) {
  mkdirSync(dir, { recursive: true });
  const binary = standIn(`tend-${version}`, version);
  const release = { version, targets: {} as Record<string, { file: string; sha256: string }> };
  for (const target of targets) {
    const file = `tend-${version}-${target}`;
    linkSync(binary, join(dir, file));
    release.targets[target] = { file, sha256: sha(join(dir, file)) };
  }
  writeFileSync(join(dir, "release.json"), JSON.stringify(release, null, 2) + "\n");
  writeFileSync(join(dir, "release.json.sig"), signFile(pem, join(dir, "release.json")) + "\n");
  return { dir, release };
}

/** The installed tend (a copy of build/tend) and a live config trusting `keys`, in this test's sandbox. */
function install(keys: string[]) {
  mkdirSync(join(box.dir, "bin"));
  const target = join(box.dir, "bin", "tend");
  copyFileSync(TEND, target);
  chmodSync(target, 0o755);
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\n[self_update]\nkeys = ${JSON.stringify(keys)}\n` +
      `[[service]]\nname = "web"\n[service.check]\ntcp = "127.0.0.1:1"\ntimeout = "200ms"\n`,
  );
  const selfUpdate = (...args: string[]) => box.tend(["self-update", ...args, "--target", target, "--yes"]);
  return { target, selfUpdate };
}
const backups = () => readdirSync(join(box.dir, "bin")).filter((name) => name.startsWith("tend.bak-"));

test("a signed channel in a directory: verified, this host's binary installed, its version said", async () => {
  box = new Sandbox();
  const signer = keyPair("release");
  const { target, selfUpdate } = install([signer.key]);
  const { release } = channel(join(box.dir, "channel"), "9.1.0", signer.pem, [HOST_TARGET, "darwin-arm64"]);
  const before = sha(target);
  const done = await selfUpdate("--channel", join(box.dir, "channel"));
  expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: "" });
  expect(done.stdout).toContain(`tend 9.1.0, signed by ${signer.key.slice(0, 16)}…`);
  expect(done.stdout).toContain(`${HOST_TARGET}: tend-9.1.0-${HOST_TARGET}`);
  expect(done.stdout).toMatch(/version: tend [\d.]+\+?\S* -> tend 9\.1\.0/);
  expect(sha(target)).toBe(release.targets[HOST_TARGET].sha256);
  expect(sha(target)).not.toBe(before);
  expect(backups()).toHaveLength(1);
}, 60_000);

test("refused, exit 3, nothing run or changed: unsigned, bad or unknown key, tampered file, a downgrade", async () => {
  box = new Sandbox();
  const signer = keyPair("release");
  const stranger = keyPair("stranger");
  const { target, selfUpdate } = install([signer.key]);
  const before = sha(target);
  const refusedWith = async (dir: string, words: string | RegExp, ...extra: string[]) => {
    const done = await selfUpdate("--channel", dir, ...extra);
    expect({ dir, code: done.code, stdout: done.stdout }).toMatchObject({ dir, code: 3 });
    expect(done.stderr).toMatch(words);
    expect(sha(target)).toBe(before);
    expect(backups()).toEqual([]);
    expect(existsSync(join(box.dir, "ran.log"))).toBe(false);
    expect(readdirSync(join(box.dir, "bin")).filter((name) => name.startsWith(".tend.new"))).toEqual([]);
    return done;
  };

  const unsigned = channel(join(box.dir, "unsigned"), "9.1.0", signer.pem).dir;
  Bun.spawnSync(["rm", join(unsigned, "release.json.sig")]);
  await refusedWith(unsigned, "release.json.sig: not in the channel: an unsigned release is never installed");

  const garbled = channel(join(box.dir, "garbled"), "9.1.0", signer.pem).dir;
  writeFileSync(join(garbled, "release.json.sig"), "not a signature\n");
  await refusedWith(garbled, "not the base64 of a 64-byte Ed25519 signature");

  const foreign = channel(join(box.dir, "foreign"), "9.1.0", stranger.pem).dir;
  await refusedWith(foreign, /does not verify with any trusted key \(ed25519:.{8}…\): tampered, or signed by a key/);

  // release.json changed after signing: its binary's hash swapped for another file's.
  const edited = channel(join(box.dir, "edited"), "9.1.0", signer.pem);
  // Another binary: the signed one with bytes appended (never run: each refusal comes first).
  const evil = join(box.dir, "evil");
  copyFileSync(standIn("tend-9.1.0", "9.1.0"), evil);
  appendFileSync(evil, "tampered");
  linkSync(evil, join(edited.dir, "evil"));
  const forged = { ...edited.release, targets: { [HOST_TARGET]: { file: "evil", sha256: sha(evil) } } };
  writeFileSync(join(edited.dir, "release.json"), JSON.stringify(forged, null, 2) + "\n");
  await refusedWith(edited.dir, "does not verify with any trusted key");

  // The binary changed after signing (same name): its hash is not the signed one.
  const swapped = channel(join(box.dir, "swapped"), "9.1.0", signer.pem);
  rmSync(join(swapped.dir, `tend-9.1.0-${HOST_TARGET}`)); // a link to the signed one: replaced, not written through
  linkSync(evil, join(swapped.dir, `tend-9.1.0-${HOST_TARGET}`));
  await refusedWith(
    swapped.dir,
    `sha256 mismatch: the signed release says ${swapped.release.targets[HOST_TARGET].sha256}`,
  );

  // A replayed older release, validly signed: a downgrade, refused unless asked for.
  const old = channel(join(box.dir, "old"), "0.0.1", signer.pem).dir;
  await refusedWith(old, /tend 0\.0\.1 is older than the running \d+\.\d+\.\d+\S*: a downgrade .* --allow-downgrade/);

  // No binary for this host.
  const elsewhere = channel(join(box.dir, "elsewhere"), "9.1.0", signer.pem, ["darwin-arm64"]).dir;
  await refusedWith(elsewhere, `the release has no binary for this host (${HOST_TARGET}); it has: darwin-arm64`);

  // No key trusted at all (a development binary has none built in).
  writeFileSync(box.config, readFileSync(box.config, "utf8").replace(/keys = .*/, "keys = []"));
  await refusedWith(foreign, "no trusted key: set [self_update] keys");

  // The replayed release, asked for: installed (and the config trusting the key again).
  writeFileSync(box.config, readFileSync(box.config, "utf8").replace(/keys = .*/, `keys = ["${signer.key}"]`));
  const down = await selfUpdate("--channel", old, "--allow-downgrade");
  expect({ code: down.code, stderr: down.stderr }).toEqual({ code: 0, stderr: "" });
  expect(down.stdout).toContain("-> tend 0.0.1");
  expect(readFileSync(join(box.dir, "ran.log"), "utf8")).toContain(".tend.new"); // run where it was fetched
}, 120_000);

test("a channel over HTTP: the signed hash pins the download; a channel that cannot be fetched is exit 1", async () => {
  box = new Sandbox();
  const signer = keyPair("release");
  const { target, selfUpdate } = install([signer.key]);
  const { dir, release } = channel(join(box.dir, "www"), "9.2.0", signer.pem);
  const asked: string[] = [];
  let failing = false;
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const path = new URL(request.url).pathname;
      asked.push(path);
      if (failing) return new Response("down for maintenance", { status: 503 });
      const file = join(dir, path.replace(/^\/releases\/stable\//, ""));
      return existsSync(file) && path.startsWith("/releases/stable/")
        ? new Response(Bun.file(file))
        : new Response("no", { status: 404 });
    },
  });
  const url = `http://127.0.0.1:${server.port}/releases/stable`;
  failing = true;
  const down = await selfUpdate("--channel", url);
  expect(down.code).toBe(1);
  expect(down.stderr).toContain(`channel http://127.0.0.1:${server.port}/…: release.json: HTTP 503`);
  failing = false;
  const done = await selfUpdate("--channel", url);
  expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: "" });
  expect(sha(target)).toBe(release.targets[HOST_TARGET].sha256);
  expect(asked.slice(-3)).toEqual([
    "/releases/stable/release.json",
    "/releases/stable/release.json.sig",
    `/releases/stable/tend-9.2.0-${HOST_TARGET}`,
  ]);
  // Already installed: nothing swapped, no second backup.
  const again = await selfUpdate("--channel", url + "/");
  expect(again.code).toBe(0);
  expect(again.stdout).toContain("already installed");
  expect(backups()).toHaveLength(1);
}, 60_000);

for (const where of PLACES)
  test(`[self_update] keys: each ed25519:BASE64 of 32 bytes (validate names it, exit 2) (${where})`, async () => {
    const at = (phone = openPlace(where));
    at.writeConfig(`[watchdog]\nstate_dir = "${at.state}"\n[self_update]\nkeys = ["ed25519:AAAA", 7]\n`);
    const done = await at.tend(["watchdog", "validate"]);
    expect(done.code).toBe(2);
    expect(done.stderr).toContain(
      'self_update.keys[0]: "ed25519:AAAA" is not ed25519:BASE64 (the base64 of a raw 32-byte Ed25519 public key)',
    );
    expect(done.stderr).toContain("self_update.keys[1]: 7 is not a string");
    const misuse = await at.tend(["self-update", "--allow-downgrade", "x"]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toContain("--allow-downgrade goes with --channel");
  });

test("which binary a host takes: Termux only the Android build (arm64), a Mac arm64, Linux by machine", async () => {
  const { targetOf } = await import("../lib/tools/channel.ts");
  const rows: [string, string, boolean, string | null][] = [
    ["linux", "x64", false, "linux-x64"],
    ["linux", "arm64", false, "linux-arm64"],
    ["android", "arm64", true, "linux-arm64-android"],
    ["linux", "arm64", true, "linux-arm64-android"], // Termux as Bun's linux build sees it
    ["linux", "x64", true, null], // an x64 Termux (an emulator): no release has its build
    ["darwin", "arm64", false, "darwin-arm64"],
    ["darwin", "x64", false, null],
    ["win32", "x64", false, null],
  ];
  for (const [platform, arch, android, expected] of rows)
    expect({ platform, arch, android, target: targetOf({ platform, arch, android }) as string | null }).toEqual({
      platform,
      arch,
      android,
      target: expected,
    });
});

test("inside the phone: a signed channel over HTTP verified there; its x64 build is no phone's: exit 3", async () => {
  // This host's phone runs on x64 (android-x64), which no release has a build for (a phone is arm64): the
  // install a channel leads to is self-update's, tested inside the phone there; here, what the phone checks
  // before it: the fetch, openssl's signature, the target it asks for, and nothing changed when refused.
  box = new Sandbox();
  const signer = keyPair("release");
  const { dir } = channel(join(box.dir, "www"), "9.3.0", signer.pem, [HOST_TARGET, "linux-arm64-android"]);
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      const file = join(dir, new URL(request.url).pathname.slice(1));
      return existsSync(file) ? new Response(Bun.file(file)) : new Response("no", { status: 404 });
    },
  });
  phone = openPlace("phone");
  phone.writeConfig(`[watchdog]\nstate_dir = "${phone.state}"\n[self_update]\nkeys = ["${signer.key}"]\n`);
  phone.writeScratch("bin/tend", readFileSync(TEND), 0o755);
  const target = phone.scratch("bin/tend");
  const before = sha(target.outside);
  const url = `http://127.0.0.1:${server.port}`;
  const refused = await phone.tend(["self-update", "--channel", url, "--yes", "--target", target.inside]);
  expect(refused.stdout).toContain(`tend 9.3.0, signed by ${signer.key.slice(0, 16)}…`);
  expect(refused.code).toBe(3);
  expect(refused.stderr).toContain(
    `the release has no binary for this host (android-x64); it has: ${HOST_TARGET}, linux-arm64-android`,
  );
  expect(sha(target.outside)).toBe(before);
  // Signed by a key the phone does not trust: refused as on this host.
  phone.writeConfig(`[watchdog]\nstate_dir = "${phone.state}"\n[self_update]\nkeys = ["${keyPair("other").key}"]\n`);
  const unknown = await phone.tend(["self-update", "--channel", url, "--yes", "--target", target.inside]);
  expect(unknown.code).toBe(3);
  expect(sha(target.outside)).toBe(before);
}, 60_000);
