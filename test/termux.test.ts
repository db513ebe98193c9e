// The end-to-end tests that matter on a phone, run inside the Termux-shaped sandbox (test/termux.ts):
// a phone of its own namespaces, a root without the host's /usr, /tmp or /etc, the app's uid with
// no_new_privs under Android's seccomp filter (ENOSYS for what an old phone's kernel lacks, EACCES for
// the /proc files Android closes), root's processes invisible (hidepid=2), dash as Termux's sh, a
// getprop, and a reboot made for real. The same behaviours are tested outside in their own files.
// What still cannot be emulated is said in test/termux.ts's header: bionic and the android build,
// SELinux itself, the phantom process killer, Doze, Termux:API and the Termux:Boot app (a STAND-IN runs
// its entries), an old phone's kernel (only the filter makes its syscalls missing).
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, utimesSync } from "node:fs";
import { uptime } from "node:os";
import { controlledServer, freePort, publicCopy, recordingReceiver, removePublicCopy, waitFor } from "./helpers.ts";
import { APP_UID, HOME, PREFIX, TermuxBox, TESTS } from "./termux.ts";
import { savedState } from "../lib/state/service-state.ts";

/** The example service as the phone runs it: the public copy (helpers.ts publicCopy), bound in at TESTS. */
const service = () => publicCopy().file("examples/service.ts").replace(publicCopy().dir, TESTS);

let box: TermuxBox;
const stops: (() => void)[] = [];
afterAll(() => removePublicCopy());
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup();
});

const stateOf = (name: string): any => savedState(box.outside(box.state), name);
const log = () => {
  const path = box.outside(`${box.state}/watchdog.log`);
  return existsSync(path) ? readFileSync(path, "utf8") : "";
};
/** A PID tend wrote (a pidfile): the phone's own numbering. */
const pidIn = (inside: string) => Number(readFileSync(box.outside(inside), "utf8").trim());

// The sandbox's restrictions, each shown to hold inside (the test bed itself).

test("sandbox: /proc/uptime, stat, loadavg, version, vmstat are EACCES (Android 8+)", async () => {
  box = new TermuxBox();
  const files = ["/proc/uptime", "/proc/stat", "/proc/loadavg", "/proc/version", "/proc/vmstat"];
  const seen = await box.run(["sh", "-c", files.map((file) => `cat ${file}`).join("; ") + "; cat /proc/self/stat"]);
  for (const file of files) expect(seen.stderr).toContain(`cat: ${file}: Permission denied`);
  expect(seen.stdout).toMatch(/^\d+ \(cat\) R /); // its own /proc/PID/stat stays readable
});

test("sandbox: /proc/net, /proc/self/net, /proc/PID/net and a task's net are EACCES, as Android 10+", async () => {
  box = new TermuxBox();
  const seen = await box.run([
    "sh",
    "-c",
    "cat /proc/net/tcp; ls /proc/self/net; cat /proc/$$/net/tcp6; cat /proc/thread-self/net/unix; " +
      "cat /proc/$$/task/$$/net/tcp; cd /proc/self && cat net/tcp; cat /proc/meminfo > /dev/null && echo meminfo ok",
  ]);
  expect(seen.stderr).toContain("cat: /proc/net/tcp: Permission denied");
  expect(seen.stderr).toContain("ls: cannot open directory '/proc/self/net': Permission denied");
  expect(seen.stderr).toMatch(/cat: \/proc\/\d+\/net\/tcp6: Permission denied/);
  expect(seen.stderr).toContain("cat: /proc/thread-self/net/unix: Permission denied");
  expect(seen.stderr).toMatch(/cat: \/proc\/\d+\/task\/\d+\/net\/tcp: Permission denied/);
  expect(seen.stderr).toContain("cat: net/tcp: Permission denied");
  expect(seen.stdout).toBe("meminfo ok\n");
});

test("sandbox: root's processes are invisible (hidepid=2): /proc/1 absent, kill -0 1 is EPERM", async () => {
  box = new TermuxBox();
  const seen = await box.run(["sh", "-c", "ls -d /proc/1; kill -0 1; ls -d /proc/self"]);
  expect(seen.stderr).toContain("ls: cannot access '/proc/1': No such file or directory");
  expect(seen.stderr).toMatch(/kill: .*(Operation not permitted|not permitted)/i);
  expect(seen.stdout).toBe("/proc/self\n");
});

