// make release VERSION=x.y.z KEY=PATH, held to the real tools that will judge it: openssl verifies the
// signatures (the key is openssl's too), sha256sum checks SHA256SUMS, lintian judges the Debian packages,
// the real dpkg and apt install and remove them, man shows the pages, dpkg-deb reads the Termux package,
// ruby parses the Homebrew formula. Installing is done in a throwaway copy of this host's own Debian (an
// overlay on /, its writes in a tmpfs, in a mount namespace of its own: nothing is written to the host).
// Not tested here, device-only: installing the Termux package on a phone (its layout and control fields
// are checked as Termux's dpkg reads them), and the formula under Homebrew on a Mac.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, Sandbox, TEND } from "./helpers.ts";

const VERSION = "9.8.7";
const URL_BASE = "https://downloads.example.org/tend/9.8.7";
const COMMANDS = ["watchdog", "safe-kill", "notify", "blogtunnel", "self-update"];
let box: Sandbox;
let out = "";
let made = { code: -1, stdout: "", stderr: "" };

const sh = (argv: string[], options: { cwd?: string; env?: Record<string, string> } = {}) => {
  const done = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe", ...options });
  return { code: done.exitCode, stdout: done.stdout.toString(), stderr: done.stderr.toString() };
};
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const make = (...args: string[]) =>
  sh(["make", "--no-print-directory", "-C", ROOT, "release", ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" },
  });

beforeAll(() => {
  box = new Sandbox();
  // On the checkout's disk (build/), not in /tmp: a release is ~600 MB, and /tmp may be a small tmpfs
  // (systemd-nspawn gives one to the fresh Debian of make fresh-check).
  out = join(ROOT, "build", `release-test-${process.pid}`);
  sh(["openssl", "genpkey", "-algorithm", "ed25519", "-out", join(box.dir, "release.pem")]);
  writeFileSync(
    join(box.dir, "release.pub"),
    sh(["openssl", "pkey", "-in", join(box.dir, "release.pem"), "-pubout"]).stdout,
  );
  made = make(`VERSION=${VERSION}`, `KEY=${join(box.dir, "release.pem")}`, `RELEASE_DIR=${out}`, `URL=${URL_BASE}`);
}, 600_000);
afterAll(() => {
  box?.cleanup();
  if (out) rmSync(out, { recursive: true, force: true });
});

test("make release: four binaries saying the version, release.json and SHA256SUMS signed (openssl verifies)", () => {
  expect({ code: made.code, stderr: made.stderr.replace(/Downloading.*\n?/g, "") }).toMatchObject({ code: 0 });
  expect(made.stdout).toContain(`tend ${VERSION}: ${out}`);
  const release = JSON.parse(readFileSync(join(out, "release.json"), "utf8"));
  expect(release.version).toBe(VERSION);
  expect(Object.keys(release.targets).sort()).toEqual(
    ["darwin-arm64", "linux-arm64", "linux-arm64-android", "linux-x64"].sort(),
  );
  for (const [target, entry] of Object.entries(release.targets) as [string, { file: string; sha256: string }][]) {
    expect(entry.file).toBe(`tend-${target}`);
    expect(sha(join(out, entry.file))).toBe(entry.sha256);
  }
  expect(sh([join(out, "tend-linux-x64"), "--version"]).stdout.trim()).toBe(`tend ${VERSION}`);
  // release.pub: the key's public half as [self_update] keys takes it, the same the binaries have built in.
  const pub = readFileSync(join(out, "release.pub"), "utf8").trim();
  expect(pub).toMatch(/^ed25519:[A-Za-z0-9+/]{43}=$/);
  expect(made.stdout).toContain(`signed by ${pub}`);
  // Each signature, as the base64 of the raw 64 bytes, verified by openssl with the key's public half.
  for (const file of ["release.json", "SHA256SUMS"]) {
    const raw = Buffer.from(readFileSync(join(out, `${file}.sig`), "utf8").trim(), "base64");
    expect(raw.length).toBe(64);
    writeFileSync(join(box.dir, `${file}.raw`), raw);
    const verify = (path: string) =>
      sh(
        ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", join(box.dir, "release.pub"), "-rawin"].concat([
          "-in",
          path,
          "-sigfile",
          join(box.dir, `${file}.raw`),
        ]),
      );
    expect(verify(join(out, file)).stdout).toContain("Signature Verified Successfully");
    // One hex digit changed for another (a "0" made "0" would change nothing: 1 run in 16 then verified it).
    const tampered = readFileSync(join(out, file), "utf8").replace(/[0-9a-f]/, (digit) => (digit === "0" ? "1" : "0"));
    expect(tampered).not.toBe(readFileSync(join(out, file), "utf8"));
    writeFileSync(join(box.dir, "tampered"), tampered);
    expect(verify(join(box.dir, "tampered")).code).not.toBe(0);
  }
  // SHA256SUMS, as a user checks a download by hand.
  const checked = sh(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: out });
  expect({ code: checked.code, stderr: checked.stderr }).toEqual({ code: 0, stderr: "" });
  for (const name of ["tend-linux-x64", `tend_${VERSION}_amd64.deb`, `tend_${VERSION}_aarch64.deb`, "Formula/tend.rb"])
    expect(checked.stdout).toContain(`${name}: OK`);
});

