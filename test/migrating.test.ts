// docs/migrating.md, tried as the phone's owner would: the guide's own watchdog.sh (bash, real curl,
// flock) and the crontab the guide gives for tend run side by side, as cron runs them, through the
// faults of the second drop-in trial, each world a copy of the phone: a private tmux server
// (`-L`) with the blog's origin, the engine, an ngrok-like service and the tunnel in panes started
// by the guide's boot.sh, an edge in front of the tunnel, an ntfy receiver.
//
// As cron: every tick starts each world's crontab lines in the same second, as the user (runuser),
// with cron's environment (env -i PATH=/usr/bin:/bin HOME SHELL LOGNAME; no TMUX_TMPDIR), from a
// state where tend's state dir does not exist yet; a tick does not wait for the last one.
// Time is scaled: one cron period (5 min) is PERIOD_MS here (TRIAL_PERIOD_MS; 6 s in `make test`,
// 5 min — the literal run, 2.6 h — in `make faults`), and every duration of the guide's config and
// script is scaled with it (cooldown 10m -> 12s, busy.fresh 3m -> 4s at least, ...). Below the
// literal scale two are not: the probe timeout (20s in both; 1s in both: it only needs to tell an
// answer from a hang) and verify_timeout (1m; 3s: a verification must end inside its period). A reboot is a
// power-off (the world's tmux server and every process in it killed, no ticks) and a boot
// (boot.sh run again); the kernel's boot clock cannot restart here, so the tend world's heartbeat
// is given the boot clock a reboot leaves (below the one recorded), as test/views.test.ts does.
import { afterAll, afterEach, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  cronEnv,
  cronTick,
  freePort,
  publicCopy,
  removePublicCopy,
  ROOT,
  Sandbox,
  TEND,
  testUser,
  waitFor,
} from "./helpers.ts";

// What the trial's user runs, where it can read it (a checkout in /root is closed to it: helpers.ts publicCopy).
const SCRIPT = () => publicCopy().file("docs/migrating/watchdog.sh");
const BOOT = () => publicCopy().file("docs/migrating/boot.sh");
const ENGINE = () => publicCopy().file("test/trial-engine.ts");
const RUN_BUN = () => publicCopy().bun();
const RUN_SERVER = () => publicCopy().file("examples/service.ts");
const GUIDE = readFileSync(join(ROOT, "docs", "migrating.md"), "utf8");
const GUIDE_CONFIG = readFileSync(join(ROOT, "docs", "migrating", "tend.toml"), "utf8");
const USER = "tendmigrate";
const PERIOD_MS = Number(process.env.TRIAL_PERIOD_MS ?? 6000);
if (!(PERIOD_MS >= 6000)) throw new Error(`TRIAL_PERIOD_MS=${process.env.TRIAL_PERIOD_MS}: 6000 (ms) or more`);
/** Cron's real period: the guide's timeouts as they are. */
const LITERAL = PERIOD_MS >= 300_000;
/** The guide's minutes, here. */
const minutes = (count: number) => (count * 60_000 * PERIOD_MS) / 300_000;
const PHONE_HOME = "/data/data/com.termux/files/home";
const NGROK_ANSWER = '{"tunnels":[{"public_url":"https://abc.ngrok.example"}]}';

let uid = 0;
let gid = 0;

class World {
  readonly box = new Sandbox();
  readonly home = this.box.dir;
  readonly socket: string;
  readonly ports = { blog: 0, engine: 0, ngrok: 0, tunnel: 0 };
  readonly ntfy: { status: number; body: string; title: string }[] = [];
  ntfyStatus = 200;
  edgeUrl = "";
  ntfyUrl = "";
  commands = { blog: "", engine: "", ngrok: "", tunnel: "" };
  private readonly servers: ReturnType<typeof Bun.serve>[] = [];
  lines: string[] = [];
  /** What each tick's lines wrote to their stderr (cron would mail it; here it must be empty). */
  readonly stderr: string[] = [];