test("sandbox: pivot_root: no /usr, /tmp, /etc or /usr/bin/env of the host; /bin/sh is not Termux's", async () => {
  box = new TermuxBox();
  const seen = await box.run([
    "sh",
    "-c",
    "ls /; ls /usr; touch /tmp/x; /usr/bin/env true; cat /etc/os-release; cat /etc/hosts; /bin/sh -c true; echo sh=$?",
  ]);
  expect(seen.stdout.split("\n").slice(0, 8)).toEqual(["bin", "data", "dev", "etc", "lib", "lib64", "proc", "system"]);
  expect(seen.stderr).toContain("ls: cannot access '/usr': No such file or directory");
  expect(seen.stderr).toContain("touch: cannot touch '/tmp/x': No such file or directory");
  expect(seen.stderr).toMatch(/\/usr\/bin\/env: not found/);
  expect(seen.stderr).toContain("cat: /etc/os-release: No such file or directory");
  expect(seen.stdout).toContain("127.0.0.1 localhost"); // Android's /system/etc/hosts
  expect(seen.stderr).toContain("/system/bin/sh: this is Android's mksh, not Termux's shell");
  expect(seen.stdout).toContain("sh=127");
});

test("sandbox: /dev as Android's: no /dev/shm; /dev/null, urandom and a pty (tmux's) work for the app", async () => {
  box = new TermuxBox();
  const seen = await box.run(["sh", "-c", "ls -d /dev/shm; echo x > /dev/null && head -c 4 /dev/urandom | wc -c"]);
  expect(seen.stderr).toContain("ls: cannot access '/dev/shm': No such file or directory");
  expect(seen.stdout).toBe("4\n");
  const tmux = await box.run(["tmux", "new-session", "-d", "-s", "pty", "sleep 5"]);
  expect(tmux).toMatchObject({ code: 0, stderr: "" });
  // tend says what a full disk then costs: its states in the process's memory only (cron passes lose them).
  box.writeConfig(`[watchdog]\nstate_dir = "${box.state}"\n`);
  const doctor = JSON.parse((await box.tendRun(["doctor", "--json"])).stdout);
  expect(doctor.capabilities.find((row: { name: string }) => row.name === "full-disk memory (/dev/shm)")).toEqual({
    name: "full-disk memory (/dev/shm)",
    status: "limited",
    detail: "no /dev/shm (Android has none)",
    affects:
      "a full state disk: states are kept in the process's memory only — the loop keeps them, cron passes do not",
    used: false,
  });
});

test("sandbox: $PREFIX/bin/sh is dash, PATH is $PREFIX/bin, getprop gives API 29, no TMUX_TMPDIR", async () => {
  box = new TermuxBox();
  const seen = await box.run([
    "sh",
    "-c",
    'echo "$PATH|${TMUX_TMPDIR-unset}|$TMPDIR|$(getprop ro.build.version.sdk)"; ' +
      '[ "$(readlink /proc/$$/exe)" = "$PREFIX/bin/sh" ] && echo sh ok; ' +
      "cmp $PREFIX/bin/sh $PREFIX/bin/dash && echo dash",
  ]);
  expect(seen.stdout).toBe(`${PREFIX}/bin|unset|${PREFIX}/tmp|29\nsh ok\ndash\n`);
});

test("sandbox: the app's uid (u0_a123) with no_new_privs, under a seccomp filter", async () => {
  box = new TermuxBox();
  const seen = await box.run(["sh", "-c", "id -u; id -un; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"]);
  expect(seen.stdout).toBe(`${APP_UID}\nu0_a123\nNoNewPrivs:\t1\nSeccomp:\t2\n`);
});

