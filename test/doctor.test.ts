// tend doctor on this host: what is here is ok, what is not is missing or limited, and the exit
// code follows what the configuration uses.
import { afterEach, expect, test } from "bun:test";
import { chmodSync, mkdirSync } from "node:fs";
import { Sandbox } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

const rowsOf = (stdout: string) =>
  Object.fromEntries(JSON.parse(stdout).capabilities.map((row: { name: string }) => [row.name, row]));

test("doctor: one row per capability; --send-test delivers; exit 0 when what the config uses works", async () => {
  box = new Sandbox();
  const received: string[] = [];
  const hook = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      received.push(await request.text());
      return new Response("ok");
    },
  });
  box.writeConfig(`
[watchdog]
state_dir = "${box.state}"
[notify]
url = "http://127.0.0.1:${hook.port}/topic"
[[service]]
name = "blog"
[service.check]
tcp = "127.0.0.1:1"
[service.restart]
tmux = "main:blog"
run = "true"
`);
  const run = await box.tend(["doctor", "--json"]);
  expect(run.code).toBe(0);
  const rows = rowsOf(run.stdout);
  for (const name of [
    "flock",
    "process start times",
    "RSS (/proc)",
    "listeners (/proc/net/tcp)",
    "tmux",
    "systemctl",
    "launchctl",
    "cron",
    "Termux:Boot",
    "state dir",
    "config",
    "notify target",
  ]) {
    expect(["ok", "missing", "limited"]).toContain(rows[name]?.status);
  }
  expect(rows.tmux).toMatchObject({ status: "ok", used: true, detail: expect.stringMatching(/^tmux \d/) });
  expect(rows.flock.status).toBe("ok");
  expect(rows.launchctl).toMatchObject({ status: "missing", used: false });
  expect(rows["notify target"]).toMatchObject({
    status: "ok",
    detail: `http://127.0.0.1:${hook.port}/… reachable (--send-test sends one)`,
  });
  expect(received).toEqual([]); // reachable is a connection, not a message

  const sent = await box.tend(["doctor", "--send-test"]);
  expect(sent.code).toBe(0);
  expect(sent.stdout).toMatch(/notify target\s+ok\s+test message to http:\/\/127\.0\.0\.1:\d+\/…: HTTP 200/);
  expect(received).toEqual([expect.stringMatching(/^tend doctor: a test notification from /)]);
  hook.stop(true);
});

test("doctor: exit 1 when something the config uses is missing (state dir others may write, launchd)", async () => {
  box = new Sandbox();
  mkdirSync(box.state);
  chmodSync(box.state, 0o777);
  box.writeConfig(`
[watchdog]
state_dir = "${box.state}"
[[service]]
name = "agent"
launchd = "org.example.agent"
[service.check]
process = true
`);
  const run = await box.tend(["doctor"]);
  expect(run.code).toBe(1);
  expect(run.stdout).toMatch(/state dir\s+missing\s+.* mode 0777: chmod go-w /);
  expect(run.stdout).toMatch(/launchctl\s+missing\s+not macOS\n\s+affects: restart\.launchd/);
  const noConfig = await box.tend(["doctor", "--json"], { env: { TEND_CONFIG: `${box.dir}/none.toml` } });
  expect(noConfig.code).toBe(1);
  expect(rowsOf(noConfig.stdout).config).toMatchObject({
    status: "missing",
    detail: expect.stringContaining("no such file"),
  });
});