  constructor(readonly kind: "script" | "tend") {
    this.socket = `trial-${process.pid}-${kind}`;
  }

  async start() {
    chownSync(this.home, uid, gid);
    for (const name of Object.keys(this.ports) as (keyof World["ports"])[]) this.ports[name] = await freePort();
    mkdirSync(join(this.home, "engine"));
    chownSync(join(this.home, "engine"), uid, gid);
    const edge = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 30,
      // cloudflared's edge: 530 when the tunnel is not connected, 502 when the origin behind it fails.
      fetch: async () => {
        const tunnel = await fetch(`http://127.0.0.1:${this.ports.tunnel}/`, { signal: AbortSignal.timeout(500) })
          .then(() => true)
          .catch(() => false);
        if (!tunnel) return new Response("tunnel error", { status: 530 });
        const origin = await fetch(`http://127.0.0.1:${this.ports.blog}/`, { signal: AbortSignal.timeout(800) })
          .then((answer) => answer.status)
          .catch(() => 502);
        return new Response(origin === 200 ? "blog" : "bad gateway", { status: origin === 200 ? 200 : 502 });
      },
    });
    const ntfy = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        this.ntfy.push({
          status: this.ntfyStatus,
          body: await request.text(),
          title: request.headers.get("title") ?? "",
        });
        return new Response("", { status: this.ntfyStatus });
      },
    });
    this.servers.push(edge, ntfy);
    this.edgeUrl = `http://127.0.0.1:${edge.port}/`;
    this.ntfyUrl = `http://127.0.0.1:${ntfy.port}/my-topic`;
    const hangsOnce = join(this.home, ".ngrok-hangs-once");
    const [bun, server, engineDir] = [RUN_BUN(), RUN_SERVER(), join(this.home, "engine")];
    this.commands = {
      blog: `exec ${bun} ${server} ${this.ports.blog}`,
      engine: `exec ${bun} ${ENGINE()} ${this.ports.engine} ${engineDir}/engine.log ${engineDir}/backfill`,
      // ngrok's first start after a boot comes up hung (seen after every reboot in the trial).
      ngrok:
        `if [ -e ${hangsOnce} ]; then rm ${hangsOnce}; exec ${bun} ${server} ${this.ports.ngrok} --delay 600000; fi; ` +
        `exec ${bun} ${server} ${this.ports.ngrok} --body '${NGROK_ANSWER}'`,
      tunnel: `exec ${bun} ${server} ${this.ports.tunnel}`,
    };
    if (this.kind === "tend") this.install();
    else this.lines = [this.scriptLine()];
    this.boot();
    await waitFor(async () => (await this.observe()).every(Boolean), 30_000, `${this.kind}: everything up at boot`);
  }

  /** The guide's §0 and §8 here: the binary and its links, the config, `install cron --write`, the tunnel's line. */
  private install() {
    const bin = join(this.home, ".local", "bin");
    mkdirSync(bin, { recursive: true });
    copyFileSync(TEND, join(bin, "tend"));
    chmodSync(join(bin, "tend"), 0o755);
    for (const name of ["watchdog", "blogtunnel", "safe-kill"]) symlinkSync("tend", join(bin, name));
    const config = join(this.home, ".config", "tend");
    mkdirSync(config, { recursive: true });
    writeFileSync(join(config, "tend.toml"), this.derivedConfig());
    this.asUser(["chown", "-R", `${USER}:`, join(this.home, ".local"), join(this.home, ".config")], true);
    expect(existsSync(join(this.home, ".local", "state", "tend"))).toBe(false); // nothing made it yet
    const installed = this.asUser([join(bin, "watchdog"), "install", "cron", "--write"]);
    expect(installed.code).toBe(0);
    const crontab = Bun.spawnSync(["crontab", "-l", "-u", USER]).stdout.toString();
    Bun.spawnSync(["crontab", "-r", "-u", USER]); // this harness is the cron: nothing else may run it
    const pass = crontab.split("\n").find((line) => line.endsWith("# tend watchdog"));
    expect(pass).toBeDefined();
    // The guide's blogtunnel line, as it stands in the guide, pointed at this world.
    const guided = GUIDE.split("\n").find((line) => /^\s*\*\/5 \* \* \* \* \S+\/blogtunnel /.test(line));
    expect(guided).toBeDefined();
    let tunnel = guided!.trim();
    for (const [from, to] of [
      [PHONE_HOME, this.home],
      ["https://blog.example.org/", this.edgeUrl],
      ['"cloudflared tunnel run blog"', `"${this.commands.tunnel}"`],
      ["--socket phone", `--socket ${this.socket}`],
    ]) {
      expect(tunnel).toContain(from);
      tunnel = tunnel.replaceAll(from, to);
    }
    this.lines = [pass!, tunnel];
  }

  /** The guide's tend.toml pointed at this world, its durations scaled (each must be there). */
  private derivedConfig(): string {
    let text = GUIDE_CONFIG;
    for (const [from, to] of [
      ["https://ntfy.sh/my-topic", this.ntfyUrl],
      ["http://127.0.0.1:4000/", `http://127.0.0.1:${this.ports.blog}/`],
      ["http://127.0.0.1:8080/health", `http://127.0.0.1:${this.ports.engine}/health`],
      ["http://127.0.0.1:4040/api/tunnels", `http://127.0.0.1:${this.ports.ngrok}/api/tunnels`],
      ['run = "cd ~/blog && ./serve --port 4000"', `run = ${JSON.stringify(this.commands.blog)}`],
      ['run = "cd ~/engine && ./engine --port 8080"', `run = ${JSON.stringify(this.commands.engine)}`],
      ['run = "ngrok http 8080"', `run = ${JSON.stringify(this.commands.ngrok)}`],
      ['socket = "phone"', `socket = "${this.socket}"`],
      ['grace = "30s"', `grace = "${minutes(0.5)}ms"`],
      ['cooldown = "10m"', `cooldown = "${minutes(10)}ms"`],
      ['fresh = "3m"', `fresh = "${Math.max(4000, minutes(3))}ms"`],
      ['max = "2h"', `max = "${minutes(120)}ms"`],
      ['timeout = "20s"', LITERAL ? 'timeout = "20s"' : 'timeout = "1s"'],
    ]) {
      expect(text).toContain(from);
      text = text.replaceAll(from, to);
    }
    return LITERAL ? text : text.replace("[defaults]\n", '[defaults]\nverify_timeout = "3s"\n');
  }

  private scriptLine(): string {
    const env = {
      DIR: this.home,
      SOCKET: this.socket,
      TIMEOUT: LITERAL ? "20" : "1",
      BUSY_FRESH: String(Math.max(4, Math.round(minutes(3) / 1000))),
      BLOG_LOCAL: `http://127.0.0.1:${this.ports.blog}/`,
      BLOG_CMD: this.commands.blog,
      ENGINE_URL: `http://127.0.0.1:${this.ports.engine}/health`,
      ENGINE_LOG: `${this.home}/engine/engine.log`,
      ENGINE_CMD: this.commands.engine,
      NGROK_API: `http://127.0.0.1:${this.ports.ngrok}/api/tunnels`,
      NGROK_CMD: this.commands.ngrok,
      BLOG_URL: this.edgeUrl,
      TUNNEL_CMD: this.commands.tunnel,
      NTFY: this.ntfyUrl,
    };
    const assignments = Object.entries(env).map(([key, value]) => `${key}='${value.replaceAll("'", `'\\''`)}'`);
    return `*/5 * * * * ${assignments.join(" ")} /bin/bash ${SCRIPT()} >> ${this.home}/watchdog.cron.log 2>&1`;
  }

  /** As the user, in cron's environment (or a login's, for setup). */
  asUser(argv: string[], asRoot = false, extra: Record<string, string> = {}) {
    const env = cronEnv(USER, this.home);
    const command = asRoot
      ? argv
      : [
          "runuser",
          "-u",
          USER,
          "--",
          "env",
          "-i",
          ...env,
          ...Object.entries(extra).map(([k, v]) => `${k}=${v}`),
          ...argv,
        ];
    const result = Bun.spawnSync(command, { stdout: "pipe", stderr: "pipe" });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  }

  /** One cron tick: every line of this world started at once, as cron starts them; resolves when all end. */
  async tick(): Promise<void> {
    this.stderr.push(...(await cronTick(this.lines, USER, this.home)));
  }

  tmux(...args: string[]) {
    return this.asUser(["tmux", "-L", this.socket, ...args]);
  }

  /** Termux:Boot runs the boot script (the wake lock, the panes on the private server). */
  boot() {
    const booted = this.asUser(["/bin/sh", BOOT()], false, {
      SOCKET: this.socket,
      BLOG_CMD: this.commands.blog,
      ENGINE_CMD: this.commands.engine,
      NGROK_CMD: this.commands.ngrok,
      TUNNEL_CMD: this.commands.tunnel,
    });
    if (booted.code !== 0) throw new Error(`boot.sh: ${booted.stderr}`);
  }

  /** The power goes: every process of the phone (the tmux server and its panes) dies. */
  powerOff(ngrokHangsAtBoot: boolean) {
    this.tmux("kill-server");
    if (ngrokHangsAtBoot) writeFileSync(join(this.home, ".ngrok-hangs-once"), "");
    if (ngrokHangsAtBoot) chownSync(join(this.home, ".ngrok-hangs-once"), uid, gid);
  }

  /** The phone boots: the kernel's boot clock starts again (for tend's heartbeat), boot.sh runs. */
  powerOn() {
    const heartbeat = join(this.home, ".local", "state", "tend", "heartbeat");
    if (this.kind === "tend" && existsSync(heartbeat)) {
      const [at, interval] = readFileSync(heartbeat, "utf8").split("\n");
      writeFileSync(heartbeat, `${at}\n${interval}\nclocks boot=${1e12} awake=${1e12}\n`);
    }
    this.boot();
  }

  panePid(window: string): number {
    return Number(this.tmux("display-message", "-p", "-t", `main:${window}`, "#{pane_pid}").stdout.trim());
  }

  /** What its owner sees: the blog's public URL, the engine, ngrok's tunnel (each up or not). */
  async observe(): Promise<[boolean, boolean, boolean]> {
    const get = (url: string, timeoutMs = 1500) =>
      fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
        .then(async (answer) => ({ status: answer.status, body: await answer.text() }))
        .catch(() => ({ status: 0, body: "" }));
    const [blog, engine, ngrok] = await Promise.all([
      get(this.edgeUrl, 2500),
      get(`http://127.0.0.1:${this.ports.engine}/health`),
      get(`http://127.0.0.1:${this.ports.ngrok}/api/tunnels`),
    ]);
    return [blog.status === 200, engine.status === 200, ngrok.body.includes("public_url")];
  }

  get log(): string {
    const path = join(this.home, "watchdog.log");
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  stop() {
    this.tmux("kill-server");
    rmSync(join("/tmp", `tmux-${uid}`, this.socket), { force: true }); // its socket file, left by a killed server
    for (const server of this.servers) server.stop(true);
    this.box.cleanup();
  }
}