test("the release binary trusts its own key: self-update --channel with no [self_update] keys", async () => {
  // A newer release on a channel signed by the same key (by openssl), the binary around the real tend.
  const channel = join(box.dir, "channel");
  mkdirSync(channel);
  const binary = join(channel, "tend-linux-x64");
  writeFileSync(binary, readFileSync(TEND));
  const next = { version: "9.9.0", targets: { "linux-x64": { file: "tend-linux-x64", sha256: sha(binary) } } };
  writeFileSync(join(channel, "release.json"), JSON.stringify(next));
  sh(
    ["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", join(box.dir, "release.pem")].concat([
      "-in",
      join(channel, "release.json"),
      "-out",
      join(box.dir, "next.raw"),
    ]),
  );
  writeFileSync(join(channel, "release.json.sig"), readFileSync(join(box.dir, "next.raw")).toString("base64"));
  const target = join(box.dir, "installed-tend");
  writeFileSync(target, readFileSync(join(out, "tend-linux-x64")), { mode: 0o755 });
  box.writeConfig(`[watchdog]\nstate_dir = "${box.state}"\n`);
  const env = box.env();
  const asRelease = sh([target, "self-update", "--channel", channel, "--target", target, "--yes"], { env });
  // It gets as far as the binary's own version check: the file is build/tend, which says another version.
  expect(asRelease.stdout).toContain(`channel ${channel}: tend 9.9.0, signed by ed25519:`);
  expect(asRelease.stderr).toContain("the signed release says tend 9.9.0");
  expect(asRelease.code).toBe(3);
  // A development build has no key built in: the same channel is refused before anything is fetched.
  const asDev = sh([TEND, "self-update", "--channel", channel, "--target", target, "--yes"], { env });
  expect(asDev.code).toBe(3);
  expect(asDev.stderr).toContain("no trusted key: set [self_update] keys");
  expect(sha(target)).toBe(sha(join(out, "tend-linux-x64")));
});

test("the Debian packages: lintian finds no error; control fields, files, one man page per command", () => {
  for (const arch of ["amd64", "arm64"]) {
    const deb = join(out, `tend_${VERSION}_${arch}.deb`);
    // Its scratch files (mldbm-elf-*) go to TMPDIR: the sandbox's, removed with it.
    const lintian = sh(["lintian", "--fail-on", "error", deb], { env: { ...process.env, TMPDIR: box.dir } as any });
    console.log(`lintian ${arch}:\n${lintian.stdout}`);
    expect({ arch, code: lintian.code, errors: lintian.stdout.match(/^E: .*/gm) ?? [] }).toEqual({
      arch,
      code: 0,
      errors: [],
    });
    const field = (name: string) => sh(["dpkg-deb", "--field", deb, name]).stdout.trim();
    expect([field("Package"), field("Version"), field("Architecture")]).toEqual(["tend", VERSION, arch]);
    expect(field("Depends")).toMatch(/^libc6 \(>= 2\.\d+\)$/);
    const files = sh(["dpkg-deb", "--contents", deb]).stdout;
    expect(files).toMatch(/-rwxr-xr-x root\/root +\d+ .* \.\/usr\/bin\/tend\n/);
    for (const command of COMMANDS) {
      expect(files).toContain(`./usr/bin/${command} -> tend`);
      expect(files).toContain(`./usr/share/man/man1/${command}.1.gz`);
    }
    for (const path of [
      "./usr/share/man/man1/tend.1.gz",
      "./usr/share/doc/tend/copyright",
      "./usr/share/doc/tend/changelog.gz",
    ])
      expect(files).toContain(path);
  }
});

