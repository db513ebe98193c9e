// make faults: the fault suite. Each fault runs against the built binary and real processes, and
// fails (exit 1) on any loss: a corrupt file, a double or orphaned service, a lost message.
// usage: bun bench/faults.ts [--only F1,F3] [--passes 200]
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import minimist from "minimist";
import { answers, killGroup, waitFor as poll } from "./common.ts";
import { MALFORMED } from "../test/malformed.ts";

const ROOT = resolve(import.meta.dir, "..");
const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
const BUN = process.execPath;
const SERVICE = join(ROOT, "examples", "service.ts");
const WORK = "/tmp/tend-faults";
const args = minimist(process.argv.slice(2), { string: ["only", "passes"] });
const PASSES = Number(args.passes ?? 200);
const only = args.only ? String(args.only).split(",") : null;
const children: number[] = [];

class Loss extends Error {}
const waitFor = (condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string) =>
  poll(condition, timeoutMs, what, Loss);
function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Loss(what);
}
/** Run tend without blocking: the fault's own servers live in this process and must keep answering. */
async function tend(args: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn([TEND, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: WORK, TZ: "UTC", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}
function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}
const procState = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return null;
  }
};
/** Live processes whose command line holds every one of `parts` (the fault's own service, by its port). */
function processesWith(...parts: string[]): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      const state = procState(Number(entry));
      if (parts.every((part) => cmdline.includes(part)) && state !== "Z" && !cmdline.includes("/bin/sh -c"))
        found.push(Number(entry));
    } catch {}
  }
  return found;
}
const parsesAsState = (path: string) => {
  if (!existsSync(path)) return true;
  try {
    return JSON.parse(readFileSync(path, "utf8")).version === 1;
  } catch {
    return false;
  }
};

