// The end-to-end tests that matter on a phone, run inside the Termux-shaped sandbox (test/termux.ts):
// no /proc/uptime, /proc/stat or /proc/net, other users' processes invisible, no /tmp, a /bin/sh
// that is not Termux's, an unprivileged user. The same behaviours are tested outside in their own files.
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, utimesSync } from "node:fs";
import { uptime } from "node:os";
import {
  alive,
  BUN,
  controlledServer,
  freePort,
  publicCopy,
  recordingReceiver,
  removePublicCopy,
  SERVER,
  waitFor,
} from "./helpers.ts";

/** The example service as the app runs it: a copy it can read (helpers.ts publicCopy). */
const service = () => publicCopy().file("examples/service.ts");
import { HOME, PREFIX, TermuxBox } from "./termux.ts";

let box: TermuxBox;
let pidfiles: string[] = [];
const stops: (() => void)[] = [];
afterAll(() => removePublicCopy());
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup(pidfiles);
  pidfiles = [];
});

const stateOf = (name: string) => JSON.parse(readFileSync(box.outside(`${box.state}/services/${name}.json`), "utf8"));
const log = () => {
  const path = box.outside(`${box.state}/watchdog.log`);
  return existsSync(path) ? readFileSync(path, "utf8") : "";
};

test("sandbox: what Android takes away is gone here too (the test bed itself)", async () => {
  box = new TermuxBox();
  const seen = await box.run([
    "sh",
    "-c",
    "cat /proc/uptime; cat /proc/stat; ls /proc/net; ls -d /proc/1; touch /tmp/x; /bin/sh -c true; " +
      "echo $HOME $PREFIX $TMPDIR",
  ]);
  expect(seen.stderr).toContain("/proc/uptime: No such file");
  expect(seen.stderr).toContain("/proc/stat: No such file");
  expect(seen.stderr).toContain("/proc/net");
  expect(seen.stderr).toContain("/proc/1"); // root's PID 1: invisible (hidepid)
  expect(seen.stderr).toContain("'/tmp/x': Permission denied");
  expect(seen.stderr).toContain("Android's mksh");
  expect(seen.stdout).toContain(`${HOME} ${PREFIX} ${PREFIX}/tmp`);
});

