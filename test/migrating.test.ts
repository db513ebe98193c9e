// docs/migrating.md, tested: the guide's own watchdog.sh (bash, real curl, flock) and the tend
// configuration the guide derives from it run side by side through five faults, each fault in two
// identical worlds (a private tmux server with the engine and the tunnel panes, an edge in front of
// the tunnel that answers 530 while the tunnel is unreachable, an ntfy receiver).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { alive, BUN, freePort, ROOT, run, Sandbox, SERVER, TEND, waitFor } from "./helpers.ts";

const SCRIPT = join(ROOT, "docs", "migrating", "watchdog.sh");
const GUIDE_CONFIG = readFileSync(join(ROOT, "docs", "migrating", "tend.toml"), "utf8");
const TABLE: string[] = [];

type Service = "engine" | "blogtunnel";

class World {
  readonly box = new Sandbox();
  enginePort = 0;
  tunnelPort = 0;
  /** Requests the edge answers 530 whatever the tunnel does (a Cloudflare outage). */
  edge530 = 0;
  ntfyStatus = 200;
  readonly ntfy: { status: number; body: string }[] = [];
  private readonly servers: ReturnType<typeof Bun.serve>[] = [];
  private logOffset = 0;

  constructor(readonly kind: "old" | "tend") {}

  async start({ engineDelayMs = 0 } = {}) {
    this.enginePort = await freePort();
    this.tunnelPort = await freePort();
    const edge = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 60,
      fetch: async () => {
        if (this.edge530 > 0) {
          this.edge530--;
          return new Response("tunnel error", { status: 530 });
        }
        const upstream = await fetch(`http://127.0.0.1:${this.tunnelPort}/`).catch(() => null);
        return upstream
          ? new Response(await upstream.text(), { status: upstream.status })
          : new Response("", { status: 530 });
      },
    });
    const ntfy = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        this.ntfy.push({ status: this.ntfyStatus, body: await request.text() });
        return new Response("", { status: this.ntfyStatus });
      },
    });
    this.servers.push(edge, ntfy);
    this.edgeUrl = `http://127.0.0.1:${edge.port}/`;
    this.ntfyUrl = `http://127.0.0.1:${ntfy.port}/my-topic`;
    this.engineCmd = `exec '${BUN}' '${SERVER}' ${this.enginePort}${engineDelayMs ? ` --delay ${engineDelayMs}` : ""}`;
    this.tunnelCmd = `exec '${BUN}' '${SERVER}' ${this.tunnelPort}`;
    for (const args of [
      ["new-session", "-d", "-s", "main", "-n", "engine", this.engineCmd],
      ["new-window", "-d", "-t", "main:", "-n", "blogtunnel", this.tunnelCmd],
    ]) {
      const made = this.tmux(...args);
      if (made.exitCode !== 0) throw new Error(`tmux ${args[0]}: ${made.stderr.toString()}`);
    }
    for (const port of [this.enginePort, this.tunnelPort]) {
      const panes = () => this.tmux("list-windows", "-a").stdout.toString();
      const answers = async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null;
      await waitFor(answers, 30_000, `the pane on port ${port}`).catch((error) => {
        throw new Error(`${error.message}; tmux windows now: ${panes()}`);
      });
    }
    if (this.kind === "tend") this.box.writeConfig(this.derivedConfig());
  }

  edgeUrl = "";
  ntfyUrl = "";
  engineCmd = "";
  tunnelCmd = "";

  /** The guide's tend.toml with its URLs and command pointed at this world (each must be there). */
  private derivedConfig(): string {
    let text = GUIDE_CONFIG;
    for (const [from, to] of [
      ["https://ntfy.sh/my-topic", this.ntfyUrl],
      ["http://127.0.0.1:8080/health", `http://127.0.0.1:${this.enginePort}/health`],
      ["cd ~/engine && ./engine --port 8080", this.engineCmd.replaceAll("'", "")],
      // Passes here are seconds apart, not cron's 5 minutes: a 30 s grace that never spans two
      // real passes would skip them. The only change to the guide's decisions, and said here.
      ['grace = "30s"', 'grace = "0s"'],
    ]) {
      expect(text).toContain(from);
      text = text.replace(from, to);
    }
    return `${text}\n[defaults]\ngrace = "0s"\n`;
  }

  tmux(...args: string[]) {
    return Bun.spawnSync(["tmux", ...args], { env: this.box.env() });
  }

  panePid(window: string): number {
    return Number(this.tmux("display-message", "-p", "-t", `main:${window}`, "#{pane_pid}").stdout.toString().trim());
  }

  /** One cron firing: the old script, or tend's two crontab lines (the guide's §8). */
  async pass() {
    const env = {
      DIR: this.box.dir,
      ENGINE_URL: `http://127.0.0.1:${this.enginePort}/health`,
      ENGINE_CMD: this.engineCmd,
      BLOG_URL: this.edgeUrl,
      TUNNEL_CMD: this.tunnelCmd,
      NTFY: this.ntfyUrl,
    };
    if (this.kind === "old") return void (await run(["bash", SCRIPT], { env: this.box.env(env) }));
    await run([TEND, "watchdog", "pass"], { env: this.box.env() });
    const pane = ["--pane", "main:blogtunnel", "--command", this.tunnelCmd];
    await run([TEND, "blogtunnel", "--url", this.edgeUrl, ...pane], { env: this.box.env() });
  }

  get log(): string {
    const path = join(this.box.dir, "watchdog.log");
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  /** The log lines this pass added about one service. */
  newLines(service: Service): string[] {
    const log = this.log;
    const added = log.slice(this.logOffset);
    this.logOffset = log.length;
    return added.split("\n").filter((line) => line.includes(service) && !line.includes("[NOTIFY]"));
  }

  /** The decision this pass made for the service, read from its log, and the counter it left. */
  decision(service: Service): string {
    const lines = this.newLines(service).join("\n");
    let said = "ok";
    const strike = /failure (\d+)\/3/.exec(lines);
    if (strike) said = `strike ${strike[1]}`;
    if (lines.includes("[RESTART]")) said = "restart";
    if (lines.includes("[RECOVERED]")) said += ", recovered";
    if (lines.includes("[FAILED]")) said += ", not recovered";
    return `${said} (${this.counter(service)})`;
  }

  counter(service: Service): string {
    if (this.kind === "tend" && service === "engine") {
      const state = join(this.box.dir, ".local", "state", "tend", "services", "engine.json");
      return `strikes ${existsSync(state) ? JSON.parse(readFileSync(state, "utf8")).strikes : "-"}`;
    }
    const file = join(this.box.dir, `.${service}-fail-count`);
    return `count ${existsSync(file) ? readFileSync(file, "utf8").trim() : "-"}`;
  }

  tagCount(tag: string, service: Service): number {
    return this.log.split("\n").filter((line) => line.includes(`[${tag}]`) && line.includes(service)).length;
  }

  stop() {
    for (const server of this.servers) server.stop(true);
    this.box.cleanup();
  }
}

