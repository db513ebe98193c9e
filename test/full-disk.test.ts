// A full state disk, for real: the state dir is a 512 KiB tmpfs mounted here, filled to ENOSPC.
// A state is rewritten in the blocks its file has (durable: a reboot keeps it); one that has no file
// (or outgrew it) is kept in memory (/dev/shm, across cron's passes), so a failing service is still
// restarted; what could not be logged reaches stdout; once there is room it is written back and said so.
// On the Termux-shaped phone (test/termux.ts), which has no /dev/shm as Android has none: a state with no
// file of its own lives in the process's memory only — the loop keeps it, a cron pass does not.
import { afterAll, afterEach, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  chownSync,
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { spillDir } from "../lib/state/spill.ts";
import { keepSpoolRoom, readSpool, spoolCount, spoolNow } from "../lib/notify/spool.ts";
import { overwriteInPlace, writeFileAtomic } from "../lib/os/atomic.ts";
import { appendNoFollow } from "../lib/os/files.ts";
import {
  alive,
  BUN,
  freePort,
  recordingReceiver,
  run,
  Sandbox,
  SERVER,
  TEND,
  waitFor,
  type ServiceSpec,
} from "./helpers.ts";
import { closePlaces, openPlace, smallStateDisk } from "./places.ts";

let box: Sandbox;
const stops: (() => void)[] = [];
/** The phone's test: its tmpfs unmounted, then its phone cleaned up. */
let afterPhone: (() => Promise<void>) | null = null;
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) stop();
  box?.cleanup();
  await afterPhone?.();
  afterPhone = null;
});
afterAll(() => closePlaces());

/** Write zeros to `path` until the file system says ENOSPC. */
function fill(path: string) {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(4096);
  try {
    while (true) writeSync(fd, chunk);
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    closeSync(fd);
  }
}

