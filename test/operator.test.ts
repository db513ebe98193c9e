// What an operator reaches for first (monit restart, supervisorctl stop/start/tail), against a real
// spawned service and a real tmux pane; restart, stop, start and logs on this host and inside the phone.
import { afterAll, afterEach, describe, expect, test } from "bun:test";

import { alive, freePort, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let at: Place | null = null;
afterEach(async () => {
  await at?.cleanup();
  at = null;
});
afterAll(() => closePlaces());

function webhook() {
  const bodies: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      bodies.push(await request.text());
      return new Response("ok");
    },
  });
  return { bodies, server };
}

for (const where of PLACES)
  describe(`operator commands (${where})`, () => {
    test("restart: verified, notified, ignores given-up and backoff, not counted toward max_restarts", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      const hook = webhook();
      place.configure({
        notify: { url: `http://127.0.0.1:${hook.server.port}/topic` },
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            max_restarts: 1,
            check: { http: `http://127.0.0.1:${port}/` },
            restart: { spawn: [place.bun, place.server, `${port}`] },
          },
        ],
      });
      await place.tend(["watchdog"]); // its first start
      const first = Number(place.read("web.pid"));
      const firstHere = await place.hostPid(first);
      // given up and in backoff: a pass would not restart it; an operator's restart does.
      const state = place.stateOf("web");
      place.writeState(
        "services/web.json",
        JSON.stringify({ ...state, givenUp: true, backoffUntil: Date.now() + 3_600_000 }),
      );
      const run = await place.tend(["watchdog", "restart", "web"]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(
        new RegExp(`\\[RESTART\\] web: manual restart: stopped pid ${first}; started pid \\d+`),
      );
      expect(run.stdout).toContain("[RECOVERED] web recovered");
      const second = Number(place.read("web.pid"));
      expect(second).not.toBe(first);
      await waitFor(() => !alive(firstHere), 5000, "the old process gone");
      const after = place.stateOf("web");
      expect(after).toMatchObject({ restartsTotal: 1, restartTimes: [], givenUp: false, recoveriesOk: 1 });
      // LAST EVENT is what happened last: the RECOVERED, not the RESTART before it.
      expect(after.lastEvent).toMatchObject({ tag: "RECOVERED", message: expect.stringMatching(/^web recovered/) });
      await waitFor(() => hook.bodies.some((body) => body.startsWith("⚠️ web: manual restart")), 5000, "⚠️");
      hook.server.stop(true);
    }, 30_000);

    test("restart SIGKILLed mid-verification: the next pass finishes it; counted once, ⚠️ once, ✅ once", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      const hook = webhook();
      // Started again slowly (4 s before it answers): the operator's verification is still running when killed.
      const slow = `sleep 4; exec ${place.bun} ${place.server} ${port}`;
      place.configure({
        notify: { url: `http://127.0.0.1:${hook.server.port}/topic`, min_interval: "0s" },
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            grace: "0s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
            restart: { spawn: [place.sh, "-c", slow] },
          },
        ],
      });
      await place.tend(["watchdog"]); // its first start (not a restart)
      await waitFor(() => place.tend(["watchdog", "status"]).then((run) => run.code === 0), 20_000, "web up");
      const before = hook.bodies.length;
      const operator = await place.spawnTend(["watchdog", "restart", "web"]);
      // Its action recorded (`acted`, saved just after its RESTART line): a restart being verified.
      await waitFor(() => place.stateOf("web").restarting?.acted === true, 10_000, "the restart");
      expect(place.stateOf("web").restarting).toMatchObject({ reason: "manual", acted: true });
      expect(place.read("watchdog.log")).toContain("[RESTART] web: manual restart");
      operator.kill("SIGKILL");
      expect(await operator.exited).toBe(128 + 9);
      // The next pass finishes its story: the verification to its deadline, RECOVERED, the ✅.
      await waitFor(
        async () => (await place.tend(["watchdog"]), place.read("watchdog.log").includes("[RECOVERED] web")),
        30_000,
        "the next pass to finish the restart",
      );
      const state = place.stateOf("web");
      expect(state.restarting ?? null).toBeNull();
      expect(state.restartsTotal).toBe(1);
      expect(state.recoveriesOk).toBe(1);
      expect(place.read("watchdog.log").match(/\[RESTART\] web/g)).toHaveLength(1);
      await place.tend(["watchdog"]); // anything still owed is delivered
      const sent = hook.bodies.slice(before);
      expect(sent.filter((body) => body.startsWith("⚠️"))).toHaveLength(1);
      expect(sent.filter((body) => body.startsWith("✅"))).toHaveLength(1);
      hook.server.stop(true);
    }, 90_000);

    test("a pass's ✅ reaches the receiver before an operator's restart that came after it (seed 391)", async () => {
      const place = (at = openPlace(where));
      const hook = webhook();
      // web recovers once the test says so; api never does, and its verification holds the pass 6 s more.
      const control = { web: 500 };
      const checks = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) => new Response("", { status: new URL(request.url).pathname === "/web" ? control.web : 500 }),
      });
      const check = (name: string) => ({ http: `http://127.0.0.1:${checks.port}/${name}`, timeout: "1s" });
      place.configure({
        notify: { url: `http://127.0.0.1:${hook.server.port}/topic`, min_interval: "0s" },
        services: [
          { name: "web", failures: 1, verify_timeout: "20s", check: check("web"), restart: { command: ["true"] } },
          { name: "api", failures: 1, verify_timeout: "6s", check: check("api"), restart: { command: ["true"] } },
        ],
      });
      const pass = await place.spawnTend(["watchdog"]);
      await waitFor(() => hook.bodies.some((body) => body.startsWith("⚠️ web")), 10_000, "the pass's ⚠️ for web");
      control.web = 200;
      // It waits for web's lock while the pass verifies web; api's verification goes on after web's ends.
      const operator = await place.tend(["watchdog", "restart", "web"]);
      expect(operator.code).toBe(0);
      expect(pass.running()).toBe(true); // still verifying api: it had not sent web's ✅ at its own end
      expect(await pass.exited).toBe(0);
      const web = hook.bodies.filter((body) => /^(⚠️|✅|🚨) web/.test(body)).map((body) => body.slice(0, 40));
      // In the order they happened: the pass's restart and recovery, then the operator's.
      expect(web).toHaveLength(4);
      expect(web[0]).toStartWith("⚠️ web failed");
      expect(web[1]).toStartWith("✅ web recovered");
      expect(web[2]).toStartWith("⚠️ web: manual restart");
      expect(web[3]).toStartWith("✅ web recovered");
      checks.stop(true);
      hook.server.stop(true);
    }, 90_000);

    test("stop: the group stopped, the service paused; start: resumed and started; logs: its output", async () => {
      const place = (at = openPlace(where));
      place.writeScratch(
        "service.sh",
        `#!${place.sh}\nprintf 'one\\ntwo\\n\\033[31mred\\n'\n` +
          `i=0\nwhile :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done\n`,
        0o755,
      );
      const script = place.scratch("service.sh").inside;
      place.configure({
        services: [
          { name: "web", pidfile: "web.pid", grace: "0s", check: { process: true }, restart: { spawn: [script] } },
        ],
      });
      await place.tend(["watchdog"]);
      const pid = Number(place.read("web.pid"));
      const pidHere = await place.hostPid(pid);
      expect(alive(pidHere)).toBe(true);

      const logs = await place.tend(["watchdog", "logs", "web", "-n", "50"]);
      expect(logs.code).toBe(0);
      expect(logs.stdout).toStartWith("one\ntwo\n\\x1b[31mred\ntick 0\n"); // escaped, not cut
      // -f follows the file as the service writes it.
      const follow = await place.spawnTend(["watchdog", "logs", "web", "-n", "1", "-f"]);
      const reader = follow.stdout.getReader();
      let seen = "";
      const last = Number(/tick (\d+)\n$/.exec(place.read("services/web.out"))?.[1] ?? 0);
      while (!new RegExp(`tick ${last + 5}\\n`).test(seen))
        seen += new TextDecoder().decode((await reader.read()).value);
      follow.kill();

      const stop = await place.tend(["watchdog", "stop", "web"]);
      expect(stop.code).toBe(0);
      expect(stop.stdout).toMatch(
        new RegExp(`\\[SKIP\\] web: stopped by the operator \\(stopped pid ${pid}\\); paused`),
      );
      await waitFor(() => !alive(pidHere), 5000, "stopped");
      const pass = await place.tend(["watchdog"]);
      expect(pass.stdout).toBe(""); // paused: not restarted behind the operator's back
      expect(JSON.parse((await place.tend(["watchdog", "status", "--json"])).stdout).services[0].state).toBe("paused");

      const start = await place.tend(["watchdog", "start", "web"]);
      expect(start.code).toBe(0);
      expect(start.stdout).toMatch(/\[START\] web: started by the operator: started pid \d+/);
      const again = Number(place.read("web.pid"));
      expect(alive(await place.hostPid(again))).toBe(true);
      expect(place.stateOf("web")).toMatchObject({ paused: false, restartsTotal: 0 });
      const resumed = await place.tend(["watchdog", "start", "web"]);
      expect(resumed.stdout).toContain(`resumed (already running: pid ${again})`);
    }, 30_000);

    test("tmux: restart, stop and start the pane's process; logs is the pane's scrollback", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.configure({
        services: [
          {
            name: "blog",
            grace: "0s",
            verify_timeout: "20s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
            restart: { tmux: "work:blog", run: `echo booting blog; exec '${place.bun}' '${place.server}' ${port}` },
          },
        ],
      });
      const panePid = async () =>
        Number((await place.tmux(["display-message", "-p", "-t", "=work:=blog", "#{pane_pid}"])).stdout.trim());
      expect((await place.tend(["watchdog"])).stdout).toContain("[START] blog: created tmux session work");
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null))?.status === 200,
        10_000,
        "up",
      );
      const logs = await place.tend(["watchdog", "logs", "blog"]);
      expect(logs.stdout).toContain("booting blog");
      expect(logs.stdout).toContain(`listening on ${port}`);
      const before = await panePid();
      const restart = await place.tend(["watchdog", "restart", "blog"]);
      expect(restart.code).toBe(0);
      expect(restart.stdout).toContain("[RESTART] blog: manual restart: tmux respawn-pane -k -t work:blog");
      expect(await panePid()).not.toBe(before);
      const stop = await place.tend(["watchdog", "stop", "blog"]);
      expect(stop.code).toBe(0);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) === null, 5000, "down");
      const start = await place.tend(["watchdog", "start", "blog"]);
      expect(start.code).toBe(0);
      expect(start.stdout).toMatch(/\[START\] blog: started by the operator: /);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
      await place.tmux(["kill-server"]);
    }, 60_000);
  });

