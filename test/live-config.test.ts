// watchdog run and serve look at their configuration file again: an edit takes effect at once; an
// invalid edit is said once (the log, a notification) and they go on with the last good one (#37).
import { afterEach, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { controlledServer, recordingReceiver, Sandbox, TEND, waitFor } from "./helpers.ts";

let box: Sandbox;
const stops: (() => void)[] = [];
afterEach(() => {
  while (stops.length) stops.pop()!();
  box?.cleanup();
});

test("the loop: an added service is watched at once; an invalid edit is said once, and it goes on", async () => {
  box = new Sandbox();
  const { server, url } = controlledServer();
  const hook = recordingReceiver();
  stops.push(() => server.stop(true), hook.stop);
  const service = (name: string) => ({ name, check: { http: url, timeout: "1s" } });
  box.configure({ notify: { url: hook.url }, services: [service("api")] });
  const loop = Bun.spawn([TEND, "watchdog", "run", "--interval", "1s"], { env: box.env(), stdout: "ignore" });
  box.track(loop.pid);
  stops.push(() => loop.kill("SIGKILL"));
  await waitFor(() => box.read("services/api.json") !== "", 10_000, "api judged");
  box.configure({ notify: { url: hook.url }, services: [service("api"), service("web")] });
  await waitFor(() => box.read("services/web.json") !== "", 10_000, "web watched after the edit");
  writeFileSync(
    box.config,
    readFileSync(box.config, "utf8") + '\n[[service]]\nname = "web"\n[service.check]\nhttp = "x"\n',
  );
  await waitFor(() => box.read("watchdog.log").includes("[ERROR] configuration:"), 10_000, "the invalid edit said");
  const heartbeat = box.read("heartbeat");
  await waitFor(() => box.read("heartbeat") !== heartbeat, 10_000, "passes go on");
  await waitFor(() => box.read("heartbeat") !== heartbeat && box.read("services/web.json") !== "", 5000, "again");
  const log = box.read("watchdog.log");
  expect(log.match(/\[ERROR\] configuration: /g)).toHaveLength(1);
  expect(log).toMatch(/\[ERROR\] configuration: .*— still watching with the configuration loaded at \d{4}-\d\d-\d\d /);
  await waitFor(() => hook.received.some((body) => body.startsWith("🛠️")), 10_000, "🛠️ notified");
  expect(hook.received.filter((body) => body.startsWith("🛠️"))).toHaveLength(1);
  loop.kill("SIGTERM");
  expect(await loop.exited).toBe(0);
}, 60_000);

test("serve: /api/status follows an edit of the configuration; an invalid edit keeps the last good one", async () => {
  box = new Sandbox();
  const { server, url } = controlledServer();
  stops.push(() => server.stop(true));
  const config = (timeout: string) => box.configure({ services: [{ name: "api", check: { http: url, timeout } }] });
  config("5s");
  await box.tend(["watchdog"]);
  const base = await box.serve();
  const timeout = async () => (await (await fetch(`${base}/api/status`)).json()).services[0].timeout_ms;
  expect(await timeout()).toBe(5000);
  config("9s");
  await waitFor(async () => (await timeout()) === 9000, 5000, "the edit shown");
  writeFileSync(box.config, readFileSync(box.config, "utf8").replace('timeout = "9s"', 'timeout = "9x"'));
  // Looked at on each request: the next one finds the edit, says it, and answers with the last good one.
  expect(await timeout()).toBe(9000);
  expect(box.read("watchdog.log").match(/\[ERROR\] configuration: /g)).toHaveLength(1);
  expect(await timeout()).toBe(9000);
  expect(box.read("watchdog.log").match(/\[ERROR\] configuration: /g)).toHaveLength(1);
  expect(box.read("watchdog.log")).toContain("still serving with the configuration loaded at");
}, 60_000);
