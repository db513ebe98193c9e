// watchdog serve (and run --serve): the binary listening on a real port, asked over real HTTP. Each runs on
// this host and inside the Termux-shaped phone (test/places.ts; the phone shares this host's network, and
// the browser, curl and promtool ask it from here), but the strace of what the page opens (the phone has
// no strace) and the page built in slices (the library's, in this process).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchBrowser, SIDEWAYS, type Sideways } from "./browser.ts";
import { ageHeartbeat, controlledServer, freePort, ROOT, Sandbox, TEND, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Background, type Place, type PlaceName } from "./places.ts";

/** Every service's series names its host: the instance both alert paths give. */
const instance = () => `instance="${box.hostname}",`;

let box: Place;
let where: PlaceName = "host";
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await box?.cleanup();
});
afterAll(() => closePlaces());

const TOKEN = "s3cret-serve-token-0123456789";
const SECRETS = ["hunter2pass", "notifysecrettopic", "peersecretpath", "peer-token-secret-0123", TOKEN];
const PEER = `peers = [{ url = "http://127.0.0.1:9/peersecretpath", token = "peer-token-secret-0123" }]`;

function configWith(url: string, serve = "") {
  box.writeConfig(`
[watchdog]
state_dir = "${box.state}"
heartbeat_url = ""
[notify]
url = "http://127.0.0.1:9/notifysecrettopic"
${serve}
[[service]]
name = "web"
[service.check]
http = "${url.replace("http://", "http://op:hunter2pass@")}"
`);
}

/** Start `tend watchdog ARGS` in its own group (under `wrapper`, if given); resolves with the URL it serves. */
async function start(
  args: string[],
  wrapper: string[] = [],
): Promise<{ url: string; child: Background; lines: string[] }> {
  const child = await box.spawnTend(["watchdog", ...args], wrapper);
  stops.push(() => child.kill("SIGKILL"));
  const lines: string[] = [];
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value);
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
  })();
  await waitFor(() => lines.some((line) => line.startsWith("serving ")), 10_000, "serving line");
  const url = /serving (\S+)/.exec(lines.find((line) => line.startsWith("serving "))!)![1];
  return { url, child, lines };
}

const get = (url: string, init: RequestInit = {}) => fetch(url, { ...init, redirect: "manual" });

