// watchdog install: what each scheduler gets, written idempotently (real crontab, real plist parser).
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, TEND, testUser } from "./helpers.ts";

const USER = "tendinstall";
let box: Sandbox;
let binary = "";
let user: ReturnType<typeof testUser> | null = null;

beforeAll(() => {
  user = testUser(USER);
});
afterEach(() => {
  Bun.spawnSync(["crontab", "-r", "-u", USER]);
  box?.cleanup();
});
afterAll(() => {
  Bun.spawnSync(["crontab", "-r", "-u", USER]);
  user?.remove();
});

/** A sandbox the unprivileged test user can use: its own copy of the binary, readable config. */
function setup(interval = "5m") {
  box?.cleanup(); // a test that sets up twice leaves nothing of the first
  box = new Sandbox();
  chmodSync(box.dir, 0o1777); // sticky: the test user writes its HOME here, never replaces the root-owned config
  binary = join(box.dir, "tend");
  copyFileSync(TEND, binary);
  chmodSync(binary, 0o755);
  box.writeConfig(
    `[watchdog]
state_dir = "${box.state}"
interval = "${interval}"
[[service]]
name = "web"
[service.check]
tcp = "127.0.0.1:1"
`,
  );
  chmodSync(box.config, 0o644);
}
/** Run tend as the test user, HOME in the sandbox (so nothing lands in a real home or /Library). */
function asUser(...args: string[]) {
  // runuser resets HOME to the user's own: set it again inside.
  const result = Bun.spawnSync(
    ["runuser", "-u", USER, "--", "env", `HOME=${box.dir}`, binary, ...args, "--config", box.config],
    { env: box.env() },
  );
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}
const crontab = () => Bun.spawnSync(["crontab", "-l", "-u", USER]).stdout.toString();
/** Where cron cannot mail (no sendmail), the line appends its output to the state dir's cron.log. */
const mailless = (state: string) =>
  ["/usr/sbin/sendmail", "/usr/lib/sendmail"].some((path) => existsSync(path)) ? "" : ` >> ${state}/cron.log 2>&1`;

test("cron: the line runs a pass at the interval; --write adds it once, keeps other lines, updates in place", () => {
  setup("5m");
  const printed = asUser("watchdog", "install", "cron");
  expect(printed.code).toBe(0);
  expect(printed.stdout).toBe(
    `*/5 * * * * ${binary} watchdog pass --interval 5m --config ${box.config}${mailless(box.state)} # tend watchdog\n`,
  );
  Bun.spawnSync(["crontab", "-u", USER, "-"], {
    stdin: new TextEncoder().encode("0 3 * * * /usr/local/bin/backup.sh\n"),
  });
  expect(asUser("watchdog", "install", "cron", "--write").stdout).toContain("crontab: added");
  expect(asUser("watchdog", "install", "cron", "--write").stdout).toBe("crontab: unchanged\n");
  expect(crontab()).toBe(
    "0 3 * * * /usr/local/bin/backup.sh\n" +
      `*/5 * * * * ${binary} watchdog pass --interval 5m --config ${box.config}` +
      `${mailless(box.state)} # tend watchdog\n`,
  );
  box.writeConfig(readFileSync(box.config, "utf8").replace('interval = "5m"', 'interval = "2h"'));
  expect(asUser("watchdog", "install", "cron", "--write").stdout).toContain("crontab: updated");
  const lines = crontab().trim().split("\n");
  expect(lines.filter((line) => line.includes("# tend watchdog"))).toEqual([
    `0 */2 * * * ${binary} watchdog pass --interval 2h --config ${box.config}${mailless(box.state)} # tend watchdog`,
  ]);
  expect(lines[0]).toBe("0 3 * * * /usr/local/bin/backup.sh");
});

