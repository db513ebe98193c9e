// The end-to-end tests that matter on a phone, run inside the Termux-shaped sandbox (test/termux.ts):
// a phone of its own namespaces, a root without the host's /usr, /tmp or /etc, the app's uid with
// no_new_privs under Android's seccomp filter (ENOSYS for what an old phone's kernel lacks, EACCES for
// the /proc files Android closes), root's processes invisible (hidepid=2), dash as Termux's sh, a
// getprop, and a reboot made for real. The same behaviours are tested outside in their own files.
// What still cannot be emulated is said in test/termux.ts's header: bionic and the android build,
// SELinux itself, the phantom process killer, Doze, Termux:API and the Termux:Boot app (a STAND-IN runs
// its entries), an old phone's kernel (only the filter makes its syscalls missing).
import { afterAll, afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, utimesSync } from "node:fs";
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
  box = new TermuxBox({ apiLevel: 29 });
  const files = ["/proc/uptime", "/proc/stat", "/proc/loadavg", "/proc/version", "/proc/vmstat"];
  const seen = await box.run(["sh", "-c", files.map((file) => `cat ${file}`).join("; ") + "; cat /proc/self/stat"]);
  for (const file of files) expect(seen.stderr).toContain(`cat: ${file}: Permission denied`);
  expect(seen.stdout).toMatch(/^\d+ \(cat\) R /); // its own /proc/PID/stat stays readable
});

test("sandbox: /proc/net, /proc/self/net, /proc/PID/net and a task's net are EACCES, as Android 10+", async () => {
  box = new TermuxBox({ apiLevel: 29 });
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
  box = new TermuxBox({ apiLevel: 30 });
  const seen = await box.run(["sh", "-c", "ls -d /proc/1; kill -0 1; ls -d /proc/self"]);
  expect(seen.stderr).toContain("ls: cannot access '/proc/1': No such file or directory");
  expect(seen.stderr).toMatch(/kill: .*(Operation not permitted|not permitted)/i);
  expect(seen.stdout).toBe("/proc/self\n");
});

