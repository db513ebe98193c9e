// The multi-call binary: dispatch by the invoked name, --version, --help, usage errors; the names as links
// inside the Termux-shaped phone too (test/places.ts).
import { afterAll, expect, test } from "bun:test";
import { symlinkSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, Sandbox, TEND } from "./helpers.ts";
import { closePlaces, openPlace } from "./places.ts";

const box = new Sandbox();
afterAll(() => box.cleanup());

const run = (argv: string[]) => {
  const result = Bun.spawnSync(argv, { env: box.env() });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
};

test("tend --version prints the version embedded at build time", () => {
  const version = run([TEND, "--version"]);
  expect(version.code).toBe(0);
  const pkg = require(join(ROOT, "package.json"));
  expect(version.stdout.trim()).toStartWith(`tend ${pkg.version}+`);
  expect(run([TEND, "watchdog", "--version"]).stdout).toBe(version.stdout);
});

test("every command of the spec is there; a copy named after a command also takes `NAME NAME ...`", () => {
  for (const name of ["watchdog", "safe-kill", "notify", "blogtunnel", "self-update"]) {
    const help = run([TEND, name, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toStartWith(`usage: ${name}`);
  }
  const copy = join(box.dir, "watchdog");
  copyFileSync(TEND, copy);
  Bun.spawnSync(["chmod", "+x", copy]);
  expect(run([copy, "watchdog", "--help"]).stdout).toStartWith("usage: watchdog");
});

test("a symlink or a copy named watchdog runs watchdog", () => {
  const link = join(box.dir, "link", "watchdog");
  Bun.spawnSync(["mkdir", "-p", join(box.dir, "link")]);
  symlinkSync(TEND, link);
  const copy = join(box.dir, "copy", "watchdog");
  Bun.spawnSync(["mkdir", "-p", join(box.dir, "copy")]);
  copyFileSync(TEND, copy);
  Bun.spawnSync(["chmod", "+x", copy]);
  for (const binary of [link, copy]) {
    const help = run([binary, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toStartWith("usage: watchdog");
  }
  expect(run([join(ROOT, "build", "bin", "watchdog"), "--help"]).stdout).toStartWith("usage: watchdog");
});

test("usage errors exit 2 and say what is wrong", () => {
  const unknownCommand = run([TEND, "frobnicate"]);
  expect(unknownCommand.code).toBe(2);
  expect(unknownCommand.stderr).toContain('unknown command "frobnicate"');
  const unknownFlag = run([TEND, "watchdog", "pass", "--frobnicate"]);
  expect(unknownFlag.code).toBe(2);
  expect(unknownFlag.stderr).toContain("unknown option --frobnicate");
  const badSub = run([TEND, "watchdog", "explode", "--config", "/dev/null"]);
  expect(badSub.code).toBe(2);
  const badInterval = run([
    TEND,
    "watchdog",
    "run",
    "--interval",
    "soon",
    "--config",
    join(ROOT, "examples", "tend.toml"),
  ]);
  expect(badInterval.code).toBe(2);
  expect(badInterval.stderr).toContain('--interval: "soon" is not a duration');
  expect(run([TEND]).code).toBe(2);
});

test("make demo's script: bold headings on a terminal only, none piped or under NO_COLOR", async () => {
  const demo = (command: string[], env: Record<string, string> = {}) =>
    Bun.spawn(command, { cwd: ROOT, env: { ...process.env, NO_COLOR: "", ...env }, stdout: "pipe", stderr: "pipe" });
  const bold = "\x1b[1m";
  const piped = demo(["bash", "examples/demo.sh"]);
  const pipedOut = await new Response(piped.stdout).text();
  expect(await piped.exited).toBe(0);
  expect(pipedOut).toContain("== watchdog validate");
  expect(pipedOut).not.toContain("\x1b");
  // script(1) gives it a terminal.
  const onTerminal = demo(["script", "-qfec", "bash examples/demo.sh", "/dev/null"]);
  const terminalOut = await new Response(onTerminal.stdout).text();
  expect(await onTerminal.exited).toBe(0);
  expect(terminalOut).toContain(`${bold}== watchdog validate`);
  const noColor = demo(["script", "-qfec", "bash examples/demo.sh", "/dev/null"], { NO_COLOR: "1" });
  const noColorOut = await new Response(noColor.stdout).text();
  expect(await noColor.exited).toBe(0);
  expect(noColorOut).toContain("== watchdog validate");
  expect(noColorOut).not.toContain(bold);
}, 120_000);

test("inside the phone: links named after the commands in $PREFIX/bin run them (as Termux packages them)", async () => {
  const phone = openPlace("phone");
  try {
    const linked = await phone.shell(
      'cd "$PREFIX/bin" && for c in watchdog safe-kill notify blogtunnel self-update; do ln -s tend "$c"; done && ' +
        "tend --version && watchdog --help && safe-kill --help && notify --help",
    );
    expect(linked.code).toBe(0);
    const pkg = require(join(ROOT, "package.json"));
    expect(linked.stdout).toStartWith(`tend ${pkg.version}+`);
    for (const name of ["watchdog", "safe-kill", "notify"]) expect(linked.stdout).toContain(`usage: ${name}`);
    const wrong = await phone.shell("watchdog frobnicate");
    expect(wrong.code).toBe(2);
  } finally {
    await phone.cleanup();
    closePlaces();
  }
});