test("termux-boot: the wake lock, then runsvdir (crond runs the short passes); --loop: the loop; written once", () => {
  setup();
  const path = join(box.dir, ".termux", "boot", "tend-watchdog");
  // Without tend's crontab line the boot chain would start a crond that runs nothing of tend's (#61).
  const refused = asUser("watchdog", "install", "termux-boot", "--write");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("the crontab has no tend line");
  expect(refused.stderr).toContain("watchdog install cron --write");
  expect(existsSync(path)).toBe(false);
  expect(asUser("watchdog", "install", "cron", "--write").code).toBe(0);
  expect(asUser("watchdog", "install", "termux-boot", "--write").stdout).toBe(`${path}: written\n`);
  expect(asUser("watchdog", "install", "termux-boot", "--write").stdout).toBe(`${path}: unchanged\n`);
  // Run as Termux:Boot runs it in test/termux.test.ts (its reboot test); here: what it is made of.
  const script = readFileSync(path, "utf8").split("\n");
  const at = (lines: string[], start: string) => lines.findIndex((line) => line.trimStart().startsWith(start));
  expect(script[0]).toBe("#!/data/data/com.termux/files/usr/bin/sh");
  expect(script).toContain("# tend needs: termux-wake-lock service-daemon runsvdir sv crond");
  expect(script).toContain(`tend=${binary}`);
  expect(script).toContain(`log=${box.state}/boot.log`);
  expect(at(script, "termux-wake-lock &&")).toBeGreaterThan(0);
  expect(at(script, "termux-wake-lock &&")).toBeLessThan(at(script, "service-daemon start"));
  // The loop only as the fallback, when crond cannot be started.
  expect(script.filter((line) => line.trimStart().startsWith("exec "))).toHaveLength(1);
  expect(at(script, "exec ")).toBeGreaterThan(at(script, "loop() {"));
  expect(statSync(path).mode & 0o777).toBe(0o755);
  // The loop is the user's choice.
  // The loop, with the cron line kept as its keeper (a pass exits silently while the loop holds the lock).
  expect(asUser("watchdog", "install", "termux-boot", "--write", "--loop").stdout).toBe(
    `${path}: updated\ncrontab: unchanged (the loop's keeper)\n`,
  );
  const loop = readFileSync(path, "utf8").split("\n");
  expect(at(loop, "termux-wake-lock &&")).toBeLessThan(at(loop, "exec "));
  expect(loop).toContain('exec "$tend" watchdog run --config "$config" > /dev/null 2>> "$log"');
  expect(loop).toContain(`config=${box.config}`);
  // crond started too, when enabled: it runs the keeper's line (the loop's keeper, after a phantom kill).
  expect(at(loop, "service-daemon start")).toBeLessThan(at(loop, "exec "));
  expect(loop).toContain("  say \"crond started: it runs the loop's keeper (tend's crontab line)\"");
  expect(asUser("watchdog", "install", "cron", "--loop").code).toBe(2);
});

test("launchd: a plist with AbandonProcessGroup true and StartInterval, valid for a real plist parser", () => {
  setup("10m");
  const path = join(box.dir, "Library", "LaunchAgents", "org.tend.watchdog.plist");
  expect(asUser("watchdog", "install", "launchd", "--write").stdout).toContain(`${path}: written`);
  const parsed = Bun.spawnSync([
    "python3",
    "-c",
    "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
    path,
  ]);
  expect(parsed.stderr.toString()).toBe("");
  const plist = JSON.parse(parsed.stdout.toString());
  expect(plist).toMatchObject({
    Label: "org.tend.watchdog",
    AbandonProcessGroup: true,
    StartInterval: 600,
    RunAtLoad: true,
  });
  expect(plist.ProgramArguments).toEqual([binary, "watchdog", "pass", "--interval", "10m", "--config", box.config]);
});

test("systemd: a oneshot service and a timer (OnBootSec, OnUnitActiveSec) that leaves spawned services alone", () => {
  setup("5m");
  const units = asUser("watchdog", "install", "systemd").stdout;
  expect(units).toContain(`# ${join(box.dir, ".config", "systemd", "user", "tend-watchdog.service")}`);
  expect(units).toContain(`ExecStart=${binary} watchdog pass --interval 5m --config ${box.config}`);
  expect(units).toContain("KillMode=process");
  expect(units).toContain("OnBootSec=60s");
  expect(units).toContain("OnUnitActiveSec=300s");
  expect(asUser("watchdog", "install", "nonsense").code).toBe(2);
});