test("a full state disk: the strike kept in memory, the frozen service restarted, the state written back", async () => {
  box = new Sandbox();
  mkdirSync(box.state, { mode: 0o700 });
  const mounted = await run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", box.state]);
  expect(mounted.code).toBe(0);
  stops.push(() => {
    Bun.spawnSync(["umount", box.state]);
    const spilled = spillDir(box.state);
    if (spilled) rmSync(spilled, { recursive: true, force: true });
  });
  const flag = join(box.dir, "up");
  const web = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response("", { status: existsSync(flag) ? 200 : 500 }),
  });
  stops.push(() => web.stop(true));
  const receiver = recordingReceiver();
  stops.push(receiver.stop);
  const configure = (more: ServiceSpec[] = []) =>
    box.configure({
      notify: { url: receiver.url, format: "json", min_interval: "0s" },
      services: [
        {
          name: "web",
          failures: 2,
          cooldown: "0s",
          verify_timeout: "5s",
          check: { http: `http://127.0.0.1:${web.port}/` },
          restart: { command: ["touch", `${flag}`] },
        },
        ...more,
      ],
    });
  configure();
  Bun.spawnSync(["touch", flag]);
  expect((await box.tend(["watchdog"])).code).toBe(0); // healthy: its state file exists
  rmSync(flag);
  // Another user squats the spill dir's name ahead (it was predictable once): never used.
  const prefix = `tend-0-${createHash("sha256").update(box.state).digest("hex").slice(0, 16)}-`;
  const squat = join("/dev/shm", `${prefix}squat`);
  const oldName = join("/dev/shm", prefix.slice(0, -1)); // the name it had: squatted, the fallback was off
  for (const dir of [squat, oldName]) {
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
    stops.push(() => rmSync(dir, { recursive: true, force: true }));
  }
  fill(join(box.state, "filler"));
  const filledAt = Date.now();
  // A service added now has no state file yet: nothing of its own to rewrite.
  configure([{ name: "db", failures: 2, check: { command: ["false"] } }]);

  // Before the fix: "cannot write to the state dir", exit 1, the strike lost; at every pass again.
  const first = await box.tend(["watchdog"]);
  expect(first.code).toBe(0);
  expect(first.stdout).toContain("[WARN] web failed health check (HTTP 500 (expected 2xx/3xx), failure 1/2)");
  // web's state is rewritten in the blocks its file has: on the disk, so a reboot keeps it.
  expect(first.stdout).not.toContain("web: cannot save its state");
  expect(box.stateOf("web").strikes).toBe(1);
  // db's, with no file, is kept in memory (/dev/shm, across cron's passes) until it can be written.
  expect(first.stdout).toMatch(
    /\[ERROR\] db: cannot save its state \(no space left on the device\): kept in memory \(\/dev\/shm\/tend-/,
  );
  const spilledTo = spillDir(box.state)!;
  expect(spilledTo).not.toBe(squat); // its own, made exclusively under a name nobody could guess
  expect(spilledTo.startsWith(join("/dev/shm", prefix))).toBe(true);
  expect(statSync(spilledTo).uid).toBe(0);
  expect(existsSync(join(squat, "db.json"))).toBe(false);
  // The heartbeat too is rewritten in the block it has: the pass is known to have run (a reboot now
  // would count the host's downtime from here, not from before the disk filled).
  expect(first.stdout).not.toContain("cannot write the heartbeat");
  expect(Date.parse(box.read("heartbeat").split("\n")[0])).toBeGreaterThanOrEqual(filledAt - 1000);

  receiver.control.status = 500; // the receiver is down too: the ⚠️ can be neither sent nor spooled on the disk
  const second = await box.tend(["watchdog"]);
  expect(second.stdout).toContain("web failed health check (HTTP 500 (expected 2xx/3xx), failure 2/2)");
  expect(second.stdout).toContain("db failed health check (exit 1, failure 2/2)"); // its strike kept in memory
  expect(second.stdout).toContain(`[RESTART] web: command touch`);
  expect(second.stdout).toMatch(/\[RECOVERED\] web recovered [\d.]+s after restart/);
  expect(second.stdout).not.toContain("cannot save its state"); // said once
  expect(box.stateOf("web")).toMatchObject({ restartsTotal: 1, recoveriesOk: 1 }); // on the disk
  // Its ⚠️ is spooled on the disk, in the blocks kept past the spool's end (a reboot keeps it;
  // /dev/shm, where it went before, would not: truth seed 145), not dropped.
  expect(second.stdout).not.toContain("could not spool");
  expect(second.stdout).not.toContain("not spooled");
  expect(box.read("notify-spool.jsonl")).toContain("⚠️ web");
  expect(existsSync(join(spillDir(box.state)!, "notify-spool.jsonl"))).toBe(false);
  expect(receiver.received).toEqual([]);

  receiver.control.status = 200;
  rmSync(join(box.state, "filler"));
  const third = await box.tend(["watchdog"]);
  expect(receiver.received.filter((body) => JSON.parse(body).event === "restart")).toHaveLength(1);
  expect(third.stdout).toContain("[WARN] db: its state is saved again (the disk has room again)");
  expect(box.stateOf("db").strikes).toBeGreaterThanOrEqual(2);
  expect(box.stateOf("web")).toMatchObject({ strikes: 0, restartsTotal: 1, recoveriesOk: 1 });
  // Every copy is back in its file: the spill directory, empty, is gone (nothing left on /dev/shm).
  expect(existsSync(spilledTo)).toBe(false);
  expect(spillDir(box.state)).toBeNull();
  expect(readFileSync(join(box.state, "watchdog.log"), "utf8")).toContain("its state is saved again");
}, 60_000);

test("a rewrite in place is one write, padded, never truncated: killed at any moment, old or new", () => {
  box = new Sandbox();
  const path = join(box.dir, "state.json");
  writeFileSync(path, JSON.stringify({ strikes: 0, note: "x".repeat(300) }) + "\n");
  const before = statSync(path).size;
  // Shorter: the rest is spaces (JSON reads past them), the size unchanged (no truncate to be cut after).
  expect(overwriteInPlace(path, JSON.stringify({ strikes: 2 }) + "\n")).toBe(true);
  expect(statSync(path).size).toBe(before);
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ strikes: 2 });
  // Longer, within the block the file has: written whole.
  expect(overwriteInPlace(path, JSON.stringify({ strikes: 3, note: "y".repeat(1000) }))).toBe(true);
  expect(JSON.parse(readFileSync(path, "utf8")).note).toHaveLength(1000);
  // Longer than the blocks it has: refused, the file as it was.
  const blocks = statSync(path).blocks * 512;
  expect(overwriteInPlace(path, JSON.stringify({ note: "z".repeat(blocks) }))).toBe(false);
  expect(JSON.parse(readFileSync(path, "utf8")).strikes).toBe(3);
  expect(overwriteInPlace(join(box.dir, "missing.json"), "{}")).toBe(false);
});