test("sandbox: statx, pidfd_open, close_range, openat2, fchmodat2 are ENOSYS (an old phone's); tend runs", async () => {
  box = new TermuxBox();
  const seen = await box.run(["/system/bin/android", "syscalls"]);
  expect(seen.stdout).toBe(
    ["statx", "pidfd_open", "close_range", "openat2", "fchmodat2"].map((name) => `${name} ENOSYS\n`).join(""),
  );
  const version = await box.tendRun(["--version"]);
  expect(version).toMatchObject({ code: 0, stderr: "" });
  expect(version.stdout).toStartWith("tend ");
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
  // Started "with su": by root, inside the phone, so the app cannot see it in /proc.
  const started = await box.runAsRoot(["sh", "-c", `bun ${service()} ${port} > /dev/null 2>&1 & echo $!`]);
  const serverPid = Number(started.stdout.trim());
  expect(serverPid).toBeGreaterThan(1);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "server");
  box.write(`${HOME}/api.pid`, `${serverPid}\n`);
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
  expect(status.stdout).toContain(`api: pid ${serverPid} runs as another user (not visible): the probe judges it`);
  const kill = await box.tendRun(["safe-kill", "api"]);
  expect(kill.code).toBe(3);
  expect(kill.stderr).toContain(`pid ${serverPid} runs as another user (not visible): its start time cannot be read`);
  expect(await box.alive(serverPid)).toBe(true);
  // Frozen: it strikes, and at N the restart refuses to start a second copy beside one it cannot stop.
  await box.signal(serverPid, "SIGSTOP");
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
  const pid = pidIn(pidfile);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "web");
  await box.signal(pid, "SIGSTOP");
  const second = await box.tendRun(["watchdog"]);
  expect(second.stdout).toContain("[HUNG] web failed 1 check in a row");
  expect(second.stdout).toMatch(/\[RECOVERED\] web recovered/);
  expect(pidIn(pidfile)).not.toBe(pid);
  await waitFor(async () => !(await box.alive(pid)), 5000, "the frozen one stopped by the restart"); // TERM, then KILL
});

