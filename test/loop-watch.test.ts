// What `watchdog run` does between passes, seen by strace (the oracle: the kernel's record of every
// system call the loop makes while it waits). Issue #42: nothing watched, nothing done — no timer, no
// read; a process the loop started wakes it by its end; one started by someone else costs one /proc
// look a second, never a look at every state file. What it costs in CPU and wake-ups is `make battery`.
// On this host and inside the phone (test/places.ts: strace here attaches to the phone's loop, whose
// statx and pidfd_open are ENOSYS as on an old phone; the paths it prints are the phone's own).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { controlledServer, freePort, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Background, type Place } from "./places.ts";

let box: Place | null = null;
const stops: (() => void)[] = [];
/** Where strace writes (this host's). */
const traces = mkdtempSync(join(tmpdir(), "tend-loop-watch-"));
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await box?.cleanup();
  box = null;
});
afterAll(() => {
  rmSync(traces, { recursive: true, force: true });
  closePlaces();
});

/** Every system call of every thread of PID for `ms` (strace -f attaches to all its threads), one per line. */
async function trace(pid: number, ms: number): Promise<string[]> {
  const out = join(traces, `strace.${Date.now()}`);
  const strace = Bun.spawn(["strace", "-f", "-qq", "-o", out, "-p", String(pid)], { stderr: "pipe" });
  // Attached once its first line is written (the call each thread is blocked in).
  await waitFor(() => Bun.file(out).size > 0, 10_000, "strace attached");
  const from = Date.now();
  await waitFor(() => Date.now() - from >= ms, ms + 5_000, `${ms} ms traced`);
  strace.kill("SIGINT");
  await strace.exited;
  return readFileSync(out, "utf8").split("\n").filter(Boolean);
}

/** The context switches of PID's own thread so far: each is a sleep it went into. */
const switches = (pid: number) =>
  [...readFileSync(`/proc/${pid}/status`, "utf8").matchAll(/ctxt_switches:\s+(\d+)/g)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );

/** Until PID's thread has slept one whole second undisturbed (what the pass left behind is done). */
async function settled(pid: number) {
  let last = switches(pid);
  let since = Date.now();
  await waitFor(
    () => {
      const now = switches(pid);
      if (now !== last) [last, since] = [now, Date.now()];
      return Date.now() - since >= 1000;
    },
    20_000,
    "the loop asleep for a second",
  );
}

/** A call that returned while traced: a wake-up (a call still blocked at attach or detach is not). */
const completed = (lines: string[]) =>
  lines.filter((line) => /\) += -?\d/.test(line) && !line.includes("resumed>") && !/restart_syscall/.test(line));

/** One service, web: the example service on a free port, spawned by tend (pidfile web.pid); its port. */
async function webService(box: Place): Promise<number> {
  const port = await freePort();
  box.configure({
    defaults: { grace: "0s", cooldown: "0s" },
    services: [
      {
        name: "web",
        pidfile: "web.pid",
        check: { http: `http://127.0.0.1:${port}/` },
        restart: { spawn: [box.bun, box.server, `${port}`] },
      },
    ],
  });
  return port;
}

/** The loop, after its first pass; `pid`: this host's PID of tend. */
async function loopOn(box: Place): Promise<Background & { pid: number }> {
  const loop = await box.spawnTend(["watchdog", "run", "--interval", "1h"]);
  stops.push(() => loop.kill("SIGTERM"));
  await waitFor(() => Bun.file(box.stateFile("heartbeat")).size > 0, 15_000, "the first pass");
  return { ...loop, pid: loop.tendPid() };
}

