// blogtunnel against a local "public URL" and a real tmux server on a private socket; its strikes, pane
// respawn and --depends-on on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { alive, recordingReceiver, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let at: Place | null = null;
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(async () => {
  server?.stop(true);
  server = null;
  await at?.cleanup();
  at = null;
});
afterAll(() => closePlaces());

for (const where of PLACES)
  describe(`blogtunnel (${where})`, () => {
    test("502/530/no answer are strikes in the plain counter file; the 3rd respawns the pane, writes 0", async () => {
      const place = (at = openPlace(where));
      const answer = { status: 200, hang: false };
      server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        idleTimeout: 30,
        async fetch() {
          if (answer.hang) await Bun.sleep(2000);
          return new Response("blog", { status: answer.status });
        },
      });
      const env = { BLOG_URL: `http://127.0.0.1:${server.port}/secret-path` };
      await place.tmux(["new-session", "-d", "-s", "main", "-n", "blog", "sleep 300"]);
      const panePid = async () =>
        Number((await place.tmux(["display-message", "-p", "-t", "main:blog", "#{pane_pid}"])).stdout.trim());
      const original = await place.hostPid(await panePid());
      place.writeScratch(".blogtunnel-fail-count", "0\n"); // the file the old watchdog.sh kept
      const counter = place.scratch(".blogtunnel-fail-count").outside;
      const marker = place.scratch("tunnel-started");
      const run = (...extra: string[]) =>
        place.tend(
          [
            "blogtunnel",
            "--timeout",
            "500ms",
            "--pane",
            "main:blog",
            "--command",
            `touch '${marker.inside}'; exec sleep 300`,
            ...extra,
          ],
          env,
        );
      const count = () => readFileSync(counter, "utf8");

      answer.status = 502;
      const first = await run();
      expect(first.code).toBe(1);
      expect(first.stdout).toMatch(
        new RegExp(
          String.raw`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[WARN\] tunnel http://127\.0\.0\.1:\d+/… ` +
            String.raw`failed health check \(HTTP 502, failure 1/3\)\n$`,
        ),
      );
      expect(count()).toBe("1\n");

      answer.status = 404; // an answer that is not a fail code: the tunnel works
      expect((await run()).code).toBe(0);
      expect(count()).toBe("0\n");

      answer.status = 530;
      await run();
      expect(count()).toBe("1\n");
      answer.hang = true; // no answer within the timeout: 000
      const second = await run();
      expect(second.stdout).toContain("(no answer within 0.5s (HTTP 000), failure 2/3)");
      expect(count()).toBe("2\n");
      expect(await place.hostPid(await panePid())).toBe(original);

      answer.hang = false;
      answer.status = 502;
      const third = await run();
      expect(third.code).toBe(1);
      expect(third.stdout).toContain("failure 3/3");
      expect(third.stdout).toContain("[HUNG] tunnel");
      expect(third.stdout).toContain("[RESTART] tunnel: tmux respawn-pane -k -t main:blog");
      expect(count()).toBe("0\n");
      await waitFor(() => existsSync(marker.outside), 5000, "the pane's new command");
      await waitFor(() => !alive(original), 5000, "the old pane process gone");
      expect(await place.hostPid(await panePid())).not.toBe(original);
      for (const output of [first.stdout, second.stdout, third.stdout]) expect(output).not.toContain("secret-path");
      await place.tmux(["kill-server"]);
    }, 60_000);

    test("--depends-on NAME: WAIT while that configured service fails (no strike), as depends_on does", async () => {
      const place = (at = openPlace(where));
      const origin = { status: 500 };
      const blog = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("blog", origin) });
      server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("bad gateway", { status: 530 }) });
      try {
        place.configure({
          services: [{ name: "blog", check: { http: `http://127.0.0.1:${blog.port}/`, timeout: "1s" } }],
        });
        const counter = place.scratch("count");
        const run = (...extra: string[]) =>
          place.tend([
            "blogtunnel",
            "--url",
            `http://127.0.0.1:${server!.port}/`,
            "--counter",
            counter.inside,
            ...extra,
          ]);
        // The origin is down: the tunnel's 530 is the origin's fault, not a strike against the tunnel.
        const waited = await run("--depends-on", "blog");
        expect(waited.stdout).toContain("[WAIT] blogtunnel");
        expect(waited.stdout).toContain("dependency blog is failing");
        expect(waited.stdout).toContain("not counted, not restarted");
        expect(waited.stdout).not.toContain("[WARN]");
        expect(readFileSync(counter.outside, "utf8").trim()).toBe("0");
        expect(place.stateOf("blogtunnel").strikes).toBe(0);
        // The origin answers: the tunnel's 530 is its own, a strike.
        origin.status = 200;
        const struck = await run("--depends-on", "blog");
        expect(struck.stdout).toContain("blogtunnel failed health check (HTTP 530 (a fail code), failure 1/3)");
        expect(readFileSync(counter.outside, "utf8").trim()).toBe("1");
        // Names a configured service, and needs the configuration that says what it is.
        const unknown = await run("--depends-on", "origin");
        expect(unknown.code).toBe(2);
        expect(unknown.stderr).toContain("--depends-on: no service named origin in");
        expect(unknown.stderr).toContain("(configured: blog)");
        const bare = await place.tend(
          [
            "blogtunnel",
            "--url",
            `http://127.0.0.1:${server!.port}/`,
            "--counter",
            counter.inside,
            "--depends-on",
            "blog",
          ],
          { TEND_CONFIG: place.scratch("none.toml").inside },
        );
        expect(bare.code).toBe(2);
        expect(bare.stderr).toContain("--depends-on names a configured service: it needs a configuration");
      } finally {
        blog.stop(true);
      }
    });
  });

