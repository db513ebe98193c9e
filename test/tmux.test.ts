// restart.tmux against a real tmux server on a private socket: on this host (TMUX_TMPDIR inside the
// sandbox) and inside the Termux-shaped phone (test/places.ts: Termux's tmux, its sockets in $PREFIX/tmp,
// TMUX_TMPDIR unset, run as the app under Android's filter).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { alive, freePort, procState, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let at: Place | null = null;
afterEach(async () => {
  await at?.cleanup();
  at = null;
});
afterAll(() => closePlaces());

for (const where of PLACES)
  describe(`restart.tmux (${where})`, () => {
    test("tmux: creates the session, respawns a deadlocked pane at strike 3, recreates a killed window", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.configure({
        services: [
          {
            name: "blog",
            tmux: "work:blog",
            grace: "0s",
            cooldown: "0s",
            verify_timeout: "20s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
            restart: { tmux: "work:blog", run: `exec '${place.bun}' '${place.server}' ${port}` },
          },
        ],
      });
      const panePid = async () =>
        Number((await place.tmux(["display-message", "-p", "-t", "work:blog", "#{pane_pid}"])).stdout.trim());

      const first = await place.tend(["watchdog"]);
      expect(first.stdout).toContain("[START] blog: created tmux session work"); // a first start, not a restart
      expect(first.stdout).not.toContain("[RECOVERED]");
      const frozen = await place.hostPid(await panePid());
      expect(alive(frozen)).toBe(true);

      // tmux sends SIGCONT to a pane process that is stopped, so SIGSTOP cannot freeze it: deadlock it instead.
      process.kill(frozen, "SIGSTOP");
      await waitFor(() => procState(frozen) !== "T", 5000, "tmux to resume the stopped pane");
      process.kill(frozen, "SIGUSR1");
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(300) }).catch(() => null)) === null,
        5000,
        "deadlock",
      );
      expect((await place.tend(["watchdog"])).stdout).toContain("failure 1/3");
      expect((await place.tend(["watchdog"])).stdout).toContain("failure 2/3");
      expect(await place.hostPid(await panePid())).toBe(frozen);
      const third = await place.tend(["watchdog"]);
      expect(third.stdout).toContain("[HUNG] blog");
      expect(third.stdout).toContain("[RESTART] blog: tmux respawn-pane -k -t work:blog");
      expect(third.stdout).toContain("[RECOVERED] blog recovered");
      const revived = await place.hostPid(await panePid());
      expect(revived).not.toBe(frozen);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);

      // A second window keeps the session alive when the service's window is killed.
      await place.tmux(["new-window", "-d", "-t", "work:", "-n", "other", "sleep 600"]);
      await place.tmux(["kill-window", "-t", "work:blog"]);
      await waitFor(() => !alive(revived), 5000, "window killed");
      const again = await place.tend(["watchdog"]);
      expect(again.stdout).toContain("[WARN] blog is not running (tmux pane work:blog:");
      expect(again.stdout).toContain("[RESTART] blog: created tmux window work:blog");
      expect(again.stdout).toContain("[RECOVERED] blog recovered");
      await place.tmux(["kill-server"]);
    }, 60_000);

    test("tmux: 3 services create one session at once from a dead server, 3 rounds; socket; output piped", async () => {
      const place = (at = openPlace(where));
      const names = ["web", "api", "worker"];
      place.configure({
        services: names.map((name) => ({
          name,
          tmux: `main:${name}`,
          grace: "0s",
          verify_timeout: "15s",
          backoff: "0s",
          check: { process: true },
          restart: { tmux: `main:${name}`, socket: "tend-private", run: `echo said-by-${name}; exec sleep 600` },
        })),
      });
      const tmux = (...args: string[]) => place.tmux(["-L", "tend-private", ...args]);
      const windows = async () =>
        (await tmux("list-windows", "-t", "=main", "-F", "#{window_name}")).stdout.split("\n").filter(Boolean);
      const panePids = async () =>
        (await tmux("list-panes", "-s", "-t", "=main", "-F", "#{pane_pid}")).stdout
          .split("\n")
          .filter(Boolean)
          .map(Number);
      try {
        for (let round = 1; round <= 3; round++) {
          const pass = await place.tend(["watchdog"]);
          console.log(`${where} round ${round}:\n${pass.stdout}${pass.stderr}`);
          expect(pass.code).toBe(0);
          expect(pass.stdout).not.toContain("[FAILED]");
          expect(pass.stdout).not.toContain("duplicate session");
          expect((await windows()).sort()).toEqual([...names].sort());
          // On the private server only: tmux's default server has no session.
          expect((await place.tmux(["has-session", "-t", "=main"])).code).not.toBe(0);
          for (const name of names) expect(place.stateOf(name).verdict?.word).toBe("healthy");
          const pids = await Promise.all((await panePids()).map((pid) => place.hostPid(pid)));
          expect(pids).toHaveLength(3);
          // tmux copies a pane's output to the pipe as it reads it: wait for this round's line in each file.
          const lines = (name: string) =>
            place
              .read(`services/${name}.out`)
              .split("\n")
              .filter((line) => line.trim() === `said-by-${name}`).length;
          await waitFor(() => names.every((name) => lines(name) === round), 10_000, "each pane's output piped");
          await tmux("kill-server"); // the dead server the next round starts from
          await waitFor(() => pids.every((pid) => !alive(pid)), 10_000, "the panes to be gone");
        }
        // What each pane said is kept in STATE_DIR/services/NAME.out, after its pane (and the server) died.
        for (const name of names) {
          const said = place.read(`services/${name}.out`);
          expect(said.split("\n").filter((line) => line.trim() === `said-by-${name}`)).toHaveLength(3);
        }
        const logs = await place.tend(["watchdog", "logs", "web", "-n", "5"]);
        expect(logs.code).toBe(0);
        expect(logs.stdout).toContain("said-by-web");
      } finally {
        await tmux("kill-server");
      }
    }, 120_000);

    test("tmux: a pane that exits during verification is FAILED at once, saying when; its words kept", async () => {
      const place = (at = openPlace(where));
      place.configure({
        services: [
          {
            name: "dies",
            tmux: "main:dies",
            grace: "0s",
            verify_timeout: "30s",
            check: { process: true },
            restart: { tmux: "main:dies", socket: "tend-dies", run: "echo cannot bind port 8080; exit 3" },
          },
        ],
      });
      try {
        const started = Date.now();
        const pass = await place.tend(["watchdog"]);
        console.log(pass.stdout);
        expect(Date.now() - started).toBeLessThan(20_000); // not the 30 s deadline
        expect(pass.stdout).toMatch(
          /\[FAILED\] dies exited [\d.]+s after its first start \(tmux pane main:dies: .*\); backoff/,
        );
        expect(pass.stdout).not.toContain("[RECOVERED]");
        await waitFor(
          () => place.read("services/dies.out").includes("cannot bind port 8080"),
          10_000,
          "the pane's words",
        );
        expect((await place.tend(["watchdog", "logs", "dies"])).stdout).toContain("cannot bind port 8080");
      } finally {
        await place.tmux(["-L", "tend-dies", "kill-server"]);
      }
    }, 60_000);

    test("tmux: a dead pane kept by remain-on-exit is respawned, its output piped again", async () => {
      const place = (at = openPlace(where));
      place.configure({
        services: [
          {
            name: "kept",
            tmux: "main:kept",
            grace: "0s",
            backoff: "0s",
            verify_timeout: "15s",
            check: { process: true },
            restart: { tmux: "main:kept", socket: "tend-kept", run: "echo started-again; exec sleep 600" },
          },
        ],
      });
      const tmux = (...args: string[]) => place.tmux(["-L", "tend-kept", ...args]);
      try {
        // The boot script's pane, not tend's: its process is killed, the pane stays (dead) to be respawned.
        expect((await tmux("new-session", "-d", "-s", "main", "-n", "kept", "exec sleep 600")).code).toBe(0);
        await tmux("set-option", "-g", "remain-on-exit", "on");
        const first = Number((await tmux("display-message", "-p", "-t", "main:kept", "#{pane_pid}")).stdout);
        expect((await place.tend(["watchdog"])).code).toBe(0);
        process.kill(await place.hostPid(first), "SIGKILL");
        const dead = async () => (await tmux("display-message", "-p", "-t", "main:kept", "#{pane_dead}")).stdout.trim();
        await waitFor(async () => (await dead()) === "1", 5000, "the pane dead, kept");
        const pass = await place.tend(["watchdog"]);
        expect(pass.stdout).toContain("kept is not running (tmux pane main:kept: its command exited)");
        // tmux refuses pipe-pane on a dead pane ("target pane has exited"): not a failed restart.
        expect(pass.stdout).not.toContain("[FAILED]");
        expect(pass.stdout).toContain("[RESTART] kept: tmux respawn-pane -k -t main:kept");
        expect(await dead()).toBe("0");
        await waitFor(
          () => place.read("services/kept.out").includes("started-again"),
          10_000,
          "the new command's words",
        );
      } finally {
        await tmux("kill-server");
      }
    }, 60_000);
  });

for (const where of PLACES)
  test(`tmux: socket names are checked as configuration (${where})`, async () => {
    const box = (at = openPlace(where));
    box.writeConfig(
      `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "a"\n[service.check]\nprocess = true\n` +
        `[service.restart]\ntmux = "main:a"\nrun = "sleep 60"\nsocket = "no/slash"\n`,
    );
    const run = await box.tend(["watchdog", "validate"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'service[0].restart.socket: "no/slash" is neither a socket name (letters, digits, _ . -) nor an absolute path',
    );
  });
