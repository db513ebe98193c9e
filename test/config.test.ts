// Configuration: lookup order, defaults, and a table of malformed configs, each run through the binary.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../lib/config.ts";
import { formatDuration, parseDuration } from "../lib/duration.ts";
import { Sandbox } from "./helpers.ts";

const box = new Sandbox();
afterAll(() => box.cleanup());

const service = (body: string, check = 'http = "http://127.0.0.1:9/"') => `[[service]]\nname = "web"\n${body}\n[service.check]\n${check}\n`;

// [name, config text, what the error must say]
const MALFORMED: [string, string, string][] = [
  ["not TOML", "[watchdog\n", "not valid TOML: TOML Parse error: Expected ']' to close a table header"],
  ["bad duration", service("", 'http = "http://x/"\ntimeout = "20x"'), 'service[0].check.timeout: "20x" is not a duration'],
  ["negative duration", "[defaults]\ngrace = -5\n", 'defaults.grace: -5 is not a duration'],
  ["duration as bool", "[defaults]\ncooldown = true\n", "defaults.cooldown: true is not a duration"],
  ["unknown top-level key", "colour = 1\n", "colour: unknown key"],
  ["unknown watchdog key", "[watchdog]\nintervall = \"5m\"\n", "watchdog.intervall: unknown key"],
  ["unknown service key", service('restrat = "x"'), "service[0].restrat: unknown key"],
  ["unknown check key", service("", 'http = "http://x/"\nexpected = [200]'), "service[0].check.expected: unknown key"],
  ["unknown defaults key", "[defaults]\nname = \"x\"\n", "defaults.name: unknown key"],
  ["missing name", '[[service]]\n[service.check]\nhttp = "http://x/"\n', "service[0].name: is required"],
  ["bad name", '[[service]]\nname = "my blog"\n[service.check]\nhttp = "http://x/"\n', 'service[0].name: "my blog" may only hold'],
  ["duplicate names", service("") + service(""), 'service[1].name: "web" is already used by service[0]'],
  ["no check", '[[service]]\nname = "web"\n', "service[0].check: is required"],
  ["two checks", service("", 'http = "http://x/"\ntcp = "127.0.0.1:80"'), "service[0].check: has http and tcp; exactly one of"],
  ["check not a table", '[[service]]\nname = "web"\ncheck = "http://x/"\n', 'service[0].check: "http://x/" is a string, expected a table'],
  ["bad URL", service("", 'http = "ftp://x/"'), 'service[0].check.http: "ftp://x/" is not an http:// or https:// URL'],
  ["bad status", service("", 'http = "http://x/"\nexpect = [200, 999]'), "service[0].check.expect: [200,999] is not a non-empty array of HTTP status codes"],
  ["expect with fail_codes", service("", 'http = "http://x/"\nexpect = [200]\nfail_codes = [502]'), "exclude each other"],
  ["contains on tcp", service("", 'tcp = "127.0.0.1:80"\ncontains = "ok"'), "service[0].check.contains: does not apply to a tcp check"],
  ["bad tcp address", service("", 'tcp = "127.0.0.1"'), 'service[0].check.tcp: "127.0.0.1" is not "host:port"'],
  ["tcp port out of range", service("", 'tcp = "127.0.0.1:70000"'), 'is not "host:port" (port 1-65535)'],
  ["command not an array", service("", 'command = "curl -f x"'), 'service[0].check.command: "curl -f x" is not an array of strings'],
  ["empty command", service("", "command = []"), "service[0].check.command: must name a program"],
  ["process without pid source", service("", "process = true"), "service[0].check.process: needs a PID source"],
  ["process = false", service('pidfile = "x.pid"', "process = false"), "service[0].check.process: false: only process = true is allowed"],
  ["log without fresh", service("", 'log = "/var/log/x"'), "service[0].check.fresh: is required with check.log"],
  ["headers not strings", service("", 'http = "http://x/"\nheaders = { X = 1 }'), "service[0].check.headers:"],
  ["failures zero", service("failures = 0"), "service[0].failures: 0 is not an integer >= 1"],
  ["failures fractional", service("failures = 2.5"), "service[0].failures: 2.5 is not an integer >= 1"],
  ["concurrency zero", "[watchdog]\nconcurrency = 0\n", "watchdog.concurrency: 0 is not an integer from 1 to 1024"],
  ["interval too short", '[watchdog]\ninterval = "10ms"\n', "watchdog.interval: must be at least 1s"],
  ["enabled not boolean", service('enabled = "yes"'), 'service[0].enabled: "yes" is a string, expected true or false'],
  ["two restarts", service('[service.restart]\ncommand = ["true"]\ntmux = "a:b"'), "service[0].restart: has tmux and command; exactly one of"],
  ["spawn without pidfile", service('[service.restart]\nspawn = ["sleep", "1"]'), "service[0].pidfile: is required with restart.spawn"],
  ["tmux without run", service('[service.restart]\ntmux = "main:blog"'), "service[0].restart.run: is required with restart.tmux"],
  ["tmux bad target", service('[service.restart]\ntmux = "main"\nrun = "x"'), 'service[0].restart.tmux: "main" is not "session:window"'],
  ["run on command restart", service('[service.restart]\ncommand = ["true"]\nrun = "x"'), "service[0].restart.run: does not apply to restart.command"],
  ["unknown dependency", service('depends_on = ["db"]'), 'service[0].depends_on: "db" is not a configured service'],
  ["self dependency", service('depends_on = ["web"]'), 'service[0].depends_on: "web" is the service itself'],
  [
    "dependency cycle",
    '[[service]]\nname = "a"\ndepends_on = ["b"]\n[service.check]\ntcp = "h:1"\n[[service]]\nname = "b"\ndepends_on = ["a"]\n[service.check]\ntcp = "h:1"\n',
    "depends_on: cycle a -> b -> a",
  ],
  ["service not an array", '[service]\nname = "x"\n', "service: must be an array of tables"],
  ["requires unknown key", service('[service.requires]\nhost = "x"'), "service[0].requires.host: unknown key"],
  ["bad notify format", '[notify]\nformat = "pigeon"\n', 'notify.format: "pigeon" is not one of text, json, slack, discord, telegram, alertmanager'],
  ["bad notify url", '[notify]\nurl = "mailto:me@example.org"\n', "notify.url: "],
  ["notify retries too many", "[notify]\nretries = 50\n", "notify.retries: 50 is not an integer from 0 to 10"],
  ["bad heartbeat url", '[watchdog]\nheartbeat_url = "hc-ping.com/abc"\n', "watchdog.heartbeat_url: "],
  ["metrics_file not a string", '[watchdog]\nmetrics_file = 1\n', "watchdog.metrics_file: 1 is a number, expected a string"],
  ["track_restarts without a unit", service("track_restarts = true"), 'service[0].track_restarts: needs unit = "NAME.service"'],
  ["busy with neither port nor log", service("[service.busy]\nmax = \"10m\""), "service[0].busy: needs port, log, or both"],
  ["busy port out of range", service("[service.busy]\nport = 0"), "service[0].busy.port: 0 is not an integer from 1 to 65535"],
  ["memory size unreadable", service('pidfile = "x.pid"\n[service.memory]\nlimit = "lots"'), 'service[0].memory.limit: "lots" is not a size'],
  ["memory without a PID source", service('[service.memory]\nlimit = "1GiB"'), "service[0].memory: needs a PID source"],
  ["two PID sources", service('pidfile = "x.pid"\nunit = "x.service"'), "service[0].unit: a service has one PID source: pidfile and unit given"],
  ["JSON with a bad type", '{"watchdog": {"concurrency": "16"}}', 'watchdog.concurrency: "16" is not an integer'],
];