for (const where of PLACES)
  describe(`the loop between passes (${where})`, () => {
    test(`with no pid source the loop makes no system call between passes: no timer, no read (strace)`, async () => {
      const place = (box = openPlace(where));
      const web = controlledServer();
      const api = controlledServer();
      stops.push(
        () => web.server.stop(true),
        () => api.server.stop(true),
      );
      place.configure({
        services: [
          { name: "web", check: { http: web.url } },
          { name: "api", retry_interval: "2s", check: { http: api.url } },
        ],
      });
      const loop = await loopOn(place);
      await waitFor(() => web.control.hits > 0 && api.control.hits > 0, 10_000, "both probed");
      await settled(loop.pid);
      const lines = await trace(loop.pid, 3000);
      // What the loop's own thread did in 3 s: nothing (strace shows the one wait it is blocked in).
      const own = lines.filter((line) => line.startsWith(`${loop.pid} `));
      expect(own.length).toBeGreaterThan(0); // the trace did reach the loop's thread
      expect(completed(own)).toEqual([]);
      expect(lines.filter((line) => line.includes(place.state))).toEqual([]);
      expect(web.control.hits + api.control.hits).toBe(2); // and no probe: a pass an hour
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
    }, 60_000);

    test(`each pass reads a state file once: the loop watches what its judgement saved (strace)`, async () => {
      const place = (box = openPlace(where));
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      place.configure({ services: [{ name: "web", check: { http: web.url } }] });
      const loop = await place.spawnTend(["watchdog", "run", "--interval", "1s"]);
      stops.push(() => loop.kill("SIGTERM"));
      await waitFor(() => web.control.hits >= 2, 15_000, "two passes");
      const lines = await trace(loop.tendPid(), 5500);
      const passes = lines.filter((line) => /rename.*\/heartbeat"/.test(line)).length;
      const reads = lines.filter((line) => /openat\(.*\/services\/web\.json", O_RDONLY/.test(line)).length;
      expect(passes).toBeGreaterThanOrEqual(3);
      // One read a pass (its judgement); the watch plan after it was a second one (a pass cut by the
      // trace's ends may add one).
      expect(reads).toBeGreaterThanOrEqual(passes - 1);
      expect(reads).toBeLessThanOrEqual(passes + 1);
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
    }, 60_000);

    test(`a process started by another: a /proc look a second, no state read; its crash is answered`, async () => {
      const place = (box = openPlace(where));
      const port = await webService(place);
      // Started by hand (not by the loop): the loop cannot be told of its end, so it looks.
      const byHand = await place.startTarget([place.bun, place.server, `${port}`], "by-hand.pid");
      place.writeState("web.pid", `${byHand.pid}\n`);
      await waitFor(
        () =>
          fetch(`http://127.0.0.1:${port}/`).then(
            (answer) => answer.ok,
            () => false,
          ),
        10_000,
        "web up",
      );
      const loop = await loopOn(place);
      await waitFor(() => place.stateOf("web").watch?.pid === byHand.pid, 10_000, "web watched");
      const lines = await trace(loop.pid, 3500);
      const looks = lines.filter((line) => line.includes(`/proc/${byHand.pid}/stat"`));
      expect(looks.length).toBeGreaterThanOrEqual(2);
      expect(looks.length).toBeLessThanOrEqual(5);
      expect(lines.filter((line) => line.includes(place.state))).toEqual([]);
      const killedAt = Date.now();
      process.kill(byHand.here, "SIGKILL");
      await waitFor(() => Number(place.read("web.pid")) !== byHand.pid, 10_000, "web started again");
      expect(place.read("watchdog.log")).toMatch(
        /\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it/,
      );
      // Its outage begins at the crash watch's last look that saw it alive (a second at most before the
      // kill), never at the last pass's probe, seconds older (SPEC Downtime, loop mode).
      await waitFor(() => (place.stateOf("web").outages ?? []).length > 0, 15_000, "the crash's outage closed");
      const outage = place.stateOf("web").outages.at(-1);
      expect(outage.reason).toBe("crash");
      expect(outage.from).toBeGreaterThanOrEqual(killedAt - 2_000);
      expect(outage.from).toBeLessThanOrEqual(killedAt + 500);
    }, 60_000);

    test(`a process the loop started wakes it by its end: no look between passes; kill -9 is answered`, async () => {
      const place = (box = openPlace(where));
      const port = await webService(place);
      const loop = await loopOn(place); // its first pass starts web
      await waitFor(() => place.read("watchdog.log").includes("[START] web: started pid"), 15_000, "web's first start");
      const first = Number(place.read("web.pid"));
      await waitFor(() => place.stateOf("web").watch?.pid === first, 10_000, "web watched");
      // The loop runs without JSC's top JITs and Bun's idle GC timer (os/lean.ts); what it starts does not.
      const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      expect(environ(loop.pid)).toContain("BUN_GC_TIMER_DISABLE=1");
      expect(
        environ(await place.hostPid(first)).filter((entry) =>
          /^(BUN_JSC_|BUN_GC_TIMER|MIMALLOC_|TEND_LEAN)/.test(entry),
        ),
      ).toEqual([]);
      await settled(loop.pid);
      const lines = await trace(loop.pid, 3000);
      expect(lines.filter((line) => line.includes(`/proc/${first}/`))).toEqual([]);
      expect(lines.filter((line) => line.includes(place.state))).toEqual([]);
      expect(completed(lines.filter((line) => line.startsWith(`${loop.pid} `)))).toEqual([]);
      const killedAt = Date.now();
      process.kill(await place.hostPid(first), "SIGKILL");
      await waitFor(() => Number(place.read("web.pid")) !== first, 10_000, "web started again");
      expect(Date.now() - killedAt).toBeLessThan(5_000); // an interval of 1 h: only its end can have woken the loop
      expect(place.read("watchdog.log")).toMatch(
        /\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it/,
      );
      // Its outage begins when its exit was seen, not at the first pass's probe (seconds before the kill).
      await waitFor(() => (place.stateOf("web").outages ?? []).length > 0, 15_000, "the crash's outage closed");
      const outage = place.stateOf("web").outages.at(-1);
      expect(outage.reason).toBe("crash");
      expect(outage.from).toBeGreaterThanOrEqual(killedAt - 200);
      expect(outage.from).toBeLessThanOrEqual(killedAt + 1_000);
    }, 60_000);
  });
