import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BUILTIN_TUNABLES } from "../lib/config/service-table.ts";
import type { ServiceConfig } from "../lib/config/types.ts";
import { savedState } from "../lib/state/service-state.ts";

export const ROOT = resolve(import.meta.dir, "..");
/** The compiled binary under test (make test sets it); tests run what users run. */
export const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
export const BUN = process.execPath;
export const SERVER = join(ROOT, "examples", "service.ts");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A private sandbox per test: HOME, state dir, tmux socket dir; removed by cleanup(). */
export class Sandbox {
  readonly dir = mkdtempSync(join(tmpdir(), "tend-test-"));
  readonly state = join(this.dir, "state");
  readonly config = join(this.dir, "tend.toml");
  private readonly children: number[] = [];

  env(extra: Record<string, string> = {}): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: this.dir,
      TZ: "UTC",
      TMUX_TMPDIR: this.dir,
      TEND_CONFIG: this.config,
      ...extra,
    };
    return env;
  }

  writeConfig(text: string) {
    writeFileSync(this.config, text);
  }

  /**
   * Write a configuration built from `spec` (tomlConfig), its state_dir this sandbox's unless given;
   * returns the text. Raw TOML (writeConfig) stays for what a test feeds the parser on purpose.
   */
  configure(spec: ConfigSpec = {}): string {
    const text = tomlConfig({ ...spec, watchdog: { state_dir: this.state, ...spec.watchdog } });
    this.writeConfig(text);
    return text;
  }

  /** Run `tend COMMAND ...` (argv0 dispatch is tested separately). */
  async tend(
    args: string[],
    { env = {}, timeoutMs = 120_000 }: { env?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<Run> {
    return run([TEND, ...args], { env: this.env(env), timeoutMs });
  }

  /** Start a fixture HTTP server in its own process group; killed by cleanup(). */
  async server(port: number, flags: string[] = []) {
    return fixtureServer(port, flags, (pid) => this.track(pid));
  }

  track(pid: number) {
    this.children.push(pid);
  }

  /** `watchdog serve` on a port the kernel picks (killed by cleanup); its URL once it says where it listens. */
  async serve(): Promise<string> {
    const child = Bun.spawn([TEND, "watchdog", "serve", "--listen", "127.0.0.1:0"], {
      env: this.env(),
      stdout: "pipe",
      stderr: "inherit",
    });
    this.track(child.pid);
    return servedAt(child.stdout);
  }

  read(name: string): string {
    const path = join(this.state, name);
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  /** What tend saved of a service: its state file and the observations appended since (lib's savedState). */
  stateOf(name: string): any {
    return savedState(this.state, name);
  }

  /** Write a file under the state dir (a test's edit of what tend recorded). */
  write(name: string, text: string) {
    writeFileSync(join(this.state, name), text);
  }

  /** Kill what this test started (and what tend spawned for it, via pidfiles), nothing else. */
  cleanup(pidfiles: string[] = []) {
    for (const file of pidfiles) {
      const pid = Number(readFileSync(file, "utf8").trim()) || 0;
      if (pid > 1) this.children.push(pid);
    }
    killAll(this.children);
    // Only while its dir is there: cleaned a second time, tmux finds no TMUX_TMPDIR and falls back
    // to /tmp, making /tmp/tmux-UID (a fresh Debian's first `make test` left it so).
    if (existsSync(this.dir)) Bun.spawnSync(["tmux", "kill-server"], { env: this.env() });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A user for the tests of one file (its name that file's own: files run in parallel), made if
 * missing. Returns what removes it again — only if this call made it — with its crontab and mail.
 * useradd and userdel wait for each other's lock on /etc/passwd: retried while it is held.
 */
export function testUser(name: string): { uid: number; gid: number; remove: () => void } {
  const id = (flag: string) => Number(Bun.spawnSync(["id", flag, name]).stdout.toString().trim());
  const locked = (args: string[]) => {
    const deadline = Date.now() + 10_000;
    while (true) {
      const result = Bun.spawnSync(args, { stderr: "pipe" });
      const said = result.stderr.toString();
      if (result.exitCode === 0 || !/lock/i.test(said) || Date.now() > deadline) return { code: result.exitCode, said };
      Bun.sleepSync(50);
    }
  };
  let made = false;
  if (Bun.spawnSync(["id", name]).exitCode !== 0) {
    const added = locked(["useradd", "--no-create-home", "--shell", "/bin/sh", name]);
    if (added.code !== 0) throw new Error(`useradd ${name}: ${added.said}`);
    made = true;
  }
  const uid = id("-u");
  return {
    uid,
    gid: id("-g"),
    remove() {
      if (!made) return;
      Bun.spawnSync(["crontab", "-r", "-u", name], { stderr: "ignore" });
      const removed = locked(["userdel", "--force", name]);
      if (removed.code !== 0) throw new Error(`userdel ${name}: ${removed.said}`);
      rmSync(`/var/mail/${name}`, { force: true });
      // Its tmux servers' socket dir (tmux -L puts it in /tmp): the user's own, so this file's.
      rmSync(`/tmp/tmux-${uid}`, { recursive: true, force: true });
      made = false;
    },
  };
}

let publicDir: string | null = null;

/**
 * What a test runs as another user (nobody, a Termux app's uid, the migration trial's user), where
 * any user may read and run it: a checkout in /root is 0700, closed to them (a fresh Debian, cloned
 * as root). One directory per test process, removed by removePublicCopy (a file's afterAll). `file`
 * copies a file of the checkout there (a .ts script bundled, its imports inside it); the binaries
 * are copied once.
 */
/** The URL `watchdog serve` says it serves at, read from its stdout. */
export async function servedAt(stdout: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stdout.getReader();
  let said = "";
  await waitFor(
    async () => {
      const { value } = await reader.read();
      said += new TextDecoder().decode(value ?? new Uint8Array());
      return /serving (http:\/\/\S+)/.test(said);
    },
    10_000,
    "serve listening",
  );
  reader.releaseLock();
  return /serving (http:\/\/\S+?)\/?\s/.exec(said + " ")![1];
}

export function publicCopy() {
  if (!publicDir) {
    const dir = mkdtempSync(join(tmpdir(), "tend-public-"));
    chmodSync(dir, 0o755);
    publicDir = dir;
  }
  const dir = publicDir;
  const copied = (name: string, from: string) => {
    const to = join(dir, name);
    if (!existsSync(to)) {
      copyFileSync(from, to);
      chmodSync(to, 0o755);
    }
    return to;
  };
  return {
    dir,
    tend: () => copied("tend", TEND),
    bun: () => copied("bun", BUN),
    /** A file of the checkout (relative to it), readable by anyone. */
    file(relative: string): string {
      const to = join(dir, relative.replace(/\.ts$/, ".js"));
      if (existsSync(to)) return to;
      mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
      if (relative.endsWith(".ts")) {
        const built = Bun.spawnSync([BUN, "build", "--target=bun", join(ROOT, relative), "--outfile", to], {
          stdout: "pipe",
          stderr: "pipe",
        });
        if (built.exitCode !== 0) throw new Error(`bun build ${relative}: ${built.stderr}`);
      } else copyFileSync(join(ROOT, relative), to);
      chmodSync(to, 0o755);
      return to;
    },
  };
}

/** Remove the public copy (a test file's afterAll); the next publicCopy() makes a new one. */
export function removePublicCopy() {
  if (publicDir) rmSync(publicDir, { recursive: true, force: true });
  publicDir = null;
}

/** SIGKILL each process the test started, and the process group it leads (tend's spawns lead their own). */
export function killAll(pids: number[]) {
  for (const pid of pids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {}
    }
  }
}

/** One line of notify-spool.jsonl as tend writes it (the fields every version had), with `fields` over it. */
export const spooledLine = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    message: "m",
    title: null,
    priority: null,
    tags: [],
    event: null,
    service: null,
    time: new Date().toISOString(),
    ...fields,
  });

/** A local receiver on port 0 that answers 200 and keeps every body it got. */
/** A receiver that keeps what it accepted; `control.status` other than 2xx refuses (and keeps nothing). */
export function recordingReceiver({ hostname = "127.0.0.1" } = {}) {
  const received: string[] = [];
  const control = { status: 200 };
  const server = Bun.serve({
    port: 0,
    hostname,
    async fetch(request) {
      const body = await request.text();
      if (control.status >= 200 && control.status < 300) received.push(body);
      return new Response("ok", { status: control.status });
    },
  });
  return {
    received,
    control,
    url: `http://127.0.0.1:${server.port}`,
    port: server.port,
    stop: () => server.stop(true),
  };
}

/** Run argv to its end without blocking this process (its servers keep answering); killed after timeoutMs. */
export async function run(
  argv: string[],
  { env, cwd, timeoutMs = 120_000 }: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<Run> {
  const child = Bun.spawn(argv, { env, cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/**
 * `script` in a mount namespace of its own where each file of `files` (a path such as /etc/hosts → the
 * file standing in for it) is bind-mounted over the host's: the host's own files are never touched.
 * Spawned, not spawnSync: the servers it reaches answer from this process.
 */
export function withOwnFiles(
  files: Record<string, string>,
  script: string,
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Run> {
  const mounts = Object.entries(files).map(([path, from]) => `mount --bind '${from}' '${path}' && `);
  const shell = mounts.join("") + script;
  return run(["unshare", "--mount", "--propagation", "private", "sh", "-c", shell], {
    timeoutMs: 30_000,
    ...options,
  });
}

/**
 * One service `web` (its `serviceKeys` given as TOML lines), checked at `url` and restarted by `command =
 * ["true"]`, its log in the state dir: the configuration of tests that drive a restart's story in their process.
 */
export const restartedWebConfig = (box: Sandbox, url: string, serviceKeys: string) => `
[watchdog]
state_dir = "${box.state}"
log = "${join(box.state, "watchdog.log")}"
[[service]]
name = "web"
${serviceKeys}
[service.check]
http = "${url}"
[service.restart]
command = ["true"]
`;

/** An in-process HTTP server on port 0 whose answers the test controls, counting its hits. */
export function controlledServer() {
  const control = { status: 200, delayMs: 0, hits: 0 };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 30,
    async fetch() {
      control.hits++;
      if (control.delayMs) await Bun.sleep(control.delayMs);
      return new Response("ok", { status: control.status });
    },
  });
  return { control, server, url: `http://127.0.0.1:${server.port}/` };
}

/**
 * The example service on `port`, in its own process group, answering: `track` is given its PID first (the
 * caller kills it).
 */
export async function fixtureServer(port: number, flags: string[] = [], track: (pid: number) => void) {
  const child = Bun.spawn([BUN, SERVER, String(port), ...flags], {
    stdout: "ignore",
    stderr: "inherit",
    detached: true,
  });
  track(child.pid);
  await waitFor(
    async () =>
      (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) }).catch(() => null)) !== null,
    10_000,
    `server on ${port}`,
  );
  return child;
}

/** Poll until `condition` holds or the deadline passes (no blind sleeps). */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await Bun.sleep(25);
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
}

/** The environment cron gives a user's job: a bare PATH, HOME, SHELL, LOGNAME (no TMUX_TMPDIR). */
export const cronEnv = (user: string, home: string) => [
  "PATH=/usr/bin:/bin",
  `HOME=${home}`,
  "SHELL=/bin/sh",
  `LOGNAME=${user}`,
];

/**
 * One cron tick as cron runs a crontab's lines: each command (its five time fields and tend's marker taken
 * off) started at once as the user, in cron's environment, in HOME; resolves when all end, with what each
 * said on stderr (cron would mail it).
 */
export async function cronTick(lines: string[], user: string, home: string): Promise<string[]> {
  const said = await Promise.all(
    lines.map(async (line) => {
      const command = line
        .split(" ")
        .slice(5)
        .join(" ")
        .replace(/ # tend watchdog$/, "");
      const argv = ["runuser", "-u", user, "--", "env", "-i", ...cronEnv(user, home), "/bin/sh", "-c", command];
      const child = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", cwd: home });
      const text = (await new Response(child.stderr).text()).trim();
      await child.exited;
      return text;
    }),
  );
  return said.filter(Boolean);
}

/** A port that was free a moment ago (for services whose port must be in the config). */
/**
 * A port a fixture server can bind later (a restart binds it again). Chosen below the ephemeral
 * range (32768+), where the kernel also picks the source ports of outgoing connections: a port
 * from bind(0) can be taken by some client's connection before the fixture binds it. Never the
 * same port twice in one run.
 */
const handedOut = new Set<number>();
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    const free = await new Promise<boolean>((resolveFree) => {
      const server = createServer();
      server.once("error", () => resolveFree(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolveFree(true)));
    });
    if (free) return port;
  }
}

