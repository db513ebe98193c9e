// `make release VERSION=x.y.z KEY=PATH` (SPEC "Releases"), the steps around the four `bun build`s:
//   bun release/package.ts check VERSION KEY          refuse a bad version or key (exit 2) before building
//   bun release/package.ts public-key KEY             the key's public half, as tend trusts it (ed25519:BASE64)
//   bun release/package.ts package VERSION KEY DIR URL   DIR holds tend-<target> (built): writes release.json
//       and its signature, the Debian packages (amd64, arm64), the Termux package (aarch64), the Homebrew tap
//       (Formula/tend.rb, its URL under URL), SHA256SUMS and its signature.
// Packages are laid out here and built by the real dpkg-deb (--root-owner-group: every file root's).
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { linkSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { manPage } from "./man.ts";

const ROOT = resolve(import.meta.dir, "..");
const COMMANDS = ["watchdog", "safe-kill", "notify", "blogtunnel", "self-update"];
/** Each man page's NAME line. */
const SUMMARIES: Record<string, string> = {
  tend: "small ops commands for one host you own",
  watchdog: "watch services by asking them to do their job; restart, verify and say what happened",
  "safe-kill": "signal a service's process found by identity, never by pattern",
  notify: "send a notification that is spooled, not lost, when the receiver is down",
  blogtunnel: "watch a tunnel and the origin behind it, restart the tunnel only for its own faults",
  "self-update": "replace the tend binary or configuration: verified, backed up, rolled back on failure",
};
const TARGETS = ["linux-x64", "linux-arm64", "linux-arm64-android", "darwin-arm64"];
/** Who the packages name (make release MAINTAINER="Name <address>"). */
const MAINTAINER = process.env.MAINTAINER || "tend maintainers <tend@example.org>";
const SUMMARY = "small ops commands for one host you own";
const DESCRIPTION = [
  "A watchdog that judges a service by asking it to do its job (an HTTP",
  "answer, a TCP connect, a command), counts failures in a row before it",
  "restarts, verifies every restart and says what happened; with safe-kill",
  "(signals by identity, never by pattern), notify, blogtunnel and",
  "self-update, in one binary. For a VM under systemd, a Mac mini under",
  "launchd or a phone under Termux.",
];
const TERMUX_PREFIX = "data/data/com.termux/files/usr";

class Refusal extends Error {}

function privateKey(path: string): KeyObject {
  if (!path) throw new Refusal("KEY=PATH is required: a PKCS#8 PEM Ed25519 key (openssl genpkey -algorithm ed25519)");
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(path));
  } catch (error) {
    throw new Refusal(`KEY=${path}: not a private key in PEM (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new Refusal(`KEY=${path}: a ${key.asymmetricKeyType} key, not ed25519`);
  return key;
}

function publicKeyText(key: KeyObject): string {
  const der = createPublicKey(key).export({ format: "der", type: "spki" });
  return `ed25519:${der.subarray(der.length - 32).toString("base64")}`;
}

function checkVersion(version: string) {
  if (!/^\d{1,9}\.\d{1,9}\.\d{1,9}$/.test(version))
    throw new Refusal(
      `VERSION=${JSON.stringify(version)}: give the release's version as x.y.z (make release VERSION=1.2.0)`,
    );
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const signature = (key: KeyObject, path: string) => sign(null, readFileSync(path), key).toString("base64") + "\n";

function run(argv: string[]) {
  const done = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (done.exitCode !== 0)
    throw new Error(`${argv.join(" ")}: exit ${done.exitCode}: ${done.stderr.toString().trim()}`);
  return done.stdout.toString();
}

/** The newest GLIBC_x.y a binary's dynamic symbols need (its .dynstr names each version it needs). */
function glibcNeeded(binary: string): string {
  const text = readFileSync(binary)
    .subarray(0, 64 * 1024 * 1024)
    .toString("latin1");
  const versions = [...new Set(text.match(/GLIBC_2\.\d+(\.\d+)?/g) ?? [])].map((name) => name.slice(6));
  const parts = (version: string) => version.split(".").map(Number);
  const newest = versions.sort((a, b) => {
    const [left, right] = [parts(a), parts(b)];
    for (let index = 0; index < 3; index++)
      if ((left[index] ?? 0) !== (right[index] ?? 0)) return (left[index] ?? 0) - (right[index] ?? 0);
    return 0;
  });
  if (!newest.length) throw new Error(`${binary}: no GLIBC version found: is it a glibc binary?`);
  return newest[newest.length - 1];
}

/** RFC 5322 date, as a Debian changelog's trailer has it. */
const rfc2822 = (at: Date) =>
  at.toUTCString().replace(/^(\w+), (\d+) (\w+) (\d+) ([\d:]+) GMT$/, "$1, $2 $3 $4 $5 +0000");

function copyright(): string {
  return [
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
    "Upstream-Name: tend",
    "",
    "Files: *",
    `Copyright: 2026 ${MAINTAINER}`,
    "License: MIT",
    "",
    "License: MIT",
    " Permission is hereby granted, free of charge, to any person obtaining a copy",
    ' of this software and associated documentation files (the "Software"), to deal',
    " in the Software without restriction, including without limitation the rights",
    " to use, copy, modify, merge, publish, distribute, sublicense, and/or sell",
    " copies of the Software, and to permit persons to whom the Software is",
    " furnished to do so, subject to the following conditions:",
    " .",
    " The above copyright notice and this permission notice shall be included in",
    " all copies or substantial portions of the Software.",
    " .",
    ' THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR',
    " IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,",
    " FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE",
    " AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER",
    " LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,",
    " OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN",
    " THE SOFTWARE.",
    "",
  ].join("\n");
}

/** The pages: one per command from its docs page, and tend(1) from the README's opening. */
function manPages(version: string): Record<string, string> {
  const pages: Record<string, string> = {};
  for (const command of COMMANDS)
    pages[command] = manPage(
      command,
      version,
      SUMMARIES[command],
      readFileSync(join(ROOT, "docs", `${command}.md`), "utf8"),
    );
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const about = readme.slice(readme.indexOf("**tend** is"));
  pages.tend = manPage(
    "tend",
    version,
    SUMMARIES.tend,
    `# tend\n\n    tend COMMAND [ARGS...]\n    tend --version\n\n${about.slice(0, about.indexOf("\n## "))}\n\n` +
      `## See also\n\n${COMMANDS.map((command) => `${command}(1)`).join(", ")}\n`,
  );
  return pages;
}

/**
 * The installed tree under `prefix` (usr, or Termux's): the binary, a link per command, a gzipped man
 * page per command, the docs; a Debian changelog and copyright where Debian policy wants them.
 */
function layTree(root: string, prefix: string, binary: string, version: string, at: Date) {
  const bin = join(root, prefix, "bin");
  mkdirSync(bin, { recursive: true });
  // A hard link, not a copy: the binary is 100 MB, and the package holds its bytes either way.
  linkSync(binary, join(bin, "tend"));
  chmodSync(join(bin, "tend"), 0o755);
  for (const command of COMMANDS) symlinkSync("tend", join(bin, command));
  const man = join(root, prefix, "share", "man", "man1");
  mkdirSync(man, { recursive: true });
  for (const [name, page] of Object.entries(manPages(version)))
    writeFileSync(join(man, `${name}.1.gz`), gzipSync(page, { level: 9 }));
  const doc = join(root, prefix, "share", "doc", "tend");
  mkdirSync(doc, { recursive: true });
  writeFileSync(join(doc, "copyright"), copyright());
  const changelog =
    `tend (${version}) unstable; urgency=medium\n\n  * Release ${version}.\n\n` + ` -- ${MAINTAINER}  ${rfc2822(at)}\n`;
  writeFileSync(join(doc, "changelog.gz"), gzipSync(changelog, { level: 9 }));
  for (const name of readdirSync(join(ROOT, "docs")).filter((one) => one.endsWith(".md")))
    writeFileSync(join(doc, name), readFileSync(join(ROOT, "docs", name)));
  writeFileSync(join(doc, "README.md"), readFileSync(join(ROOT, "README.md")));
  return doc;
}

/** The size dpkg reports (KiB, rounded up per file, as dpkg-gencontrol counts). */
function installedSize(dir: string): number {
  let kib = 0;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const info = lstatSync(join(dir, name), { throwIfNoEntry: false });
    if (info?.isFile()) kib += Math.ceil(info.size / 1024);
    else kib += 1;
  }
  return kib;
}