test("cron round trip: --interval honoured, rounded with a warning, % escaped; uninstall keeps other lines", () => {
  setup("5m");
  const odd = join(box.dir, "50%off");
  Bun.spawnSync(["mkdir", odd]);
  copyFileSync(box.config, join(odd, "tend.toml"));
  chmodSync(odd, 0o755);
  const config = join(odd, "tend.toml");
  const run = (...args: string[]) =>
    Bun.spawnSync(["runuser", "-u", USER, "--", "env", `HOME=${box.dir}`, binary, ...args, "--config", config]);
  const exact = run("watchdog", "install", "cron", "--interval", "10m");
  const escaped = `${box.dir}/50\\%off/tend.toml`;
  expect(exact.stdout.toString()).toBe(
    `*/10 * * * * ${binary} watchdog pass --interval 10m --config ${escaped}${mailless(box.state)} # tend watchdog\n`,
  );
  expect(exact.stderr.toString()).toBe("");
  const rounded = run("watchdog", "install", "cron", "--interval", "90s");
  expect(rounded.stdout.toString()).toStartWith("*/2 * * * * ");
  expect(rounded.stderr.toString()).toBe(
    "watchdog install: cron cannot run every 90s: the line runs every 2m, the nearest it can\n",
  );
  Bun.spawnSync(["crontab", "-u", USER, "-"], {
    stdin: new TextEncoder().encode("0 3 * * * /usr/local/bin/backup.sh\n"),
  });
  expect(run("watchdog", "install", "cron", "--write", "--interval", "10m").exitCode).toBe(0);
  expect(crontab()).toContain("*/10 * * * *");
  const dry = run("watchdog", "uninstall", "cron");
  expect(dry.stdout.toString()).toStartWith("would remove from the crontab: */10 * * * *");
  expect(crontab()).toContain("# tend watchdog");
  const removed = run("watchdog", "uninstall", "cron", "--write");
  expect(removed.stdout.toString()).toStartWith("crontab: removed: */10 * * * *");
  expect(crontab()).toBe("0 3 * * * /usr/local/bin/backup.sh\n");
  expect(run("watchdog", "uninstall", "cron", "--write").stdout.toString()).toBe("crontab: no tend line\n");
});

test("systemd: % in paths is %% in ExecStart; launchd: PATH finds Homebrew; uninstall removes the files", () => {
  setup("5m");
  const odd = join(box.dir, "50%off");
  Bun.spawnSync(["mkdir", odd]);
  copyFileSync(box.config, join(odd, "tend.toml"));
  const unit = Bun.spawnSync([
    "runuser",
    "-u",
    USER,
    "--",
    "env",
    `HOME=${box.dir}`,
    binary,
    "watchdog",
    "install",
    "systemd",
    "--config",
    join(odd, "tend.toml"),
  ]).stdout.toString();
  expect(unit).toContain(`ExecStart=${binary} watchdog pass --interval 5m --config ${box.dir}/50%%off/tend.toml`);
  const plist = asUser("watchdog", "install", "launchd").stdout;
  expect(plist).toContain("<string>/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin</string>");
  expect(asUser("watchdog", "install", "termux-boot", "--write", "--loop").code).toBe(0);
  const script = join(box.dir, ".termux", "boot", "tend-watchdog");
  expect(asUser("watchdog", "uninstall", "termux-boot", "--write").stdout).toBe(`${script}: removed\n`);
  expect(asUser("watchdog", "uninstall", "termux-boot", "--write").stdout).toBe(`${script}: not installed\n`);
});