for (const where of PLACES)
  describe(`blogtunnel's rules and its place in the watch (${where})`, () => {
    test("--fail-codes decides what is a strike; usage errors exit 2", async () => {
      const place = (at = openPlace(where));
      server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("", { status: 503 }) });
      const counter = place.scratch("count");
      const url = `http://127.0.0.1:${server.port}/`;
      const tunnel = (...args: string[]) =>
        place.tend(["blogtunnel", "--url", url, "--counter", counter.inside, ...args]);
      expect((await tunnel("--fail-codes", "502,000")).code).toBe(0);
      expect(readFileSync(counter.outside, "utf8")).toBe("0\n");
      place.writeScratch("count", "garbage");
      const struck = await tunnel("--strikes", "2");
      expect(struck.stdout).toContain(`holds "garbage", not a number: counting from 0`);
      expect(struck.stdout).toContain("failure 1/2");
      const noPane = await tunnel("--strikes", "2");
      expect(noPane.stdout).toContain("no --pane given, nothing restarted");
      expect(readFileSync(counter.outside, "utf8")).toBe("0\n");
      for (const args of [
        ["--url", "ftp://x"],
        ["--url", url, "--pane", "main:blog"],
        ["--url", url, "--fail-codes", "5xx"],
        ["--url", url, "--strikes", "0"],
        ["--url", url, "--timeout", "soon"],
      ]) {
        expect((await place.tend(["blogtunnel", "--counter", counter.inside, ...args])).code).toBe(2);
      }
      expect((await place.tend(["blogtunnel"], { BLOG_URL: "" })).code).toBe(2);
    });

    test("configured, it is part of the watch: logged under its name, notified, in status, report", async () => {
      const place = (at = openPlace(where));
      const hook = recordingReceiver();
      const received = hook.received;
      await place.tmux(["new-session", "-d", "-s", "main", "-n", "blog", "sleep 300"]);
      const panePid = async () =>
        Number((await place.tmux(["display-message", "-p", "-t", "=main:=blog", "#{pane_pid}"])).stdout.trim());
      const first = await panePid();
      // The public URL answers 530 until the tunnel's pane has been respawned.
      server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: async () => new Response("blog", { status: (await panePid()) === first ? 530 : 200 }),
      });
      place.configure({
        notify: { url: `http://127.0.0.1:${hook.port}/topic` },
        defaults: { grace: "0s", cooldown: "0s", verify_timeout: "5s" },
        services: [{ name: "tunnel", check: { tcp: "127.0.0.1:1" } }],
      });
      const counter = place.scratch("count");
      const run = () =>
        place.tend([
          "blogtunnel",
          "--url",
          `http://127.0.0.1:${server!.port}/secret-path`,
          "--counter",
          counter.inside,
          "--pane",
          "main:blog",
          "--command",
          "sleep 301",
        ]);
      try {
        expect((await run()).code).toBe(1);
        expect(readFileSync(counter.outside, "utf8")).toBe("1\n");
        expect((await run()).code).toBe(1);
        expect(readFileSync(counter.outside, "utf8")).toBe("2\n");
        const third = await run();
        expect(readFileSync(counter.outside, "utf8")).toBe("0\n"); // restarted: N fresh checks, as watchdog.sh did
        expect(await panePid()).not.toBe(first);
        const log = place.read("watchdog.log");
        expect(log).toContain("[WARN] blogtunnel failed health check (HTTP 530 (a fail code), failure 1/3)");
        expect(log).toContain("[HUNG] blogtunnel failed 3 checks in a row (last: HTTP 530 (a fail code)): restarting");
        expect(log.match(/\[RESTART\]/g)).toHaveLength(1);
        expect(log).toContain("[RESTART] blogtunnel: tmux respawn-pane -k -t main:blog");
        expect(log).toContain("[RECOVERED] blogtunnel recovered");
        expect(third.stdout).toContain("[RECOVERED] blogtunnel recovered");
        await waitFor(() => received.some((body) => body.startsWith("✅ blogtunnel")), 5000, "✅");
        expect(received.some((body) => body.startsWith("⚠️ blogtunnel failed 3 checks"))).toBe(true);
        // The user's own "tunnel" service is another thing entirely.
        expect(log).not.toContain("[WARN] tunnel http");
        const status = JSON.parse((await place.tend(["watchdog", "status", "--json", "--cached"])).stdout);
        const row = status.services.find((service: { name: string }) => service.name === "blogtunnel");
        expect(row).toMatchObject({ state: "healthy", restarts: 1, recoveries_ok: 1 });
        const report = JSON.parse((await place.tend(["watchdog", "report", "--json", "--since", "1h"])).stdout);
        expect(report.services.map((service: { name: string }) => service.name)).toEqual(["tunnel", "blogtunnel"]);
        // And the status page shows it.
        const page = await (await fetch(await place.serve())).text();
        expect(page).toMatch(/<h2>blogtunnel <span class="state s-ok">healthy<\/span><\/h2>/);
      } finally {
        hook.stop();
      }
    }, 60_000);

    test("with a configuration, a pane within grace is skipped, not failing: exit 0, counter kept", async () => {
      const place = (at = openPlace(where));
      await place.tmux(["new-session", "-d", "-s", "main", "-n", "blog", "sleep 300"]);
      server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 530 }) });
      place.configure({ defaults: { grace: "10m" } });
      place.writeScratch("count", "1\n");
      const counter = place.scratch("count");
      const pane = ["--pane", "main:blog", "--command", "sleep 300", "--counter", counter.inside];
      const result = await place.tend(["blogtunnel", "--url", `http://127.0.0.1:${server.port}/`, ...pane]);
      expect(result.stdout).toBe(""); // nothing probed: the pane's process started moments ago
      expect(result.code).toBe(0);
      expect(readFileSync(counter.outside, "utf8")).toBe("1\n");
    });

    test("one verdict for one answer and --fail-codes, configured or not, 000 listed or not", async () => {
      const place = (at = openPlace(where));
      place.configure({ defaults: { grace: "0s" } });
      // A raw server for what Bun.serve cannot say: a status line of 000.
      const raw = createServer((socket) => {
        socket.on("error", () => {});
        socket.once("data", () => socket.end("HTTP/1.1 000 Odd\r\nContent-Length: 0\r\n\r\n"));
      });
      const rawPort = await new Promise<number>((resolve) =>
        raw.listen(0, "127.0.0.1", () => resolve((raw.address() as any).port)),
      );
      server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) => new Response("", { status: Number(new URL(request.url).pathname.slice(1)) }),
      });
      const answers: Record<string, [string, boolean]> = {
        refused: ["http://127.0.0.1:1/", true],
        "status 000": [`http://127.0.0.1:${rawPort}/`, true],
        "503": [`http://127.0.0.1:${server.port}/503`, true],
        "404": [`http://127.0.0.1:${server.port}/404`, false],
        "200": [`http://127.0.0.1:${server.port}/200`, false],
      };
      // Without one: a configuration file that is not there (as a crontab line with no tend.toml).
      const configs: [string, Record<string, string>][] = [
        ["without", { TEND_CONFIG: place.scratch("none.toml").inside }],
        ["with", {}],
      ];
      try {
        const verdicts: string[] = [];
        for (const [answer, [url, strike]] of Object.entries(answers)) {
          for (const failCodes of ["502,503", "502,503,000"]) {
            for (const [how, env] of configs) {
              place.writeScratch("count", "0\n");
              const counter = place.scratch("count");
              const args = ["--url", url, "--counter", counter.inside, "--strikes", "5", "--fail-codes", failCodes];
              const result = await place.tend(["blogtunnel", ...args], env);
              const struck = readFileSync(counter.outside, "utf8") === "1\n";
              verdicts.push(
                `${answer} --fail-codes ${failCodes} ${how} a configuration: ${struck ? "strike" : "healthy"}`,
              );
              expect({ answer, failCodes, how, struck, code: result.code }).toEqual({
                answer,
                failCodes,
                how,
                struck: strike,
                code: strike ? 1 : 0,
              });
            }
          }
        }
        console.log(verdicts.join("\n"));
      } finally {
        raw.close();
      }
    }, 60_000);

    test("a blogtunnel run by hand leaves no row behind: shown while it is run, then said as not watched", async () => {
      const place = (at = openPlace(where));
      server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("blog") });
      place.configure({ watchdog: { interval: "1m" } });
      const counter = place.scratch("count").inside;
      const run = () => place.tend(["blogtunnel", "--url", `http://127.0.0.1:${server!.port}/`, "--counter", counter]);
      const status = async () => JSON.parse((await place.tend(["watchdog", "status", "--json"])).stdout);
      const names = (report: { services: { name: string }[] }) => report.services.map((row) => row.name);
      /** The tunnel's last judgement moved `ms` into the past: as if that long had gone by since it ran. */
      const age = (ms: number) => {
        const state = place.stateOf("blogtunnel");
        for (const record of [state.verdict, state.lastProbe]) record.at -= ms;
        place.writeState("services/blogtunnel.json", JSON.stringify(state), 0o600);
      };
      expect((await run()).code).toBe(0);
      expect(names(await status())).toEqual(["blogtunnel"]);
      // Nothing ran it again for 10 minutes: at the watchdog's 1m interval that is not watched (2 x 1m + 30s).
      age(10 * 60_000);
      const later = await status();
      expect(names(later)).toEqual([]);
      expect(later.unwatched).toEqual([{ name: "blogtunnel", last_judged: expect.any(String) }]);
      const text = (await place.tend(["watchdog", "status"])).stdout;
      expect(text).not.toMatch(/^blogtunnel\s/m);
      expect(text).toContain("blogtunnel: last judged");
      expect(text).toContain("not since: not watched (blogtunnel run by hand, or its crontab line is gone)");
      // Run again (from cron every 10 minutes, say): shown again, and kept for its own period, not the watchdog's.
      expect((await run()).code).toBe(0);
      expect(place.stateOf("blogtunnel").tunnel.everyMs).toBeGreaterThanOrEqual(10 * 60_000);
      age(15 * 60_000);
      expect(names(await status())).toEqual(["blogtunnel"]);
      age(10 * 60_000); // 25 minutes: more than 2 x its 10 minutes + 30 s
      expect(names(await status())).toEqual([]);
    });
  });
