// make cross-check: the cross-built binaries, checked on this x64 machine as far as it can.
// linux-arm64 runs under Debian's qemu-user-static (--version, validate, one pass against a local
// server, status --json); the Android binary's ELF interpreter, NEEDED libraries (bionic only)
// and minimum API level are read; the macOS binary's Mach-O header and code signature are read.
// Prints a table; exits 1 when a check fails.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const DIST = join(ROOT, "build", "dist");
const WORK = "/tmp/tend-cross-check";
const rows: [string, string, boolean, string][] = [];
const check = (target: string, what: string, ok: boolean, said: string) => rows.push([target, what, ok, said]);

function run(argv: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync(argv, { env: { PATH: process.env.PATH ?? "", HOME: WORK, ...env }, stderr: "pipe" });
  return { code: result.exitCode, out: result.stdout.toString(), err: result.stderr.toString() };
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });

// linux-arm64 under qemu: the binary runs, reads a config, probes a real server, reports.
{
  const qemu = ["qemu-aarch64-static", join(DIST, "tend-linux-arm64")];
  const version = run([...qemu, "--version"]);
  check(
    "linux-arm64 (qemu)",
    "--version",
    /^tend \d+\.\d+\.\d+/.test(version.out),
    version.out.trim() || version.err.trim(),
  );
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
  const config = join(WORK, "tend.toml");
  writeFileSync(
    config,
    `[watchdog]
state_dir = "${WORK}/state"
[[service]]
name = "web"
[service.check]
http = "http://127.0.0.1:${server.port}/"
`,
  );
  const validate = run([...qemu, "watchdog", "validate", "--config", config]);
  check("linux-arm64 (qemu)", "watchdog validate", validate.code === 0, validate.out.trim() || validate.err.trim());
  const pass = Bun.spawn([...qemu, "watchdog", "pass", "--config", config], { stdout: "pipe", stderr: "pipe" });
  await pass.exited;
  check(
    "linux-arm64 (qemu)",
    "one pass against a local server",
    pass.exitCode === 0,
    (await new Response(pass.stdout).text()).trim(),
  );
  const status = Bun.spawn([...qemu, "watchdog", "status", "--json", "--config", config], { stdout: "pipe" });
  const json = JSON.parse(await new Response(status.stdout).text());
  server.stop(true);
  check(
    "linux-arm64 (qemu)",
    "status --json",
    json.services?.[0]?.state === "healthy",
    `${json.services?.[0]?.name}: ${json.services?.[0]?.state}, ${json.services?.[0]?.probe?.detail}`,
  );
}

// Android (Termux): bionic's linker, bionic libraries only, an API level Termux devices have.
{
  const binary = join(DIST, "tend-linux-arm64-android");
  const program = run(["readelf", "-l", binary]).out;
  const interpreter = /Requesting program interpreter: ([^\]]+)\]/.exec(program)?.[1] ?? "none";
  check("linux-arm64-android", "ELF interpreter", interpreter === "/system/bin/linker64", interpreter);
  const needed = [...run(["readelf", "-d", binary]).out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map(
    (m) => m[1],
  );
  const bionic = ["libc.so", "libm.so", "libdl.so", "liblog.so"];
  check(
    "linux-arm64-android",
    "NEEDED (bionic only)",
    needed.every((lib) => bionic.includes(lib)),
    needed.join(", "),
  );
  // .note.android.ident: its description starts with the API level, a 32-bit little-endian integer.
  const notes = run(["readelf", "-n", binary]).out;
  const data = /Android[\s\S]*?description data: ((?:[0-9a-f]{2} ){4})/.exec(notes)?.[1].trim().split(" ") ?? [];
  const level = data.length === 4 ? Number.parseInt(data.reverse().join(""), 16) : NaN;
  check(
    "linux-arm64-android",
    "minimum API level",
    level > 0 && level <= 29,
    `API ${level} (Android ${level >= 29 ? "10" : "9"} and later)`,
  );
}

// macOS: a Mach-O arm64 executable with a code signature load command (arm64 macOS runs only signed code).
{
  const bytes = readFileSync(join(DIST, "tend-darwin-arm64"));
  const magic = bytes.readUInt32LE(0);
  const cpu = bytes.readUInt32LE(4);
  let signed = false;
  let offset = 32;
  for (let index = 0; index < bytes.readUInt32LE(16); index++) {
    const command = bytes.readUInt32LE(offset);
    if (command === 0x1d) signed = true; // LC_CODE_SIGNATURE
    offset += bytes.readUInt32LE(offset + 4);
  }
  check(
    "darwin-arm64",
    "Mach-O 64-bit arm64",
    magic === 0xfeedfacf && cpu === 0x0100000c,
    `magic 0x${magic.toString(16)}, cpu 0x${cpu.toString(16)}`,
  );
  check(
    "darwin-arm64",
    "code signature (LC_CODE_SIGNATURE)",
    signed,
    signed ? "present (ad-hoc signature by bun build)" : "missing",
  );
}

console.log(
  [
    "| target | check | result | seen |",
    "| --- | --- | --- | --- |",
    ...rows.map(
      ([target, what, ok, said]) =>
        `| ${target} | ${what} | ${ok ? "ok" : "FAILED"} | ${said.replace(/\|/g, "\\|").slice(0, 120)} |`,
    ),
  ].join("\n"),
);
const failed = rows.filter(([, , ok]) => !ok).length;
console.log(`${rows.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