let worlds: World[] = [];
afterEach(() => {
  for (const world of worlds) world.stop();
  worlds = [];
});
const TABLE: string[] = [];
let user: ReturnType<typeof testUser> | null = null;
afterAll(() => {
  user?.remove();
  removePublicCopy();
  console.log(["| fault | watchdog.sh recovered | tend recovered |", "|---|---|---|", ...TABLE].join("\n"));
});

/** Each world's observations: [time, blog, engine, ngrok], every 250 ms. */
type Sample = [number, boolean, boolean, boolean];

test(
  "the second drop-in trial: the guide's crontab as cron runs it recovers no later than the script",
  async () => {
    user = testUser(USER);
    ({ uid, gid } = user);
    const script = new World("script");
    const tend = new World("tend");
    worlds = [script, tend];
    await Promise.all([script.start(), tend.start()]);

    const samples = new Map<World, Sample[]>([
      [script, []],
      [tend, []],
    ]);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await Promise.all(
          worlds.map(async (world) => samples.get(world)!.push([Date.now(), ...(await world.observe())])),
        );
        await Bun.sleep(250);
      }
    })();

    // The timeline: tick k at start + k periods; a fault at k.5 (between two ticks, as in the trial).
    const start = Date.now() + 1000;
    const at = (ticks: number) => start + ticks * PERIOD_MS;
    const until = (when: number) => Bun.sleep(Math.max(0, when - Date.now()));
    const running: Promise<void>[] = [];
    let ticked = 0;
    const tickUpTo = async (last: number) => {
      for (; ticked <= last; ticked++) {
        if (at(ticked) < Date.now() - 500) continue; // the power was off: cron does not catch up
        await until(at(ticked));
        running.push(...worlds.map((world) => world.tick()));
      }
    };
    const faults: { name: string; from: number; what: 0 | 1 | 2 | "all" }[] = [];
    const both = (act: (world: World) => void | Promise<void>) => Promise.all(worlds.map(act));

    await tickUpTo(1);
    // 1. The blog's origin freezes (alive, never answers; SIGSTOP cannot freeze a pane: tmux sends SIGCONT).
    // The receiver answers 500 while the restart is announced.
    await until(at(1.5));
    await both((world) => void process.kill(world.panePid("blog"), "SIGUSR1"));
    faults.push({ name: "frozen origin", from: Date.now(), what: 0 });
    await tickUpTo(3);
    await until(at(3.5));
    for (const world of worlds) world.ntfyStatus = 500;
    await tickUpTo(5);
    await until(at(5.5));
    for (const world of worlds) world.ntfyStatus = 200;
    // 2. The tunnel's process is killed.
    await until(at(6.5));
    await both((world) => void process.kill(world.panePid("blogtunnel"), "SIGKILL"));
    faults.push({ name: "tunnel killed", from: Date.now(), what: 0 });
    await tickUpTo(10);
    // 3. The engine backfills for 40 minutes (busy: it answers nothing, its log is written).
    await until(at(10.5));
    await both((world) => {
      writeFileSync(join(world.home, "engine", "backfill"), "");
    });
    faults.push({ name: "40-minute busy engine", from: Date.now(), what: 1 });
    await tickUpTo(18);
    await until(at(10.5) + minutes(40));
    await both((world) => rmSync(join(world.home, "engine", "backfill"), { force: true }));
    await tickUpTo(20);
    // 4. A 2-minute reboot, inside one cron period; ngrok's first start after it hangs. The phone is
    // up again 1.75 minutes before the next tick: a tick within `grace` (30s) of the boot would find
    // ngrok starting and skip it (grace, where the script strikes at once), and tend would then
    // recover one tick later — the one exception, by design (docs/migrating.md §3).
    await until(at(20.25));
    await Promise.all(running.splice(0));
    await both((world) => world.powerOff(true));
    faults.push({ name: "2-minute reboot, ngrok hung after boot", from: Date.now(), what: "all" });
    await until(at(20.25) + minutes(2));
    await both((world) => world.powerOn());
    await tickUpTo(25);
    // 5. A 15-minute power-off.
    await until(at(25.5));
    await Promise.all(running.splice(0));
    await both((world) => world.powerOff(false));
    faults.push({ name: "15-minute power-off", from: Date.now(), what: "all" });
    await until(at(25.5) + minutes(15));
    await both((world) => world.powerOn());
    await tickUpTo(31);
    await Promise.all(running.splice(0));
    sampling = false;
    await sampler;

    // Recovery: from the fault to the first sample that sees it all up again, after a sample saw it down.
    const recovered = (world: World, fault: (typeof faults)[number], next: number) => {
      const seen = samples.get(world)!.filter(([time]) => time >= fault.from && time < next);
      const up = (sample: Sample) => (fault.what === "all" ? sample.slice(1).every(Boolean) : sample[1 + fault.what]);
      const down = seen.findIndex((sample) => !up(sample));
      const back = down === -1 ? -1 : seen.findIndex((sample, index) => index > down && up(sample));
      return back === -1 ? Infinity : seen[back][0] - fault.from;
    };
    const cronLog = join(tend.home, ".local", "state", "tend", "cron.log");
    const cronSaid = existsSync(cronLog) ? readFileSync(cronLog, "utf8") : "";
    if (process.env.TRIAL_DEBUG)
      for (const world of worlds)
        console.log(`== ${world.kind}\n${world.log}\n${world.stderr.join("\n")}\n${cronSaid}`);
    expect(cronSaid).not.toMatch(/usage|unknown option|not found/);
    const inMinutes = (ms: number) => (ms === Infinity ? "never" : `${((ms / PERIOD_MS) * 5).toFixed(1)} min`);
    for (const [index, fault] of faults.entries()) {
      const next = faults[index + 1]?.from ?? Date.now();
      const [was, now] = [recovered(script, fault, next), recovered(tend, fault, next)];
      TABLE.push(`| ${fault.name} | ${inMinutes(was)} | ${inMinutes(now)} |`);
      // No later than the script: within one sample (250 ms) and one process start (a loaded machine).
      expect({ fault: fault.name, tendNoLater: now <= was + 1500, was, now }).toMatchObject({ tendNoLater: true });
    }

    // The first tick of a fresh install under cron's environment: nothing on stderr, the pass ran.
    expect(tend.stderr).toEqual([]);
    expect(existsSync(join(tend.home, ".local", "state", "tend", "heartbeat"))).toBe(true);
    // Every event once: cron.log (where cron cannot mail) holds none of the log's lines.
    expect(cronSaid).not.toContain("[RESTART]");
    // The origin was restarted, the tunnel waited on it (--depends-on), never restarted for it.
    expect(tend.log).toContain("[WAIT] blogtunnel");
    expect(tend.log).toMatch(/\[RESTART\] blog:/);
    // The killed tunnel: started again at the next tick (its pane's process is watched), not after 3 strikes.
    expect(tend.log).toContain("blogtunnel is not running");
    // The backfill: busy, never restarted, in both.
    expect(script.log).toContain("[BUSY] engine");
    expect(tend.log).toContain("[BUSY] engine");
    expect(tend.log).not.toMatch(/\[RESTART\] engine/);
    expect(script.log).not.toMatch(/\[RESTART\] main:engine/);
    // Reboots said as reboots, in watchdog.log too (grep DOWNTIME).
    expect(tend.log.match(/\[DOWNTIME\] host was unavailable/g)?.length).toBe(2);
    // The receiver's 500: the script's curl -sf logs it and the message is lost; tend's is delivered late.
    expect(script.log).toContain("[NOTIFY] could not send: blog restarted");
    expect(script.ntfy.filter((hit) => hit.status === 200).some((hit) => hit.body.includes("blog restarted"))).toBe(
      false,
    );
    const delivered = tend.ntfy.filter((hit) => hit.status === 200);
    expect(delivered.some((hit) => hit.body.includes("blog") && hit.body.startsWith("⚠️"))).toBe(true);
    // The counter file is tend's strike count.
    const counter = join(tend.home, ".blogtunnel-fail-count");
    const strikes = JSON.parse(
      readFileSync(join(tend.home, ".local", "state", "tend", "services", "blogtunnel.json"), "utf8"),
    ).strikes;
    expect(Number(readFileSync(counter, "utf8").trim())).toBe(strikes);
  },
  Math.max(600_000, 40 * PERIOD_MS),
);