let worlds: World[] = [];
afterEach(() => {
  for (const world of worlds) world.stop();
  worlds = [];
});
afterAll(() => {
  console.log(["| fault | pass | watchdog.sh | tend |", "|---|---|---|---|", ...TABLE].join("\n"));
});

/** Both worlds, the same fault, pass by pass; returns [old, tend] decisions for each pass. */
async function sideBySide(
  fault: string,
  service: Service,
  passes: number,
  { setup = {}, before = async (_world: World, _pass: number) => {} } = {},
): Promise<{ old: World; tend: World; decisions: [string, string][] }> {
  const old = new World("old");
  const tend = new World("tend");
  worlds = [old, tend];
  await Promise.all([old.start(setup), tend.start(setup)]);
  const decisions: [string, string][] = [];
  for (let pass = 0; pass < passes; pass++) {
    await Promise.all([before(old, pass), before(tend, pass)]);
    await Promise.all([old.pass(), tend.pass()]);
    decisions.push([old.decision(service), tend.decision(service)]);
    TABLE.push(`| ${fault} | ${pass} | ${decisions[pass][0]} | ${decisions[pass][1]} |`);
  }
  return { old, tend, decisions };
}

function sameEvents(old: World, tend: World, service: Service) {
  // `grep -c '\[RESTART\]'` and `grep HUNG` count the same; tend also logs the Nth strike (WARN N/N).
  for (const tag of ["HUNG", "RESTART"]) expect(tend.tagCount(tag, service)).toBe(old.tagCount(tag, service));
  expect(tend.tagCount("WARN", service)).toBe(old.tagCount("WARN", service) + old.tagCount("HUNG", service));
}