for (const where of PLACES)
  describe(`the lock and the loop, for an operator (${where})`, () => {
    test("restart waits for a running pass (the lock), then acts; a watch-only one cannot be restarted", async () => {
      const place = (at = openPlace(where));
      const slow = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: async () => (await Bun.sleep(1500), new Response("ok")),
      });
      place.configure({
        services: [
          { name: "api", check: { http: `http://127.0.0.1:${slow.port}/` }, restart: { command: ["true"] } },
          { name: "watched", check: { tcp: "127.0.0.1:1" } },
        ],
      });
      const pass = place.tend(["watchdog"]);
      await waitFor(
        () => Bun.file(place.stateFile("watchdog.lock")).size >= 0 && place.read("watchdog.log") !== "",
        5000,
        "pass",
      );
      const restart = await place.tend(["watchdog", "restart", "api"]);
      await pass;
      slow.stop(true);
      expect(restart.code).toBe(0);
      const log = place.read("watchdog.log");
      expect(log.indexOf("manual restart")).toBeGreaterThan(log.indexOf("[START] watching api"));
      const watched = await place.tend(["watchdog", "restart", "watched"]);
      expect(watched.code).toBe(2);
      expect(watched.stderr).toContain("watched is watch only (no [service.restart]): tend cannot restart it");
    }, 30_000);

    test("loop: a crashed process is started again within seconds, not at the next pass", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.configure({
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            check: { http: `http://127.0.0.1:${port}/` },
            restart: { spawn: [place.bun, place.server, `${port}`] },
          },
        ],
      });
      const loop = await place.spawnTend(["watchdog", "run", "--interval", "1h"]);
      const log = () => place.read("watchdog.log");
      await waitFor(() => log().includes("[START] web: started pid"), 15_000, "the first start");
      const first = Number(place.read("web.pid"));
      await waitFor(() => place.stateOf("web").watch?.pid === first, 5000, "the loop to watch it");
      const killedAt = Date.now();
      process.kill(await place.hostPid(first), "SIGKILL");
      await waitFor(() => Number(place.read("web.pid")) !== first, 10_000, "started again");
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null))?.status === 200,
        10_000,
        "up",
      );
      expect(Date.now() - killedAt).toBeLessThan(10_000); // an interval of 1 h: only the crash watch can have done it
      expect(log()).toMatch(/\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it \(crash\)/);
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
    }, 30_000);

    test("loop: the crash watch is never blocked by another service's restart still being verified", async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.configure({
        defaults: { grace: "0s", cooldown: "0s" },
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            check: { http: `http://127.0.0.1:${port}/` },
            restart: { spawn: [place.bun, place.server, `${port}`] },
          },
          {
            name: "stuck",
            failures: 1,
            verify_timeout: "15s",
            check: { tcp: "127.0.0.1:1", timeout: "300ms" },
            restart: { command: ["sleep", "15"] },
          },
        ],
      });
      const loop = await place.spawnTend(["watchdog", "run", "--interval", "1h"]);
      const log = () => place.read("watchdog.log");
      // The first pass: web started; stuck's restart command does not return (its verification takes 15 s).
      // (Its RESTART line comes when the command returns.)
      await waitFor(() => log().includes("[HUNG] stuck"), 15_000, "stuck's restart");
      await waitFor(() => log().includes("[START] web: started pid"), 15_000, "web's first start");
      const first = Number(place.read("web.pid"));
      await waitFor(() => place.stateOf("web").watch?.pid === first, 10_000, "web watched");
      process.kill(await place.hostPid(first), "SIGKILL");
      await waitFor(() => Number(place.read("web.pid")) !== first, 15_000, "web started again");
      // ... while stuck's restart is still being verified: not after it.
      expect(log()).toMatch(/\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it \(crash\)/);
      expect(log()).not.toMatch(/\[(FAILED|RECOVERED)\] stuck/);
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
    }, 90_000);

    test("loop: retry_interval probes a failing service again before the next pass; strikes still need N", async () => {
      const place = (at = openPlace(where));
      let hits = 0;
      let status = 200;
      const server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () => (hits++, new Response("x", { status })),
      });
      place.configure({
        services: [
          { name: "api", failures: 3, retry_interval: "1s", check: { http: `http://127.0.0.1:${server.port}/` } },
        ],
      });
      status = 503;
      const loop = await place.spawnTend(["watchdog", "run", "--interval", "1h"]);
      const log = () => place.read("watchdog.log");
      try {
        await waitFor(() => log().includes("failure 3/3"), 15_000, "three strikes, a second apart");
        expect(log()).toContain("failure 1/3");
        expect(log()).toContain("failure 2/3");
        status = 200;
        await waitFor(() => log().includes("[RECOVERED] api is healthy again"), 10_000, "recovery seen");
        const probesAfter = hits;
        await Bun.sleep(2500); // healthy again: no more retries until the next pass (1 h)
        expect(hits).toBe(probesAfter);
        loop.kill("SIGTERM");
        await loop.exited;
      } finally {
        server.stop(true);
      }
    }, 30_000);
  });