test("install warns of a watchdog.sh still in the crontab; --replace comments it out, uninstall restores it", () => {
  setup("5m");
  const old = "*/5 * * * * /home/op/bin/watchdog.sh >> /home/op/watchdog.cron.log 2>&1";
  Bun.spawnSync(["crontab", "-u", USER, "-"], {
    stdin: new TextEncoder().encode(`0 3 * * * /usr/local/bin/backup.sh\n${old}\n`),
  });
  const warned = asUser("watchdog", "install", "cron", "--write");
  expect(warned.stderr).toContain(`the crontab still runs another watchdog: ${old}`);
  expect(warned.stderr).toContain("--replace PATTERN comments it out");
  expect(crontab()).toContain(`\n${old}\n`); // only warned: both lines run
  const replaced = asUser("watchdog", "install", "cron", "--write", "--replace", "watchdog.sh");
  expect(replaced.stdout).toContain(`crontab: commented out: ${old}`);
  expect(crontab()).toContain(`#${old} # replaced by tend\n`);
  expect(asUser("watchdog", "install", "cron").stderr).not.toContain("still runs another watchdog");
  const removed = asUser("watchdog", "uninstall", "cron", "--write");
  expect(removed.stdout).toContain(`crontab: restored: ${old}`);
  expect(crontab()).toBe(`0 3 * * * /usr/local/bin/backup.sh\n${old}\n`);
});

