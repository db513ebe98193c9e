// What `watchdog run` does between passes, seen by strace (the oracle: the kernel's record of every
// system call the loop makes while it waits). Issue #42: nothing watched, nothing done — no timer, no
// read; a process the loop started wakes it by its end; one started by someone else costs one /proc
// look a second, never a look at every state file. What it costs in CPU and wake-ups is `make battery`.
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, controlledServer, freePort, Sandbox, SERVER, TEND, waitFor } from "./helpers.ts";

let box: Sandbox;
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
  box?.cleanup([join(box.state, "web.pid")].filter((path) => Bun.file(path).size));
});

/** Every system call of every thread of PID for `ms` (strace -f attaches to all its threads), one per line. */
async function trace(pid: number, ms: number): Promise<string[]> {
  const out = join(box.dir, `strace.${Date.now()}`);
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
async function webService(box: Sandbox): Promise<number> {
  const port = await freePort();
  box.configure({
    defaults: { grace: "0s", cooldown: "0s" },
    services: [
      {
        name: "web",
        pidfile: "web.pid",
        check: { http: `http://127.0.0.1:${port}/` },
        restart: { spawn: [BUN, SERVER, `${port}`] },
      },
    ],
  });
  return port;
}

async function loopOn(box: Sandbox) {
  const loop = Bun.spawn([TEND, "watchdog", "run", "--interval", "1h"], { env: box.env(), stdout: "ignore" });
  box.track(loop.pid);
  stops.push(() => loop.kill("SIGTERM"));
  await waitFor(() => Bun.file(join(box.state, "heartbeat")).size > 0, 15_000, "the first pass");
  return loop;
}

test("between passes with no pid source the loop makes no system call at all: no timer, no read (strace)", async () => {
  box = new Sandbox();
  const web = controlledServer();
  const api = controlledServer();
  stops.push(
    () => web.server.stop(true),
    () => api.server.stop(true),
  );
  box.configure({
    services: [
      { name: "web", check: { http: web.url } },
      { name: "api", retry_interval: "2s", check: { http: api.url } },
    ],
  });
  const loop = await loopOn(box);
  await waitFor(() => web.control.hits > 0 && api.control.hits > 0, 10_000, "both probed");
  await settled(loop.pid);
  const lines = await trace(loop.pid, 3000);
  // What the loop's own thread did in 3 s: nothing (strace shows the one wait it is blocked in).
  const own = lines.filter((line) => line.startsWith(`${loop.pid} `));
  expect(own.length).toBeGreaterThan(0); // the trace did reach the loop's thread
  expect(completed(own)).toEqual([]);
  expect(lines.filter((line) => line.includes(box.state))).toEqual([]);
  expect(web.control.hits + api.control.hits).toBe(2); // and no probe: a pass an hour
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
}, 60_000);

test("a process started by another: a /proc look at it a second, no state read; its crash is answered", async () => {
  box = new Sandbox();
  const port = await webService(box);
  // Started by hand (not by the loop): the loop cannot be told of its end, so it looks.
  const byHand = Bun.spawn([BUN, SERVER, `${port}`], { stdout: "ignore", stderr: "ignore", detached: true });
  box.track(byHand.pid);
  mkdirSync(box.state, { recursive: true });
  writeFileSync(join(box.state, "web.pid"), `${byHand.pid}\n`);
  await waitFor(
    () =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (answer) => answer.ok,
        () => false,
      ),
    10_000,
    "web up",
  );
  const loop = await loopOn(box);
  await waitFor(() => box.stateOf("web").watch?.pid === byHand.pid, 10_000, "web watched");
  const lines = await trace(loop.pid, 3500);
  const looks = lines.filter((line) => line.includes(`/proc/${byHand.pid}/stat"`));
  expect(looks.length).toBeGreaterThanOrEqual(2);
  expect(looks.length).toBeLessThanOrEqual(5);
  expect(lines.filter((line) => line.includes(box.state))).toEqual([]);
  byHand.kill("SIGKILL");
  await waitFor(() => Number(box.read("web.pid")) !== byHand.pid, 10_000, "web started again");
  box.track(Number(box.read("web.pid")));
  expect(box.read("watchdog.log")).toMatch(/\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it/);
}, 60_000);

test("a process the loop started wakes it by its end: no look at it between passes; kill -9 is answered", async () => {
  box = new Sandbox();
  const port = await webService(box);
  const loop = await loopOn(box); // its first pass starts web
  await waitFor(() => box.read("watchdog.log").includes("[START] web: started pid"), 15_000, "web's first start");
  const first = Number(box.read("web.pid"));
  box.track(first);
  await waitFor(() => box.stateOf("web").watch?.pid === first, 10_000, "web watched");
  // The loop runs without JSC's top JITs and Bun's idle GC timer (os/lean.ts); what it starts does not.
  const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  expect(environ(loop.pid)).toContain("BUN_GC_TIMER_DISABLE=1");
  expect(environ(first).filter((entry) => /^(BUN_JSC_|BUN_GC_TIMER|MIMALLOC_|TEND_LEAN)/.test(entry))).toEqual([]);
  await settled(loop.pid);
  const lines = await trace(loop.pid, 3000);
  expect(lines.filter((line) => line.includes(`/proc/${first}/`))).toEqual([]);
  expect(lines.filter((line) => line.includes(box.state))).toEqual([]);
  expect(completed(lines.filter((line) => line.startsWith(`${loop.pid} `)))).toEqual([]);
  const killedAt = Date.now();
  process.kill(first, "SIGKILL");
  await waitFor(() => Number(box.read("web.pid")) !== first, 10_000, "web started again");
  box.track(Number(box.read("web.pid")));
  expect(Date.now() - killedAt).toBeLessThan(5_000); // an interval of 1 h: only its end can have woken the loop
  expect(box.read("watchdog.log")).toMatch(/\[WARN\] web is not running \(pid \d+ is (gone|a zombie)\): starting it/);
}, 60_000);