const faults: Record<string, [string, () => Promise<string>]> = {
  F1: [
    `kill -9 the watchdog at random moments across ${PASSES} passes with restarts in flight`,
    async () => {
      const dir = join(WORK, "f1");
      const port = freePort();
      mkdirSync(dir, { recursive: true });
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${dir}/state"
[[service]]
name = "web"
pidfile = "web.pid"
failures = 1
grace = "0s"
cooldown = "0s"
backoff = "0s"
max_restarts = 100000
stop_timeout = "300ms"
verify_timeout = "5s"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "300ms"
[service.restart]
spawn = ["${BUN}", "${SERVICE}", "${port}"]
`,
      );
      const stateFile = join(dir, "state", "services", "web.json");
      const pidfile = join(dir, "state", "web.pid");
      let killed = 0;
      let restarts = 0;
      let startedBeforeKill = 0;
      for (let pass = 0; pass < PASSES; pass++) {
        const before = processesWith(SERVICE, String(port))[0] ?? null;
        // Freeze whatever runs, so this pass has a restart to do (stop, spawn, verify) when it is killed.
        for (const pid of processesWith(SERVICE, String(port)))
          if (procState(pid) !== "T") process.kill(pid, "SIGSTOP");
        const child = Bun.spawn([TEND, "watchdog", "pass", "--config", config], {
          stdout: "pipe",
          stderr: "pipe",
          env: { PATH: process.env.PATH ?? "", TZ: "UTC" },
        });
        const killAt = Math.random() * 1500; // a pass here takes about 0.5-1.2 s: some finish, most die mid-way
        const timer = setTimeout(() => child.kill("SIGKILL"), killAt);
        const code = await child.exited;
        clearTimeout(timer);
        const wasKilled = code === 137 || child.signalCode === "SIGKILL";
        if (wasKilled) killed++;
        else restarts += (await new Response(child.stdout).text()).includes("[RESTART]") ? 1 : 0;
        await Bun.sleep(150); // let a TERM-ed service exit, a spawned one exec
        check(parsesAsState(stateFile), `pass ${pass}: corrupt state file ${stateFile}`);
        const running = processesWith(SERVICE, String(port));
        check(
          running.length <= 1,
          `pass ${pass}: ${running.length} service processes at once (double restart): ${running.join(", ")}`,
        );
        const named = existsSync(pidfile) ? Number(readFileSync(pidfile, "utf8").trim()) : null;
        check(
          running.every((pid) => pid === named),
          `pass ${pass}: pid ${running.join(", ")} runs but ${pidfile} names ${named} (orphaned half-started service)`,
        );
        if (wasKilled && running.length && running[0] !== before) startedBeforeKill++;
      }
      for (const pid of processesWith(SERVICE, String(port))) process.kill(pid, "SIGCONT");
      const final = await tend(["watchdog", "pass", "--config", config]);
      check(final.code === 0, `final pass exit ${final.code}: ${final.stderr}`);
      await waitFor(() => answers(port), 10_000, "the service healthy after the storm");
      const running = processesWith(SERVICE, String(port));
      check(
        running.length === 1 && running[0] === Number(readFileSync(pidfile, "utf8").trim()),
        `after the storm: ${running.length} processes`,
      );
      killGroup(running[0]);
      return (
        `${PASSES} passes: ${killed} killed mid-pass ` +
        `(${startedBeforeKill} of them after the new service was spawned), ` +
        `${restarts} completed restarts; 0 corrupt state files, 0 double restarts, 0 orphans`
      );
    },
  ],

  F2: [
    "20 concurrent passes",
    async () => {
      const dir = join(WORK, "f2");
      let hits = 0;
      const server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        idleTimeout: 30,
        fetch: async () => (hits++, await Bun.sleep(1500), new Response("ok")),
      });
      mkdirSync(dir, { recursive: true });
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${dir}/state"
[[service]]
name = "slow"
[service.check]
http = "http://127.0.0.1:${server.port}/"
`,
      );
      const runs = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const child = Bun.spawn([TEND, "watchdog", "pass", "--config", config], {
            stdout: "pipe",
            env: { PATH: process.env.PATH ?? "" },
          });
          return { code: await child.exited, stdout: await new Response(child.stdout).text() };
        }),
      );
      server.stop(true);
      check(
        runs.every((run) => run.code === 0),
        `exit codes ${runs.map((run) => run.code).join(",")}`,
      );
      const skipped = runs.filter((run) => run.stdout.includes("[SKIP] another pass is running")).length;
      check(hits === 1, `${hits} probe rounds ran, expected exactly 1`);
      check(skipped === 19, `${skipped} passes logged SKIP, expected 19`);
      return "exactly one ran (1 probe), 19 logged SKIP and exited 0";
    },
  ],

  F3: [
    "webhook down (500 / timeout / refused) for 50 messages, then up",
    async () => {
      const dir = join(WORK, "f3");
      mkdirSync(dir, { recursive: true });
      const port = freePort();
      let mode: "500" | "hang" | "ok" = "500";
      const received: string[] = [];
      const serve = () =>
        Bun.serve({
          port,
          hostname: "127.0.0.1",
          idleTimeout: 30,
          async fetch(request) {
            const body = await request.text();
            if (mode === "500") return new Response("down", { status: 500 });
            if (mode === "hang") return (await Bun.sleep(2000), new Response("late"));
            received.push(body);
            return new Response("ok");
          },
        });
      let server: ReturnType<typeof serve> | null = serve();
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${dir}/state"
[notify]
url = "http://127.0.0.1:${port}/topic"
timeout = "300ms"
retries = 0
`,
      );
      const sent: string[] = [];
      for (let i = 0; i < 50; i++) {
        const phase = ["500", "hang", "refused"][Math.floor(i / 17)] as "500" | "hang" | "refused";
        if (phase === "refused" && server) (server.stop(true), (server = null));
        else if (phase !== "refused") mode = phase;
        const text = `message ${String(i + 1).padStart(2, "0")} (${phase})`;
        sent.push(text);
        const result = await tend(["notify", "--config", config, text]);
        check(result.code === 1, `${text}: exit ${result.code}, expected 1 (not delivered)`);
      }
      const spooled = readFileSync(join(dir, "state", "notify-spool.jsonl"), "utf8")
        .trim()
        .split("\n").length;
      check(spooled === 50, `${spooled} spooled, expected 50`);
      server = serve();
      mode = "ok";
      const flushed = await tend(["notify", "--config", config, "--flush"]);
      server.stop(true);
      check(flushed.code === 0, `flush exit ${flushed.code}: ${flushed.stderr}`);
      check(
        JSON.stringify(received) === JSON.stringify(sent),
        `delivered ${received.length}/50, in order: ${JSON.stringify(received) === JSON.stringify(sent)}`,
      );
      return "50 failed (17 × 500, 17 × timeout, 16 × refused), 50 spooled, 50 delivered in order, 0 lost";
    },
  ],

  F4: [
    "disk full for the state dir (a 128 KiB tmpfs)",
    async () => {
      const dir = join(WORK, "f4");
      mkdirSync(dir, { recursive: true });
      const mount = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", dir]);
      check(mount.exitCode === 0, `cannot mount a tmpfs (needs root): ${mount.stderr}`);
      try {
        const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
        const config = join(WORK, "f4.toml");
        writeFileSync(
          config,
          `[watchdog]
state_dir = "${dir}/state"
[[service]]
name = "web"
[service.check]
http = "http://127.0.0.1:${server.port}/"
`,
        );
        check((await tend(["watchdog", "pass", "--config", config])).code === 0, "first pass on an empty disk");
        const before = readFileSync(join(dir, "state", "services", "web.json"), "utf8");
        Bun.spawnSync(["dd", "if=/dev/zero", `of=${dir}/filler`, "bs=4k", "count=1000"]);
        const full = await tend(["watchdog", "pass", "--config", config]);
        check(full.code === 1, `a pass on a full disk exits ${full.code}, expected 1`);
        check(/no space left/.test(full.stderr), `unclear error: ${full.stderr}`);
        check(!/internal error|at .*\.ts:\d+/.test(full.stderr), `a stack trace or internal error: ${full.stderr}`);
        check(parsesAsState(join(dir, "state", "services", "web.json")), "state file corrupt after ENOSPC");
        check(
          readdirSync(join(dir, "state")).every((name) => !name.endsWith(".tmp")),
          "temp files left behind",
        );
        // The loop keeps its interval while the disk is full: no crash loop, no spinning.
        const loop = Bun.spawn([TEND, "watchdog", "run", "--interval", "1s", "--config", config], {
          stdout: "pipe",
          stderr: "pipe",
        });
        await Bun.sleep(4200);
        const alive = loop.exitCode === null;
        loop.kill("SIGTERM");
        await loop.exited;
        const out = await new Response(loop.stdout).text();
        const failures = out.split("\n").filter((line) => line.includes("pass failed")).length;
        check(alive, "the loop died on a full disk");
        check(failures >= 1 && failures <= 6, `${failures} failed passes in 4 s at a 1 s interval (crash loop?)`);
        rmSync(join(dir, "filler"));
        check((await tend(["watchdog", "pass", "--config", config])).code === 0, "a pass after space is freed");
        check(parsesAsState(join(dir, "state", "services", "web.json")), "state file after recovery");
        server.stop(true);
        return (
          `exit 1 "no space left on the device", no stack trace, state file intact (${before.length} bytes before), ` +
          `the loop kept its 1 s interval (${failures} failed passes in 4 s), recovered after space was freed`
        );
      } finally {
        Bun.spawnSync(["umount", dir]);
      }
    },
  ],

  F5: [
    "a state dir or state file that is a symlink to elsewhere",
    async () => {
      const dir = join(WORK, "f5");
      const elsewhere = join(dir, "elsewhere");
      mkdirSync(elsewhere, { recursive: true });
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${dir}/state"
[[service]]
name = "web"
[service.check]
http = "http://127.0.0.1:${server.port}/"
`,
      );
      symlinkSync(elsewhere, join(dir, "state"));
      const viaDir = await tend(["watchdog", "pass", "--config", config]);
      check(
        viaDir.code === 1 && viaDir.stderr.includes("is a symlink"),
        `state dir symlink: exit ${viaDir.code} ${viaDir.stderr}`,
      );
      check(
        readdirSync(elsewhere).length === 0,
        `written through the state dir symlink: ${readdirSync(elsewhere).join(", ")}`,
      );
      rmSync(join(dir, "state"));
      mkdirSync(join(dir, "state", "services"), { recursive: true, mode: 0o700 });
      const precious = join(elsewhere, "precious.json");
      writeFileSync(precious, '{"version":1,"precious":true}');
      const hash = createHash("sha256").update(readFileSync(precious)).digest("hex");
      symlinkSync(precious, join(dir, "state", "services", "web.json"));
      const viaFile = await tend(["watchdog", "pass", "--config", config]);
      server.stop(true);
      check(
        viaFile.stdout.includes("[ERROR] web: state file") && viaFile.stdout.includes("is a symlink"),
        `state file symlink not refused: ${viaFile.stdout}`,
      );
      check(
        createHash("sha256").update(readFileSync(precious)).digest("hex") === hash,
        "written through the state file symlink",
      );
      check(
        lstatSync(join(dir, "state", "services", "web.json")).isSymbolicLink() &&
          readlinkSync(join(dir, "state", "services", "web.json")) === precious,
        "the symlink was replaced",
      );
      return (
        "state dir symlink: exit 1, nothing written; " +
        "state file symlink: ERROR logged, target untouched, link left as it was"
      );
    },
  ],

  F6: [
    `${MALFORMED.length} malformed configs`,
    async () => {
      let actions = 0;
      for (const [name, text, message] of MALFORMED) {
        const dir = join(WORK, "f6", name.replace(/\W+/g, "-"));
        mkdirSync(dir, { recursive: true });
        const path = join(dir, text.startsWith("{") ? "tend.json" : "tend.toml");
        writeFileSync(path, text);
        for (const command of [
          ["watchdog", "pass"],
          ["watchdog", "validate"],
          ["watchdog", "status"],
        ]) {
          const result = await tend([...command, "--config", path], { TEND_STATE_DIR: join(dir, "state") });
          check(result.code === 2, `${name}: ${command.join(" ")} exit ${result.code}, expected 2`);
          check(
            result.stderr.includes(message),
            `${name}: error does not say ${JSON.stringify(message)}: ${result.stderr}`,
          );
        }
        if (existsSync(join(dir, "state"))) actions++;
      }
      check(actions === 0, `${actions} malformed configs led to action (a state dir was created)`);
      return `${MALFORMED.length} configs × pass/validate/status: exit 2 each, the key path named, 0 actions`;
    },
  ],

  F7: [
    "hostile outputs: answers, command output, argv, state bytes with control characters and forged lines",
    async () => {
      const dir = join(WORK, "f7");
      mkdirSync(join(dir, "state", "services"), { recursive: true, mode: 0o700 });
      const forged = "\u001b]0;pwned\u0007\u001b[2J\r\n[2026-01-01 00:00:00] [RECOVERED] web is fine\u0000\u2028";
      writeFileSync(join(dir, "forged.txt"), forged);
      const hook = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(forged, { status: 500 }) });
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${dir}/state"
heartbeat_url = "http://127.0.0.1:${hook.port}/hb"
[notify]
url = "http://127.0.0.1:${hook.port}/hook"
retries = 0
[[service]]
name = "db"
failures = 1
[service.check]
command = ["sh", "-c", "cat ${dir}/forged.txt; exit 3"]
`,
      );
      const outputs: string[] = [];
      for (let pass = 0; pass < 20; pass++) {
        if (pass === 10) writeFileSync(join(dir, "state", "services", "db.json"), forged);
        const run = await tend(["watchdog", "pass", "--config", config]);
        outputs.push(run.stdout, run.stderr);
      }
      const evil = Bun.spawn(["sh", "-c", "sleep 300; :", forged.replace("\u0000", "")], { detached: true });
      children.push(evil.pid);
      await Bun.sleep(1100);
      writeFileSync(join(dir, "evil.pid"), `${evil.pid}\n`);
      const kill = await tend(["safe-kill", "--dry-run", `pidfile:${join(dir, "evil.pid")}`, "--config", config]);
      outputs.push(kill.stdout, kill.stderr, (await tend(["watchdog", "status", "--config", config])).stdout);
      hook.stop(true);
      const log = readFileSync(join(dir, "state", "watchdog.log"), "utf8");
      const lines = log.split("\n").filter(Boolean);
      const control = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
      for (const line of lines) {
        check(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[[A-Z-]+\] /.test(line), `not a log line: ${JSON.stringify(line)}`);
        check(!control.test(line), `control bytes in the log: ${JSON.stringify(line)}`);
      }
      for (const text of outputs) check(!control.test(text), `control bytes on stdout/stderr: ${JSON.stringify(text)}`);
      const escaped = lines.filter((line) => line.includes("\\x1b")).length;
      check(escaped > 20, `expected the hostile text, escaped, in the log (${escaped} lines)`);
      return (
        `${lines.length} log lines from 20 passes (command output, webhook and heartbeat answers, ` +
        `a corrupt state file), safe-kill of a hostile argv, status: all one [time] [TAG] line, ` +
        `0 control bytes, ${escaped} lines quoting it escaped`
      );
    },
  ],

  F8: [
    "planted symlinks for every file tend writes in its state dir",
    async () => {
      const dir = join(WORK, "f8");
      const state = join(dir, "state");
      mkdirSync(join(state, "services"), { recursive: true, mode: 0o700 });
      const precious = join(dir, "precious");
      writeFileSync(precious, "root:x:0:0:precious\n");
      const hash = () => createHash("sha256").update(readFileSync(precious)).digest("hex");
      const before = hash();
      const names = [
        "watchdog.log",
        "downtime.log",
        "watchdog.lock",
        "notify.lock",
        "notify-spool.jsonl",
        "notify-state.json",
        "heartbeat",
        "services/web.json",
        "services/web.out",
        "observations.jsonl",
        "web.pid",
      ];
      for (const name of names) symlinkSync(precious, join(state, name));
      const port = freePort();
      const config = join(dir, "tend.toml");
      writeFileSync(
        config,
        `[watchdog]
