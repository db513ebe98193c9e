// self-update --channel: a release channel, from a directory and from a local HTTP server, its release.json
// signed by the real openssl (an Ed25519 key openssl generated: tend's verification is held to openssl's
// signing, not to tend's own). The channel's binaries are stand-ins (test/standin.ts: real executables)
// answering the release's version around the real tend. Every refusal is exit 3 with nothing run or changed:
// no signature, a bad one, an unknown key, a tampered release.json, a tampered binary, a replayed older
// release, no binary for this host; a channel that cannot be fetched is exit 1.
import { afterAll, afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  statSync,
} from "node:fs";
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

// #62 F1: the temp file took the source's mode (0777) through its hash check, and another user rewrote it
// before root ran and installed it. Now it is made exclusively, 0700, and hashed as written: each run of the
// new binary where it was fetched notes its own mode and owner.
test("the temp file the new binary runs from is 0700 and tend's own, whatever the source's mode", async () => {
  box = new Sandbox();
  const signer = keyPair("release");
  const { target, selfUpdate } = install([signer.key]);
  const { dir } = channel(join(box.dir, "channel"), "9.1.0", signer.pem);
  const file = join(dir, `tend-9.1.0-${HOST_TARGET}`);
  chmodSync(file, 0o777);
  const script = readFileSync(join(box.dir, "tend-9.1.0.sh"), "utf8");
  writeFileSync(join(box.dir, "tend-9.1.0.sh"), `stat -c '%a %U' "$0" >> ${join(box.dir, "modes.log")}\n${script}`);
  const done = await selfUpdate("--channel", dir);
  expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: "" });
  const modes = readFileSync(join(box.dir, "modes.log"), "utf8").trim().split("\n");
  const ranFrom = readFileSync(join(box.dir, "ran.log"), "utf8").trim().split("\n");
  // The runs before the swap were from the temp file: every one of them 0700 root.
  const beforeSwap = ranFrom.map((path, index) => (path.includes(".tend.new") ? modes[index] : null)).filter(Boolean);
  expect(beforeSwap.length).toBeGreaterThanOrEqual(3); // --version, validate, pass --dry-run, plan
  expect(new Set(beforeSwap)).toEqual(new Set(["700 root"]));
  // Installed with the installed binary's mode (0755), not the source's 0777.
  expect((statSync(target).mode & 0o777).toString(8)).toBe("755");
}, 60_000);

// #62 F4, F9–F11, F13: a binary URL that streams forever, channel files that are FIFOs, a downgrade against
// the binary at --target: each stopped in words, nothing run, nothing changed.
test("a download past its stated size, a FIFO in the channel, a downgrade of the target: nothing run", async () => {
  box = new Sandbox();
  const signer = keyPair("release");
  const { target, selfUpdate } = install([signer.key]);
  const before = sha(target);
  const nothingRun = () => {
    expect(sha(target)).toBe(before);
    expect(existsSync(join(box.dir, "ran.log"))).toBe(false);
    expect(readdirSync(join(box.dir, "bin")).filter((name) => name.startsWith(".tend.new"))).toEqual([]);
  };
  // A release whose binary's URL streams without end; release.json states the real size.
  const { dir, release } = channel(join(box.dir, "www"), "9.2.0", signer.pem);
  const entry = release.targets[HOST_TARGET];
  const size = statSync(join(dir, entry.file)).size;
  const sized = { ...release, targets: { [HOST_TARGET]: { ...entry, size } } };
  writeFileSync(join(dir, "release.json"), JSON.stringify(sized, null, 2) + "\n");
  writeFileSync(join(dir, "release.json.sig"), signFile(signer.pem, join(dir, "release.json")) + "\n");
  let streamed = 0;
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const name = new URL(request.url).pathname.slice(1);
      if (name !== entry.file) return new Response(Bun.file(join(dir, name)));
      const block = new Uint8Array(1 << 20);
      return new Response(
        new ReadableStream({
          pull(controller) {
            streamed += block.length;
            controller.enqueue(block);
          },
        }),
      );
    },
  });
  const endless = await selfUpdate("--channel", `http://127.0.0.1:${server.port}/`);
  expect(endless.code).toBe(1);
  expect(endless.stderr).toContain(`more than ${size} bytes (the size stated for it): stopped, nothing run`);
  expect(streamed).toBeLessThan(size + 64 * (1 << 20));
  nothingRun();

  // A FIFO where release.json is, its signature, then the binary: refused at once, never waited on.
  const binaryFile = `tend-9.2.0-${HOST_TARGET}`;
  for (const [name, file] of [
    ["fifo", "release.json"],
    ["fifo-sig", "release.json.sig"],
    ["fifo-binary", binaryFile],
  ]) {
    const dir = channel(join(box.dir, name), "9.2.0", signer.pem).dir;
    rmSync(join(dir, file));
    Bun.spawnSync(["mkfifo", join(dir, file)]);
    const asked = await selfUpdate("--channel", dir);
    expect({ file, code: asked.code }).toEqual({ file, code: 3 });
    expect(asked.stderr).toContain(`${join(dir, file)}: is a FIFO, not a regular file: refused`);
  }
  nothingRun();

  // --target names a tend newer than the release (and than the running one): a downgrade of that target.
  const newer = standIn("tend-9.5.0", "9.5.0");
  const other = join(box.dir, "bin", "other-tend");
  copyFileSync(newer, other);
  chmodSync(other, 0o755);
  rmSync(join(box.dir, "ran.log"), { force: true });
  const down = await box.tend(["self-update", "--channel", join(box.dir, "www"), "--target", other, "--yes"]);
  expect(down.code).toBe(3);
  expect(down.stderr).toMatch(/tend 9\.2\.0 is older than the installed .*other-tend's 9\.5\.0: a downgrade/);
  expect(sha(other)).toBe(sha(newer));
}, 120_000);

