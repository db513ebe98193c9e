// The state dir is tend's own, inputs are strict and bounded, secrets stay in, and what tend
// starts goes with it: each against the real thing (a second user, FIFOs, devices, endless
// bodies, a full tmpfs, real processes). Planted links and FIFOs, PIDs and pidfiles, bounded bodies, a
// pass's SIGTERM, a low ulimit, a power cut's leftovers, strict inputs, secrets and tend's own files run on
// this host and inside the Termux-shaped phone (test/places.ts); a second user and strace stay here (the app
// has neither).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { alive, BUN, freePort, recordingReceiver, run, Sandbox, SERVER, TEND, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, smallStateDisk, type Place } from "./places.ts";

let box: Sandbox;
let place: Place | null = null;
afterEach(async () => {
  box?.cleanup();
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

const NOBODY = 65534;

/**
 * Run the binary as the user `nobody` (runuser, as root), in `dir`: its own copy in the sandbox
 * (0755), for the checkout may be where nobody cannot enter (a clone in /root, mode 0700).
 */
const asNobody = (args: string[], dir: string) => {
  const binary = join(box.dir, "tend");
  if (!existsSync(binary)) (copyFileSync(TEND, binary), chmodSync(binary, 0o755));
  return run(["runuser", "-u", "nobody", "--", binary, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
  });
};

test("a state dir of another user or writable by group/others is refused, with the fix (second user)", async () => {
  box = new Sandbox();
  chmodSync(box.dir, 0o755); // nobody may enter the sandbox, not write in it
  const home = join(box.dir, "nobody");
  mkdirSync(home);
  chownSync(home, NOBODY, NOBODY);
  const rootsState = join(box.dir, "roots-state");
  mkdirSync(rootsState, { mode: 0o755 });
  const config = (stateDir: string) => {
    const path = join(home, `tend-${stateDir.split("/").pop()}.toml`);
    writeFileSync(path, `[watchdog]\nstate_dir = "${stateDir}"\n`);
    chownSync(path, NOBODY, NOBODY);
    return path;
  };
  const foreign = await asNobody(["watchdog", "--config", config(rootsState)], home);
  expect(foreign.code).toBe(1);
  expect(foreign.stderr).toContain(`state dir ${rootsState} belongs to uid 0, not to this user (uid ${NOBODY})`);
  expect(foreign.stderr).toContain(`chown ${NOBODY} ${rootsState}`);

  const open = join(home, "open-state");
  mkdirSync(open);
  chownSync(open, NOBODY, NOBODY);
  chmodSync(open, 0o777);
  const writable = await asNobody(["watchdog", "--config", config(open)], home);
  expect(writable.code).toBe(1);
  expect(writable.stderr).toContain(`state dir ${open} is writable by group or others (mode 0777)`);
  expect(writable.stderr).toContain(`chmod go-w ${open}`);
  expect(existsSync(join(open, "heartbeat"))).toBe(false);

  const own = join(home, "own-state");
  const fine = await asNobody(["watchdog", "--config", config(own)], home);
  expect(fine.code).toBe(0);
  expect(readFileSync(join(own, "heartbeat"), "utf8")).toMatch(/^\d{4}-/);
});

for (const where of PLACES)
  describe(`inputs, secrets and tend's own files (${where})`, () => {
    /** The test's tmpfs, unmounted before its place is cleaned up. */
    let unmount: (() => void) | null = null;
    afterEach(() => {
      unmount?.();
      unmount = null;
    });

    test("durations up to 365d work as written; longer ones and out-of-range flags are exit 2", async () => {
      const at = (place = openPlace(where));
      at.configure({
        watchdog: { interval: "30d" },
        services: [{ name: "slowcheck", check: { command: ["sleep", "1"], timeout: "25d" } }],
      });
      // A 25-day timeout does not fire after a few ms (32-bit timer overflow): the 1 s check passes.
      const status = JSON.parse((await at.tend(["watchdog", "status", "--json"])).stdout);
      expect(status.services[0].probe).toMatchObject({ ok: true, detail: "exit 0" });
      // A 30-day interval: the loop runs one pass, then waits (no busy loop).
      const loop = await at.spawnTend(["watchdog", "run"]);
      await waitFor(() => existsSync(at.stateFile("heartbeat")), 10_000, "the first pass");
      const first = at.read("heartbeat");
      await Bun.sleep(1500);
      expect(at.read("heartbeat")).toBe(first);
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
      expect(await new Response(loop.stderr).text()).not.toContain("TimeoutOverflowWarning");

      at.configure({ watchdog: { interval: "400d" } });
      const long = await at.tend(["watchdog", "validate"]);
      expect(long.code).toBe(2);
      expect(long.stderr).toContain('watchdog.interval: "400d" is longer than 365d, the longest duration allowed');
      at.configure({});
      const since = await at.tend(["watchdog", "report", "--since", "100000d"]);
      expect(since.code).toBe(2);
      expect(since.stderr).toContain('--since: "100000d" is longer than 365d');
      expect(since.stderr).not.toContain("internal error");
    });

    test("URLs, header names and values, service names are checked at validate as HTTP and tend use them", async () => {
      const at = (place = openPlace(where));
      at.writeConfig(`
[watchdog]
state_dir = "${at.state}"
heartbeat_url = "https://hc.example:0/ping/SECRET-UUID"
[notify]
url = "https://ntfy.example:70000/secret-topic"
[[service]]
name = "a"
[service.check]
http = "http://exa mple.org/"
headers = { "X-Token" = "s3cret\\r\\nX-Injected: 1", "Bad Name" = "v" }
[[service]]
name = "${"x".repeat(65)}"
[service.check]
tcp = "h:1"
[[service]]
name = "-x"
[service.check]
tcp = "h:1"
[[service]]
name = "Web"
[service.check]
tcp = "h:1"
[[service]]
name = "web"
[service.check]
tcp = "h:1"
`);
      const run = await at.tend(["watchdog", "validate"]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        'watchdog.heartbeat_url: "https://hc.example:0/…" has port 0 (ports go from 1 to 65535)',
      );
      expect(run.stderr).toContain("notify.url: ");
      expect(run.stderr).toContain("is not a URL");
      expect(run.stderr).toContain(
        'service[0].check.http: "http://exa mple.org…" holds a space or a control character',
      );
      expect(run.stderr).toContain(
        "service[0].check.headers.X-Token: the value holds CR, LF or another control character",
      );
      expect(run.stderr).toContain('service[0].check.headers."Bad Name": is not a header name');
      expect(run.stderr).toContain("service[1].name:");
      expect(run.stderr).toContain("1 to 64 letters");
      expect(run.stderr).toContain('service[2].name: "-x" may only hold');
      expect(run.stderr).toContain(
        'service[4].name: "web" is already used by service[3] (as "Web": names are compared ignoring case)',
      );
      // A configuration error never quotes a secret.
      for (const secret of ["SECRET-UUID", "secret-topic", "s3cret"]) expect(run.stderr).not.toContain(secret);
    });

    test("plan hides URLs, header and env values but with --show-secrets; a restart argv is in the log", async () => {
      const at = (place = openPlace(where));
      const hook = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
      at.writeConfig(`
[watchdog]
state_dir = "${at.state}"
[notify]
url = "http://127.0.0.1:${hook.port}/topic-abc"
[[service]]
name = "db"
failures = 1
grace = "0s"
[service.check]
http = "http://127.0.0.1:1/health?token=tok123"
headers = { Authorization = "Bearer abc.def" }
[service.restart]
command = ["sh", "-c", "exit 7", "--password=hunter2", "https://user:pw@example.org/hook/KEY"]
`);
      try {
        const plan = (await at.tend(["watchdog", "plan"])).stdout;
        expect(plan).toContain('check.http = "http://127.0.0.1:1/…"');
        expect(plan).toContain('check.headers = {"Authorization":"…"}');
        expect(plan).toContain('"--password=…"');
        for (const secret of ["tok123", "abc.def", "hunter2", "pw@", "KEY", "topic-abc"])
          expect(plan).not.toContain(secret);
        const shown = (await at.tend(["watchdog", "plan", "--show-secrets"])).stdout;
        expect(shown).toContain("tok123");
        expect(shown).toContain("Bearer abc.def");

        const pass = await at.tend(["watchdog"]);
        expect(pass.stdout).toContain("[FAILED] db could not be restarted (command sh … (4 args): exit 7)");
        const log = at.read("watchdog.log");
        expect(log).toContain(
          "could not be restarted (command sh -c exit 7 --password=… https://example.org/…: exit 7)",
        );
        for (const secret of ["hunter2", "pw@", "KEY"]) expect(log + pass.stdout).not.toContain(secret);
      } finally {
        hook.stop(true);
      }
    });

    test("notify: a message accepted is not failed by a full disk; an unusable state dir stops nothing", async () => {
      const at = (place = openPlace(where));
      const hook = recordingReceiver();
      const received = hook.received;
      try {
        const small = await smallStateDisk(at, "64k");
        unmount = small.unmount;
        at.configure({});
        const url = `http://127.0.0.1:${hook.port}/t`;
        expect((await at.tend(["notify", "--url", url, "first"])).code).toBe(0);
        Bun.spawnSync(["sh", "-c", `cat /dev/zero > ${small.dir}/filler 2>/dev/null; true`]);
        const full = await at.tend(["notify", "--url", url, "second"]);
        expect(full.code).toBe(0);
        // Nothing to say: the notify state is rewritten in the blocks its file has (a spool would go
        // to /dev/shm, or the process's memory on a phone), so a full disk fails nothing here.
        expect(full.stderr).not.toContain("cannot save");
        expect(received).toEqual(["first", "second"]);
        // A state dir under a file: never a directory.
        at.writeConfig(`[watchdog]\nstate_dir = "${at.configFile.inside}/state"\n`);
        const unusable = await at.tend(["notify", "--url", url, "third"]);
        expect(unusable.code).toBe(0);
        expect(unusable.stderr).toContain("the spool in");
        expect(received).toEqual(["first", "second", "third"]);
      } finally {
        hook.stop();
      }
    });

    test("a service named notify-state (or heartbeat) keeps its state in services/, not tend's files", async () => {
      const at = (place = openPlace(where));
      at.configure({
        services: [
          { name: "notify-state", check: { tcp: "127.0.0.1:1" } },
          { name: "heartbeat", check: { tcp: "127.0.0.1:1" } },
        ],
      });
      await at.tend(["watchdog"]);
      expect(at.stateOf("notify-state").strikes).toBe(1);
      expect(at.stateOf("heartbeat").strikes).toBe(1);
      expect(at.read("heartbeat")).toMatch(/^\d{4}-\d\d-\d\dT/); // still tend's heartbeat
      expect(existsSync(at.stateFile("notify-state.json"))).toBe(false);
    });

    test("an answer that echoes a short token or the Basic-auth value of the URL is scrubbed", async () => {
      const at = (place = openPlace(where));
      at.configure({});
      const hook = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) =>
          new Response(`denied for ${request.headers.get("authorization")} on topic x7q, key=k9z`, { status: 403 }),
      });
      const url = `http://alice:pw1@127.0.0.1:${hook.port}/t/x7q?key=k9z`;
      const run = await at.tend(["notify", "--url", url, "--no-spool", "hello"]);
      hook.stop(true);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("HTTP 403: denied for Basic … on topic …, key=…");
      for (const secret of ["YWxpY2U6cHcx", "alice", "pw1", "x7q", "k9z"]) expect(run.stderr).not.toContain(secret);
    });

    test("status probes within concurrency, as a pass does", async () => {
      const at = (place = openPlace(where));
      const trace = at.scratch("trace");
      const services = Array.from(
        { length: 8 },
        (_, index) => `
[[service]]
name = "s${index}"
[service.check]
command = ["sh", "-c", "echo + >> ${trace.inside}; sleep 0.3; echo - >> ${trace.inside}"]
`,
      ).join("");
      at.writeConfig(`[watchdog]\nstate_dir = "${at.state}"\nconcurrency = 2\n${services}`);
      await at.tend(["watchdog", "status"]);
      let running = 0;
      let most = 0;
      for (const step of readFileSync(trace.outside, "utf8").trim().split("\n")) {
        running += step === "+" ? 1 : -1;
        most = Math.max(most, running);
      }
      expect(most).toBe(2);
    });

    test("a spawned service inherits no TEND_NOTIFY_URL; a configuration over 4 MiB is refused, not cut", async () => {
      const at = (place = openPlace(where));
      const seen = at.scratch("env.txt");
      at.writeConfig(
        `[watchdog]\nstate_dir = "${at.state}"\n[[service]]\nname = "svc"\npidfile = "svc.pid"\n` +
          `[service.check]\nprocess = true\n[service.restart]\n` +
          `spawn = ["sh", "-c", "env > '${seen.inside}'; exec sleep 60"]\n`,
      );
      await at.tend(["watchdog"], { TEND_NOTIFY_URL: "https://ntfy.example/secret-topic-abc" });
      await waitFor(
        () => existsSync(seen.outside) && readFileSync(seen.outside, "utf8").includes("PATH="),
        5000,
        "the service's environment",
      );
      expect(readFileSync(seen.outside, "utf8")).not.toContain("secret-topic-abc");
      at.editConfig((text) => "# padding\n".repeat(420_000) + text);
      const run = await at.tend(["watchdog", "validate"]);
      await at.cleanup([at.stateFile("svc.pid")]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("is larger than 4 MiB: refused");
    });

    test("a type slip in a secret-holding key never quotes its value (headers, env, URLs, token, peers)", async () => {
      const at = (place = openPlace(where));
      const secret = "S3CRET-value-9f8e7d";
      at.writeConfig(`[watchdog]
state_dir = "${at.state}"
heartbeat_url = ["https://hc.example/ping/${secret}"]
[notify]
url = { u = "https://ntfy.example/${secret}" }
[serve]
token = ["${secret}-${secret}"]
peers = [{ url = "ftp://${secret}@peer.example/" }]
[[service]]
name = "api"
[service.check]
http = ["https://api.example/${secret}"]
[[service]]
name = "web"
[service.check]
http = "https://web.example/"
headers = { Authorization = "Bearer ${secret}", X-Retry = 3 }
[service.restart]
spawn = ["sleep", "60"]
env = { PASSWORD = "${secret}", RETRIES = 3 }
`);
      const run = await at.tend(["watchdog", "validate"]);
      const pass = await at.tend(["watchdog", "pass"]);
      const log = at.read("watchdog.log");
      expect(run.code).toBe(2);
      for (const key of [
        "heartbeat_url",
        "notify.url",
        "serve.token",
        "service[0].check.http",
        "check.headers",
        "restart.env",
      ])
        expect(run.stderr).toContain(key);
      for (const said of [run.stderr, pass.stderr, pass.stdout, log]) expect(said).not.toContain(secret);
      expect(run.stderr).toContain("not shown: it may hold a secret");
    });

    test("notify --dry-run and --spool print outside text escaped (an ESC in a message colours nothing)", async () => {
      const at = (place = openPlace(where));
      at.configure({});
      const hostile = "disk \u001b[31mfull\u001b[0m \u202Eevil";
      const dry = await at.tend(["notify", "--url", "http://127.0.0.1:1/t", "--dry-run", hostile]);
      expect(dry.stdout).not.toContain("\u001b");
      expect(dry.stdout).toContain("\\x1b[31mfull");
      await at.tend(["notify", "--url", "http://127.0.0.1:1/t", hostile]); // refused: spooled
      const spool = await at.tend(["notify", "--spool"]);
      expect(spool.stdout).toContain("1 spooled");
      expect(spool.stdout).not.toContain("\u001b");
      expect(spool.stdout).not.toContain("\u202E");
    });

    test("a state file of valid JSON, wrong inner types, is corrupt: said and reset, no 'Invalid Date'", async () => {
      const at = (place = openPlace(where));
      at.writeConfig(
        `[watchdog]\nstate_dir = "${at.state}"\n[[service]]\nname = "web"\n[service.check]\ntcp = "127.0.0.1:1"\n`,
      );
      await at.tend(["watchdog"]);
      const state = at.stateOf("web");
      at.writeState(
        "services/web.json",
        JSON.stringify({ ...state, lastProbe: { at: "yesterday", ok: "no", detail: 3 }, startedAt: {} }),
        0o600,
      );
      const status = await at.tend(["watchdog", "status"]);
      expect(status.stdout + status.stderr).not.toContain("Invalid Date");
      expect(status.stderr).not.toContain("internal error");
      const pass = await at.tend(["watchdog"]);
      expect(pass.stdout).toMatch(/\[ERROR\] web: corrupt state file reset \((startedAt|lastProbe) is /);
    });

    test("status counts the spool without parsing it: a 60 MB spool is 200,000 waiting, read in blocks", async () => {
      const at = (place = openPlace(where));
      at.writeConfig(
        `[watchdog]\nstate_dir = "${at.state}"\n[[service]]\nname = "web"\n[service.check]\ntcp = "127.0.0.1:1"\n`,
      );
      await at.tend(["watchdog"]);
      const line = JSON.stringify({ id: "x", message: "m".repeat(280), url: "http://127.0.0.1:1/", format: "text" });
      at.writeState("notify-spool.jsonl", `${line}\n`.repeat(200_000), 0o600);
      const status = JSON.parse((await at.tend(["watchdog", "status", "--json", "--cached"])).stdout);
      expect(status.notify.spooled).toBe(200_000);
    });
  });

test("bidirectional controls are escaped like any control (U+202E turns a name around)", async () => {
  const { escapeControls } = await import("../lib/core/sanitize.ts");
  expect(escapeControls("report\u202Etxt.exe")).toBe("report\\u202etxt.exe");
  expect(escapeControls("a\u2066b\u200fc")).toBe("a\\u2066b\\u200fc");
});

test("a spool over its read bound keeps the newest messages: the oldest are what is dropped, and counted", async () => {
  const { readSpool } = await import("../lib/notify/spool.ts");
  const box = new Sandbox();
  mkdirSync(box.state, { recursive: true, mode: 0o700 });
  const line = (message: string) =>
    JSON.stringify({
      id: message,
      message,
      url: "http://127.0.0.1:1/",
      format: "text",
      time: new Date().toISOString(),
    });
  const old = `${line("o".repeat(64 * 1024))}\n`.repeat(2100); // ~135 MiB: past the 128 MiB bound
  writeFileSync(join(box.state, "notify-spool.jsonl"), old + `${line("NEWEST")}\n`);
  const spool = readSpool(box.state);
  box.cleanup();
  expect(spool.messages.at(-1)?.message).toBe("NEWEST");
  expect(spool.unreadable).toBe(1); // the cut: said, not silent
  expect(spool.messages.length).toBeLessThan(2101);
});

test("out of descriptors: what fails then is the watchdog's failure, never a strike (by its numbers)", async () => {
  const { fittingConcurrency, outOfDescriptors, openFileLimit, openFiles } = await import("../lib/os/fdlimit.ts");
  expect(openFileLimit()).toBeGreaterThan(0); // read from /proc/self/limits
  expect(openFiles()).toBeGreaterThan(2);
  expect(fittingConcurrency(100, 64, 12)).toBe(7); // (64 - 12 - 24) / 4
  expect(fittingConcurrency(16, 1024, 12)).toBe(16);
  expect(fittingConcurrency(100, 30, 12)).toBe(1); // never below one
  expect(fittingConcurrency(100, null, null)).toBe(100); // no /proc (macOS): as configured
  expect(outOfDescriptors(64, 61)).toBe(true);
  expect(outOfDescriptors(64, 40)).toBe(false);
  expect(outOfDescriptors(null, 61)).toBe(false);
});

test("a spawned service's pidfile is made durable by tend: the file fsynced, then its directory (strace)", async () => {
  box = new Sandbox();
  const port = await freePort();
  const pidfile = join(box.state, "web.pid");
  box.writeConfig(
    `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "web"\npidfile = "web.pid"\n` +
      `[service.check]\nhttp = "http://127.0.0.1:${port}/"\n` +
      `[service.restart]\nspawn = ["${BUN}", "${SERVER}", "${port}"]\n`,
  );
  const trace = join(box.dir, "trace");
  const traced = await run(
    ["strace", "-e", "trace=openat,fsync,rename,renameat,renameat2", "-o", trace, TEND, "watchdog"],
    {
      env: box.env(),
    },
  );
  expect(traced.code).toBe(0);
  try {
    const lines = readFileSync(trace, "utf8").split("\n");
    // The shell's own write (a temp renamed over it) has no fsync: tend opens the pidfile it left,
    // without following a symlink, and fsyncs it where it is (a rewrite's fsync would commit the
    // shell's rename before the shell's data: an empty pidfile after a cut on ext4 noauto_da_alloc).
    const opened = lines.findIndex((line) => new RegExp(`openat\\(.*"${pidfile}", O_RDONLY[^)]*O_NOFOLLOW`).test(line));
    expect(opened).toBeGreaterThan(-1);
    const fd = /= (\d+)$/.exec(lines[opened])![1];
    // Not -f: the service tend starts would keep strace waiting; tend's writes are its main thread's.
    const after = lines.slice(opened);
    const synced = after.findIndex((line) => line.includes(`fsync(${fd})`));
    expect(synced).toBeGreaterThan(-1);
    // Then the directory: opened and fsynced after the file.
    const dirAt = after.findIndex(
      (line, index) => index > synced && new RegExp(`openat\\(.*"${box.state}", O_RDONLY`).test(line),
    );
    expect(dirAt).toBeGreaterThan(synced);
    const dirFd = /= (\d+)$/.exec(after[dirAt])![1];
    expect(after.slice(dirAt).some((line) => line.includes(`fsync(${dirFd})`))).toBe(true);
    expect(readFileSync(pidfile, "utf8").trim()).toMatch(/^\d+$/);
  } finally {
    const started = Number(readFileSync(pidfile, "utf8"));
    if (alive(started)) process.kill(started, "SIGKILL");
  }
}, 60_000);

for (const where of PLACES)
  describe(where, () => {
    test("planted symlinks in the state dir are never written through (log, lock, spool, .out, state)", async () => {
      const box = (place = openPlace(where));
      // The link points where tend would see the file (inside the phone: its path there).
      const precious = box.scratch("precious");
      box.writeScratch("precious", "keep me\n");
      box.writeState("services/.made", "");
      const state = (name: string) => box.stateFile(name);
      const port = await freePort();
      box.configure({
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            grace: "0s",
            verify_timeout: "2s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "500ms" },
            restart: { spawn: [box.bun, box.server, `${port}`] },
          },
        ],
      });
      for (const name of ["watchdog.log", "watchdog.lock"]) {
        Bun.spawnSync(["rm", "-f", state("watchdog.log"), state("watchdog.lock")]);
        symlinkSync(precious.inside, state(name));
        const pass = await box.tend(["watchdog"]);
        expect(pass.code).toBe(1);
        expect(pass.stderr).toContain("is a symlink (not followed)");
        Bun.spawnSync(["rm", state(name)]);
      }
      symlinkSync(precious.inside, state("services/web.out"));
      const pass = await box.tend(["watchdog"]);
      expect(pass.stdout).toContain("[FAILED] web could not be started (spawn"); // its first start
      expect(pass.stdout).toContain("is a symlink (not followed)");
      Bun.spawnSync(["rm", "-f", state("services/web.json")]);
      symlinkSync(precious.inside, state("services/web.json"));
      const refused = await box.tend(["watchdog"]);
      expect(refused.stdout).toContain(`[ERROR] web: state file ${box.state}/services/web.json is a symlink`);
      expect(refused.stdout).not.toContain("corrupt state file reset"); // refused, not reset over the link
      symlinkSync(precious.inside, state("notify-spool.jsonl"));
      const notify = await box.tend(["notify", "--url", `http://127.0.0.1:${await freePort()}/x`, "hello"]);
      expect(notify.code).toBe(1);
      expect(readFileSync(precious.outside, "utf8")).toBe("keep me\n");
    });

    test("a FIFO or a device is an error, never a hang or an endless read (config, pidfile, counter)", async () => {
      const box = (place = openPlace(where));
      const fifo = box.scratch("fifo").inside;
      Bun.spawnSync(["mkfifo", box.scratch("fifo").outside]);
      const config = await box.tend(["watchdog", "validate", "--config", fifo]);
      expect(config.code).toBe(2);
      expect(config.stderr).toContain(`cannot read configuration ${fifo}: is a FIFO, not a regular file`);
      box.configure({});
      const zero = await box.tend(["safe-kill", "pidfile:/dev/zero"]);
      expect(zero.code).toBe(1);
      expect(zero.stderr).toContain("/dev/zero: is a device, not a regular file");
      const counter = await box.tend([
        "blogtunnel",
        "--url",
        "http://127.0.0.1:1/",
        "--counter",
        fifo,
        "--timeout",
        "1s",
      ]);
      expect(counter.stdout).toContain(`cannot read ${fifo}: is a FIFO, not a regular file`);
      const missing = await box.tend(["watchdog", "validate", "--config", box.scratch("none.toml").inside]);
      expect(missing.stderr).toContain("no such file");
      expect(missing.stderr).not.toContain("ENOENT");
    });

    test("a FIFO at watchdog.log, watchdog.lock, notify.lock or an .out is an error, never a hang", async () => {
      const box = (place = openPlace(where));
      box.writeConfig(
        `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "bar"\n` +
          `pidfile = "${box.scratch("bar.pid").inside}"\n` +
          `[service.check]\ntcp = "127.0.0.1:1"\n[service.restart]\nspawn = ["sleep", "600"]\n`,
      );
      await box.tend(["watchdog", "validate"]);
      box.writeState("services/.made", "");
      for (const name of ["watchdog.lock", "watchdog.log", "notify.lock"]) {
        const path = box.stateFile(name);
        expect((await box.shell(`mkfifo '${box.state}/${name}'`)).code).toBe(0); // the user's, as tend's files are
        const run =
          name === "notify.lock"
            ? await box.tend(["notify", "--url", "http://127.0.0.1:1/", "x"])
            : await box.tend(["watchdog", "pass"]);
        expect({ name, hung: run.code === null || run.code === 137 }).toEqual({ name, hung: false });
        expect(run.stderr + run.stdout).toContain("FIFO");
        (await import("node:fs")).rmSync(path);
      }
      const out = box.stateFile("services/bar.out");
      expect((await box.shell(`mkfifo '${box.state}/services/bar.out'`)).code).toBe(0);
      const fifo = await box.tend(["watchdog", "logs", "bar"]);
      expect(fifo.code).toBe(1);
      expect(fifo.stderr).toContain("not a regular file");
      (await import("node:fs")).rmSync(out);
      symlinkSync(where === "host" ? "/etc/passwd" : "/system/etc/passwd", out);
      const linked = await box.tend(["watchdog", "logs", "bar"]);
      expect(linked.code).toBe(1);
      expect(linked.stderr).toContain("is a symlink (not followed)");
      expect(linked.stdout).not.toContain("root:");
    });

    test("a pidfile is one line of decimal digits: 0x1d1f, +N, N.0, 'N garbage' are not PIDs", async () => {
      const box = (place = openPlace(where));
      box.configure({});
      const target = await box.startTarget(["sleep", "300"], "target.pid");
      await waitFor(() => alive(target.here), 5000, "target");
      await Bun.sleep(1100); // written after the process started
      for (const text of [
        `0x${target.pid.toString(16)}`,
        `+${target.pid}`,
        `${target.pid}.0`,
        `${target.pid} garbage`,
      ]) {
        const pidfile = box.scratch("x.pid").inside;
        box.writeScratch("x.pid", text + "\n");
        const run = await box.tend(["safe-kill", "-s", "KILL", `pidfile:${pidfile}`]);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain("not a PID (one line of digits)");
      }
      expect(alive(target.here)).toBe(true);
    });

    test("safe-kill pidfile:PATH of a configured service: its recorded start time, however PATH is said", async () => {
      const box = (place = openPlace(where));
      const port = await freePort();
      box.configure({
        services: [
          {
            name: "tour",
            pidfile: "tour.pid",
            grace: "0s",
            check: { http: `http://127.0.0.1:${port}/` },
            restart: { spawn: [box.bun, box.server, `${port}`] },
          },
        ],
      });
      await box.tend(["watchdog"]);
      const pidfile = `${box.state}/tour.pid`;
      const started = Number(box.read("tour.pid"));
      // Another process, older than the rewritten pidfile: the mtime rule alone would accept it.
      const stranger = await box.startTarget(["sleep", "300"], "stranger.pid");
      await Bun.sleep(1100);
      writeFileSync(box.stateFile("tour.pid"), `${stranger.pid}\n`);
      const link = box.scratch("alias.pid").inside;
      symlinkSync(pidfile, box.scratch("alias.pid").outside);
      for (const path of [pidfile, `${box.state}/./tour.pid`, link]) {
        const run = await box.tend(["safe-kill", "-s", "KILL", `pidfile:${path}`]);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain(
          `names pid ${stranger.pid}, but tend started pid ${started}: not the process it started`,
        );
      }
      writeFileSync(box.stateFile("tour.pid"), `${started}\n`);
      expect(alive(stranger.here)).toBe(true);
      await box.cleanup([box.stateFile("tour.pid")]); // the service tend started (the pidfile names it again)
    });

    test("bodies are read up to a bound: an endless probe answer or notify answer ends at 1 MiB / 64 KiB", async () => {
      const box = (place = openPlace(where));
      let served = 0;
      const endless = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (request) =>
          new Response(
            new ReadableStream({
              pull(controller) {
                served += 65536;
                controller.enqueue(new Uint8Array(65536).fill(0x61));
              },
            }),
            { status: new URL(request.url).pathname === "/hook" ? 500 : 200 },
          ),
      });
      box.configure({
        services: [
          { name: "endless", check: { http: `http://127.0.0.1:${endless.port}/`, contains: "needle", timeout: "20s" } },
        ],
      });
      const started = Date.now();
      const status = JSON.parse((await box.tend(["watchdog", "status", "--json"])).stdout);
      expect(status.services[0].probe).toMatchObject({
        ok: false,
        detail: 'HTTP 200, body without "needle" in its first MiB',
      });
      expect(Date.now() - started).toBeLessThan(15_000); // ended by the bound, not the 20 s timeout
      served = 0;
      const notify = await box.tend(["notify", "--url", `http://127.0.0.1:${endless.port}/hook`, "--no-spool", "x"]);
      endless.stop(true);
      expect(notify.code).toBe(1);
      expect(notify.stderr).toContain("HTTP 500: aaaa");
      expect(served).toBeLessThan(64 * 1024 * 1024); // 3 attempts, each stopped after 64 KiB (plus what was in flight)
    });

    test("SIGTERM kills the pass's check commands; a check is judged by its exit, not by its output", async () => {
      const box = (place = openPlace(where));
      const marker = box.scratch("check.pid").inside;
      box.configure({
        services: [
          { name: "hangs", check: { command: ["sh", "-c", `echo $$ > ${marker}; exec sleep 300`], timeout: "5m" } },
          { name: "forks", check: { command: ["sh", "-c", "sleep 300 & echo started; exit 0"], timeout: "5m" } },
        ],
      });
      const pass = await box.spawnTend(["watchdog"]);
      const written = () =>
        existsSync(box.scratch("check.pid").outside) ? readFileSync(box.scratch("check.pid").outside, "utf8") : "";
      await waitFor(() => written().trim() !== "", 10_000, "the check to start");
      const check = await box.hostPid(Number(written()));
      expect(alive(check)).toBe(true);
      pass.kill("SIGTERM");
      expect(await pass.exited).toBe(143);
      await waitFor(() => !alive(check), 5000, "the check process to be killed with the pass");

      // The forking check: healthy at once, although its background child keeps the pipe open.
      const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "forks"])).stdout);
      expect(status.services[0].probe).toMatchObject({ ok: true, detail: "exit 0" });
      expect(status.services[0].probe.latency_ms).toBeLessThan(10_000);
    });

    test("ulimit -n 64 and concurrency = 100: bounded by the descriptors left, no healthy service struck", async () => {
      const box = (place = openPlace(where));
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
      try {
        const services = Array.from(
          { length: 100 },
          (_, index) => `[[service]]\nname = "s${index}"\n[service.check]\nhttp = "http://127.0.0.1:${server.port}/"\n`,
        );
        box.writeConfig(`[watchdog]\nstate_dir = "${box.state}"\nconcurrency = 100\n${services.join("")}`);
        // Before: EMFILE by the dozen, which Bun.connect even reports as a refused connection: 80 of 100 struck.
        const pass = await box.shell(`ulimit -n 64 && exec "${box.tendPath}" watchdog pass`);
        expect(pass.code).toBe(0);
        expect(pass.stdout).not.toContain("failed health check");
        const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
        expect(status.services.filter((row: { state: string }) => row.state !== "healthy")).toEqual([]);
      } finally {
        server.stop(true);
      }
    }, 60_000);

    test("after a power cut: NUL runs at the end of the logs and cut-off temp files repaired, said once", async () => {
      const box = (place = openPlace(where));
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
      try {
        box.writeConfig(
          `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "web"\n[service.check]\n` +
            `http = "http://127.0.0.1:${server.port}/"\n`,
        );
        await box.tend(["watchdog"]);
        const log = box.stateFile("watchdog.log");
        // What ext4's delayed allocation leaves: the size grew, the block was never written.
        const { appendFileSync, utimesSync, readdirSync } = await import("node:fs");
        appendFileSync(log, "[2026-12-01 10:00:00] [RESTART] web: cut off mid-li");
        appendFileSync(log, Buffer.alloc(4096));
        // Cut-off writes' temp files: one of a writer long gone, one just made (a write in flight: kept).
        const stale = box.stateFile("services/.web.json.4194303.k3j2h1.tmp");
        const fresh = box.stateFile(".heartbeat.4194304.a1b2c3.tmp");
        box.writeState("services/.web.json.4194303.k3j2h1.tmp", '{"version":1');
        box.writeState(".heartbeat.4194304.a1b2c3.tmp", "x");
        const old = new Date(Date.now() - 10 * 60_000);
        utimesSync(stale, old, old);
        // The reboot as the next pass sees it (the boot clock below the heartbeat's: see views.test.ts).
        const heartbeat = box.stateFile("heartbeat");
        const [at, interval] = readFileSync(heartbeat, "utf8").split("\n");
        writeFileSync(heartbeat, `${at}\n${interval}\nclocks boot=${1e12} awake=${1e12}\n`);
        const pass = await box.tend(["watchdog"]);
        expect(pass.stdout).toMatch(
          new RegExp(
            String.raw`\[WARN\] repaired: removed 1 temp file\(s\) an interrupted write left; ` +
              String.raw`removed 4096 NUL byte\(s\) a power cut left`,
          ),
        );
        const text = readFileSync(log);
        expect(text.includes(0)).toBe(false);
        expect(text.toString()).toContain("cut off mid-li\n["); // the cut line ends; the next starts a line
        // grep reads it as text again (no "binary file matches").
        const grep = Bun.spawnSync(["grep", "-c", "\\[RESTART\\]", log]);
        expect(grep.stdout.toString().trim()).toBe("1");
        expect(existsSync(stale)).toBe(false);
        expect(existsSync(fresh)).toBe(true);
        expect(readdirSync(box.stateFile("services")).filter((name) => name.endsWith(".tmp"))).toEqual([]);
        // Said once: the next pass has nothing to repair.
        expect((await box.tend(["watchdog"])).stdout).not.toContain("repaired");
      } finally {
        server.stop(true);
      }
    }, 60_000);
  });