test("loop inside (pidfd_open ENOSYS): a process it started wakes it by its end; kill -9 is answered", async () => {
  box = new TermuxBox();
  const port = await freePort();
  const pidfile = `${HOME}/web.pid`;
  box.writeConfig(`
[[service]]
name = "web"
pidfile = "${pidfile}"
grace = "0s"
cooldown = "0s"
[service.check]
http = "http://127.0.0.1:${port}/"
[service.restart]
spawn = ["bun", "${service()}", "${port}"]
`);
  const loop = await box.spawn(["tend", "watchdog", "run", "--interval", "1h"]);
  await waitFor(() => log().includes("[START] web: started pid"), 20_000, "web started by the loop's first pass");
  const first = pidIn(pidfile);
  await waitFor(() => stateOf("web").watch?.pid === first, 10_000, "web watched");
  await box.signal(first, "SIGKILL");
  // An interval of 1 h: only the end of its child can have woken the loop (Bun waits for it without pidfd).
  await waitFor(() => existsSync(box.outside(pidfile)) && pidIn(pidfile) !== first, 10_000, "web started again");
  expect(log()).toMatch(/\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it/);
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
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
  expect(existsSync(box.outside(`${PREFIX}/tmp/tmux-${APP_UID}/default`))).toBe(true);
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
  const loop = await box.spawn(["tend", "watchdog", "run", "--interval", "1h"]);
  await waitFor(() => existsSync(box.outside(`${box.state}/heartbeat`)), 20_000, "the loop's first pass");
  const heartbeat = readFileSync(box.outside(`${box.state}/heartbeat`), "utf8");
  const second = await box.tendRun(["watchdog", "run", "--interval", "1h"]);
  expect(second.code).toBe(0);
  const holder = Number(/\[SKIP\] another loop watches \(pid (\d+)\): this one exits/.exec(second.stdout)?.[1]);
  expect(await box.hostPid(holder)).not.toBeNull(); // the loop's process, in the phone's numbering
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
  expect(lines.match(/busy\.port: \/proc\/net\/tcp: permission denied: the port is not checked/g)).toHaveLength(1);
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
  const serving = await box.spawn(["tend", "watchdog", "serve", "--listen", "127.0.0.1:0"]);
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

  // install: a fresh Termux (no cronie, no termux-services) has no crond to start at boot: refused,
  // nothing written, the pkg line said; the loop, asked for, is written. The script starts from Termux's
  // own shell, never /bin/sh. cron's line is printed, with what Termux still needs for it.
  const refused = await box.tendRun(["watchdog", "install", "termux-boot", "--write"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("service-daemon, runsvdir, sv, crond, crontab not found");
  expect(refused.stderr).toContain("pkg install cronie termux-services");
  expect(refused.stderr).toContain("watchdog install termux-boot --loop --write");
  expect(existsSync(box.outside(`${HOME}/.termux/boot/tend-watchdog`))).toBe(false);
  const boot = await box.tendRun(["watchdog", "install", "termux-boot", "--loop", "--write"]);
  expect(boot.code).toBe(0);
  const script = readFileSync(box.outside(`${HOME}/.termux/boot/tend-watchdog`), "utf8");
  expect(script.split("\n")[0]).toBe(`#!${PREFIX}/bin/sh`);
  expect(script).toContain("  termux-wake-lock && ");
  expect(script).toContain('exec "$tend" watchdog run --config "$config"');
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
  expect(rows["/proc files"].detail).toContain(
    "/proc/self/stat ok, /proc/self/status ok, /proc/net/tcp permission denied",
  );
  expect(rows["/proc files"].detail).toContain("/proc/uptime, /proc/stat closed (tend does not read them)");
  expect(rows["page size"].detail).toMatch(/^(4096|16384) bytes \(RSS is VmRSS/);
  expect(rows["phantom process killer"].detail).toBe("Android API 29: no phantom process killer");
  expect(rows["Android version"]).toMatchObject({
    status: "ok",
    detail: "Android API 29 (tend needs API 28, Android 9, or later)",
  });
  expect(rows["Termux:Boot entries"]).toMatchObject({ status: "ok", detail: "tend-watchdog" });
  expect(rows["wake lock"].status).toBe("ok");
  expect(rows["crond and runsvdir"].detail).toContain("pkg install cronie termux-services");
  // What tend installed, as Termux:Boot will run it: the loop's script can run.
  expect(rows["installed entries"]).toMatchObject({ status: "ok", used: true });
  expect(rows["installed entries"].detail).toBe("Termux:Boot script tend-watchdog: ok");
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
    `#!${PREFIX}/bin/sh\nprintf '%s\\037' "$@" >> ${calls}\nprintf '\\036' >> ${calls}\n`,
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
  box.write(`${PREFIX}/bin/termux-notification`, `#!${PREFIX}/bin/sh\nsleep 1000 &\necho $! > ${child}\nwait\n`, 0o755);
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
  const grandchild = pidIn(child);
  await waitFor(async () => !(await box.alive(grandchild)), 5000, "the stand-in's child killed with its group");
  const listed = await box.tendRun(["notify", "--spool"]);
  expect(listed.stdout).toContain("termux termux-notification");
  // The app is back: the late message is the live one, its note after its text.
  const calls = `${HOME}/late-calls`;
  box.write(`${PREFIX}/bin/termux-notification`, `#!${PREFIX}/bin/sh\nprintf '%s\\037' "$@" > ${calls}\n`, 0o755);
  expect((await box.tendRun(["notify", "--flush"])).code).toBe(0);
  const argv = readFileSync(box.outside(calls), "utf8").split("\x1f");
  expect(argv[argv.indexOf("--content") + 1]).toMatch(
    /^the phone says hello\n\(late since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/,
  );
  expect(argv[argv.indexOf("--id") + 1]).toBe("tend-blog");
});

// A reboot made for real: every process of the phone killed at once (a power cut: the tmux socket and the
// pidfiles stay), a new boot (new pid, mount, time and network namespaces, a new boot id), Termux:Boot's
// entries run after the unlock. The receiver is outside the phone, on the host's side of its network.

/** The phone's two services: a spawned one (pidfile) and a tmux pane, both the example service. */
function phoneConfig(hookUrl: string) {
  return `
[watchdog]
interval = "1m"
[notify]
url = "${hookUrl}"
[[service]]
name = "web"
pidfile = "${HOME}/web.pid"
grace = "0s"
[service.check]
http = "http://127.0.0.1:8080/"
timeout = "2s"
[service.restart]
spawn = ["bun", "${service()}", "8080"]
[[service]]
name = "blog"
grace = "0s"
[service.check]
http = "http://127.0.0.1:8081/"
timeout = "2s"
[service.restart]
tmux = "main:blog"
run = "exec bun ${service()} 8081"
`;
}

/** A receiver outside the phone: on every host address, the phone's side reaching it at box.hostAddress. */
function outsideReceiver() {
  const hook = recordingReceiver({ hostname: "0.0.0.0" });
  stops.push(hook.stop);
  return { received: hook.received, url: `http://${box.hostAddress}:${hook.port}/topic` };
}

/** The phone in use before the cut: two passes by hand start both services and see them healthy. */
async function phoneInUse() {
  await box.tendRun(["watchdog"]);
  await waitFor(async () => (await box.tendRun(["watchdog", "status"])).code === 0, 30_000, "both services up");
  expect((await box.tendRun(["watchdog"])).code).toBe(0);
}

/** Poll (a second apart: each look runs tend in the phone) until `condition`, or fail after `timeoutMs`. */
async function within(timeoutMs: number, what: string, condition: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000}s: ${what}`);
    await Bun.sleep(1000);
  }
}

const plugs = (received: string[]) => received.filter((body) => body.startsWith("🔌"));

/** What the test's log shows of a reboot: boot.log, then the watchdog's lines from the boot on (same clock). */
function bootStory() {
  const bootLog = readFileSync(box.outside(`${box.state}/boot.log`), "utf8");
  const booted = bootLog
    .split("\n")
    .findLast((line) => line.includes("boot: Termux:Boot runs"))!
    .slice(0, 19);
  const lines = log()
    .split("\n")
    .filter((line) => line.slice(1, 20) >= booted);
  console.log(`--- boot.log\n${bootLog}--- watchdog.log from the boot on\n${lines.join("\n")}`);
  return bootLog;
}

// With cronie and termux-services: Termux:Boot runs tend's script, crond the passes.
test("reboot with cronie: within one period every service is up, one 🔌, status true", async () => {
  box = new TermuxBox({ termuxServices: true, ownNetwork: true });
  await box.run(["true"]); // booted: its network is there
  const hook = outsideReceiver();
  box.writeConfig(phoneConfig(hook.url));
  const cron = await box.tendRun(["watchdog", "install", "cron", "--write"]);
  expect(cron).toMatchObject({ code: 0, stderr: "" });
  expect(cron.stdout).toContain("crontab: added: * * * * * ");
  const install = await box.tendRun(["watchdog", "install", "termux-boot", "--write"]);
  expect(install).toMatchObject({ code: 0, stderr: "" });
  const doctor = JSON.parse((await box.tendRun(["doctor", "--json"])).stdout);
  const installed = doctor.capabilities.find((row: { name: string }) => row.name === "installed entries");
  expect(installed).toMatchObject({ status: "ok", detail: "crontab line: ok; Termux:Boot script tend-watchdog: ok" });
  await phoneInUse();
  expect(plugs(hook.received)).toEqual([]);

  await box.powerCut();
  expect(existsSync(box.outside(`${PREFIX}/tmp/tmux-${APP_UID}/default`))).toBe(true); // stale, as a cut leaves it
  expect(existsSync(box.outside(`${HOME}/web.pid`))).toBe(true);
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]); // after the unlock
  // crond runs tend's line at the next minute: one period, and that pass's starts verified.
  await within(90_000, "the 🔌 from the first pass crond runs", () => plugs(hook.received).length > 0);
  await within(30_000, "status true", async () => (await box.tendRun(["watchdog", "status"])).code === 0);
  const bootLog = bootStory();
  expect(bootLog).toContain("boot: Termux:Boot runs tend-watchdog");
  expect(bootLog).toContain("wake lock taken");
  expect(bootLog).toMatch(/crond runs \(run: crond: \(pid \d+\)/);
  expect(bootLog).not.toContain("loop watches instead");
  expect(existsSync(box.outside(`${PREFIX}/var/run/wake-lock`))).toBe(true);
  expect(plugs(hook.received)).toHaveLength(1);
  expect(plugs(hook.received)[0]).toMatch(/^🔌 host was down .+ \(reboot\); started (web, blog|blog, web)/);
  const lines = log();
  expect(lines).toContain("[START] web: started after reboot");
  expect(lines).toContain("[START] blog: started after reboot");
  expect(lines).not.toContain("[RESTART]");
  expect(hook.received.filter((body) => body.startsWith("⚠️") || body.startsWith("🚨"))).toEqual([]);
  expect(existsSync(box.outside(`${box.state}/cron.log`))).toBe(true); // the pass ran from crond's line
}, 240_000);

// #61: crond enabled, the boot script written, but no tend line in the crontab (removed since, or an older
// tend): boot.log used to say "crond runs … it runs tend's crontab line" and nothing watched. Now doctor
// says so (exit 1) and the boot script falls back to the loop, in boot.log and a notification.
test("crond but no tend crontab line: doctor exit 1; after a reboot the loop watches, said, notified", async () => {
  box = new TermuxBox({ termuxServices: true, ownNetwork: true });
  await box.run(["true"]);
  const hook = outsideReceiver();
  box.writeConfig(phoneConfig(hook.url));
  expect((await box.tendRun(["watchdog", "install", "cron", "--write"])).code).toBe(0);
  expect((await box.tendRun(["watchdog", "install", "termux-boot", "--write"])).code).toBe(0);
  expect((await box.run(["crontab", "-r"])).code).toBe(0); // the line removed by hand, later
  const doctor = await box.tendRun(["doctor", "--json"]);
  expect(doctor.code).toBe(1);
  const installed = JSON.parse(doctor.stdout).capabilities.find(
    (row: { name: string }) => row.name === "installed entries",
  );
  expect(installed.status).toBe("missing");
  expect(installed.detail).toContain("the crontab has no tend line: at boot crond would run nothing of tend's");
  await phoneInUse();

  await box.powerCut();
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(60_000, "the 🔌 from the loop's first pass", () => plugs(hook.received).length > 0);
  const bootLog = bootStory();
  expect(bootLog).toContain(
    "the crontab has no tend line (watchdog install cron --write): tend's loop watches instead",
  );
  expect(bootLog).not.toContain("it runs tend's crontab line");
  expect(
    hook.received.some((body) => body.includes("crond cannot run tend's passes at boot (the crontab has no tend line")),
  ).toBe(true);
  expect(log()).toContain("[START] web: started after reboot");
}, 240_000);

test("reboot on a fresh Termux: install refuses; with --loop the loop watches from boot, one 🔌", async () => {
  box = new TermuxBox({ ownNetwork: true });
  await box.run(["true"]);
  const hook = outsideReceiver();
  box.writeConfig(phoneConfig(hook.url));
  const refused = await box.tendRun(["watchdog", "install", "termux-boot", "--write"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("pkg install cronie termux-services");
  expect(existsSync(box.outside(`${HOME}/.termux/boot/tend-watchdog`))).toBe(false);
  expect((await box.tendRun(["watchdog", "install", "termux-boot", "--loop", "--write"])).code).toBe(0);
  await phoneInUse();

  await box.powerCut();
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(60_000, "the 🔌 from the loop's first pass", () => plugs(hook.received).length > 0);
  await within(30_000, "status true", async () => (await box.tendRun(["watchdog", "status"])).code === 0);
  const bootLog = bootStory();
  expect(bootLog).toContain("tend's loop starts (watchdog run)");
  expect(plugs(hook.received)).toHaveLength(1);
  expect(log()).toContain("[START] web: started after reboot");
  expect(log()).toContain("[START] blog: started after reboot");
}, 180_000);

test("an outage across a reboot: `watchdog incident` places the boot and the 🔌 in its timeline", async () => {
  box = new TermuxBox({ ownNetwork: true });
  await box.run(["true"]);
  const hook = outsideReceiver();
  const down = `${HOME}/gate-down`;
  box.writeConfig(
    phoneConfig(hook.url) +
      `[[service]]\nname = "gate"\nretry_interval = "2s"\n` +
      `[service.check]\ncommand = ["sh", "-c", "[ ! -e ${down} ]"]\n`,
  );
  expect((await box.tendRun(["watchdog", "install", "termux-boot", "--loop", "--write"])).code).toBe(0);
  await phoneInUse();
  box.write(down, ""); // gate fails: an outage opens before the cut
  await box.tendRun(["watchdog"]);
  expect(stateOf("gate").outage).not.toBeNull();
  await box.powerCut();
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(60_000, "the 🔌 from the loop's first pass", () => plugs(hook.received).length > 0);
  await box.run(["rm", down]);
  await within(30_000, "gate healthy again", () => log().includes("[RECOVERED] gate"));
  const markdown = await box.tendRun(["watchdog", "incident", "gate", "--markdown"]);
  console.log(markdown.stdout);
  expect(markdown.code).toBe(0);
  const incident = JSON.parse((await box.tendRun(["watchdog", "incident", "gate", "--json"])).stdout);
  const lines: { source: string; text: string; at: string }[] = incident.timeline;
  const booted = lines.findIndex((line) => line.source === "host" && line.text === "the host booted");
  const reboot = lines.findIndex(
    (line) =>
      line.source === "host" && /^\[DOWNTIME\] host was unavailable .+unexpected_shutdown_or_reboot/.test(line.text),
  );
  const plug = lines.findIndex((line) => line.source === "notification" && /^🔌 .+ rebooted$/.test(line.text));
  const recovered = lines.findIndex((line) => /^\[RECOVERED\] gate/.test(line.text));
  expect(booted).toBeGreaterThanOrEqual(0);
  // The boot, then the first pass after it saying the reboot (and its 🔌), then the recovery: in that order.
  expect(reboot).toBeGreaterThan(booted);
  expect(plug).toBeGreaterThan(reboot);
  expect(recovered).toBeGreaterThan(plug);
  expect(plugs(hook.received)).toHaveLength(1);
  // The reboot is no data, not downtime: the outage open at the cut closed at its last failed probe
  // (the loop's first pass, which says the gap, judges before anything else is started).
  expect(log()).toMatch(/\[DOWNTIME\] gate was unavailable for \d+s \(failing, [^)]+\) \(then no data for \d+s\)/);
}, 180_000);

test("boot script: crond not enabled, said in boot.log and a notification, and the loop watches", async () => {
  box = new TermuxBox({ termuxServices: true });
  const hook = recordingReceiver();
  stops.push(hook.stop);
  box.writeConfig(`
[notify]
url = "${hook.url}/topic"
[[service]]
name = "blog"
[service.check]
tcp = "127.0.0.1:${hook.port}"
`);
  expect((await box.tendRun(["watchdog", "install", "cron", "--write"])).code).toBe(0);
  expect((await box.tendRun(["watchdog", "install", "termux-boot", "--write"])).code).toBe(0);
  box.write(`${PREFIX}/var/service/crond/down`, ""); // sv-disable crond
  const doctor = JSON.parse((await box.tendRun(["doctor", "--json"])).stdout);
  const installed = doctor.capabilities.find((row: { name: string }) => row.name === "installed entries");
  expect(installed).toMatchObject({ status: "missing", used: true });
  expect(installed.detail).toContain("crond is not enabled (sv-enable crond)");
  expect((await box.tendRun(["doctor"])).code).toBe(1);
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(30_000, "the loop's first pass", () => existsSync(box.outside(`${box.state}/heartbeat`)));
  const bootLog = readFileSync(box.outside(`${box.state}/boot.log`), "utf8");
  expect(bootLog).toContain("crond is not enabled (sv-enable crond): tend's loop watches instead (watchdog run)");
  await waitFor(
    () => hook.received.some((body) => body.includes("crond cannot run tend's passes at boot")),
    10_000,
    "told",
  );
  const status = await box.tendRun(["watchdog", "status"]);
  expect(status.stdout).toMatch(/a pass is running now|last pass: /);
}, 120_000);