for (const place of PLACES)
  describe(place, () => {
    beforeAll(() => void (where = place));
    test("serve: /healthz fresh or stale, /api/* = the --json outputs, /metrics valid, 400/404/405", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url);
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);

      const health = await get(`${url}healthz`);
      expect(health.status).toBe(200);
      expect(await health.text()).toMatch(/^ok: last pass \d+s ago, expected every 300s\n$/);
      for (const [name, value] of Object.entries({
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
      }))
        expect(health.headers.get(name)).toBe(value);

      const status = await (await get(`${url}api/status`)).json();
      const cli = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
      expect(status).toEqual(cli);
      expect(status.services[0]).toMatchObject({ name: "web", state: "healthy" });
      const stats = await (await get(`${url}api/stats`)).json();
      expect(stats).toEqual(JSON.parse((await box.tend(["watchdog", "stats", "--json"])).stdout));
      const report = await (await get(`${url}api/report?since=1h`)).json();
      expect(report.services.map((row: { name: string }) => row.name)).toEqual(["web"]);
      expect(Date.parse(report.until) - Date.parse(report.since)).toBe(3_600_000);

      const metrics = await (await get(`${url}metrics`)).text();
      expect(metrics).toContain(`tend_service_up{${instance()}service="web"} 1`);
      const promtool = process.env.PROMTOOL ?? "build/tools/promtool";
      if (!existsSync(promtool)) throw new Error(`promtool not found at ${promtool}: make test builds it`);
      const check = Bun.spawnSync([promtool, "check", "metrics"], { stdin: new TextEncoder().encode(metrics) });
      expect(check.stderr.toString() + check.stdout.toString()).toBe("");

      const bad = await get(`${url}api/report?since=%1b[31mnever`);
      expect(bad.status).toBe(400);
      expect(await bad.text()).toStartWith('since: "\\x1b[31mnever" is not a duration');
      expect((await get(`${url}nope`)).status).toBe(404);
      const post = await get(`${url}api/status`, { method: "POST", body: "x" });
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");

      // The last pass 20 minutes ago, every 5 minutes expected: stale, and the body says so.
      const old = new Date(Date.now() - 20 * 60_000).toISOString();
      writeFileSync(box.stateFile("heartbeat"), `${old}\ninterval 5m\n`);
      const stale = await get(`${url}healthz`);
      expect(stale.status).toBe(503);
      expect(await stale.text()).toMatch(/^stale: the watchdog is not running \(last pass 1[12]\d\ds ago/);
      const page = await (await get(url)).text();
      expect(page).toMatch(
        /STALE: the watchdog is not running since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d — last pass 20 min ago/,
      );
      expect(page).toContain(`<main class="stale">`); // every card greyed
    }, 60_000);

    test("each bar: one path per kind of cell, one title naming what was not up; no shape per point", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url);
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      web.control.status = 503;
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      web.control.status = 200;
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      const body = await (await get(url)).text();
      // Issue #42: 7,895 rects with a title each made a page of 100 services 966 KB.
      expect(body).not.toMatch(/<(rect|circle)\b/);
      const bars = [...body.matchAll(/<svg class="bars"[^>]*>(.*?)<\/svg>/g)].map(([, inside]) => inside);
      expect(bars.length).toBe(2); // 24 h and 30 days
      for (const bar of bars) {
        expect(bar.match(/<title>/g)?.length).toBe(1);
        expect(bar.match(/<path class="c-(up|degraded|down|none)" d="[Mhvz\d -]+"\/>/g)?.length).toBeLessThanOrEqual(4);
      }
      // Before the first pass: no data; the failed probe's cell is not up; each span from–to in local time.
      const [day] = bars.map((bar) => /<title>([^<]*)<\/title>/.exec(bar)![1]);
      expect(day).toMatch(/^the last 24 hours: no data \d\d:\d\d–\d\d:\d\d, (degraded|down) \d\d:\d\d–\d\d:\d\d$/);
      // The latency chart's probes: one path per outcome (the failed one red), the histogram one path.
      expect(body.match(/<path class="p-ok" d="M\d+ \d+h\d+(m-?\d+ -?\d+h\d+)*"\/>/g)?.length).toBe(1);
      expect(body.match(/<path class="p-bad" d="M\d+ \d+h0"\/>/g)?.length).toBe(1);
      const buckets = /<title>probes by latency: ([^<]*)<\/title>/.exec(body)![1];
      expect([...buckets.matchAll(/–[^:,]+: (\d+)/g)].reduce((sum, [, count]) => sum + Number(count), 0)).toBe(3);
    });

    test("serve: off loopback a token is required; without it 401; no secret in any answer", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url, `[serve]\nlisten = "0.0.0.0:0"`);
      const refused = await box.tend(["watchdog", "validate"]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("serve.token: is required when serve.listen is not loopback (0.0.0.0:0)");
      configWith(web.url);
      const flag = await box.tend(["watchdog", "serve", "--listen", "0.0.0.0:0"]);
      expect(flag.code).toBe(2);
      expect(flag.stderr).toContain("is not loopback: set [serve] token first");

      configWith(web.url, `[serve]\nlisten = "0.0.0.0:0"\ntoken = "${TOKEN}"\n${PEER}`);
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      const plan = (await box.tend(["watchdog", "plan"])).stdout;
      expect(plan).not.toContain(TOKEN);
      const { url, lines } = await start(["serve"]);
      expect(lines[0]).toContain("(token required)");
      const local = url.replace("0.0.0.0", "127.0.0.1");
      for (const authorization of [undefined, "Bearer wrong-token-0123456789", `Basic ${btoa(`x:${TOKEN}`)}`, TOKEN]) {
        const answer = await get(`${local}api/status`, { headers: authorization ? { authorization } : {} });
        expect(answer.status).toBe(401);
        expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="tend"');
      }
      // The scheme is case-insensitive: "bearer" is Bearer.
      expect((await get(`${local}api/status`, { headers: { authorization: `bearer ${TOKEN}` } })).status).toBe(200);
      const authorized = { headers: { authorization: `Bearer ${TOKEN}` } };
      // A window past 365 days (or a number too large to be a time) is a 400 that says so, never a 500.
      const far = await get(`${local}api/report?since=9999999999999`, authorized);
      expect(far.status).toBe(400);
      expect(await far.text()).toContain("is not a duration up to 365d");
      for (const path of ["", "healthz", "api/status", "api/stats", "api/report?since=1d", "metrics", "nope"]) {
        const answer = await get(`${local}${path}`, authorized);
        expect(answer.status).toBe(path === "nope" ? 404 : 200);
        const body = await answer.text();
        for (const secret of SECRETS) expect(body).not.toContain(secret);
      }
    }, 60_000);

    test("serve: configuration errors exit 2 and name the key", async () => {
      box = openPlace(where);
      for (const [serve, message] of [
        ['listen = "9841"', 'serve.listen: "9841" is not ADDR:PORT'],
        ['listen = "127.0.0.1:70000"', 'serve.listen: "127.0.0.1:70000" is not ADDR:PORT'],
        ['token = "short"', "serve.token: must be at least 16 characters, without spaces"],
        ['peers = ["ftp://vm:9841"]', "serve.peers[0].url:"],
        ['peers = [{ url = "http://vm:9841", token = "x" }]', "serve.peers[0].token: must be a string of at least 16"],
        ['listen = "127.0.0.1:1"\ncolour = true', "serve.colour: unknown key"],
      ]) {
        configWith("http://127.0.0.1:9/", `[serve]\n${serve}`);
        const result = await box.tend(["watchdog", "serve"]);
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(message);
      }
    });

    test("run --serve: one process runs the passes and answers; SIGTERM stops both, exit 0", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url);
      const { url, child } = await start(["run", "--interval", "1s", "--serve", "--listen", "127.0.0.1:0"]);
      await waitFor(async () => (await get(`${url}healthz`)).status === 200, 20_000, "a fresh pass");
      await waitFor(async () => (await (await get(`${url}api/status`)).json()).services[0].state === "healthy", 20_000);
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
      expect(await get(`${url}healthz`).catch(() => null)).toBeNull();
    }, 60_000);

    // #62 F2: a FIFO where a service's output file was, then one GET /incident: a blocking open stopped
    // the loop (no more passes, /healthz silent, SIGTERM ignored). Now the one reader refuses it at once.
    test("run --serve: a FIFO as a service's output file, GET /incident: answered, the passes go on", async () => {
      box = openPlace(where);
      box.writeConfig(
        `[watchdog]\nstate_dir = "${box.state}"\nheartbeat_url = ""\n[[service]]\nname = "web"\nfailures = 1\n` +
          `pidfile = "${box.scratch("web.pid").inside}"\n` +
          `cooldown = "0s"\n[service.check]\ntcp = "127.0.0.1:1"\ntimeout = "200ms"\n` +
          `[service.restart]\nspawn = ["true"]\n`,
      );
      const { url, child } = await start(["run", "--interval", "1s", "--serve", "--listen", "127.0.0.1:0"]);
      const out = box.stateFile("services/web.out");
      await waitFor(() => existsSync(out), 20_000, "the output file tend made");
      await waitFor(async () => (await get(`${url}incident?service=web`)).status === 200, 20_000, "an outage");
      rmSync(out);
      expect(Bun.spawnSync(["mkfifo", out]).exitCode).toBe(0);
      chownSync(out, box.uid, box.uid);
      const asked = await get(`${url}incident?service=web`, { signal: AbortSignal.timeout(10_000) });
      expect(asked.status).toBe(200);
      expect(await asked.text()).toStartWith("web: outage ");
      // The loop still passes: /healthz's last pass moves on after the request.
      const lastPass = async () => JSON.parse(await (await get(`${url}api/status`)).text()).last_pass;
      const then = await lastPass();
      await waitFor(async () => (await lastPass()) !== then, 20_000, "a pass after the request");
      expect((await get(`${url}healthz`)).status).toBe(200);
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }, 60_000);

    test("the page in chromium at 360 and 1280 px: nothing scrolls sideways; card events newest first", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      // A peer host: another tend with its own state dir and serve.
      const peerBox = new Sandbox();
      stops.push(() => peerBox.cleanup());
      peerBox.writeConfig(
        `[watchdog]\nstate_dir = "${peerBox.state}"\n` +
          `[[service]]\nname = "phone-recorder"\n[service.check]\nhttp = "${web.url}"\n`,
      );
      expect((await peerBox.tend(["watchdog", "pass"])).code).toBe(0);
      const peerServe = Bun.spawn([TEND, "watchdog", "serve", "--listen", "127.0.0.1:0"], {
        env: peerBox.env(),
        stdout: "pipe",
        detached: true,
      });
      peerBox.track(peerServe.pid);
      const peerLine = (await new Response(peerServe.stdout).body!.getReader().read()).value!;
      const peerUrl = /serving (\S+)/.exec(new TextDecoder().decode(peerLine))![1];
      const downPeer = `http://127.0.0.1:${await freePort()}/`;
      // Long words that do not break by themselves: a 150-character token, a long service name.
      const unbroken = "x".repeat(150);
      const flag = box.scratch("down").inside;
      box.configure({
        serve: { peers: [`${peerUrl}`, `${downPeer}`] },
        services: [
          { name: "blog", check: { http: web.url } },
          {
            name: "hostile-and-rather-long-service-name-for-a-phone",
            failures: 1,
            cooldown: "0s",
            verify_timeout: "1s",
            check: {
              command: [
                "sh",
                "-c",
                `[ -e ${flag} ] || exit 0; echo '<script>alert(1)</script><img src=x> ${unbroken}'; exit 1`,
              ],
            },
            restart: { command: ["rm", "-f", `${flag}`] },
          },
        ],
      });
      await box.tend(["watchdog", "pass"]);
      box.writeScratch("down", ""); // down, restarted (the restart clears it), recovered: events and a downtime line
      await box.tend(["watchdog", "pass"]);
      box.writeScratch("down", "");
      await box.tend(["watchdog", "pass"]);
      expect(box.read("downtime.log")).toContain("[DOWNTIME] hostile");
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      const page = await get(url);
      expect(page.status).toBe(200);
      const csp = page.headers.get("content-security-policy")!;
      expect(csp).toMatch(/^default-src 'none'; style-src 'nonce-[A-Za-z0-9+/=]+'; /);
      const body = await page.text();
      expect(body).not.toMatch(/<(script|img|link|iframe)\b/i); // nothing to load, nothing to run
      expect(body).not.toMatch(/<[a-z]+\s[^>]*\b(src|xlink:href)=/i);
      // The only links: an outage's events to its timeline on this same server (navigation, nothing loaded).
      const hrefs = [...body.matchAll(/<([a-z]+)\s[^>]*\bhref="([^"]*)"/gi)].map(([, tag, href]) => `${tag} ${href}`);
      expect(hrefs.filter((href) => !/^a \/incident\?service=/.test(href))).toEqual([]);
      expect(body).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");

      const browser = await launchBrowser(box.scratch("chromium").outside);
      stops.push(() => browser.close());
      for (const [width, height] of [
        [360, 800],
        [1280, 800],
      ]) {
        await browser.open(url, width, height);
        const sideways = await browser.evaluate<Sideways>(SIDEWAYS);
        expect(sideways).toEqual({ scrollWidth: width, innerWidth: width, scrolling: [], past: [] });
        // States are upper-cased: the words compared in lower case.
        const text = (await browser.evaluate<string>("document.body.innerText")).toLowerCase();
        for (const word of ["blog", "healthy", "hostile", "phone-recorder", "unreachable", "recent events", "30 days"])
          expect(text).toContain(word);
        expect(text).toContain("<script>alert(1)</script>"); // shown as the words it is (lower-cased above)
        expect(await browser.evaluate<number>(`document.querySelectorAll("script, img").length`)).toBe(0); // never run
        // The hostile service's own events, newest first: the last RECOVERED above the RESTART before it.
        const events = await browser.evaluate<string[]>(
          `[...document.querySelectorAll("section.card")].find((card) => card.innerText.includes("hostile"))` +
            `.querySelectorAll("ol.rows li").values().map((row) => row.innerText).toArray()`,
        );
        expect(events.length).toBeGreaterThanOrEqual(4);
        expect(events[0]).toContain("recovered");
        expect(events.findIndex((row) => row.includes("): restarting"))).toBeGreaterThan(0);
        const blogEvents = await browser.evaluate<string>(
          `[...document.querySelectorAll("section.card")].find((card) => card.innerText.includes("blog")).innerText`,
        );
        expect(blogEvents).not.toContain("hostile"); // each card its own events
        // Nothing of tend's own needs an emoji font (a fresh Debian has none: ✅ and ⏱ were empty boxes):
        // each icon a coloured dot, no glyph; states and counts in words.
        const icons = await browser.evaluate<{ text: string; width: number; colour: string }[]>(
          `[...document.querySelectorAll(".rows .icon")].map((icon) => ({ text: icon.textContent, ` +
            `width: icon.getBoundingClientRect().width, colour: getComputedStyle(icon).backgroundColor }))`,
        );
        expect(icons.length).toBeGreaterThanOrEqual(4);
        const drawn = (icon: (typeof icons)[0]) =>
          icon.text === "" && icon.width > 4 && icon.colour !== "rgba(0, 0, 0, 0)";
        expect(icons.filter((icon) => !drawn(icon))).toEqual([]);
        expect(icons.some((icon) => icon.colour === "rgb(198, 40, 40)")).toBe(true); // an alarm's red
        const ours = await browser.evaluate<string>(
          `[...document.querySelectorAll(".state, .banner, .warn, .card > p, h1, h2, h3")]` +
            `.map((element) => element.textContent).join(" ")`,
        );
        expect(ours).not.toMatch(/\p{Extended_Pictographic}/u);
        const screenshot = join(ROOT, "build", where === "host" ? `page-${width}.png` : `page-${where}-${width}.png`);
        rmSync(screenshot, { force: true });
        await browser.screenshot(screenshot);
        expect(statSync(screenshot).size).toBeGreaterThan(10_000);
      }
      // A stale watchdog greys every card, and says since when.
      ageHeartbeat(box.stateFile(""), Date.now() - 3_600_000);
      await browser.open(url, 360, 800);
      const greyed = await browser.evaluate<string[]>(
        `[...document.querySelectorAll("section.card")].map((card) => getComputedStyle(card).filter)`,
      );
      expect(greyed).toEqual(["grayscale(1)", "grayscale(1)"]);
      expect(await browser.evaluate<string>("document.body.innerText")).toMatch(
        /STALE: the watchdog is not running since/,
      );
    }, 180_000);

    test("the page takes ?token= once: a cookie, the token gone from the URL; the cookie opens the API", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url, `[serve]\ntoken = "${TOKEN}"`);
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      expect((await get(url)).status).toBe(401);
      expect((await get(`${url}?token=wrong-token-0123456789`)).status).toBe(401);
      const handed = await get(`${url}?token=${TOKEN}`);
      expect(handed.status).toBe(303);
      expect(handed.headers.get("location")).toBe("/");
      const cookie = handed.headers.get("set-cookie")!;
      const port = new URL(url).port;
      // A random session id of this server (named for its port), for 12 hours: never the token itself.
      expect(cookie).toMatch(
        new RegExp(`^tend_session_${port}=[\\w-]{32}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200$`),
      );
      expect(cookie).not.toContain(TOKEN);
      const headers = { cookie: cookie.split(";")[0] };
      const page = await get(url, { headers });
      expect(page.status).toBe(200);
      expect(await page.text()).not.toContain(TOKEN);
      expect((await get(`${url}api/status`, { headers })).status).toBe(200);
      // A made-up session, or the token as a cookie, opens nothing.
      for (const forged of [`tend_session_${port}=${"A".repeat(32)}`, `tend_session_${port}=${TOKEN}`])
        expect((await get(`${url}api/status`, { headers: { cookie: forged } })).status).toBe(401);
    });

    test("serve on loopback answers only a loopback Host (DNS rebinding reads nothing): 421 otherwise", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      configWith(web.url);
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      const port = new URL(url).port;
      const curl = async (host: string) => {
        const child = Bun.spawn([
          "curl",
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "-H",
          `Host: ${host}`,
          `${url}api/status`,
        ]);
        return new Response(child.stdout).text();
      };
      expect(await curl("evil.example")).toBe("421");
      expect(await curl(`evil.example:${port}`)).toBe("421");
      expect(await curl("127.0.0.1:1")).toBe("421"); // another port: not this server's name
      expect(await curl(`localhost:${port}`)).toBe("200");
      expect(await curl(`127.0.0.1:${port}`)).toBe("200");
      expect(await curl(`[::1]:${port}`)).toBe("200");
    });

    test("a hostile peer's answer (a detail whose toString is no function) is unreachable, never a 500", async () => {
      box = openPlace(where);
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      const hostile = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () =>
          Response.json({
            last_pass: null,
            watchdog: { stale: false },
            services: [{ name: "x", state: "healthy", probe: { detail: { toString: 1 }, ok: true } }],
          }),
      });
      stops.push(() => hostile.stop(true));
      configWith(web.url, `[serve]\npeers = [{ url = "http://127.0.0.1:${hostile.port}/" }]`);
      await box.tend(["watchdog", "pass"]);
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      const page = await get(url);
      expect(page.status).toBe(200);
      const body = await page.text();
      expect(body).toContain("unreachable");
      expect(body).toContain("not a tend /api/status answer");
    });

    test("the page's events come from the recorded events, never the raw log (whose argvs are whole)", async () => {
      box = openPlace(where);
      box.configure({
        services: [
          {
            name: "db",
            failures: 1,
            grace: "0s",
            verify_timeout: "1s",
            check: { tcp: "127.0.0.1:1", timeout: "300ms" },
            restart: { command: ["env", "MYSQL_PWD=hunter-9x-pass", "true"] },
          },
        ],
      });
      await box.tend(["watchdog", "pass"]);
      expect(box.read("watchdog.log")).toContain("hunter-9x-pass"); // the log (0600) keeps the whole argv
      const { url } = await start(["serve", "--listen", "127.0.0.1:0"]);
      const body = await (await get(url)).text();
      expect(body).toContain("Recent events");
      // Newest first: the 🚨 of the failed restart, above the restart said as its program and argument count.
      expect(body).toMatch(
        /<span class="icon t-alarm" title="🚨" aria-hidden="true"><\/span><span class="words">db did not recover/,
      );
      expect(body.indexOf("db did not recover")).toBeLessThan(body.indexOf("db: command env … (2 args)"));
      expect(body).not.toContain("hunter-9x-pass");
    });
  });