// The package manager's files are updated by the package (#62: /usr/bin/tend swapped behind dpkg's back).
// dpkg's own binary is a file dpkg owns on every Debian: the oracle for "owned", asked of the real dpkg -S.
test("a file a package owns: dpkg -S names it; rollback over it refused, exit 3, naming the package", async () => {
  box = new Sandbox();
  const { packageOwner } = await import("../lib/tools/update.ts");
  expect(await packageOwner("/usr/bin/dpkg", "1.2.3")).toEqual({
    manager: "dpkg",
    name: "dpkg",
    update: `apt install ./dpkg_1.2.3_${process.arch === "arm64" ? "arm64" : "amd64"}.deb`,
  });
  expect(await packageOwner(join(box.dir, "nobody-owns-this"))).toBeNull();
  install([]);
  // Refused before anything is looked at (a rollback never reaches /usr/bin/dpkg: it has no backups either).
  const rollback = await box.tend(["self-update", "--rollback", "--target", "/usr/bin/dpkg", "--yes"]);
  expect(rollback.code).toBe(3);
  expect(rollback.stderr).toContain(
    "/usr/bin/dpkg belongs to the Debian package dpkg: self-update does not swap it behind dpkg's back",
  );
}, 60_000);

// #62 F12 through the binary: a server that takes the connection and never answers, for the whole 60 s.
test("a channel server that never answers: after 60 s, exit 1 in words, never an internal error", async () => {
  box = new Sandbox();
  const { selfUpdate } = install([keyPair("release").key]);
  const silent = (await import("node:net")).createServer((socket) => socket.on("error", () => {}));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  try {
    const port = (silent.address() as { port: number }).port;
    const done = await selfUpdate("--channel", `http://127.0.0.1:${port}/`);
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(
      new RegExp(`channel http://127\\.0\\.0\\.1:${port}/\\S*: release\\.json: no answer within 60s`),
    );
    expect(done.stderr).not.toContain("internal error");
  } finally {
    silent.close();
  }
}, 120_000);

// #62 F12: a channel server that never answers said `internal error: t.trim is not a function` after 60 s.
test("a channel that never answers: exit 1, in words (the fetch's timeout given in)", async () => {
  const { updateFromChannel } = await import("../lib/tools/channel.ts");
  const timedOut = async () => {
    throw new DOMException("The operation timed out.", "TimeoutError");
  };
  const attempt = updateFromChannel(
    {
      channel: "http://192.0.2.1/",
      target: "/nonexistent",
      config: "/dev/null",
      keys: [],
      current: "1.0.0",
      allowDowngrade: false,
    },
    { say: () => {}, confirm: async () => "no", fetch: timedOut as unknown as typeof fetch },
  );
  await expect(attempt).rejects.toMatchObject({
    message: "channel http://192.0.2.1/: release.json: no answer within 60s",
    exitCode: 1,
  });
});