test("a pass with a failing service counts strikes (no ERROR); status and doctor run; nothing in /tmp", async () => {
  box = new TermuxBox();
  const { control, server, url } = controlledServer();
  stops.push(() => server.stop(true));
  control.status = 503;
  box.writeConfig(`
[[service]]
name = "blog"
[service.check]
http = "${url}"
timeout = "2s"
`);
  for (let pass = 1; pass <= 3; pass++) {
    const result = await box.tendRun(["watchdog"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
  }
  const lines = log();
  expect(lines).not.toContain("[ERROR]");
  expect(lines).toContain("[WARN] blog failed health check (HTTP 503 (expected 2xx/3xx), failure 1/3)");
  expect(lines).toContain("failure 3/3");
  expect(lines).toContain("[FAILED] blog is down (HTTP 503 (expected 2xx/3xx)): watch only, not restarted");
  expect(stateOf("blog")).toMatchObject({ strikes: 3, verdict: { word: "down" } });

  const status = await box.tendRun(["watchdog", "status", "--json"]);
  expect(status.code).toBe(1);
  expect(status.stderr).toBe("");
  expect(JSON.parse(status.stdout).services[0]).toMatchObject({ state: "down", strikes: 3 });
  control.status = 200;
  expect((await box.tendRun(["watchdog"])).code).toBe(0);
  expect(log()).toContain("[RECOVERED] blog is healthy again");
  expect((await box.tendRun(["watchdog", "status"])).code).toBe(0);
});

test("another user's (root's) service is alive, not visible: no second instance; safe-kill refuses", async () => {
  box = new TermuxBox();
  const port = await freePort();
  // Started "with su": by root, outside, so the sandbox's user cannot see it in /proc.
  const server = Bun.spawn([BUN, SERVER, String(port)], { stdout: "ignore", stderr: "inherit", detached: true });
  box.track(server.pid);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "server");
  box.write(`${HOME}/api.pid`, `${server.pid}\n`);
  box.writeConfig(`
[[service]]
name = "api"
pidfile = "${HOME}/api.pid"
grace = "0s"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "1s"
[service.restart]
spawn = ["bun", "${service()}", "${port}"]
`);
  const pass = await box.tendRun(["watchdog"]);
  expect(pass.stdout).not.toContain("[START] api: started");
  expect(pass.stdout).not.toContain("crash");
  expect(stateOf("api").verdict.word).toBe("healthy"); // the probe judged it
  const status = await box.tendRun(["watchdog", "status"]);
  expect(status.stdout).toContain(`api: pid ${server.pid} runs as another user (not visible): the probe judges it`);
  const kill = await box.tendRun(["safe-kill", "api"]);
  expect(kill.code).toBe(3);
  expect(kill.stderr).toContain(`pid ${server.pid} runs as another user (not visible): its start time cannot be read`);
  expect(server.exitCode).toBeNull();
  // Frozen: it strikes, and at N the restart refuses to start a second copy beside one it cannot stop.
  process.kill(server.pid, "SIGSTOP");
  stops.push(() => server.kill("SIGCONT")); // a Subprocess: no throw if it is gone already
  for (let pass = 0; pass < 3; pass++) await box.tendRun(["watchdog"]);
  expect(log()).toContain("failure 3/3");
  // Not a restart: not counted, no RESTART, no ⚠️; down, said once.
  expect(
    log().match(/\[FAILED\] api cannot be restarted by tend \(pid \d+ runs as another user \(not visible\)\)/g),
  ).toHaveLength(1);
  expect(log()).not.toContain("[RESTART]");
  expect(stateOf("api")).toMatchObject({ restartsTotal: 0, verdict: { word: "down" } });
  const listening = Bun.spawnSync(["ss", "-Hltn", `sport = :${port}`])
    .stdout.toString()
    .trim()
    .split("\n");
  expect(listening.filter(Boolean)).toHaveLength(1); // still only the one
});

test("restart.spawn inside: sh from PATH (not /bin/sh) starts it; frozen, it is restarted", async () => {
  box = new TermuxBox();
  const port = await freePort();
  const pidfile = `${HOME}/web.pid`;
  pidfiles = [pidfile];
  box.writeConfig(`
[[service]]
name = "web"
pidfile = "${pidfile}"
grace = "0s"
failures = 1
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "1s"
[service.restart]
spawn = ["bun", "${service()}", "${port}"]
`);
  const first = await box.tendRun(["watchdog"]);
  expect(first.stdout).toMatch(/\[START\] web: started pid \d+/);
  expect(log()).not.toContain("[ERROR]");
  const pid = Number(readFileSync(box.outside(pidfile), "utf8"));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "web");
  process.kill(pid, "SIGSTOP");
  const second = await box.tendRun(["watchdog"]);
  expect(second.stdout).toContain("[HUNG] web failed 1 check in a row");
  expect(second.stdout).toMatch(/\[RECOVERED\] web recovered/);
  expect(Number(readFileSync(box.outside(pidfile), "utf8"))).not.toBe(pid);
  await waitFor(() => !alive(pid), 5000, "the frozen one stopped by the restart"); // its group: TERM, then KILL
});

test("restart.tmux inside: the pane is created on Termux's tmux server ($PREFIX/tmp) and restarted", async () => {
  box = new TermuxBox();
  const port = await freePort();
  box.writeConfig(`
[[service]]
name = "blog"
grace = "0s"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "2s"
[service.restart]
tmux = "main:blog"
run = "exec bun ${service()} ${port}"
`);
  const first = await box.tendRun(["watchdog"]);
  expect(first.stdout).toContain("[START] blog: ");
  expect(log()).not.toContain("[ERROR]");
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "pane");
  const panes = await box.run(["tmux", "list-panes", "-a", "-F", "#{session_name}:#{window_name} #{pane_pid}"]);
  expect(panes.stdout).toMatch(/^main:blog \d+/);
  expect(existsSync(box.outside(`${PREFIX}/tmp/tmux-${65534}/default`))).toBe(true);
});