test("dpkg -i / apt install, tend --version, watchdog validate, man watchdog, dpkg -r: nothing of its own left", () => {
  const deb = `tend_${VERSION}_amd64.deb`;
  const hostHadTend = existsSync("/usr/bin/tend");
  const files = sh(["dpkg-deb", "--contents", join(out, deb)])
    .stdout.split("\n")
    .filter((line) => /^[-l]/.test(line))
    .map((line) => line.split(" ./")[1].replace(/ -> .*/, ""));
  const script = `
set -eo pipefail
rw=${box.dir}/rw root=${box.dir}/root
mkdir -p $rw $root
mount -t tmpfs tmpfs $rw
mkdir -p $rw/upper $rw/work
mount -t overlay overlay -o lowerdir=/,upperdir=$rw/upper,workdir=$rw/work $root
mount -t proc proc $root/proc
mount --bind /dev $root/dev
mkdir -p $root/release && mount --bind ${out} $root/release
inside() { chroot $root /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb "$@"; }
echo "== dpkg -i"; inside dpkg -i /release/${deb}
echo "== tend --version"; inside tend --version
printf '[[service]]\\nname = "web"\\n[service.check]\\nhttp = "http://127.0.0.1:8080/"\\n' > $root/root/tend.toml
echo "== watchdog validate"; inside watchdog validate --config /root/tend.toml
echo "== man watchdog"; inside man -P cat watchdog | head -8
mkdir -p $root/root/.config/tend $root/root/.local/state/tend
cp $root/root/tend.toml $root/root/.config/tend/tend.toml; echo 1 > $root/root/.local/state/tend/heartbeat
echo "== dpkg -r"; inside dpkg -r tend
for path in ${files.map((file) => `/${file}`).join(" ")}; do
  [ ! -e $root$path ] && [ ! -L $root$path ] || echo "LEFT $path"
done
ls $root/root/.config/tend/tend.toml $root/root/.local/state/tend/heartbeat
echo "== apt install /release/${deb}"; inside apt-get install -y -q /release/${deb} | tail -2
inside tend --version
echo '*/5 * * * * /usr/bin/tend watchdog pass --interval 5m --config /root/tend.toml # tend watchdog' | inside crontab -
echo "1" > $root/usr/bin/tend.bak-20261205-000000
echo "== apt remove"; inside apt-get remove -y -q tend 2>&1 | grep -E '^tend: |^Removing'
[ ! -e $root/usr/bin/tend.bak-20261205-000000 ] && echo "no backup left"
echo "== after removal"; inside crontab -l | { grep -v '# tend watchdog$' || true; } | inside crontab -
[ -z "$(inside crontab -l)" ] && echo "the printed command emptied the crontab"
[ ! -e $root/usr/bin/tend ] && echo "removed"
`;
  const done = sh(["unshare", "--mount", "--propagation", "private", "bash", "-c", script]);
  console.log(done.stdout);
  expect({ code: done.code, stderr: done.stderr.split("\n").filter((line) => /error|cannot/i.test(line)) }).toEqual({
    code: 0,
    stderr: [],
  });
  expect(done.stdout).toContain(`== tend --version\ntend ${VERSION}`);
  expect(done.stdout).toContain("== watchdog validate\n");
  expect(done.stdout).toMatch(/== man watchdog\nWATCHDOG\(1\) .*\n\nNAME\n +watchdog - watch services/);
  expect(done.stdout).not.toContain("LEFT ");
  expect(done.stdout).toContain("/root/.config/tend/tend.toml\n"); // the user's config and state: kept
  expect(done.stdout).toContain(`Setting up tend (${VERSION})`);
  expect(done.stdout.trimEnd().endsWith("removed")).toBe(true);
  // #64: the removal says what tend installed that stops working, and the command that removes it
  // (that command, run: the crontab is empty after it); self-update's backups go with the package.
  expect(done.stdout).toContain(
    "tend: crontab of root still runs: */5 * * * * /usr/bin/tend watchdog pass --interval 5m --config " +
      "/root/tend.toml # tend watchdog",
  );
  expect(done.stdout).toContain(
    "tend:   remove it: crontab -u root -l | grep -v '# tend watchdog$' | crontab -u root -",
  );
  expect(done.stdout).toContain("no backup left");
  expect(done.stdout).toContain("the printed command emptied the crontab");
  expect(existsSync("/usr/bin/tend")).toBe(hostHadTend); // the host itself: untouched
}, 180_000);