describe("docs/migrating.md: the guide's watchdog.sh and its tend.toml side by side", () => {
  test("the guide's config is valid and the guide shows both files as they are tested", async () => {
    const guide = readFileSync(join(ROOT, "docs", "migrating.md"), "utf8");
    expect(guide).toContain("docs/migrating/watchdog.sh");
    expect(guide).toContain("docs/migrating/tend.toml");
    const path = join(ROOT, "docs", "migrating", "tend.toml");
    expect((await run([TEND, "watchdog", "validate", "--config", path])).code).toBe(0);
  });

  test("fault 1: the tunnel's edge answers 530 three times, then 200", async () => {
    const { old, tend, decisions } = await sideBySide("tunnel 530 ×3, then 200", "blogtunnel", 5, {
      before: async (world, pass) => void (pass === 1 && (world.edge530 = 3)),
    });
    expect(decisions.map(([was]) => was)).toEqual([
      "ok (count 0)",
      "strike 1 (count 1)",
      "strike 2 (count 2)",
      "restart (count 0)",
      "ok (count 0)",
    ]);
    expect(decisions.map(([, now]) => now)).toEqual([
      "ok (count 0)",
      "strike 1 (count 1)",
      "strike 2 (count 2)",
      "restart, recovered (count 0)",
      "ok (count 0)",
    ]);
    expect(old.log).toContain("HTTP 530");
    expect(tend.log).toContain("HTTP 530");
    sameEvents(old, tend, "blogtunnel");
  }, 120_000);

  test("fault 2: the engine's pane hangs (alive, never answers)", async () => {
    const { old, tend, decisions } = await sideBySide("engine pane hung", "engine", 4, {
      before: async (world, pass) => {
        if (pass !== 1) return;
        const pid = world.panePid("engine");
        process.kill(pid, "SIGUSR1"); // SIGSTOP cannot freeze a pane: tmux sends SIGCONT
        const answers = () => fetch(`http://127.0.0.1:${world.enginePort}/`, { signal: AbortSignal.timeout(300) });
        await waitFor(async () => (await answers().catch(() => null)) === null, 5000, "deadlock");
      },
    });
    expect(decisions.map(([was]) => was)).toEqual([
      "ok (count 0)",
      "strike 1 (count 1)",
      "strike 2 (count 2)",
      "restart (count 0)",
    ]);
    expect(decisions.map(([, now]) => now)).toEqual([
      "ok (strikes 0)",
      "strike 1 (strikes 1)",
      "strike 2 (strikes 2)",
      "restart, recovered (strikes 0)",
    ]);
    expect(old.log).toContain("HTTP 000");
    expect(tend.log).toContain("(HTTP 000)"); // grep 'HTTP 000' still finds them
    sameEvents(old, tend, "engine");
    expect((await fetch(`http://127.0.0.1:${tend.enginePort}/`)).status).toBe(200);
  }, 240_000);

  test("fault 3: the engine answers in 9 s (slow, not down)", async () => {
    const { tend, decisions } = await sideBySide("engine answers in 9 s", "engine", 3, {
      setup: { engineDelayMs: 9000 },
    });
    // watchdog.sh's --max-time 8 cuts through the answer: a false restart. tend's 20 s does not.
    expect(decisions.map(([was]) => was)).toEqual(["strike 1 (count 1)", "strike 2 (count 2)", "restart (count 0)"]);
    expect(decisions.map(([, now]) => now)).toEqual(["ok (strikes 0)", "ok (strikes 0)", "ok (strikes 0)"]);
    expect(tend.tagCount("RESTART", "engine")).toBe(0);
  }, 240_000);

  test("fault 4: the tunnel's process is killed (its window closes)", async () => {
    let killed = 0;
    const { old, tend, decisions } = await sideBySide("tunnel process killed", "blogtunnel", 5, {
      before: async (world, pass) => {
        if (pass !== 1) return;
        const pid = world.panePid("blogtunnel");
        process.kill(pid, "SIGKILL");
        killed++;
        await waitFor(() => !alive(pid), 5000, "tunnel killed");
        await waitFor(() => !world.tmux("list-windows", "-t", "main").stdout.toString().includes("blogtunnel"), 5000);
      },
    });
    expect(killed).toBe(2);
    // The old respawn-pane finds no window: it logs RESTART, and the tunnel stays down.
    expect(decisions.map(([was]) => was)).toEqual([
      "ok (count 0)",
      "strike 1 (count 1)",
      "strike 2 (count 2)",
      "restart (count 0)",
      "strike 1 (count 1)",
    ]);
    // tend watches the pane's process: gone is a crash, started again in the same pass.
    expect(decisions.map(([, now]) => now)).toEqual([
      "ok (count 0)",
      "restart, recovered (count 0)",
      "ok (count 0)",
      "ok (count 0)",
      "ok (count 0)",
    ]);
    expect(tend.log).toContain("created tmux window main:blogtunnel");
    expect((await fetch(old.edgeUrl)).status).toBe(530);
    expect((await fetch(tend.edgeUrl)).status).toBe(200);
  }, 120_000);

  test("fault 5: ntfy answers 500 when the tunnel restart is announced", async () => {
    const { old, tend, decisions } = await sideBySide("ntfy answers 500", "blogtunnel", 5, {
      before: async (world, pass) => {
        if (pass === 1) [world.edge530, world.ntfyStatus] = [3, 500];
        if (pass === 4) world.ntfyStatus = 200;
      },
    });
    expect(decisions.map(([was]) => was)[3]).toBe("restart (count 0)");
    expect(decisions.map(([, now]) => now)[3]).toBe("restart, recovered (count 0)");
    // watchdog.sh: one 500, nothing logged, never sent again.
    expect(old.ntfy.map((hit) => hit.status)).toEqual([500]);
    expect(old.log).not.toMatch(/notif|ntfy|500/i);
    // tend: logged, spooled, and delivered on the next pass.
    expect(tend.log).toMatch(/\[NOTIFY\] .*500/);
    const delivered = tend.ntfy.filter((hit) => hit.status === 200).map((hit) => hit.body);
    expect(delivered.some((body) => body.includes("blogtunnel"))).toBe(true);
    const spool = join(tend.box.dir, ".local", "state", "tend", "notify-spool.jsonl");
    expect(existsSync(spool) ? readFileSync(spool, "utf8").trim() : "").toBe("");
    sameEvents(old, tend, "blogtunnel");
  }, 120_000);
});