test("sandbox: pivot_root: no /usr, /tmp, /etc or /usr/bin/env of the host; /bin/sh is not Termux's", async () => {
  box = new TermuxBox({ apiLevel: 30 });
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
  box = new TermuxBox({ apiLevel: 31 });
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

test("sandbox: $PREFIX/bin/sh is dash, PATH is $PREFIX/bin, getprop gives the test's API, no TMUX_TMPDIR", async () => {
  box = new TermuxBox({ apiLevel: 33 });
  const seen = await box.run([
    "sh",
    "-c",
    'echo "$PATH|${TMUX_TMPDIR-unset}|$TMPDIR|$(getprop ro.build.version.sdk)"; ' +
      '[ "$(readlink /proc/$$/exe)" = "$PREFIX/bin/sh" ] && echo sh ok; ' +
      "cmp $PREFIX/bin/sh $PREFIX/bin/dash && echo dash; getprop ro.build.version.release; uname -n",
  ]);
  expect(seen.stdout).toBe(`${PREFIX}/bin|unset|${PREFIX}/tmp|33\nsh ok\ndash\n13\nlocalhost\n`);
});

test("sandbox: the app's uid (u0_a123) with no_new_privs, under a seccomp filter", async () => {
  box = new TermuxBox({ apiLevel: 32 });
  const seen = await box.run(["sh", "-c", "id -u; id -un; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"]);
  expect(seen.stdout).toBe(`${APP_UID}\nu0_a123\nNoNewPrivs:\t1\nSeccomp:\t2\n`);
});

test("sandbox: statx, pidfd_open, close_range, openat2, fchmodat2 are ENOSYS (an old phone's); tend runs", async () => {
  box = new TermuxBox({ apiLevel: 29 });
  const seen = await box.run(["/system/bin/android", "syscalls"]);
  expect(seen.stdout).toBe(
    ["statx", "pidfd_open", "close_range", "openat2", "fchmodat2"].map((name) => `${name} ENOSYS\n`).join(""),
  );
  const version = await box.tendRun(["--version"]);
  expect(version).toMatchObject({ code: 0, stderr: "" });
  expect(version.stdout).toStartWith("tend ");
});

test("a pass with a failing service counts strikes (no ERROR); status and doctor run; nothing in /tmp", async () => {
  box = new TermuxBox({ apiLevel: 33 });
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

test("sandbox: after a reboot the clock reads 1970 until it is set; host localhost; crond named crond", async () => {
  box = new TermuxBox({ apiLevel: 30, termuxServices: true });
  const clock = async () => (await box.run(["date", "-u", "+%Y"])).stdout.trim();
  expect(await clock()).toBe(String(new Date().getUTCFullYear())); // the phone in use: its clock is right
  await box.powerCut();
  await box.powerOn();
  // A phone without network time yet: every app process reads 1970 (tend included), the boot-time clock is
  // the kernel's (uptime from ~1 s), and the host name is the phone's.
  expect(await clock()).toBe("1970");
  const seen = await box.run(["sh", "-c", "uname -n; date -u +%s; cut -d. -f1 /proc/self/stat > /dev/null; echo ok"]);
  const [name, seconds] = seen.stdout.split("\n");
  expect(name).toBe("localhost");
  expect(Number(seconds)).toBeLessThan(120);
  const tendNow = await box.run(["bun", "-e", "console.log(new Date().getUTCFullYear())"]);
  expect(tendNow.stdout.trim()).toBe("1970");
  box.setClock(); // the network answers
  await waitFor(async () => (await clock()) !== "1970", 10_000, "the clock set");
  expect(await clock()).toBe(String(new Date().getUTCFullYear()));
  // crond is crond by name (doctor looks for it by name), as cronie's is on Termux.
  expect((await box.run(["service-daemon", "start"], { env: { SVDIR: `${PREFIX}/var/service` } })).code).toBe(0);
  await waitFor(
    async () =>
      (await box.run(["sv", "status", "crond"], { env: { SVDIR: `${PREFIX}/var/service` } })).stdout.startsWith("run:"),
    15_000,
    "crond running",
  );
  const doctor = JSON.parse((await box.tendRun(["doctor", "--json"])).stdout);
  const row = doctor.capabilities.find((row: { name: string }) => row.name === "crond and runsvdir");
  expect(row.detail).toContain("runsvdir running, crond running");
});

// #61: a non-debuggable process of the app's own uid (ssh-agent makes itself so) is hidden by hidepid as
// another user's is, but it is the user's own: said as such, with what works, never "another user".
test("a process of one's own hidepid hides (ssh-agent): said as hidden from tend; no second copy", async () => {
  box = new TermuxBox({ apiLevel: 32 });
  const socket = `${PREFIX}/tmp/agent.sock`;
  box.write(
    `${HOME}/start-agent`,
    `#!${PREFIX}/bin/sh\nssh-agent -D -a ${socket} > /dev/null 2>&1 &\necho $! > ${HOME}/agent.pid\n`,
    0o755,
  );
  expect((await box.run([`${HOME}/start-agent`])).code).toBe(0);
  const agent = pidIn(`${HOME}/agent.pid`);
  await waitFor(() => existsSync(box.outside(socket)), 10_000, "ssh-agent listening");
  // Hidden from its own user: no /proc/PID, but kill -0 is allowed (the same uid).
  const seen = await box.run([
    "sh",
    "-c",
    `ls /proc/${agent} > /dev/null 2>&1 && echo visible; kill -0 ${agent} && echo alive`,
  ]);
  expect(seen.stdout).toBe("alive\n");
  box.writeConfig(`
[[service]]
name = "agent"
pidfile = "${HOME}/agent.pid"
grace = "0s"
[service.check]
process = true
[service.restart]
command = ["${HOME}/start-agent"]
`);
  for (let pass = 0; pass < 2; pass++) {
    const run = await box.tendRun(["watchdog"]);
    expect(run.stdout).not.toMatch(/\[(RESTART|FAILED)\]/);
    expect(run.stdout).not.toContain("another user");
  }
  expect(pidIn(`${HOME}/agent.pid`)).toBe(agent); // never started beside itself
  const status = await box.tendRun(["watchdog", "status"]);
  expect(status.stdout).toContain(
    `pid ${agent} is hidden from tend (hidepid: a process of your own that is not debuggable; ` +
      "what works: a pidfile tend verifies by its start time, or restart.command)",
  );
  expect(status.stdout).not.toContain("another user");
  const kill = await box.tendRun(["safe-kill", "agent"]);
  expect(kill.code).toBe(3);
  expect(kill.stderr).toContain(`pid ${agent} is hidden from tend`);
  expect(await box.alive(agent)).toBe(true);
});

test("another user's (root's) service is alive, not visible: no second instance; safe-kill refuses", async () => {
  box = new TermuxBox({ apiLevel: 34 });
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
  box = new TermuxBox({ apiLevel: 35 });
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
  box = new TermuxBox({ apiLevel: 31 });
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
  box = new TermuxBox({ apiLevel: 33 });
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
  box = new TermuxBox({ apiLevel: 34 });
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
  box = new TermuxBox({ apiLevel: 35 });
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
  box = new TermuxBox({ apiLevel: 33 });
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
  // Android 13 (the API level this phone's getprop answers): the phantom killer's row, with the commands.
  expect(rows["phantom process killer"]).toMatchObject({
    status: "limited",
    affects: expect.stringContaining("--loop"),
  });
  expect(rows["phantom process killer"].detail).toStartWith("Android API 33: it kills long-lived and CPU-heavy");
  expect(rows["phantom process killer"].detail).toContain("max_phantom_processes 2147483647");
  expect(rows["phantom process killer"].detail).toContain("settings_enable_monitor_phantom_procs false");
  expect(rows["Android version"]).toMatchObject({
    status: "ok",
    detail: "Android API 33 (tend needs API 28, Android 9, or later)",
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
  box = new TermuxBox({ apiLevel: 30 });
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
  box = new TermuxBox({ apiLevel: 32 });
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
  box = new TermuxBox({ apiLevel: 34 });
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
  box = new TermuxBox({ apiLevel: 35 });
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

/**
 * What the test's log shows of a reboot: boot.log (dated by the phone's clock: 1970 until it is set), then
 * the watchdog's lines written since the cut (`cutAt`: the log's length then).
 */
function bootStory(cutAt: number) {
  const bootLog = readFileSync(box.outside(`${box.state}/boot.log`), "utf8");
  console.log(`--- boot.log\n${bootLog}--- watchdog.log from the boot on\n${log().slice(cutAt)}`);
  return bootLog;
}

// With cronie and termux-services: Termux:Boot runs tend's script, crond the passes.
test("reboot with cronie: within one period every service is up, one 🔌, status true", async () => {
  box = new TermuxBox({ apiLevel: 33, termuxServices: true, ownNetwork: true });
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

  const lastPass = Date.now();
  await box.powerCut();
  const cutAt = log().length;
  expect(existsSync(box.outside(`${PREFIX}/tmp/tmux-${APP_UID}/default`))).toBe(true); // stale, as a cut leaves it
  expect(existsSync(box.outside(`${HOME}/web.pid`))).toBe(true);
  await box.powerOn(); // the clock reads 1970 until the network sets it
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]); // after the unlock
  // crond runs tend's line at the next minute: one period, and that pass's starts verified.
  await within(90_000, "the 🔌 from the first pass crond runs", () => plugs(hook.received).length > 0);
  await within(30_000, "status true", async () => (await box.tendRun(["watchdog", "status"])).code === 0);
  // How long the host was down is not known at 1970: the 🔌 says since when, the DOWNTIME line waits.
  expect(plugs(hook.received)[0]).toMatch(
    /^🔌 host rebooted, down since \S+ \S+ UTC \(how long: said when the clock is set\); started (web, blog|blog, web)/,
  );
  expect(log().slice(cutAt)).not.toContain("[DOWNTIME] host");
  box.setClock(); // the network answers
  const setAt = Date.now();
  await waitFor(async () => (await box.run(["date", "+%Y"])).stdout.trim() !== "1970", 10_000, "the clock set");
  // The next pass (by hand here, not to wait for crond's minute: one beside it skips) follows the step.
  await within(90_000, "the reboot's DOWNTIME line, once the clock is set", async () => {
    await box.tendRun(["watchdog"]);
    return log().slice(cutAt).includes("[DOWNTIME] host");
  });
  // From the last pass before the cut to the boot's first pass: more than the unlock's wait, less than it all.
  const down = Number(/\[DOWNTIME\] host was unavailable for (\d+)s \(unexpected_shutdown_or_reboot/.exec(log())?.[1]);
  expect(down).toBeGreaterThanOrEqual(3);
  expect(down).toBeLessThanOrEqual(Math.ceil((setAt - lastPass) / 1000) + 1);
  const bootLog = bootStory(cutAt);
  expect(bootLog).toContain("boot: Termux:Boot runs tend-watchdog");
  expect(bootLog).toContain("wake lock taken");
  expect(bootLog).toMatch(/crond runs \(run: crond: \(pid \d+\)/);
  expect(bootLog).not.toContain("loop watches instead");
  expect(existsSync(box.outside(`${PREFIX}/var/run/wake-lock`))).toBe(true);
  expect(plugs(hook.received)).toHaveLength(1);
  const lines = log().slice(cutAt);
  expect(lines.match(/\[DOWNTIME\] host/g)).toHaveLength(1);
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
  box = new TermuxBox({ apiLevel: 34, termuxServices: true, ownNetwork: true });
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
  const cutAt = log().length;
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(60_000, "the 🔌 from the loop's first pass", () => plugs(hook.received).length > 0);
  const bootLog = bootStory(cutAt);
  expect(bootLog).toContain(
    "the crontab has no tend line (watchdog install cron --write): tend's loop watches instead",
  );
  expect(bootLog).not.toContain("it runs tend's crontab line");
  expect(
    hook.received.some((body) => body.includes("crond cannot run tend's passes at boot (the crontab has no tend line")),
  ).toBe(true);
  expect(log()).toContain("[START] web: started after reboot");
}, 240_000);

// #61: the user's own Termux:Boot script starts a service while the clock reads 1970; the network sets the
// clock; the first pass (what crond's line runs) comes after. The pidfile's 1970 stamp was taken for the
// last boot's: a second copy started beside the running one, dying on EADDRINUSE, pass after pass.
test("reboot at 1970: a service the user's boot script started is that process after the clock is set", async () => {
  box = new TermuxBox({ apiLevel: 35, ownNetwork: true });
  await box.run(["true"]);
  const hook = outsideReceiver();
  box.writeConfig(`
[notify]
url = "${hook.url}"
[[service]]
name = "api"
pidfile = "${HOME}/api.pid"
grace = "0s"
[service.check]
http = "http://127.0.0.1:8082/"
timeout = "2s"
[service.restart]
spawn = ["bun", "${service()}", "8082"]
`);
  // Sorted before tend's, as Termux:Boot runs them. The kernel stamps the pidfile with the phone's clock
  // (1970); here it is the host's (test/termux.ts setClock), so the script stamps it as the phone would.
  box.write(
    `${HOME}/.termux/boot/api`,
    `#!${PREFIX}/bin/sh\nbun ${service()} 8082 > /dev/null 2>&1 &\necho $! > ${HOME}/api.pid\n` +
      `touch -d "@$(date +%s)" ${HOME}/api.pid\n`,
    0o755,
  );
  expect((await box.tendRun(["watchdog", "install", "termux-boot", "--loop"])).code).toBe(0); // printed only
  // The phone in use before the cut: the user's script started api, a pass saw it healthy.
  expect((await box.run([`${HOME}/.termux/boot/api`])).code).toBe(0);
  await waitFor(async () => (await box.tendRun(["watchdog"])).stdout.includes("[START] watching api"), 10_000, "pass");
  await waitFor(async () => (await box.tendRun(["watchdog", "status"])).code === 0, 20_000, "api healthy");
  await box.powerCut();
  const cutAt = log().length;
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["api"]);
  const stamp = () =>
    existsSync(box.outside(`${HOME}/api.pid`)) ? statSync(box.outside(`${HOME}/api.pid`)).mtimeMs : NaN;
  await waitFor(() => stamp() < 120_000, 10_000, "api's pidfile, stamped 1970");
  const api = pidIn(`${HOME}/api.pid`);
  box.setClock(); // the network answers before the first pass
  await waitFor(async () => (await box.run(["date", "+%Y"])).stdout.trim() !== "1970", 10_000, "the clock set");
  for (let pass = 0; pass < 3; pass++) await box.tendRun(["watchdog"]);
  const lines = log().slice(cutAt);
  console.log(`--- watchdog.log from the boot on\n${lines}`);
  expect(lines).not.toContain("from before the host booted");
  expect(lines).not.toMatch(/\[(RESTART|START|FAILED)\] api/);
  expect(await box.alive(api)).toBe(true);
  expect(stateOf("api")).toMatchObject({ restartsTotal: 0, verdict: { word: "healthy" } });
  const status = await box.tendRun(["watchdog", "status"]);
  expect(status.stdout).toMatch(/api\s+healthy/);
  expect(status.stdout).not.toMatch(/RESTARTS\s*\n.*\b[1-9]/);
  expect(hook.received.filter((body) => body.startsWith("⚠️") || body.startsWith("🚨"))).toEqual([]);
}, 120_000);

// #61: Android 12+'s phantom process killer takes the loop (SIGKILL) in the middle of a restart's verification.
// The cron line `install termux-boot --loop` adds is its keeper: crond (which the boot script started) runs
// a pass a minute later, which finishes the restart the loop recorded before it acted.
test("the loop killed mid-verification: crond's keeper pass finishes the restart; once each: ⚠️, ✅", async () => {
  box = new TermuxBox({ apiLevel: 31, termuxServices: true });
  const hook = recordingReceiver();
  stops.push(hook.stop);
  const port = await freePort();
  const slow = `${HOME}/slow-start`;
  // interval 1m: the keeper's crontab line runs every minute (the default 5m would be */5).
  box.writeConfig(`
[watchdog]
interval = "1m"
[notify]
url = "${hook.url}/topic"
[[service]]
name = "web"
pidfile = "${HOME}/web.pid"
grace = "0s"
cooldown = "0s"
verify_timeout = "3m"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "2s"
[service.restart]
spawn = ["sh", "-c", "if [ -e ${slow} ]; then sleep 20; fi; exec bun ${service()} ${port}"]
`);
  const install = await box.tendRun(["watchdog", "install", "termux-boot", "--loop", "--write"]);
  expect(install.code).toBe(0);
  expect(install.stdout).toMatch(/crontab: added: .+ \(the loop's keeper\)/);
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  const bootLog = () => readFileSync(box.outside(`${box.state}/boot.log`), "utf8");
  await waitFor(
    () => existsSync(box.outside(`${box.state}/boot.log`)) && bootLog().includes("loop starts"),
    20_000,
    "boot",
  );
  expect(bootLog()).toContain("crond started: it runs the loop's keeper (tend's crontab line)");
  const web = () => (existsSync(box.outside(`${box.state}/services/web.json`)) ? stateOf("web") : null);
  await waitFor(() => web()?.verdict?.word === "healthy", 30_000, "web healthy under the loop");
  const loop = Number(/^loop pid (\d+)$/.exec(readFileSync(box.outside(`${box.state}/loop.lock`), "utf8").trim())?.[1]);
  expect(await box.alive(loop)).toBe(true);

  box.write(slow, "");
  await box.signal(pidIn(`${HOME}/web.pid`), "SIGKILL");
  // Killed as soon as its action is recorded (`acted`): its RESTART line is written by then (a loaded CI once
  // killed it in the record's fsync, when the line came after it: no RESTART line at all). The record made
  // before it acts is no sign: a loop killed there never started web, and the keeper's pass says so and
  // restarts it itself (a second RESTART; seen once with both cores busy).
  await waitFor(() => web()?.restarting?.acted === true, 20_000, "the loop restarting web, verifying");
  await box.signal(loop, "SIGKILL"); // the phantom process killer
  await waitFor(async () => !(await box.alive(loop)), 10_000, "the loop gone");
  // crond's next minute: the keeper's pass finds the restart the loop recorded, and finishes it.
  await within(200_000, "the keeper's pass recovered web", () => log().includes("[RECOVERED] web"));
  await waitFor(() => hook.received.some((body) => body.startsWith("✅")), 20_000, "the ✅");
  const lines = log();
  console.log(`--- watchdog.log\n${lines}`);
  expect(lines.match(/\[RESTART\] web/g)).toHaveLength(1);
  expect(lines.match(/\[RECOVERED\] web/g)).toHaveLength(1);
  expect(stateOf("web")).toMatchObject({ restartsTotal: 1, restarting: null, verdict: { word: "healthy" } });
  expect(hook.received.filter((body) => body.startsWith("⚠️"))).toHaveLength(1);
  expect(hook.received.filter((body) => body.startsWith("✅"))).toHaveLength(1);
  expect(hook.received.filter((body) => body.startsWith("🚨"))).toEqual([]);
  expect(existsSync(box.outside(`${box.state}/cron.log`))).toBe(true); // the keeper's pass ran from crond's line
}, 300_000);

test("reboot on a fresh Termux: install refuses; with --loop the loop watches from boot, one 🔌", async () => {
  box = new TermuxBox({ apiLevel: 31, ownNetwork: true });
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
  const cutAt = log().length;
  await box.powerOn();
  expect(await box.termuxBoot()).toEqual(["tend-watchdog"]);
  await within(60_000, "the 🔌 from the loop's first pass", () => plugs(hook.received).length > 0);
  await within(30_000, "status true", async () => (await box.tendRun(["watchdog", "status"])).code === 0);
  const bootLog = bootStory(cutAt);
  expect(bootLog).toContain("tend's loop starts (watchdog run)");
  expect(plugs(hook.received)).toHaveLength(1);
  expect(log()).toContain("[START] web: started after reboot");
  expect(log()).toContain("[START] blog: started after reboot");
}, 180_000);

test("an outage across a reboot: `watchdog incident` places the boot and the 🔌 in its timeline", async () => {
  box = new TermuxBox({ apiLevel: 35, ownNetwork: true });
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
  // The network set the clock before the unlock (the timeline is of real times; a 1970 boot's is in
  // "reboot with cronie" and clock-steps.test).
  box.setClock();
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
  box = new TermuxBox({ apiLevel: 29, termuxServices: true });
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