test("a loop on a full disk never undoes an operator: a stop (state in place), a pause (state in RAM)", async () => {
  box = new Sandbox();
  mkdirSync(box.state, { mode: 0o700 });
  expect((await run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", box.state])).code).toBe(0);
  stops.push(() => {
    Bun.spawnSync(["umount", "-l", box.state]); // lazily: the killed loop may not be gone yet
    const spilled = spillDir(box.state);
    if (spilled) rmSync(spilled, { recursive: true, force: true });
  });
  const [webPort, dbPort] = [await freePort(), await freePort()];
  // Pidfiles beside, not on the full disk: the services can be started there.
  const spec = (name: string, port: number): ServiceSpec => ({
    name,
    pidfile: join(box.dir, `${name}.pid`),
    grace: "0s",
    check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
    restart: { spawn: [BUN, SERVER, `${port}`] },
  });
  const pidOf = (name: string) => Number(readFileSync(join(box.dir, `${name}.pid`), "utf8").trim() || 0);
  box.configure({ services: [spec("web", webPort)] });
  const loop = Bun.spawn([TEND, "watchdog", "run", "--interval", "1s"], { env: box.env(), stdout: "pipe" });
  box.track(loop.pid);
  stops.push(() => {
    for (const name of ["web", "db"]) if (existsSync(join(box.dir, `${name}.pid`))) box.track(pidOf(name));
  });
  stops.push(() => loop.kill("SIGKILL")); // first (stops run last first): the tmpfs is then free to unmount
  let said = "";
  void (async () => {
    for await (const chunk of loop.stdout) said += new TextDecoder().decode(chunk);
  })();
  await waitFor(() => box.read("services/web.json").includes('"lastHealthyAt":1'), 15_000, "web started, healthy");
  fill(join(box.state, "filler"));
  // db comes with the disk full: no state file of its own, its state in RAM (/dev/shm).
  box.configure({ services: [spec("web", webPort), spec("db", dbPort)] });
  await waitFor(() => said.includes("[START] db: started pid"), 15_000, "db started by the loop");
  await waitFor(() => alive(pidOf("db")), 5000, "db running");
  expect(said).toMatch(/\[ERROR\] db: cannot save its state \(no space left on the device\): kept in memory/);

  expect((await box.tend(["watchdog", "stop", "web"])).code).toBe(0);
  expect((await box.tend(["watchdog", "pause", "db", "--for", "1h"])).code).toBe(0);
  const db = pidOf("db");
  process.kill(db, "SIGKILL"); // paused: nobody starts it again
  const after = said.length;
  // Three of the loop's passes later (the heartbeat is rewritten in place every pass):
  const operatedAt = Date.now();
  await waitFor(() => Date.parse(box.read("heartbeat").split("\n")[0]) >= operatedAt + 3000, 15_000, "3 passes");
  const since = said.slice(after);
  expect(since).not.toMatch(/\[(RESTART|START)\] (web|db)/);
  expect(alive(pidOf("web"))).toBe(false);
  expect(alive(db)).toBe(false);
  const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
  const word = (name: string) => status.services.find((row: { name: string }) => row.name === name).state;
  expect([word("web"), word("db")]).toEqual(["paused", "paused"]); // `stop` pauses, as `start` resumes
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
}, 90_000);

test("a disk that fills during a write: no short temp file renamed over the state, no half log line", async () => {
  box = new Sandbox();
  mkdirSync(box.state, { mode: 0o700 });
  expect((await run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", box.state])).code).toBe(0);
  stops.push(() => Bun.spawnSync(["umount", "-l", box.state]));
  const path = join(box.state, "web.json");
  writeFileSync(path, JSON.stringify({ strikes: 1 }) + "\n");
  const log = join(box.state, "watchdog.log");
  writeFileSync(log, "[t] [START] first\n");
  // Filled to 8 KiB short of full: a 64 KiB write gets 8 KiB of it, then no more.
  const filler = join(box.state, "filler");
  fill(filler);
  const fd = openSync(filler, "r+");
  ftruncateSync(fd, statSync(filler).size - 8192);
  closeSync(fd);
  const big = JSON.stringify({ strikes: 2, note: "x".repeat(64 * 1024) }) + "\n";
  expect(() => writeFileAtomic(path, big)).toThrow(/ENOSPC/);
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ strikes: 1 }); // before: a corrupt state
  expect(() => appendNoFollow(log, `[t] [WARN] ${"y".repeat(64 * 1024)}\n`)).toThrow(/ENOSPC/);
  expect(readFileSync(log, "utf8")).toBe("[t] [START] first\n"); // not half a line
});

test("the spool keeps room on disk for a full disk; without it (no spool yet) /dev/shm holds the message", async () => {
  box = new Sandbox();
  mkdirSync(box.state, { mode: 0o700 });
  expect((await run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", box.state])).code).toBe(0);
  stops.push(() => {
    Bun.spawnSync(["umount", box.state]);
    const spilled = spillDir(box.state);
    if (spilled) rmSync(spilled, { recursive: true, force: true });
  });
  const channel = { url: "http://127.0.0.1:9/", format: "json" as const, timeoutMs: 1000, retries: 0 };
  const options = { stateDir: box.state, channel, timeoutMs: 1000, retries: 0, minIntervalMs: 0, now: Date.now };
  const message = (n: number) => ({
    message: `⚠️ web restarted (${n}) ` + "x".repeat(400),
    title: null,
    priority: null,
    tags: [],
    event: null,
    service: "web",
    time: new Date().toISOString(),
  });
  const spool = join(box.state, "notify-spool.jsonl");

  // A quiet pass keeps the room: the file made empty, 64 KiB of blocks past its end.
  expect(await keepSpoolRoom(box.state)).toBe(true);
  expect(statSync(spool).size).toBe(0);
  expect(statSync(spool).blocks * 512).toBeGreaterThanOrEqual(64 * 1024);
  fill(join(box.state, "filler"));
  // Full: 20 messages, one save each, all in the file (on the disk), none on /dev/shm.
  for (let n = 1; n <= 20; n++) await spoolNow([message(n)], options);
  expect(spoolCount(box.state)).toBe(20);
  expect(readSpool(box.state).messages.map((entry) => entry.message.match(/\(\d+\)/)?.[0])).toEqual(
    Array.from({ length: 20 }, (_, n) => `(${n + 1})`),
  );
  expect(existsSync(join(spillDir(box.state) ?? box.dir, "notify-spool.jsonl"))).toBe(false);

  // A spool file without that room (made while the disk was full): the message goes to /dev/shm,
  // and is counted and read from there.
  rmSync(spool);
  fill(join(box.state, "filler2")); // what the spool's blocks gave back
  writeFileSync(spool, "");
  await spoolNow([message(21)], options);
  expect(readFileSync(join(spillDir(box.state)!, "notify-spool.jsonl"), "utf8")).toContain("(21)");
  expect(spoolCount(box.state)).toBe(1);
  expect(statSync(spool).size).toBe(0);
}, 60_000);

test("a full disk on the phone (no /dev/shm): a state with no file lives in the loop's memory only", async () => {
  // The phone's state dir a 512 KiB tmpfs of the app's, as a full /data partition is to Termux.
  const phone = openPlace("phone");
  const { dir: state, unmount } = await smallStateDisk(phone, "512k");
  afterPhone = async () => (unmount(), await phone.cleanup());
  const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("", { status: 500 }) });
  stops.push(() => web.stop(true));
  const configure = (more: ServiceSpec[] = []) =>
    phone.configure({
      services: [
        {
          name: "web",
          failures: 2,
          cooldown: "0s",
          verify_timeout: "1s",
          check: { http: `http://127.0.0.1:${web.port}/` },
          restart: { command: ["true"] },
        },
        ...more,
      ],
    });
  configure();
  expect((await phone.shell("ls -d /dev/shm 2>&1")).stdout).toContain("No such file or directory");
  expect((await phone.tend(["watchdog"])).code).toBe(0); // web's state file exists (strike 1/2)
  expect(phone.stateOf("web").strikes).toBe(1);
  fill(join(state, "filler"));
  configure([{ name: "db", failures: 3, check: { command: ["false"] } }]);
  // A cron pass: web's state rewritten in its own blocks (on the disk); db's, with no file, in this
  // process's memory only: the next cron pass starts it again from nothing.
  for (const pass of [1, 2]) {
    const cron = await phone.tend(["watchdog"]);
    expect(cron.code).toBe(0);
    expect(cron.stdout).toContain("db failed health check (exit 1, failure 1/3)");
    expect(cron.stdout).toContain(
      "[ERROR] db: cannot save its state (no space left on the device): kept in this process's memory only " +
        "(no /dev/shm)",
    );
    if (pass === 1) expect(cron.stdout).toContain("[RESTART] web: command true"); // its 2nd strike, on the disk
  }
  expect(phone.stateOf("web").restartsTotal).toBe(1);
  // The loop keeps it: db's strikes count on, and it is said once.
  const loop = await phone.spawnTend(["watchdog", "run", "--interval", "1s"]);
  stops.push(() => loop.kill("SIGKILL"));
  let said = "";
  const reader = loop.stdout.getReader();
  await waitFor(
    async () => {
      said += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
      return said.includes("failure 3/3");
    },
    20_000,
    "db's third strike in the loop",
  );
  expect(said).toContain("db failed health check (exit 1, failure 2/3)");
  expect(said.match(/cannot save its state/g)).toHaveLength(1);
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
}, 90_000);

test("on the phone (no /dev/shm), a loop on a full disk never undoes an operator either", async () => {
  const phone = openPlace("phone");
  const { dir: state, unmount } = await smallStateDisk(phone, "1m");
  afterPhone = async () => (unmount(), await phone.cleanup());
  const [webPort, dbPort] = [await freePort(), await freePort()];
  // Pidfiles in HOME, not on the full disk: the services can be started there.
  const spec = (name: string, port: number): ServiceSpec => ({
    name,
    pidfile: phone.scratch(`${name}.pid`).inside,
    grace: "0s",
    check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
    restart: { spawn: [phone.bun, phone.server, `${port}`] },
  });
  const pidOf = async (name: string) => {
    const file = phone.scratch(`${name}.pid`).outside;
    const pid = existsSync(file) ? Number(readFileSync(file, "utf8").trim() || 0) : 0;
    return pid ? phone.hostPid(pid) : 0;
  };
  phone.configure({ services: [spec("web", webPort)] });
  const loop = await phone.spawnTend(["watchdog", "run", "--interval", "1s"]);
  stops.push(() => loop.kill("SIGKILL"));
  let said = "";
  void (async () => {
    for await (const chunk of loop.stdout) said += new TextDecoder().decode(chunk);
  })();
  await waitFor(() => phone.read("services/web.json").includes('"lastHealthyAt":1'), 15_000, "web started, healthy");
  fill(join(state, "filler"));
  // db comes with the disk full: no state file of its own, and no /dev/shm: the loop's memory only.
  phone.configure({ services: [spec("web", webPort), spec("db", dbPort)] });
  await waitFor(() => said.includes("[START] db: started pid"), 15_000, "db started by the loop");
  expect(said).toMatch(/\[ERROR\] db: cannot save its state \(no space left on the device\): kept in this process/);
  // web has a file: its stop is written in its blocks, and holds.
  expect((await phone.tend(["watchdog", "stop", "web"])).code).toBe(0);
  // db's pause could be kept only in the command's own memory, which the loop never sees: refused,
  // saying so (before: "db: paused for 1h", exit 0, and the loop started db again a second later).
  const refused = await phone.tend(["watchdog", "pause", "db", "--for", "1h"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(
    "cannot pause db: its state cannot be saved (no space left on the device) and would be kept in this " +
      "process's memory only (no /dev/shm), which the watchdog never sees: nothing done; free space in",
  );
  expect(refused.stdout).toBe("");
  expect(phone.read("watchdog.log")).not.toContain("db: paused");
  // With room again, the pause is written, and holds: db killed, nobody starts it.
  rmSync(join(state, "filler"));
  expect((await phone.tend(["watchdog", "pause", "db", "--for", "1h"])).code).toBe(0);
  const db = await pidOf("db");
  process.kill(db, "SIGKILL");
  const after = said.length;
  const operatedAt = Date.now();
  await waitFor(() => Date.parse(phone.read("heartbeat").split("\n")[0]) >= operatedAt + 3000, 15_000, "3 passes");
  expect(said.slice(after)).not.toMatch(/\[(RESTART|START)\] (web|db)/);
  expect(alive(db)).toBe(false);
  const status = JSON.parse((await phone.tend(["watchdog", "status", "--json", "--cached"])).stdout);
  const word = (name: string) => status.services.find((row: { name: string }) => row.name === name).state;
  expect([word("web"), word("db")]).toEqual(["paused", "paused"]);
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
}, 90_000);
