// watchdog run and serve look at their configuration file again: an edit takes effect at once; an
// invalid edit is said once (the log, a notification) and they go on with the last good one (#37).
// Both run on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { controlledServer, recordingReceiver, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

for (const where of PLACES)
  describe(`a live configuration (${where})`, () => {
    test("the loop: an added service is watched at once; an invalid edit is said once, and it goes on", async () => {
      const place = (box = openPlace(where));
      const { server, url } = controlledServer();
      const hook = recordingReceiver();
      stops.push(() => server.stop(true), hook.stop);
      const service = (name: string) => ({ name, check: { http: url, timeout: "1s" } });
      place.configure({ notify: { url: hook.url }, services: [service("api")] });
      const loop = await place.spawnTend(["watchdog", "run", "--interval", "1s"]);
      stops.push(() => loop.kill("SIGKILL"));
      await waitFor(() => place.read("services/api.json") !== "", 10_000, "api judged");
      place.configure({ notify: { url: hook.url }, services: [service("api"), service("web")] });
      await waitFor(() => place.read("services/web.json") !== "", 10_000, "web watched after the edit");
      place.editConfig((text) => text + '\n[[service]]\nname = "web"\n[service.check]\nhttp = "x"\n');
      await waitFor(() => place.read("watchdog.log").includes("[ERROR] configuration:"), 10_000, "the edit said");
      const heartbeat = place.read("heartbeat");
      await waitFor(() => place.read("heartbeat") !== heartbeat, 10_000, "passes go on");
      const log = place.read("watchdog.log");
      expect(log.match(/\[ERROR\] configuration: /g)).toHaveLength(1);
      expect(log).toMatch(
        /\[ERROR\] configuration: .*— still watching with the configuration loaded at \d{4}-\d\d-\d\d /,
      );
      await waitFor(() => hook.received.some((body) => body.startsWith("🛠️")), 10_000, "🛠️ notified");
      expect(hook.received.filter((body) => body.startsWith("🛠️"))).toHaveLength(1);
      loop.kill("SIGTERM");
      expect(await loop.exited).toBe(0);
    }, 60_000);

    test("serve: /api/status follows an edit of the configuration; an invalid edit keeps the last good", async () => {
      const place = (box = openPlace(where));
      const { server, url } = controlledServer();
      stops.push(() => server.stop(true));
      const config = (timeout: string) =>
        place.configure({ services: [{ name: "api", check: { http: url, timeout } }] });
      config("5s");
      await place.tend(["watchdog"]);
      const base = await place.serve();
      const timeout = async () => (await (await fetch(`${base}/api/status`)).json()).services[0].timeout_ms;
      expect(await timeout()).toBe(5000);
      config("9s");
      await waitFor(async () => (await timeout()) === 9000, 5000, "the edit shown");
      place.editConfig((text) => text.replace('timeout = "9s"', 'timeout = "9x"'));
      // Looked at on each request: the next one finds the edit, says it, and answers with the last good one.
      expect(await timeout()).toBe(9000);
      expect(place.read("watchdog.log").match(/\[ERROR\] configuration: /g)).toHaveLength(1);
      expect(await timeout()).toBe(9000);
      expect(place.read("watchdog.log").match(/\[ERROR\] configuration: /g)).toHaveLength(1);
      expect(place.read("watchdog.log")).toContain("still serving with the configuration loaded at");
    }, 60_000);
  });