export const procState = (pid: number): string | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return null;
  }
};

export const alive = (pid: number) => {
  const state = procState(pid);
  return state !== null && state !== "Z" && state !== "X";
};

/**
 * The last pass's heartbeat as if that pass ran at `at`: of this boot (its boot-time clock reading
 * moved back as far: no clock step), or of another boot (`otherBoot`: another boot id, clock 5 s).
 */
export function ageHeartbeat(stateDir: string, at: number, { otherBoot = false } = {}): void {
  const path = join(stateDir, "heartbeat");
  const text = readFileSync(path, "utf8");
  const then = Date.parse(text.split("\n")[0]);
  const recorded = /^boot id=(\S+) clock=(\d+)$/m.exec(text);
  const boot = otherBoot
    ? "boot id=00000000-0000-4000-8000-000000000000 clock=5000"
    : recorded && `boot id=${recorded[1]} clock=${Number(recorded[2]) - (then - at)}`;
  let aged = text.replace(/^.*\n/, `${new Date(at).toISOString()}\n`);
  if (boot) aged = recorded ? aged.replace(/^boot .*$/m, boot) : aged + boot + "\n";
  writeFileSync(path, aged);
  utimesSync(path, new Date(at), new Date(at));
}

/** A configured service for the pure decision's tests (decide.test.ts, clock.test.ts): http check, tmux restart. */
export const SERVICE_FIXTURE: ServiceConfig = {
  ...BUILTIN_TUNABLES,
  name: "blog",
  enabled: true,
  pidfile: null,
  tmux: null,
  unit: null,
  launchd: null,
  runit: null,
  check: {
    kind: "http",
    url: "http://127.0.0.1:8080/",
    expect: null,
    anyResponse: false,
    failCodes: null,
    contains: null,
    headers: {},
    timeoutMs: 5000,
  },
  restart: { kind: "tmux", target: "main:blog", run: "python3 -m http.server 8080" },
  dependsOn: [],
  requiresDns: null,
  busy: null,
  memory: null,
  trackRestarts: false,
};

