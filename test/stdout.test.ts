// tend's own stdout is the least reliable thing it writes to (#39): a full disk, a broken pipe, a closed
// descriptor there is one line in the log, never a failed pass, never the end of `watchdog run`. A pass's
// stdout (full, a broken pipe, closed), the loop's, notify's and serve's: on this host and inside the phone.
import { afterAll, afterEach, expect, test } from "bun:test";
import { alive, freePort, recordingReceiver, waitFor } from "./helpers.ts";
import type { ConfigSpec } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let at: Place | null = null;
afterEach(async () => {
  await at?.cleanup();
  at = null;
});
afterAll(() => closePlaces());

/** One service, web, spawned by tend on `port` (pidfile web.pid): bun and the example service where tend runs. */
const webSpec = (port: number, bun: string, server: string): ConfigSpec => ({
  defaults: { grace: "0s" },
  services: [
    {
      name: "web",
      pidfile: "web.pid",
      check: { http: `http://127.0.0.1:${port}/` },
      restart: { spawn: [bun, server, `${port}`] },
    },
  ],
});

for (const where of PLACES)
  for (const [what, redirect, words] of [
    ["a full disk (/dev/full)", "> /dev/full", "no space left on the device"],
    ["a broken pipe (| true)", "| (exec true)", "broken pipe"],
    ["a closed descriptor (>&-)", ">&-", ""],
  ] as const) {
    test(`${where}: a pass whose stdout is ${what}: the crashed one started, exit 0, a line in the log`, async () => {
      const place = (at = openPlace(where));
      const port = await freePort();
      place.configure(webSpec(port, place.bun, place.server));
      const pidThere = () => Number(place.read("web.pid"));
      expect((await place.tend(["watchdog"])).code).toBe(0);
      await waitFor(() => place.read("web.pid") !== "", 10_000, "the first start");
      const first = pidThere();
      const firstHere = await place.hostPid(first);
      process.kill(firstHere, "SIGKILL");
      await waitFor(() => !alive(firstHere), 5000, "killed");
      const run = await place.shell(`'${place.tendPath}' watchdog pass ${redirect}; echo "exit $?" >&2`);
      // In a pipe, the shell's status is the last command's: tend's own exit is judged by what it did.
      if (!redirect.startsWith("|")) expect(run.stderr).toContain("exit 0");
      expect(run.stderr).not.toContain("internal error");
      expect(pidThere()).not.toBe(first);
      expect(alive(await place.hostPid(pidThere()))).toBe(true);
      const log = place.read("watchdog.log");
      expect(log).toContain("[RESTART] web: started pid");
      expect(log).toMatch(/\[RECOVERED\] web recovered/);
      if (words) expect(log.match(new RegExp(`\\[WARN\\] stdout: ${words}`, "g"))).toHaveLength(1);
    }, 30_000);
  }

for (const where of PLACES)
  test(`${where}: watchdog run | head -1: the loop outlives its reader, still starts a crashed service`, async () => {
    const place = (at = openPlace(where));
    const port = await freePort();
    place.configure(webSpec(port, place.bun, place.server));
    const pidThere = () => Number(place.read("web.pid"));
    /** The service tend started runs (as this host finds it). */
    const running = async (pid: number) => {
      try {
        return pid > 0 && alive(await place.hostPid(pid));
      } catch {
        return false; // not a process of the phone
      }
    };
    const loop = await place.spawnTend(["watchdog", "run", "--interval", "1s"]);
    // As `| head -1`: one line read, then the reader is gone (the pipe's read end closed).
    const reader = loop.stdout.getReader();
    await reader.read();
    await reader.cancel();
    await waitFor(() => running(pidThere()), 15_000, "the first start");
    const first = pidThere();
    process.kill(await place.hostPid(first), "SIGKILL");
    await waitFor(
      async () => pidThere() !== first && (await running(pidThere())),
      15_000,
      "started again by the loop, its reader gone",
    );
    expect(place.read("watchdog.log")).toContain("[WARN] stdout: broken pipe (what tend prints is in this log)");
    expect(loop.running()).toBe(true); // still watching
    loop.kill("SIGTERM");
    expect(await loop.exited).toBe(0);
    expect(await new Response(loop.stderr).text()).not.toContain("internal error");
  }, 60_000);

for (const where of PLACES)
  test(`${where}: notify and serve, stdout full or closed: the message delivered, the server serving`, async () => {
    const place = (at = openPlace(where));
    place.configure({ services: [{ name: "web", check: { command: ["true"] } }] });
    const tend = `'${place.tendPath}'`;
    const receiver = recordingReceiver();
    try {
      for (const redirect of ["> /dev/full", ">&-", "| (exec true)"]) {
        const before = receiver.received.length;
        const command = `${tend} notify --url '${receiver.url}/t' --format json 'disk at 91%' ${redirect}`;
        const done = await place.shell(`${command}; echo "exit $?" >&2`);
        expect(done.stderr).not.toContain("internal error");
        if (!redirect.startsWith("|")) expect(done.stderr).toContain("exit 0");
        expect(receiver.received.slice(before).map((body) => JSON.parse(body).message)).toEqual(["disk at 91%"]);
      }
    } finally {
      receiver.stop();
    }
    const port = await freePort();
    const serve = await place.spawnShell(`exec ${tend} watchdog serve --listen 127.0.0.1:${port} > /dev/full`);
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status !== undefined,
      10_000,
      "serve answering, its stdout full",
    );
    expect(serve.running()).toBe(true);
    serve.kill("SIGTERM");
    await serve.exited;
    const said = await new Response(serve.stderr).text();
    expect(said).not.toContain("internal error");
    expect(said).toContain("watchdog: cannot write to stdout: no space left on the device (serving all the same)");
    // A command whose answer is its stdout fails (exit 1), saying why: not an internal error.
    const status = (await place.shell(`${tend} watchdog status > /dev/full; echo "exit $?" >&2`)).stderr;
    expect(status).toContain("watchdog: cannot write to stdout: no space left on the device");
    expect(status).toContain("exit 1");
  }, 30_000);