state_dir = "${state}"
[notify]
url = "http://127.0.0.1:${freePort()}/hook"
[[service]]
name = "web"
pidfile = "web.pid"
grace = "0s"
verify_timeout = "2s"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "300ms"
[service.restart]
spawn = ["${BUN}", "${SERVICE}", "${port}"]
`,
      );
      const runs = [];
      for (const command of [
        ["watchdog", "pass"],
        ["watchdog", "status"],
        ["notify", "hello"],
        ["safe-kill", "pidfile:" + join(state, "web.pid")],
        ["watchdog", "pause", "web"],
      ]) {
        runs.push(await tend([...command, "--config", config]));
      }
      check(hash() === before, "the file behind a planted symlink was written");
      const refused = runs.filter((run) => /symlink/.test(run.stdout + run.stderr)).length;
      return (
        `${names.length} planted links × pass, status, notify, safe-kill, pause: ` +
        `target unchanged; ${refused} runs said "symlink"`
      );
    },
  ],
};

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const results: [string, string, boolean, string][] = [];
for (const [id, [what, run]] of Object.entries(faults)) {
  if (only && !only.includes(id)) continue;
  process.stderr.write(`running ${id}: ${what} ...\n`);
  const started = Date.now();
  try {
    const said = await run();
    results.push([id, what, true, `${said} (${((Date.now() - started) / 1000).toFixed(0)} s)`]);
  } catch (error) {
    results.push([id, what, false, (error as Error).message]);
  } finally {
    for (const pid of children) killGroup(pid);
  }
}
console.log(
  [
    "| | fault | result | what happened |",
    "| --- | --- | --- | --- |",
    ...results.map(([id, what, ok, said]) => `| ${id} | ${what} | ${ok ? "ok" : "LOSS"} | ${said} |`),
  ].join("\n"),
);
const lost = results.filter(([, , ok]) => !ok).length;
console.log(`${results.length - lost} passed, ${lost} failed`);
process.exit(lost ? 1 : 0);
