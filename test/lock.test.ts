// flock(2) through libc: held is a skip; any other error is said as itself (Android's shared storage: ENOSYS).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holderWords, readHolder, tryLock, type LockHolder } from "../lib/os/lock.ts";
import { holdLock, Sandbox, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let place: Place | null = null;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

describe("flock errors are said as themselves, never taken for another pass (FAT storage gives ENOSYS)", () => {
  const box = new Sandbox();
  const path = join(box.dir, "watchdog.lock");
  mkdirSync(box.dir, { recursive: true });
  // The real libc is used everywhere else; here flock(2) answers as it does on Android's shared storage.
  const failing = (errno: number) => ({ flock: () => -1, errno: () => errno, clock: () => null, fallocate: null });
  test("ENOSYS: an error that names it, exit 1", async () => {
    await expect(tryLock(path, { lib: failing(38) })).rejects.toThrow(
      `cannot lock ${path}: flock(2) failed: function not implemented (ENOSYS`,
    );
    await expect(tryLock(path, { lib: failing(38) })).rejects.toMatchObject({ code: "lock-failed", exitCode: 1 });
  });
  test("EWOULDBLOCK: held by another (the one case that is a skip)", async () => {
    expect(await tryLock(path, { lib: failing(11) })).toBeNull();
  });
  test("the real flock: taken, then held for a second taker, then free again", async () => {
    const first = await tryLock(path);
    expect(first).not.toBeNull();
    expect(await tryLock(path)).toBeNull();
    first!.release();
    const again = await tryLock(path);
    expect(again).not.toBeNull();
    again!.release();
    box.cleanup();
  });
});

// The lock table (SPEC): watchdog.lock is the pass's, held until every service is judged or claimed;
// services/NAME.lock is NAME's one owner's (a pass, the loop's crash watch, blogtunnel, an operator),
// held through a restart's verification. Only another pass makes a pass skip. These run on this host and
// inside the Termux-shaped phone (test/places.ts); the locks the test holds, with flock(1), from outside.
const recorded = (path: string, who: string) => () =>
  existsSync(path) && readFileSync(path, "utf8").startsWith(`${who} pid `);

describe("one owner per service, blogtunnel and an operator wait for their service's owner", () => {
  for (const where of PLACES)
    describe(where, () => {
      test(`a service's lock held by its owner: no SKIP, that service untouched, the others judged`, async () => {
        const box = (place = openPlace(where));
        const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
        stops.push(() => web.stop(true));
        box.configure({
          services: [
            { name: "web", check: { http: `http://127.0.0.1:${web.port}/` } },
            { name: "api", check: { http: `http://127.0.0.1:${web.port}/` } },
          ],
        });
        expect((await box.tend(["watchdog"])).code).toBe(0);
        const before = box.stateOf("api");
        const lockPath = box.stateFile("services/api.lock");
        const owner = holdLock(lockPath, "operator", "sleep 30");
        await waitFor(recorded(lockPath, "operator"), 5000, "the owner's record");
        const pass = await box.tend(["watchdog", "pass"]);
        expect(owner.exitCode).toBeNull(); // the pass did not wait for it
        expect(pass.code).toBe(0);
        expect(pass.stdout).not.toContain("[SKIP]");
        expect(box.stateOf("api")).toEqual(before); // left to its owner
        expect(box.stateOf("web").lastProbe.at).toBeGreaterThan(before.lastProbe.at); // judged
        owner.end();
        await owner.exited;
        // The pass lock held by another pass: skipped at once, as ever.
        const passLock = box.stateFile("watchdog.lock");
        const other = holdLock(passLock, "pass", "sleep 30");
        await waitFor(recorded(passLock, "pass"), 5000, "the other pass's record");
        const skipped = await box.tend(["watchdog", "pass"]);
        expect(other.exitCode).toBeNull();
        expect(skipped.stdout).toContain("[SKIP] another pass is running: this one exits");
        other.end();
        await other.exited;
      }, 60_000);

      // A pass or loop SIGKILLed (the OOM killer) while a child it started sat between vfork and exec:
      // the child holds a copy of the locks' descriptor until its exec closes it. Seen once in a full
      // run (restart-record.test.ts): the next pass said SKIP and left the killed pass's restart
      // unfinished. Stand-in for that child: flock(1) holding the locks for 0.8 s, their records naming
      // a process of that place that is gone (the real window is microseconds: it cannot be held open).
      test(`locks whose recorded holder is gone are waited for a moment: no SKIP, no "another loop"`, async () => {
        const box = (place = openPlace(where));
        const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
        stops.push(() => web.stop(true));
        box.configure({ services: [{ name: "web", check: { http: `http://127.0.0.1:${web.port}/` } }] });
        expect((await box.tend(["watchdog"])).code).toBe(0);
        const before = box.stateOf("web");
        const gone = Number((await box.shell("echo $$")).stdout.trim());
        expect(gone).toBeGreaterThan(1);
        const passLock = box.stateFile("watchdog.lock");
        const webLock = box.stateFile("services/web.lock");
        const child = holdLock(
          passLock,
          "pass",
          `flock '${webLock}' sh -c "echo 'pass pid ${gone}' > '${webLock}'; sleep 0.8"`,
          gone,
        );
        stops.push(child.end);
        await waitFor(() => recorded(passLock, "pass")() && recorded(webLock, "pass")(), 5000, "both records");
        const pass = await box.tend(["watchdog", "pass"]);
        expect(pass.code).toBe(0);
        expect(pass.stdout).not.toContain("[SKIP]");
        expect(await child.exited).toBe(0); // it ended as it would have: the pass waited for it
        const judged = box.stateOf("web").lastProbe.at;
        expect(judged).toBeGreaterThan(before.lastProbe.at); // judged, not left
        // The loop's lock the same: the new loop starts, it does not say another loop watches.
        const loopLock = box.stateFile("loop.lock");
        const loopChild = holdLock(loopLock, "loop", "sleep 0.8", gone);
        stops.push(loopChild.end);
        await waitFor(() => readFileSync(loopLock, "utf8").startsWith(`loop pid ${gone}`), 5000, "the loop's record");
        const loop = await box.spawnTend(["watchdog", "run", "--interval", "1s"]);
        await waitFor(() => box.stateOf("web").lastProbe.at > judged, 10_000, "the loop's pass");
        expect(loop.running()).toBe(true);
        expect(box.read("watchdog.log")).not.toContain("another loop watches");
        loop.kill("SIGTERM");
        expect(await loop.exited).toBe(0);
      }, 60_000);

      test(`a verification holds only its service: the next tick of a 1-second cron judges the others`, async () => {
        const box = (place = openPlace(where));
        const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
        stops.push(() => web.stop(true));
        box.configure({
          defaults: { grace: "0s", cooldown: "0s" },
          services: [
            { name: "web", check: { http: `http://127.0.0.1:${web.port}/` } },
            // Never recovers: its verification lasts the whole 6 s.
            {
              name: "stuck",
              failures: 1,
              verify_timeout: "6s",
              check: { tcp: "127.0.0.1:1", timeout: "200ms" },
              restart: { command: ["true"] },
            },
          ],
        });
        const first = await box.spawnTend(["watchdog", "pass"]);
        await waitFor(() => box.read("watchdog.log").includes("[RESTART] stuck:"), 10_000, "stuck's restart");
        // The pass lock is free once the pass's own work is done: its heartbeat is the last of it (the
        // RESTART line comes before its ⚠️ is spooled and the pass's deliveries; a tick then would SKIP).
        await waitFor(() => box.read("heartbeat") !== "", 10_000, "the first pass's heartbeat");
        const webBefore = box.stateOf("web").lastProbe.at;
        // The next tick, while stuck is verified: it runs, judges web, and leaves stuck to its owner.
        const tick = await box.tend(["watchdog", "pass"]);
        expect(first.running()).toBe(true); // still verifying
        expect(tick.stdout).not.toContain("[SKIP]");
        expect(box.stateOf("web").lastProbe.at).toBeGreaterThan(webBefore);
        expect(box.stateOf("stuck").verdict.word).toBe("restarting");
        expect(box.read("services/stuck.lock")).toMatch(/^pass pid \d+/);
        expect(await first.exited).toBe(0);
        expect(box.read("watchdog.log")).toMatch(/\[FAILED\] stuck did not recover within 6\.\ds after restart/);
        expect(box.read("watchdog.log").match(/\[RESTART\] stuck:/g)).toHaveLength(1); // not restarted twice
      }, 60_000);

      test(`a pass during blogtunnel's 5 s probe runs at once: blogtunnel holds only its own service`, async () => {
        const box = (place = openPlace(where));
        // The tunnel's public URL accepts and never answers: blogtunnel's probe lasts its whole timeout.
        const accepted: Socket[] = [];
        const silent = createServer((socket) => void accepted.push(socket));
        await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
        const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
        stops.push(
          () => web.stop(true),
          () => silent.close(),
          () => accepted.forEach((socket) => socket.destroy()),
        );
        box.configure({ services: [{ name: "web", check: { http: `http://127.0.0.1:${web.port}/` } }] });
        const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}/`;
        const counter = box.scratch("count").inside;
        const tunnel = await box.spawnTend(["blogtunnel", "--url", url, "--timeout", "5s", "--counter", counter]);
        await waitFor(() => accepted.length > 0, 10_000, "blogtunnel to be probing");
        expect(box.read("services/blogtunnel.lock")).toMatch(/^blogtunnel pid \d+/);
        const pass = await box.tend(["watchdog", "pass"]);
        expect(tunnel.running()).toBe(true); // the pass did not wait for the probe
        expect(pass).toMatchObject({ code: 0 });
        expect(pass.stdout).not.toContain("[SKIP]");
        expect(box.stateOf("web").lastProbe).toMatchObject({ ok: true });
        await tunnel.exited;
        expect(await new Response(tunnel.stdout).text()).toContain("blogtunnel failed health check (no answer within");
      }, 60_000);

      test(`blogtunnel runs at once beside a long pass; waits for its own service's owner, then checks`, async () => {
        const box = (place = openPlace(where));
        const edge = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 530 }) });
        stops.push(() => edge.stop(true));
        box.configure({});
        const counter = box.scratch("count");
        box.writeState("services/.made", ""); // the state dir and its services dir, the user's
        const passLock = box.stateFile("watchdog.lock");
        const pass = holdLock(passLock, "pass", "sleep 30");
        await waitFor(recorded(passLock, "pass"), 5000, "the pass record");
        const args = ["blogtunnel", "--url", `http://127.0.0.1:${edge.port}/`, "--timeout", "2s"];
        const beside = await box.tend([...args, "--counter", counter.inside]);
        expect(pass.exitCode).toBeNull(); // it did not wait for the pass
        expect(beside.code).toBe(1); // struck: failing, as the old script's exit said
        expect(readFileSync(counter.outside, "utf8").trim()).toBe("1");
        pass.end();
        await pass.exited;
        // Its own service's owner (an operator, 1.5 s): waited for, then it checks.
        const own = box.stateFile("services/blogtunnel.lock");
        const operator = holdLock(own, "operator", "sleep 1.5");
        await waitFor(recorded(own, "operator"), 5000, "the operator's record");
        const waited = await box.tend([...args, "--counter", counter.inside]);
        expect(operator.exitCode).not.toBeNull(); // it ran once the owner let go
        expect(waited.stdout).toContain("blogtunnel failed health check (HTTP 530 (a fail code), failure 2/3)");
        expect(readFileSync(counter.outside, "utf8").trim()).toBe("2");
        expect(box.stateOf("blogtunnel").strikes).toBe(2);
      }, 90_000);
    });
});