/** A TOML value: strings quoted as JSON quotes them (TOML's basic strings take the same escapes). */
export type TomlValue = string | number | boolean | TomlValue[] | { [key: string]: TomlValue };
type TomlTable = Record<string, TomlValue | undefined>;

/** One [[service]]: its keys, and its check and restart tables (or their inline forms as keys). */
export interface ServiceSpec {
  name: string;
  check?: TomlTable;
  restart?: TomlTable;
  [key: string]: TomlValue | TomlTable | undefined;
}

export interface ConfigSpec {
  watchdog?: TomlTable;
  notify?: TomlTable;
  serve?: TomlTable;
  defaults?: TomlTable;
  services?: ServiceSpec[];
}

const tomlValue = (value: TomlValue): string =>
  Array.isArray(value)
    ? `[${value.map(tomlValue).join(", ")}]`
    : typeof value === "object"
      ? `{ ${Object.entries(value)
          .map(([key, inner]) => `${key} = ${tomlValue(inner)}`)
          .join(", ")} }`
      : typeof value === "string"
        ? JSON.stringify(value)
        : String(value);

const tomlKeys = (table: TomlTable) =>
  Object.entries(table).flatMap(([key, value]) => (value === undefined ? [] : [`${key} = ${tomlValue(value)}`]));