function md5sums(root: string): string {
  const lines: string[] = [];
  for (const name of (readdirSync(root, { recursive: true }) as string[]).sort()) {
    if (name.startsWith("DEBIAN") || !lstatSync(join(root, name)).isFile()) continue;
    lines.push(
      `${createHash("md5")
        .update(readFileSync(join(root, name)))
        .digest("hex")}  ${name}`,
    );
  }
  return lines.join("\n") + "\n";
}

interface Deb {
  arch: string;
  prefix: string;
  depends: string | null;
  out: string;
}

function buildDeb(binary: string, version: string, deb: Deb, work: string, at: Date) {
  const root = join(work, `${basename(deb.out)}.d`);
  rmSync(root, { recursive: true, force: true });
  layTree(root, deb.prefix, binary, version, at);
  if (deb.prefix === "usr") {
    // Bun's binary carries its program after the ELF: stripping it would cut it off.
    const overrides = join(root, "usr", "share", "lintian", "overrides");
    mkdirSync(overrides, { recursive: true });
    writeFileSync(
      join(overrides, "tend"),
      "# The program is appended to Bun's runtime: stripping the ELF would remove it.\n" +
        "tend: unstripped-binary-or-object [usr/bin/tend]\n" +
        "# Bun's runtime links its image decoders in (Bun.Image); tend never decodes an image.\n" +
        "tend: embedded-library libjpeg [usr/bin/tend]\n",
    );
  }
  mkdirSync(join(root, "DEBIAN"));
  const control = [
    "Package: tend",
    `Version: ${version}`,
    `Architecture: ${deb.arch}`,
    `Maintainer: ${MAINTAINER}`,
    `Installed-Size: ${installedSize(root)}`,
    ...(deb.depends ? [`Depends: ${deb.depends}`] : []),
    "Section: admin",
    "Priority: optional",
    `Description: ${SUMMARY}`,
    ...DESCRIPTION.map((line) => ` ${line}`),
    "",
  ].join("\n");
  writeFileSync(join(root, "DEBIAN", "control"), control);
  const bin = `/${deb.prefix}/bin`;
  writeFileSync(
    join(root, "DEBIAN", "prerm"),
    removalNotice(bin, deb.prefix === "usr" ? "/var/spool/cron/crontabs" : `/${deb.prefix}/var/spool/cron/crontabs`),
    { mode: 0o755 },
  );
  writeFileSync(join(root, "DEBIAN", "postrm"), backupsRemoval(bin), { mode: 0o755 });
  writeFileSync(join(root, "DEBIAN", "md5sums"), md5sums(root));
  run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb.out]);
  rmSync(root, { recursive: true, force: true });
}

