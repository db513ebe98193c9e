// safe-kill against real processes: identity, refusals, signals, escalation, tmux panes; the shell that
// names its target, the refusals, a rehearsal, --escalate and tmux: on this host and inside the phone.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alive, freePort, procState, Sandbox, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox;
let at: Place | null = null;
afterEach(async () => {
  box?.cleanup();
  await at?.cleanup();
  at = null;
});
afterAll(() => closePlaces());

/** A process of the test's own, in its own group, with a pidfile written after it started. */
function startTarget(argv: string[], pidfileName = "tour.pid") {
  const child = Bun.spawn(argv, { detached: true, stdout: "ignore", stderr: "ignore" });
  box.track(child.pid);
  const pidfile = join(box.dir, pidfileName);
  writeFileSync(pidfile, `${child.pid}\n`);
  return { pid: child.pid, pidfile };
}

for (const where of PLACES)
  describe(`safe-kill (${where})`, () => {
    const configAt = (place: Place, pidfile: string) =>
      place.writeConfig(
        `[watchdog]\nstate_dir = "${place.state}"\n[[service]]\nname = "tour"\npidfile = "${pidfile}"\n` +
          `[service.check]\nprocess = true\n`,
      );

    test("a shell whose command line names the target survives: only the verified process dies", async () => {
      const place = (at = openPlace(where));
      const { pid, here, pidfile } = await place.startTarget(["sleep", "300"], "tour.pid");
      configAt(place, pidfile);
      // This shell's own command line contains "tour": pkill -f tour would have killed it.
      const shell = await place.shell(`'${place.tendPath}' safe-kill -s KILL tour; echo still-here rc=$?`);
      expect(shell.stdout).toContain(`sent SIGKILL to tour (pid ${pid}: sleep 300)`);
      expect(shell.stdout).toContain("still-here rc=0");
      await waitFor(() => !alive(here), 5000, "target gone");
    });

    test("refuses (exit 3) pid 1, pid 0, itself and its parent shell", async () => {
      const place = (at = openPlace(where));
      const pidfile = place.scratch("x.pid");
      for (const pid of ["1", "0"]) {
        place.writeScratch("x.pid", `${pid}\n`);
        const result = await place.tend(["safe-kill", "-s", "KILL", `pidfile:${pidfile.inside}`]);
        expect(result.code).toBe(3);
        expect(result.stderr).toContain(`refusing to signal pid ${pid}: init or the kernel`);
      }
      const tend = place.tendPath;
      const self = await place.shell(
        `echo $$ > '${pidfile.inside}'; exec '${tend}' safe-kill -s KILL 'pidfile:${pidfile.inside}'`,
      );
      expect(self.code).toBe(3);
      expect(self.stderr).toContain("that is safe-kill itself");
      const parent = await place.shell(
        `echo $$ > '${pidfile.inside}'; '${tend}' safe-kill -s KILL 'pidfile:${pidfile.inside}'; ` +
          "echo parent-alive rc=$?",
      );
      expect(parent.stdout).toContain("parent-alive rc=3");
      expect(parent.stderr).toContain("an ancestor of safe-kill");
    });

    test("rehearsal: -s STOP freezes, -s CONT thaws; numbers work; --dry-run signals nothing", async () => {
      const place = (at = openPlace(where));
      const { pid, here, pidfile } = await place.startTarget(["sleep", "300"], "tour.pid");
      const target = `pidfile:${pidfile}`;
      const dry = await place.tend(["safe-kill", "--dry-run", "-s", "STOP", target]);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toBe(`would send SIGSTOP to ${pidfile} (pid ${pid}: sleep 300)\n`);
      expect(procState(here)).not.toBe("T");
      expect((await place.tend(["safe-kill", "-s", "STOP", target])).stdout).toContain("sent SIGSTOP");
      await waitFor(() => procState(here) === "T", 5000, "stopped");
      expect((await place.tend(["safe-kill", "-s", "18", target])).stdout).toContain("sent SIGCONT");
      await waitFor(() => procState(here) === "S", 5000, "continued");
      expect((await place.tend(["safe-kill", "-s", "BOGUS", target])).code).toBe(2);
      expect((await place.tend(["safe-kill", "-s", "99", target])).code).toBe(2);
      expect((await place.tend(["safe-kill", "nosuch-thing"])).code).toBe(2);
      expect((await place.tend(["safe-kill", `pidfile:${pidfile}.missing`])).code).toBe(1);
      expect(alive(here)).toBe(true);
    });

    test("--escalate: TERM, then KILL only when the process ignores TERM, and says which", async () => {
      const place = (at = openPlace(where));
      const polite = await place.startTarget(["sleep", "300"], "polite.pid");
      const result = await place.tend(["safe-kill", "--escalate", "3s", `pidfile:${polite.pidfile}`]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("sent SIGTERM");
      expect(result.stdout).toContain("no force needed");
      const stubborn = await place.startTarget(
        [place.bun, "-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('up')"],
        "stubborn.pid",
      );
      await waitFor(
        () => {
          const status = Bun.spawnSync(["cat", `/proc/${stubborn.here}/status`]).stdout.toString();
          const caught = /SigCgt:\s*([0-9a-f]+)/.exec(status)?.[1] ?? "0";
          return (BigInt("0x" + caught) & (1n << 14n)) !== 0n; // bit 15-1: SIGTERM is caught
        },
        10_000,
        "TERM handler installed",
      );
      const forced = await place.tend(["safe-kill", "--escalate", "500ms", `pidfile:${stubborn.pidfile}`]);
      expect(forced.code).toBe(0);
      expect(forced.stdout).toContain("was still running after 0.5s: sent SIGKILL (force was needed)");
      await waitFor(() => !alive(stubborn.here), 5000, "killed");
    });

    test("tmux:TARGET signals the pane's process", async () => {
      const place = (at = openPlace(where));
      await place.tmux(["new-session", "-d", "-s", "work", "-n", "tour", "sleep 300"]);
      const pid = Number((await place.tmux(["display-message", "-p", "-t", "work:tour", "#{pane_pid}"])).stdout.trim());
      const here = await place.hostPid(pid);
      // The pane's process as the kernel names it: `sleep 300` where the shell execs it (bash), the shell
      // itself where it does not (the phone's dash: `sh -c sleep 300`).
      // (bash execs it a moment after the pane starts: read once it has, or tend reads another name.)
      const read = () => readFileSync(`/proc/${here}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
      let cmdline = read();
      await waitFor(() => !/^\S*bash -c /.test((cmdline = read())), 5000, "bash to exec the pane's command");
      expect(cmdline).toMatch(/(^| )sleep 300$/);
      const result = await place.tend(["safe-kill", "-s", "KILL", "tmux:work:tour"]);
      expect(result.stdout).toContain(`sent SIGKILL to work:tour (pid ${pid}: ${cmdline})`);
      await waitFor(() => !alive(here), 5000, "pane process gone");
      expect((await place.tend(["safe-kill", "tmux:work:nosuch"])).code).toBe(1);
      await place.tmux(["kill-server"]);
    });
  });

for (const where of PLACES)
  describe(`safe-kill's identity checks (${where})`, () => {
    test("PID reuse: a pidfile naming a process newer than the file does not name it; nothing signalled", async () => {
      const place = (at = openPlace(where));
      // The file is made older than its process, but of this boot (a pidfile from before the boot is refused
      // for that): a phone booted for this test is given four seconds first.
      const booted = Date.now();
      await place.shell("true");
      await waitFor(() => Date.now() - booted >= 4000, 6000, "the place up for 4 s");
      const { pid, here, pidfile } = await place.startTarget(["sleep", "300"], "tour.pid");
      const file = place.scratch("tour.pid").outside;
      // Beyond the second a slow start is allowed (a process started up to 1 s after its pidfile was written).
      const older = new Date(statSync(file).mtimeMs - 3000);
      utimesSync(file, older, older);
      const result = await place.tend(["safe-kill", "-s", "KILL", `pidfile:${pidfile}`]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `pid ${pid} started after ${pidfile} was written: not the process it names (PID reused)`,
      );
      expect(alive(here)).toBe(true);
    });

    test("PID reuse against the start time tend recorded when it started the process", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.writeConfig(
        `[watchdog]
state_dir = "${place.state}"
[[service]]
name = "tour"
pidfile = "tour.pid"
grace = "0s"
[service.check]
http = "http://127.0.0.1:${port}/"
[service.restart]
spawn = ["${place.bun}", "${place.server}", "${port}"]
`,
      );
      await place.tend(["watchdog"]);
      const started = await place.hostPid(Number(place.read("tour.pid")));
      process.kill(started, "SIGKILL");
      await waitFor(() => !alive(started), 5000, "first gone");
      // Another process now sits in the pidfile, written just now: only tend's record can tell it apart.
      const stranger = await place.startTarget(["sleep", "300"], "stranger.pid");
      const recorded = place.stateOf("tour");
      recorded.pid = stranger.pid; // as if the kernel had handed the same PID to the stranger
      place.writeState("services/tour.json", JSON.stringify(recorded), 0o600);
      place.writeState("tour.pid", `${stranger.pid}\n`);
      for (const target of ["tour", `pidfile:${place.state}/tour.pid`]) {
        const result = await place.tend(["safe-kill", "-s", "KILL", target]);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(
          `pid ${stranger.pid} now belongs to another process (start time differs: PID reused)`,
        );
      }
      expect(alive(stranger.here)).toBe(true);
    });

    test("tmux:TARGET of a configured service reaches the pane on that service's own socket (-L NAME)", async () => {
      const place = (at = openPlace(where));
      const socket = `sk${process.pid}`;
      await place.tmux(["-L", socket, "new-session", "-d", "-s", "main", "-n", "api", "sleep 301"]);
      try {
        const shown = await place.tmux(["-L", socket, "display-message", "-p", "-t", "main:api", "#{pane_pid}"]);
        const pid = Number(shown.stdout.trim());
        expect(pid).toBeGreaterThan(1);
        const here = await place.hostPid(pid);
        // As the kernel shows it once the pane's process is what it stays: tmux forks it first (seen once on
        // a loaded machine: `tmux -L sk… new-session …`, the fork before its exec), then the shell runs the
        // command. The host's bash execs it (`bash -c sleep 301`, then `sleep 301`: seen once in CI, read
        // between the two); the phone's SHELL is dash, which keeps `sh -c CMD` as the pane's process.
        const cmdlineOf = () => readFileSync(`/proc/${here}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
        const settled = (line: string) => (where === "host" ? line === "sleep 301" : !line.startsWith("tmux "));
        await waitFor(() => settled(cmdlineOf()), 5000, "the pane's process exec'd");
        const cmdline = cmdlineOf();
        // Without a configuration: tmux's default server has no such pane.
        expect((await place.tend(["safe-kill", "--dry-run", "tmux:main:api"])).code).toBe(1);
        place.writeConfig(`[watchdog]
state_dir = "${place.state}"
[[service]]
name = "api"
[service.check]
tcp = "127.0.0.1:1"
[service.restart]
tmux = "main:api"
run = "sleep 301"
socket = "${socket}"
`);
        const result = await place.tend(["safe-kill", "-s", "KILL", "tmux:main:api"]);
        expect(result.stderr).toBe("");
        expect(result.stdout).toContain(`sent SIGKILL to main:api (pid ${pid}: ${cmdline})`);
        await waitFor(() => !alive(here), 5000, "pane process gone");
      } finally {
        await place.tmux(["-L", socket, "kill-server"]);
      }
    });
  });

test("launchd label via the config (STAND-IN launchctl: launchd cannot run on Linux)", async () => {
  box = new Sandbox();
  const { pid } = startTarget(["sleep", "300"]);
  // A stand-in that answers `launchctl list LABEL` the way launchd does, for this label only.
  const bin = join(box.dir, "bin");
  Bun.spawnSync(["mkdir", bin]);
  writeFileSync(
    join(bin, "launchctl"),
    `#!/bin/sh
[ "$1 $2" = "list org.example.tour" ] || { echo "Could not find service \\"$2\\" in domain" >&2; exit 113; }
printf '{\\n\\t"LimitLoadToSessionType" = "Aqua";\\n\\t"Label" = "org.example.tour";'
printf '\\n\\t"PID" = ${pid};\\n};\\n'
`,
    { mode: 0o755 },
  );
  box.writeConfig(
    `[watchdog]
state_dir = "${box.state}"
[[service]]
name = "tour"
launchd = "org.example.tour"
[service.check]
process = true
[[service]]
name = "gone"
launchd = "org.example.gone"
[service.check]
process = true
`,
  );
  const env = { PATH: `${bin}:${process.env.PATH}` };
  const result = await box.tend(["safe-kill", "-s", "KILL", "tour"], { env });
  expect(result.stdout).toBe(`sent SIGKILL to tour (pid ${pid}: sleep 300)\n`);
  await waitFor(() => !alive(pid), 5000, "killed");
  const missing = await box.tend(["safe-kill", "gone"], { env });
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain('launchd job org.example.gone: Could not find service "org.example.gone"');
});