/**
 * A tend.toml from plain objects: `{ services: [{ name: "web", grace: "0s", check: { http: url },
 * restart: { spawn: [BUN, SERVER, "8080"] } }] }`. Keys are written as given (config names, not
 * camelCase); undefined ones are left out.
 */
export function tomlConfig({ watchdog, notify, serve, defaults, services = [] }: ConfigSpec): string {
  const lines: string[] = [];
  for (const [name, table] of [
    ["watchdog", watchdog],
    ["notify", notify],
    ["serve", serve],
    ["defaults", defaults],
  ] as const)
    if (table) lines.push(`[${name}]`, ...tomlKeys(table));
  for (const { check, restart, ...keys } of services) {
    lines.push("[[service]]", ...tomlKeys(keys as TomlTable));
    if (check) lines.push("[service.check]", ...tomlKeys(check));
    if (restart) lines.push("[service.restart]", ...tomlKeys(restart));
  }
  return lines.join("\n") + "\n";
}

/**
 * flock(1) holding a lock as its owner would (its record `WHO pid N` written in it), running `then`, in
 * a process group of its own: `end` kills the whole group (flock, its shell and what that runs), so the
 * lock goes with it — killing flock alone left its child holding it. `pid`: the PID the record names
 * (its own shell's when not given; a gone process's for a lock left in a killed holder's child's hands).
 */
export function holdLock(path: string, who: string, then: string, pid: number | "$$" = "$$") {
  const owner = Bun.spawn(
    ["flock", path, "sh", "-c", `echo '${who ? who + " " : ""}pid '${pid} > '${path}'; ${then}`],
    {
      detached: true,
    },
  );
  const end = () => {
    try {
      process.kill(-owner.pid, "SIGKILL");
    } catch {} // ended already
  };
  return Object.assign(owner, { end });
}