/**
 * The package's prerm: the scheduler entries tend installed (crontab lines marked `# tend watchdog`, the
 * systemd timer) run the binary the removal takes away, and would then fail every period without a word
 * (#64): each is said, with the command that removes it — one that needs no tend.
 */
function removalNotice(bin: string, crontabs: string): string {
  return `#!/bin/sh
# tend's removal: what tend installed to run it stops working with it; said, with what removes each.
[ "$1" = remove ] || [ "$1" = purge ] || exit 0
found=
say() { found=1; echo "tend: $*"; }
for tab in ${crontabs}/*; do
  [ -f "$tab" ] || continue
  user=$(basename "$tab")
  grep '# tend watchdog$' "$tab" 2>/dev/null | while IFS= read -r line; do
    echo "tend: crontab of $user still runs: $line"
    echo "tend:   remove it: crontab -u $user -l | grep -v '# tend watchdog\$' | crontab -u $user -"
  done
  grep -q '# tend watchdog$' "$tab" 2>/dev/null && found=1
done
system=/etc/systemd/system
for unit in $system/tend-watchdog.timer /root/.config/systemd/user/tend-watchdog.timer \\
  /home/*/.config/systemd/user/tend-watchdog.timer; do
  [ -e "$unit" ] || continue
  case "$unit" in
    /etc/*)
      say "systemd timer $unit still runs ${bin}/tend; remove it:" \\
        "systemctl disable --now tend-watchdog.timer && rm $system/tend-watchdog.timer $system/tend-watchdog.service" ;;
    *)
      say "systemd user timer $unit still runs ${bin}/tend; remove it as its user:" \\
        "systemctl --user disable --now tend-watchdog.timer, then delete it and its .service" ;;
  esac
done
[ -z "$found" ] || echo "tend: (tend watchdog uninstall cron|systemd --write, run before the removal, does the same)"
exit 0
`;
}

/** The package's postrm: self-update's backups of the package's binary never outlive the package. */
function backupsRemoval(bin: string): string {
  return `#!/bin/sh
[ "$1" = remove ] || [ "$1" = purge ] || exit 0
rm -f ${bin}/tend.bak-* ${bin}/.tend.backups
exit 0
`;
}