test("a second loop on one state dir exits 0 saying who watches; a cron pass beside it exits silently", async () => {
  box = new TermuxBox();
  const { server, url } = controlledServer();
  stops.push(() => server.stop(true));
  box.writeConfig(`
[[service]]
name = "blog"
[service.check]
http = "${url}"
`);
  const loop = box.spawn(["tend", "watchdog", "run", "--interval", "1h"]);
  await waitFor(() => existsSync(box.outside(`${box.state}/heartbeat`)), 20_000, "the loop's first pass");
  const heartbeat = readFileSync(box.outside(`${box.state}/heartbeat`), "utf8");
  const second = await box.tendRun(["watchdog", "run", "--interval", "1h"]);
  expect(second.code).toBe(0);
  expect(second.stdout).toContain(`[SKIP] another loop watches (pid ${loop.pid}): this one exits`);
  const cron = await box.tendRun(["watchdog"]);
  expect(cron).toMatchObject({ code: 0, stdout: "", stderr: "" });
  expect(readFileSync(box.outside(`${box.state}/heartbeat`), "utf8")).toBe(heartbeat);
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
  // The loop is gone: the kernel dropped its lock, and cron's pass runs again.
  await box.tendRun(["watchdog"]);
  expect(readFileSync(box.outside(`${box.state}/heartbeat`), "utf8")).not.toBe(heartbeat);
});

test("on a phone: RSS from VmRSS; without /proc/net only busy.port degrades, said once", async () => {
  box = new TermuxBox();
  const port = await freePort();
  const pidfile = `${HOME}/engine.pid`;
  pidfiles = [pidfile];
  box.write(`${HOME}/engine.log`, "indexing\n");
  box.writeConfig(`
[[service]]
name = "engine"
pidfile = "${pidfile}"
grace = "0s"
failures = 2
verify_timeout = "2s"
[service.check]
http = "http://127.0.0.1:${port + 1}/"
timeout = "500ms"
[service.busy]
port = ${port}
log = "${HOME}/engine.log"
[service.memory]
limit = "1GiB"
[service.restart]
spawn = ["bun", "${service()}", "${port}"]
`);
  await box.tendRun(["watchdog"]); // starts it
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "engine");
  await box.tendRun(["watchdog"]);
  await box.tendRun(["watchdog"]);
  const lines = log();
  expect(lines).not.toContain("[ERROR]");
  // The log alone decides busy; the port is not checked, and that is said once, not every pass.
  expect(lines.match(/busy\.port: \/proc\/net\/tcp: no such file: the port is not checked/g)).toHaveLength(1);
  expect(lines).toContain("[BUSY] engine failed health check");
  const rss = stateOf("engine").rss;
  expect(rss.length).toBeGreaterThan(0);
  expect(rss.at(-1)[1]).toBeGreaterThan(10 * 1024 * 1024); // a bun process: tens of MiB, from VmRSS (kB)
});