test("the Termux package: aarch64, every file under Termux's prefix, the Android binary (bionic's linker)", () => {
  const deb = join(out, `tend_${VERSION}_aarch64.deb`);
  const field = (name: string) => sh(["dpkg-deb", "--field", deb, name]).stdout.trim();
  expect([field("Package"), field("Version"), field("Architecture")]).toEqual(["tend", VERSION, "aarch64"]);
  expect(Number(field("Installed-Size"))).toBeGreaterThan(0);
  const paths = sh(["dpkg-deb", "--contents", deb])
    .stdout.trim()
    .split("\n")
    .map((line) => line.split(" ./")[1]);
  const prefix = "data/data/com.termux/files/usr/";
  for (const path of paths)
    expect({ path, under: path === "" || prefix.startsWith(path) || path.startsWith(prefix) }).toMatchObject({
      under: true,
    });
  for (const command of COMMANDS) expect(paths).toContain(`${prefix}bin/${command} -> tend`);
  expect(paths).toContain(`${prefix}share/man/man1/watchdog.1.gz`);
  // Its head and its hash, streamed out of the package (not written out: 100 MB).
  const member = `dpkg-deb --fsys-tarfile ${deb} | tar -xO ./${prefix}bin/tend`;
  const bytes = Buffer.from(Bun.spawnSync(["sh", "-c", `${member} | head -c 4096`]).stdout);
  const hash = Bun.spawnSync(["sh", "-c", `${member} | sha256sum`])
    .stdout.toString()
    .split(" ")[0];
  const release = JSON.parse(readFileSync(join(out, "release.json"), "utf8"));
  expect(bytes.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  expect(bytes.readUInt16LE(18)).toBe(183); // EM_AARCH64
  expect(bytes.toString("latin1")).toContain("/system/bin/linker64");
  expect(hash).toBe(release.targets["linux-arm64-android"].sha256);
});

test("the Homebrew tap: Formula/tend.rb parses (ruby -c); its URL and sha256 are the release's darwin binary", () => {
  const formula = join(out, "Formula", "tend.rb");
  const parsed = sh(["ruby", "-c", formula]);
  expect(parsed.stdout.trim()).toBe("Syntax OK");
  const text = readFileSync(formula, "utf8");
  const release = JSON.parse(readFileSync(join(out, "release.json"), "utf8"));
  expect(text).toContain(`url "${URL_BASE}/tend-darwin-arm64"`);
  expect(text).toContain(`sha256 "${release.targets["darwin-arm64"].sha256}"`);
  expect(text).toContain(`version "${VERSION}"`);
  const sums = readFileSync(join(out, "SHA256SUMS"), "utf8");
  expect(sums).toContain(`${release.targets["darwin-arm64"].sha256}  tend-darwin-arm64`);
  const macho = readFileSync(join(out, "tend-darwin-arm64")).subarray(0, 8);
  expect(macho.readUInt32LE(0)).toBe(0xfeedfacf); // a 64-bit Mach-O
  expect(macho.readUInt32LE(4)).toBe(0x0100000c); // CPU_TYPE_ARM64
});

test("make release refuses a bad version or key (exit 2, naming it) before building anything", () => {
  const rsa = join(box.dir, "rsa.pem");
  sh(["openssl", "genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa]);
  const dir = join(box.dir, "refused");
  for (const [args, words] of [
    [["VERSION=1.2", `KEY=${rsa}`], 'VERSION="1.2": give the release\'s version as x.y.z'],
    [["VERSION=1.2.0", `KEY=${rsa}`], `KEY=${rsa}: a rsa key, not ed25519`],
    [["VERSION=1.2.0", `KEY=${join(box.dir, "nothing.pem")}`], "not a private key in PEM"],
    [["VERSION=1.2.0"], "KEY=PATH is required"],
  ] as [string[], string][]) {
    const done = make(...args, `RELEASE_DIR=${dir}`);
    expect({ args, code: done.code, said: done.stderr.includes(words) }).toMatchObject({ said: true });
    expect(done.code).not.toBe(0);
    expect(existsSync(dir)).toBe(false);
  }
});