describe("a run that loses its service's wait", () => {
  test("a run lost all the same (its service held past the wait) is said in the log, the counter kept", async () => {
    const box = new Sandbox();
    box.configure();
    const counter = join(box.dir, "count");
    writeFileSync(counter, "2\n");
    const { loadConfig } = await import("../lib/config/load.ts");
    const { watchTunnel } = await import("../lib/tools/tunnel.ts");
    const { ServiceOwner } = await import("../lib/owner/owner.ts");
    const { Logger } = await import("../lib/state/logger.ts");
    const config = loadConfig({ path: box.config });
    try {
      mkdirSync(join(box.state, "services"), { recursive: true, mode: 0o700 });
      const own = join(box.state, "services", "blogtunnel.lock");
      const holder = holdLock(own, "pass", "sleep 30");
      await waitFor(recorded(own, "pass"), 5000, "the pass record");
      const record = {
        url: "http://127.0.0.1:1/",
        timeoutMs: 1000,
        strikes: 3,
        failCodes: [530],
        pane: null,
        requiresDns: null,
      };
      const run = watchTunnel(config, "blogtunnel", record, counter, () => {}, { lockWaitMs: 500 });
      await expect(run).rejects.toMatchObject({ exitCode: 1 });
      // An operator's command on the same service: the same wait, the same words.
      const operator = { logger: new Logger(null), now: Date.now, waitMs: 300 };
      await expect(ServiceOwner.forOperator(config, "blogtunnel", operator)).rejects.toThrow(
        /^blogtunnel is being judged by another \(pass pid \d+\) for 0\.3s: try again$/,
      );
      holder.end();
      await holder.exited;
      expect(box.read("watchdog.log")).toMatch(
        new RegExp(
          "\\[ERROR\\] blogtunnel: blogtunnel was being judged by another for 0\\.5s \\(pass pid \\d+\\): " +
            "this check did not run; the counter is unchanged",
        ),
      );
      expect(readFileSync(counter, "utf8").trim()).toBe("2");
    } finally {
      box.cleanup();
    }
  }, 30_000);
});

test("a lock's record is read by one function: who and PID, the old bare `pid N` a loop's, anything else none", () => {
  const dir = mkdtempSync(join(tmpdir(), "tend-holder-"));
  try {
    const path = join(dir, "x.lock");
    const cases: [string, LockHolder | null][] = [
      ["pass pid 12\n", { who: "pass", pid: 12 }],
      ["loop pid 7", { who: "loop", pid: 7 }],
      ["operator pid 99\n", { who: "operator", pid: 99 }],
      ["blogtunnel pid 5\n", { who: "blogtunnel", pid: 5 }],
      ["pid 41\n", { who: "loop", pid: 41 }], // a loop of the binary before a self-update
      ["stranger pid 3\n", null],
      ["pass pid 12 and more\n", null],
      ["", null],
    ];
    for (const [record, holder] of cases) {
      writeFileSync(path, record);
      expect({ record, holder: readHolder(path) }).toEqual({ record, holder });
    }
    expect(holderWords(readHolder(join(dir, "none.lock")))).toBe("its holder unrecorded");
    expect(holderWords({ who: "pass", pid: 12 })).toBe("pass pid 12");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