test("blogtunnel, notify, serve, install and doctor inside: they run and say what they did", async () => {
  box = new TermuxBox();
  const received: string[] = [];
  const hook = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/tunnel") return new Response("bad gateway", { status: 530 });
      received.push(await request.text());
      return new Response("ok");
    },
  });
  stops.push(() => hook.stop(true));
  const base = `http://127.0.0.1:${hook.port}`;
  box.writeConfig(`
[notify]
url = "${base}/topic"
[[service]]
name = "blog"
[service.check]
tcp = "127.0.0.1:${hook.port}"
`);
  // blogtunnel: the strike in its plain counter file under $HOME, its line in the watchdog log.
  const tunnel = await box.tendRun([
    "blogtunnel",
    "--url",
    `${base}/tunnel`,
    "--counter",
    `${HOME}/.blogtunnel-fail-count`,
  ]);
  expect(tunnel.stderr).toBe("");
  expect(readFileSync(box.outside(`${HOME}/.blogtunnel-fail-count`), "utf8").trim()).toBe("1");
  expect(log()).toContain("HTTP 530");

  // notify: delivered, nothing spooled.
  const sent = await box.tendRun(["notify", "--title", "phone", "hello from termux"]);
  expect(sent).toMatchObject({ code: 0, stderr: "" });
  expect(received).toContain("hello from termux");

  // serve: listening inside, answered outside.
  await box.tendRun(["watchdog"]);
  const serving = box.spawn(["tend", "watchdog", "serve", "--listen", "127.0.0.1:0"]);
  const reader = serving.stdout.getReader();
  let said = "";
  await waitFor(
    async () => {
      const { value } = await reader.read();
      said += new TextDecoder().decode(value ?? new Uint8Array());
      return /serving http:\/\/\S+/.test(said);
    },
    20_000,
    "serve",
  );
  const url = /serving (http:\/\/[^\s/]+)/.exec(said)![1];
  const health = await fetch(`${url}/healthz`);
  expect(health.status).toBe(200);
  const api = await (await fetch(`${url}/api/status`)).json();
  expect(api.services[0]).toMatchObject({ name: "blog", state: "healthy" });
  serving.kill("SIGTERM");

  // install: the Termux:Boot script starts from Termux's own shell, never /bin/sh: the wake lock, then
  // runsvdir (crond under it); cron's line is printed, with what Termux still needs for it.
  const boot = await box.tendRun(["watchdog", "install", "termux-boot", "--write"]);
  expect(boot.code).toBe(0);
  const script = readFileSync(box.outside(`${HOME}/.termux/boot/tend-watchdog`), "utf8");
  expect(script.split("\n")[0]).toBe(`#!${PREFIX}/bin/sh`);
  expect(script).toContain("termux-wake-lock\n");
  expect(script).toContain("service-daemon start\n");
  const cron = await box.tendRun(["watchdog", "install", "cron"]);
  expect(cron.code).toBe(0);
  expect(cron.stderr).toContain("cron on Termux needs: pkg install cronie termux-services; then sv-enable crond");
  expect((await box.tendRun(["watchdog", "install", "cron", "--write"])).code).toBe(1); // no crontab to write to
  expect(cron.stdout).toMatch(
    new RegExp(`^\\*/5 \\* \\* \\* \\* \\S+/tend watchdog pass --interval 5m --config ${box.config}`),
  );

  // doctor: every row said, none an internal error; what a phone lacks is named, not fatal.
  const doctor = await box.tendRun(["doctor", "--json"]);
  expect(doctor.stderr).toBe("");
  const rows = Object.fromEntries(
    JSON.parse(doctor.stdout).capabilities.map((row: { name: string }) => [row.name, row]),
  );
  expect(rows["process start times"].status).toBe("ok");
  expect(rows["RSS (/proc)"].status).toBe("ok");
  expect(rows["listeners (/proc/net/tcp)"].status).not.toBe("ok");
  expect(rows["state dir"].status).toBe("ok");
  expect(rows["notify target"].status).toBe("ok");
  // The phone's own rows, and a pass's work done once: the device check a user pastes into an issue.
  expect(rows["process visibility"]).toMatchObject({ status: "limited", detail: expect.stringContaining("hidepid=2") });
  expect(rows["/proc files"].detail).toContain("/proc/self/stat ok, /proc/self/status ok, /proc/net/tcp no such file");
  expect(rows["/proc files"].detail).toContain("/proc/uptime, /proc/stat closed (tend does not read them)");
  expect(rows["page size"].detail).toMatch(/^(4096|16384) bytes \(RSS is VmRSS/);
  expect(rows["phantom process killer"].detail).toBe("not Android (getprop gives no API level)");
  expect(rows["Termux:Boot entries"]).toMatchObject({ status: "ok", detail: "tend-watchdog" });
  expect(rows["wake lock"].status).toBe("ok");
  expect(rows["crond and runsvdir"].detail).toContain("pkg install cronie termux-services");
  expect(rows["Termux:API"]).toMatchObject({ status: "missing" });
  expect(rows["state dir file system"].status).toBe("ok");
  for (const name of ["spawn and reap", "lock", "own start time", "local fetch"]) expect(rows[name].status).toBe("ok");

  // Nothing was written outside $HOME and $PREFIX: the sandbox's /tmp cannot be written at all.
  expect(log()).not.toContain("[ERROR]");
});