test("the line install cron writes runs from its first tick, as cron runs it: the state dir exists", async () => {
  setup("5m");
  expect(existsSync(box.state)).toBe(false); // following the guide, nothing else creates it
  // The line as it is where cron cannot mail (Termux, no sendmail): the shell opens its redirect
  // before tend starts. Written by hand first (an older install): doctor says it cannot run.
  const { cronLine } = await import("../lib/operator/install.ts");
  const config = { path: box.config, watchdog: { stateDir: box.state } } as Parameters<typeof cronLine>[0];
  const line = cronLine(config, { binary, home: box.dir, uid: 0, intervalMs: 300_000, mail: false });
  Bun.spawnSync(["crontab", "-u", USER, "-"], { stdin: new TextEncoder().encode(`${line}\n`) });
  const doctor = asUser("doctor");
  expect(doctor.stdout).toContain(`${box.state} does not exist, and the crontab line appends to its cron.log`);
  const written = asUser("watchdog", "install", "cron", "--write");
  expect(written.stdout).toContain(`${box.state}: created (mode 0700)`);
  expect(statSync(box.state).mode & 0o777).toBe(0o700);
  expect(crontab()).toContain(line.replace(` >> ${box.state}/cron.log 2>&1`, mailless(box.state)));
  // cron's way: /bin/sh -c with the line's command, PATH=/usr/bin:/bin, HOME, SHELL, LOGNAME only.
  const command = line
    .split(" ")
    .slice(5)
    .join(" ")
    .replace(/ # tend watchdog$/, "");
  const cronTick = ["runuser", "-u", USER, "--", "env", "-i", "PATH=/usr/bin:/bin", `HOME=${box.dir}`].concat([
    "SHELL=/bin/sh",
    `LOGNAME=${USER}`,
    "/bin/sh",
    "-c",
    command,
  ]);
  const tick = Bun.spawnSync(cronTick, { stderr: "pipe" });
  expect(tick.stderr.toString()).toBe(""); // no "cannot create .../cron.log: Directory nonexistent"
  expect(tick.exitCode).toBe(0);
  expect(existsSync(join(box.state, "heartbeat"))).toBe(true); // the pass ran
  // Each event once: in watchdog.log, not again in cron.log (which has only what could not reach the log).
  expect(readFileSync(join(box.state, "watchdog.log"), "utf8")).toContain("[START] watching web");
  expect(readFileSync(join(box.state, "cron.log"), "utf8")).toBe("");
  // A log that cannot be written: the line reaches cron.log, with the error.
  rmSync(join(box.state, "watchdog.log"));
  mkdirSync(join(box.state, "watchdog.log"));
  rmSync(join(box.state, "services"), { recursive: true });
  Bun.spawnSync(cronTick);
  const unlogged = readFileSync(join(box.state, "cron.log"), "utf8");
  expect(unlogged).toContain("[START] watching web");
  expect(unlogged).toMatch(/watchdog\.log/);
});

test("where cron cannot mail (no sendmail, as on Termux) the line appends to the state dir's cron.log", async () => {
  setup("5m");
  const { cronLine } = await import("../lib/operator/install.ts");
  const config = { path: "/c/tend.toml", watchdog: { stateDir: "/s" } } as Parameters<typeof cronLine>[0];
  const options = { binary: "/bin/tend", home: "/h", uid: 1000, intervalMs: 300_000 };
  expect(cronLine(config, { ...options, mail: false })).toBe(
    "*/5 * * * * /bin/tend watchdog pass --interval 5m --config /c/tend.toml >> /s/cron.log 2>&1 # tend watchdog",
  );
  expect(cronLine(config, { ...options, mail: true })).toBe(
    "*/5 * * * * /bin/tend watchdog pass --interval 5m --config /c/tend.toml # tend watchdog",
  );
});

test("install touches only its own line; --replace needs one match; newlines refused, $ and \\ escaped", () => {
  setup("5m");
  const mine = "0 3 * * * /usr/local/bin/backup.sh # tend watchdog";
  const two = ["*/5 * * * * /opt/a/watchdog.sh", "*/7 * * * * /opt/b/watchdog.sh"];
  Bun.spawnSync(["crontab", "-u", USER, "-"], { stdin: new TextEncoder().encode(`${mine}\n${two.join("\n")}\n`) });
  // A user's line that only mentions the marker is not tend's: kept by install and uninstall.
  expect(asUser("watchdog", "install", "cron", "--write").code).toBe(0);
  expect(crontab()).toContain(`${mine}\n`);
  expect(asUser("watchdog", "uninstall", "cron", "--write").code).toBe(0);
  expect(crontab()).toBe(`${mine}\n${two.join("\n")}\n`);
  // --replace names one line: empty, or matching two, is a usage error that changes nothing.
  const empty = asUser("watchdog", "install", "cron", "--write", "--replace", "");
  expect(empty.code).toBe(2);
  expect(empty.stderr).toContain("--replace needs a non-empty PATTERN");
  const broad = asUser("watchdog", "install", "cron", "--write", "--replace", "watchdog.sh");
  expect(broad.code).toBe(2);
  expect(broad.stderr).toContain('--replace "watchdog.sh" matches 2 crontab lines');
  expect(crontab()).toBe(`${mine}\n${two.join("\n")}\n`);
  const none = asUser("watchdog", "install", "cron", "--write", "--replace", "nothing-like-it");
  expect(none.code).toBe(2);
  // A newline in a path would start a line (a cron job, an ExecStartPre=) of its own: refused.
  box.writeConfig(
    readFileSync(box.config, "utf8").replace(/state_dir = ".*"/, 'state_dir = "/tmp/x\\n* * * * * evil"'),
  );
  const injected = asUser("watchdog", "install", "cron");
  expect(injected.code).toBe(2);
  expect(injected.stderr).toContain("holds a newline or a control character");
  // systemd: $ is a variable and \ an escape in ExecStart: written as $$ and \\ (inside quotes).
  setup("5m");
  const odd = join(box.dir, "a$HOME b\\c");
  Bun.spawnSync(["mkdir", odd]);
  copyFileSync(box.config, join(odd, "tend.toml"));
  chmodSync(odd, 0o755);
  const unit = Bun.spawnSync(
    ["runuser", "-u", USER, "--", "env", `HOME=${box.dir}`, binary, "watchdog", "install", "systemd"].concat([
      "--config",
      join(odd, "tend.toml"),
    ]),
  ).stdout.toString();
  expect(unit).toContain(`--config "${box.dir}/a$$HOME b\\\\c/tend.toml"`);
});