test("the page reads a state file once for three views, and again only once a pass wrote it (strace)", async () => {
  box = openPlace("host");
  const web = controlledServer();
  stops.push(() => web.server.stop(true));
  configWith(web.url);
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  const trace = box.scratch("open.trace").outside;
  const { url } = await start(
    ["serve", "--listen", "127.0.0.1:0"],
    ["strace", "-f", "-e", "trace=openat", "-o", trace],
  );
  const opens = () =>
    readFileSync(trace, "utf8")
      .split("\n")
      .filter((line) => line.includes("/services/web.json")).length;
  const before = opens();
  const page = await get(url);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("web"); // status, the 24-hour report and the histogram
  expect(opens() - before).toBe(1);
  await (await get(`${url}api/status`)).text();
  expect(opens() - before).toBe(2); // a new request reads it anew
  // The page again, nothing written since: the state it kept (the file looked at, not read).
  expect(await (await get(url)).text()).toContain("web");
  expect(opens() - before).toBe(2);
  // A pass writes the state (a strike): the page reads it again and shows it.
  web.control.status = 500;
  expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
  const struck = await (await get(url)).text();
  expect(opens() - before).toBe(3);
  expect(struck).toContain("strikes 1/3");
});

test("a big host's page is built in slices: timers due meanwhile (run --serve's crash watch) fire in it", async () => {
  const sandbox = new Sandbox();
  stops.push(() => sandbox.cleanup());
  const services = 100;
  const lines = [`[watchdog]`, `state_dir = "${sandbox.state}"`];
  for (let index = 0; index < services; index++)
    lines.push(`[[service]]`, `name = "s${index}"`, `check.tcp = "127.0.0.1:1"`, `restart.command = ["true"]`);
  sandbox.writeConfig(lines.join("\n"));
  const { parseConfig } = await import("../lib/config/load.ts");
  const { freshState, OUTAGE_HISTORY } = await import("../lib/core/state.ts");
  const { writeState } = await import("../lib/state/service-state.ts");
  const { ensureStateDir } = await import("../lib/state/dir.ts");
  const { answer } = await import("../lib/views/serve.ts");
  const config = parseConfig(readFileSync(sandbox.config, "utf8"), sandbox.config);
  ensureStateDir(sandbox.state);
  const now = Date.now();
  for (let index = 0; index < services; index++) {
    const state = freshState();
    state.firstHealthyAt = now - 8 * 86_400_000;
    for (let outage = 0; outage < OUTAGE_HISTORY; outage++) {
      const from = now - 7 * 86_400_000 + outage * 600_000;
      state.outages.push({ from, to: from + 60_000, reason: "failing", incident: outage % 3 === 0 });
    }
    const samples = Array.from({ length: 1000 }, (_, at) => `${now - 86_400_000 + at * 86_400},${20 + (at % 50)},1`);
    state.latencyLog = samples.join(" ");
    state.latencyCount = samples.length;
    writeState(sandbox.state, `s${index}`, state, { durable: false });
  }
  // A hundred such services take tens of ms of work on any machine (more when it is loaded, and then
  // more slices): built in one go, a 1 ms timer would fire at most once or twice before the end.
  for (const path of ["/", "/api/stats", "/api/report"]) {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const response = await answer(config, new Request(`http://127.0.0.1:9841${path}`));
    clearInterval(ticker);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("s99");
    expect({ path, ticks: ticks >= 3 }).toEqual({ path, ticks: true });
  }
});