describe("malformed configurations: exit 2, the key path named, nothing done", () => {
  test.each(MALFORMED)("%s", async (_name, text, message) => {
    const dir = join(box.dir, `case-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    const path = join(dir, text.startsWith("{") ? "tend.json" : "tend.toml");
    // The state dir lives inside the case dir: a pass that acted at all would create it.
    writeFileSync(path, text.startsWith("{") ? text : `${text}`);
    const env = { TEND_STATE_DIR: join(dir, "state") };
    const validate = await box.tend(["watchdog", "validate", "--config", path], { env });
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain(message);
    const pass = await box.tend(["watchdog", "pass", "--config", path], { env });
    expect(pass.code).toBe(2);
    expect(pass.stdout).toBe("");
    expect(existsSync(join(dir, "state"))).toBe(false);
  });
  test("there are at least 30 of them", () => expect(MALFORMED.length).toBeGreaterThanOrEqual(30));
});

describe("configuration lookup and defaults", () => {
  test("--config > $TEND_CONFIG > $XDG_CONFIG_HOME/tend/tend.toml > /etc/tend/tend.toml", async () => {
    const xdg = join(box.dir, "xdg");
    mkdirSync(join(xdg, "tend"), { recursive: true });
    writeFileSync(join(xdg, "tend", "tend.toml"), service("", 'tcp = "127.0.0.1:1"').replace('"web"', '"from-xdg"'));
    const viaEnv = join(box.dir, "env.toml");
    writeFileSync(viaEnv, service("", 'tcp = "127.0.0.1:1"').replace('"web"', '"from-env"'));
    const viaFlag = join(box.dir, "flag.json");
    writeFileSync(viaFlag, JSON.stringify({ service: [{ name: "from-flag", check: { tcp: "127.0.0.1:1" } }] }));
    const plan = async (args: string[], env: Record<string, string>) => (await box.tend(["watchdog", "plan", ...args], { env })).stdout;
    expect(await plan(["--config", viaFlag], { TEND_CONFIG: viaEnv, XDG_CONFIG_HOME: xdg })).toContain('[service "from-flag"]');
    expect(await plan([], { TEND_CONFIG: viaEnv, XDG_CONFIG_HOME: xdg })).toContain('[service "from-env"]');
    expect(await plan([], { TEND_CONFIG: "", XDG_CONFIG_HOME: xdg })).toContain('[service "from-xdg"]');
    const none = await box.tend(["watchdog", "validate"], { env: { TEND_CONFIG: "", XDG_CONFIG_HOME: join(box.dir, "nothing") } });
    if (!existsSync("/etc/tend/tend.toml")) {
      expect(none.code).toBe(2);
      expect(none.stderr).toContain("no configuration found");
    }
  });

  test("[defaults] fill every service; the service and then the check override them", () => {
    const config = parseConfig(
      `[defaults]\ntimeout = "7s"\nfailures = 4\ncooldown = "1m"\n[[service]]\nname = "a"\nfailures = 2\n[service.check]\ntcp = "h:1"\n[[service]]\nname = "b"\n[service.check]\ntcp = "h:1"\ntimeout = "250ms"\n`,
      "/x/tend.toml",
      { HOME: "/home/u" },
    );
    const [a, b] = config.services;
    expect([a.failures, a.timeoutMs, a.cooldownMs, a.graceMs]).toEqual([2, 7000, 60_000, 30_000]);
    expect([b.failures, b.timeoutMs, b.check.timeoutMs]).toEqual([4, 250, 250]);
    expect(config.watchdog.stateDir).toBe("/home/u/.local/state/tend");
    expect(config.watchdog.log).toBe("/home/u/.local/state/tend/watchdog.log");
  });

  test("state_dir: the key, else $TEND_STATE_DIR, else $XDG_STATE_HOME/tend; ~ expands", () => {
    const text = (dir?: string) => (dir ? `[watchdog]\nstate_dir = "${dir}"\n` : "");
    expect(parseConfig(text("~/st"), "/c/t.toml", { HOME: "/h", TEND_STATE_DIR: "/e" }).watchdog.stateDir).toBe("/h/st");
    expect(parseConfig(text(), "/c/t.toml", { HOME: "/h", TEND_STATE_DIR: "/e" }).watchdog.stateDir).toBe("/e");
    expect(parseConfig(text(), "/c/t.toml", { HOME: "/h", XDG_STATE_HOME: "/x" }).watchdog.stateDir).toBe("/x/tend");
  });

  test("plan is stable: sorted keys, every default filled in", async () => {
    const path = join(box.dir, "plan.toml");
    writeFileSync(path, `[watchdog]\nstate_dir = "/s"\n` + service('pidfile = "web.pid"\n[service.restart]\nspawn = ["srv"]'));
    const first = await box.tend(["watchdog", "plan", "--config", path]);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe((await box.tend(["watchdog", "plan", "--config", path])).stdout);
    const block = first.stdout.split('[service "web"]\n')[1].trim().split("\n");
    const keys = block.map((line) => line.split(" = ")[0]);
    expect(keys).toEqual([...keys].sort());
    expect(block).toContain('verify_timeout = "1m"');
    expect(block).toContain('restart.output = "/s/web.out"');
    expect(block).toContain('pidfile = "/s/web.pid"');
  });
});

describe("durations", () => {
  test.each([
    ["250ms", 250], ["20s", 20_000], ["5m", 300_000], ["1h", 3_600_000], ["1d", 86_400_000], [30, 30_000], ["1.5s", 1500], ["0s", 0],
  ] as [string | number, number][])("%p = %p ms", (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each(["20x", "", "5 m", "-1s", "1m30s", "s"])("%p is not a duration", (text) => expect(parseDuration(text)).toBeNull());
  test("format round-trips", () => {
    for (const ms of [250, 20_000, 300_000, 3_600_000, 86_400_000, 90_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});

describe("bundled examples", () => {
  test("examples/tend.toml, the annotated reference, is a valid configuration", async () => {
    const result = await box.tend(["watchdog", "validate", "--config", join(import.meta.dir, "..", "examples", "tend.toml")]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("ok (5 services)");
  });
});