/** The Homebrew tap: Formula/tend.rb installs the darwin-arm64 binary and the command links. */
function formula(version: string, url: string, hash: string): string {
  return `# Homebrew formula for tend ${version} (make release): brew tap the release's tap, then brew install tend.
class Tend < Formula
  desc "Small ops commands for one host you own: watchdog, safe-kill, notify, blogtunnel"
  homepage "${url}"
  url "${url}/tend-darwin-arm64"
  version "${version}"
  sha256 "${hash}"
  license "MIT"

  depends_on arch: :arm64
  depends_on :macos

  def install
    bin.install "tend-darwin-arm64" => "tend"
    %w[${COMMANDS.join(" ")}].each { |command| bin.install_symlink "tend" => command }
  end

  test do
    assert_match "tend #{version}", shell_output("#{bin}/tend --version")
  end
end
`;
}

function packageRelease(version: string, keyPath: string, dir: string, url: string) {
  checkVersion(version);
  const key = privateKey(keyPath);
  for (const target of TARGETS)
    if (!existsSync(join(dir, `tend-${target}`))) throw new Error(`${dir}/tend-${target}: not built`);
  const base = url.replace(/\/+$/, "");
  const at = new Date();
  const work = join(dir, ".work");
  mkdirSync(work, { recursive: true });
  const release = { version, targets: {} as Record<string, { file: string; sha256: string; size: number }> };
  for (const target of TARGETS) {
    const file = join(dir, `tend-${target}`);
    // The size bounds self-update's download of it (a server streaming forever fills no disk).
    release.targets[target] = { file: `tend-${target}`, sha256: sha256(file), size: statSync(file).size };
  }
  writeFileSync(join(dir, "release.json"), JSON.stringify(release, null, 2) + "\n");
  writeFileSync(join(dir, "release.json.sig"), signature(key, join(dir, "release.json")));
  const debs: [string, Deb][] = [
    ["linux-x64", { arch: "amd64", prefix: "usr", depends: null, out: join(dir, `tend_${version}_amd64.deb`) }],
    ["linux-arm64", { arch: "arm64", prefix: "usr", depends: null, out: join(dir, `tend_${version}_arm64.deb`) }],
    [
      "linux-arm64-android",
      { arch: "aarch64", prefix: TERMUX_PREFIX, depends: null, out: join(dir, `tend_${version}_aarch64.deb`) },
    ],
  ];
  for (const [target, deb] of debs) {
    const binary = join(dir, `tend-${target}`);
    if (deb.prefix === "usr") deb.depends = `libc6 (>= ${glibcNeeded(binary)})`;
    buildDeb(binary, version, deb, work, at);
  }
  // The key's public half, as [self_update] keys takes it (`bun release/package.ts public-key KEY` derives
  // it again): what a user pins before the first --channel update of a binary built without it.
  writeFileSync(join(dir, "release.pub"), `${publicKeyText(key)}\n`);
  mkdirSync(join(dir, "Formula"), { recursive: true });
  writeFileSync(join(dir, "Formula", "tend.rb"), formula(version, base, release.targets["darwin-arm64"].sha256));
  rmSync(work, { recursive: true, force: true });
  const files = readdirSync(dir, { recursive: true }) as string[];
  const listed = files.filter(
    (name) => !/^(SHA256SUMS|release\.json\.sig)/.test(name) && statSync(join(dir, name)).isFile(),
  );
  writeFileSync(
    join(dir, "SHA256SUMS"),
    listed
      .sort()
      .map((name) => `${sha256(join(dir, name))}  ${name}`)
      .join("\n") + "\n",
  );
  writeFileSync(join(dir, "SHA256SUMS.sig"), signature(key, join(dir, "SHA256SUMS")));
  console.log(`tend ${version}: ${dir} (${listed.length + 2} files), signed by ${publicKeyText(key)}`);
}

function main(argv: string[]): number {
  const [step, ...args] = argv;
  try {
    if (step === "check") {
      checkVersion(args[0] ?? "");
      privateKey(args[1] ?? "");
    } else if (step === "public-key") console.log(publicKeyText(privateKey(args[0] ?? "")));
    else if (step === "package") packageRelease(args[0], args[1], resolve(args[2]), args[3]);
    else throw new Refusal(`usage: package.ts check|public-key|package ...`);
    return 0;
  } catch (error) {
    console.error(`make release: ${(error as Error).message}`);
    return error instanceof Refusal ? 2 : 1;
  }
}

process.exitCode = main(process.argv.slice(2));