test("a state dir on shared storage (/sdcard, /storage) is refused with words, naming a place in $HOME", async () => {
  box = new TermuxBox();
  for (const dir of ["/sdcard/tend", "/storage/emulated/0/tend"]) {
    box.writeConfig(
      `[watchdog]\nstate_dir = "${dir}"\n[[service]]\nname = "blog"\n[service.check]\ntcp = "127.0.0.1:1"\n`,
    );
    const pass = await box.tendRun(["watchdog"]);
    expect(pass.code).toBe(1);
    expect(pass.stderr).toContain(`state dir ${dir} is on shared storage (Android's shared storage)`);
    expect(pass.stderr).toContain("use a place under $HOME");
  }
});

test("sleep is not absence: a gap spent asleep (by the clocks) is device_suspended, not 💤, not a reboot", async () => {
  box = new TermuxBox();
  const hook = recordingReceiver();
  const { received } = hook;
  stops.push(hook.stop);
  box.writeConfig(`
[watchdog]
interval = "10s"
[notify]
url = "http://127.0.0.1:${hook.port}/topic"
[[service]]
name = "blog"
[service.check]
tcp = "127.0.0.1:${hook.port}"
`);
  await box.tendRun(["watchdog"]);
  const file = box.outside(`${box.state}/heartbeat`);
  const [at, interval, clockLine] = readFileSync(file, "utf8").split("\n");
  expect(clockLine).toMatch(/^clocks boot=\d+ awake=\d+$/);
  // A pass some minutes ago (within this boot), as a phone without a wake lock records it: the boot-time clock
  // the whole gap back, the awake clock only 20 s (awake less than 2 x interval + 30 s: no missed pass).
  const [boot, awake] = clockLine.match(/\d+/g)!.map(Number);
  const gapMs = Math.min(180_000, uptime() * 1000 - 20_000);
  expect(gapMs).toBeGreaterThan(60_000); // the host has been up long enough to have slept since a pass
  const passAgo = Date.now() - gapMs;
  const clocks = `clocks boot=${boot - gapMs} awake=${awake - 20_000}`;
  const earlier = `${new Date(passAgo).toISOString()}\n${interval}\n${clocks}\n`;
  box.write(`${box.state}/heartbeat`, earlier, 0o600);
  utimesSync(file, new Date(passAgo), new Date(passAgo));
  void at;
  const pass = await box.tendRun(["watchdog"]);
  expect(pass.stdout).toMatch(/\[DOWNTIME\] device was asleep for \d+s \(device_suspended, from /);
  expect(pass.stdout).not.toContain("watchdog did not run");
  expect(received.filter((body) => body.includes("💤"))).toEqual([]);
  // Without the clocks (an older heartbeat), the same gap is the watchdog not running: 💤.
  box.write(`${box.state}/heartbeat`, `${new Date(passAgo).toISOString()}\n${interval}\n`, 0o600);
  utimesSync(file, new Date(passAgo), new Date(passAgo));
  const again = await box.tendRun(["watchdog"]);
  expect(again.stdout).toContain("[DOWNTIME] watchdog did not run for");
});

test('format = "termux", STAND-IN termux-notification (Termux:API cannot run here): one id per service', async () => {
  box = new TermuxBox();
  const calls = `${HOME}/calls.jsonl`;
  // Records its argv: arguments ended by \x1f, calls by \x1e (a message may hold newlines).
  box.write(
    `${PREFIX}/bin/termux-notification`,
    `#!/usr/bin/bash\nprintf '%s\\x1f' "$@" >> ${calls}\nprintf '\\x1e' >> ${calls}\n`,
    0o755,
  );
  const { control, server, url } = controlledServer();
  stops.push(() => server.stop(true));
  box.writeConfig(`
[notify]
format = "termux"
[[service]]
name = "blog"
[service.check]
http = "${url}"
timeout = "1s"
`);
  expect((await box.tendRun(["watchdog", "validate"])).code).toBe(0);
  control.status = 503;
  for (let pass = 0; pass < 3; pass++) await box.tendRun(["watchdog"]);
  control.status = 200;
  await box.tendRun(["watchdog"]);
  const sent = readFileSync(box.outside(calls), "utf8")
    .split("\x1e")
    .filter(Boolean)
    .map((call) => call.split("\x1f").slice(0, -1));
  expect(sent).toHaveLength(2);
  const [down, up] = sent as string[][];
  const arg = (argv: string[], flag: string) => argv[argv.indexOf(flag) + 1];
  expect(arg(down, "--id")).toBe("tend-blog");
  expect(arg(up, "--id")).toBe("tend-blog"); // the ✅ replaces the 🚨 in the notification shade
  expect(arg(down, "--priority")).toBe("max");
  expect(arg(down, "--content")).toStartWith("🚨");
  expect(arg(up, "--content")).toStartWith("✅");
  expect(arg(down, "--content")).toContain("blog");
});

test('format = "termux": a STAND-IN termux-notification that hangs (no app) is killed at 10 s, spooled', async () => {
  box = new TermuxBox();
  const child = `${HOME}/hung-child.pid`;
  // Hangs like termux-notification without the app, with a child of its own: the whole group must go.
  box.write(`${PREFIX}/bin/termux-notification`, `#!/usr/bin/bash\nsleep 1000 &\necho $! > ${child}\nwait\n`, 0o755);
  box.writeConfig(`
[notify]
format = "termux"
[[service]]
name = "blog"
[service.check]
tcp = "127.0.0.1:1"
`);
  const started = Date.now();
  const sent = await box.tendRun(["notify", "--service", "blog", "the phone says hello"]);
  expect(Date.now() - started).toBeLessThan(30_000);
  expect(sent.code).toBe(1);
  expect(sent.stderr).toContain("termux-notification: no answer within 10s (is the Termux:API app installed?");
  const spool = readFileSync(box.outside(`${box.state}/notify-spool.jsonl`), "utf8");
  expect(spool).toContain("the phone says hello");
  const grandchild = Number(readFileSync(box.outside(child), "utf8"));
  await waitFor(() => !existsSync(`/proc/${grandchild}`), 5000, "the stand-in's child killed with its group");
  const listed = await box.tendRun(["notify", "--spool"]);
  expect(listed.stdout).toContain("termux termux-notification");
  // The app is back: the late message is the live one, its note after its text.
  const calls = `${HOME}/late-calls`;
  box.write(`${PREFIX}/bin/termux-notification`, `#!/usr/bin/bash\nprintf '%s\\x1f' "$@" > ${calls}\n`, 0o755);
  expect((await box.tendRun(["notify", "--flush"])).code).toBe(0);
  const argv = readFileSync(box.outside(calls), "utf8").split("\x1f");
  expect(argv[argv.indexOf("--content") + 1]).toMatch(
    /^the phone says hello\n\(late since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/,
  );
  expect(argv[argv.indexOf("--id") + 1]).toBe("tend-blog");
});
