// watchdog incident: one outage's timeline as a post-mortem tells it, through the binary against real
// processes, held to what report and downtime.log say of the same outage. Each runs on this host and inside
// the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alive, controlledServer, freePort, recordingReceiver, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup([box.scratch("tour.pid").outside]);
});
afterAll(() => closePlaces());

/** The service's PID as tend wrote it, and as this test signals it. */
async function tourPid() {
  const pid = Number(readFileSync(box.scratch("tour.pid").outside, "utf8"));
  return { pid, here: await box.hostPid(pid) };
}

type Line = { at: number; source: string; text: string };

function stamp() {
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  return `${date} ${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
}

for (const where of PLACES)
  describe(where, () => {
    test("a freeze: the last good probe, each strike, HUNG, the restart, the recovery, the notifications", async () => {
      box = openPlace(where);
      const hook = recordingReceiver();
      stops.push(hook.stop);
      const port = await freePort();
      const pidfile = box.scratch("tour.pid").inside;
      box.configure({
        notify: { url: `${hook.url}/topic` },
        services: [
          {
            name: "tour",
            pidfile,
            grace: "0s",
            failures: 2,
            cooldown: "0s",
            verify_timeout: "10s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "500ms" },
            restart: { spawn: [box.bun, box.server, String(port)] },
          },
        ],
      });
      expect((await box.tend(["watchdog"])).stdout).toContain("[START] tour");
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "up");
      expect((await box.tend(["watchdog"])).code).toBe(0); // a good probe
      const { pid: frozen, here: frozenHere } = await tourPid();
      process.kill(frozenHere, "SIGSTOP");
      await box.tend(["watchdog"]); // 1/2
      const second = await box.tend(["watchdog"]); // 2/2: HUNG, the restart, verified
      expect(second.stdout).toContain("[RECOVERED] tour recovered");
      await waitFor(() => hook.received.some((body) => body.startsWith("✅")), 10_000, "the ✅");

      const incident = JSON.parse((await box.tend(["watchdog", "incident", "tour", "--json"])).stdout);
      const timeline: Line[] = incident.timeline;
      const index = (pattern: RegExp) => timeline.findIndex((line) => pattern.test(line.text));
      const story = [
        index(/^last good probe \(\d+ms\)$/),
        index(/^\[WARN\] tour failed health check .*failure 1\/2/),
        index(/^\[HUNG\] tour failed 2 checks in a row/),
        index(/^\[RESTART\] tour: /),
        index(/^\[RECOVERED\] tour recovered/),
      ];
      expect(story.every((at) => at >= 0)).toBe(true);
      expect([...story].sort((a, b) => a - b)).toEqual(story); // in this order
      expect(timeline[story[0]].source).toBe("tend");
      // The service's own words around the restart: the new process's first line, after the restart (its
      // output file looked at just before the action and after the verification), before the recovery.
      const revived = /started pid (\d+)/.exec(timeline[story[3]].text)![1];
      const said = timeline.findIndex((line) => line.source === "service" && line.text.includes(`pid ${revived}`));
      expect(timeline[said]?.text).toMatch(new RegExp(`^listening on ${port} pid ${revived} \\(written between `));
      expect(said).toBeGreaterThan(story[3]);
      expect(said).toBeLessThan(story[4] + 1);
      expect(timeline.some((line) => line.source === "service" && line.text.includes(`pid ${frozen}`))).toBe(true);
      const notified = timeline.filter((line) => line.source === "notification").map((line) => line.text);
      expect(notified.some((text) => text.startsWith("⚠️ tour failed 2 checks"))).toBe(true);
      expect(notified.some((text) => text.startsWith("✅ tour recovered"))).toBe(true);
      const seconds = timeline.map((line) => Math.floor(line.at / 1000)); // a log line is stamped to its second
      expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
      // The numbers: as downtime.log and report say them for this outage.
      const downtime = /\[DOWNTIME\] tour was unavailable for (\d+)s/.exec(box.read("downtime.log"))!;
      expect(incident.numbers.down_s).toBe(Number(downtime[1]));
      const report = JSON.parse((await box.tend(["watchdog", "report", "tour", "--json", "--since", "1h"])).stdout);
      expect(report.services[0].downtime_s).toBe(incident.numbers.down_s);
      expect(incident.numbers.detected_s).toBeGreaterThanOrEqual(0);
      expect(incident.numbers.restarted_s).toBeGreaterThanOrEqual(incident.numbers.detected_s);
      expect(incident.numbers.recovered_s).toBeGreaterThanOrEqual(0);
      expect(incident.outage).toMatchObject({ open: false, reason: expect.any(String) });
      // The post-mortem's table, and the same outage chosen by its time.
      const markdown = (await box.tend(["watchdog", "incident", "tour", "--markdown"])).stdout;
      console.log(markdown);
      expect(markdown).toStartWith("## tour: outage of ");
      expect(markdown).toContain("| time | source | what |");
      expect(markdown).toMatch(
        /\*\*Numbers:\*\* detected after \d+s; restarted after \d+s; recovered \d+s after the restart; down \d+s\./,
      );
      const at = new Date(Date.parse(incident.outage.from) + 500).toISOString();
      const same = JSON.parse((await box.tend(["watchdog", "incident", "tour", "--at", at, "--json"])).stdout);
      expect(same.outage).toEqual(incident.outage);
      // The page links the outage's events to this timeline.
      const base = await box.serve();
      const page = await (await fetch(`${base}/`)).text();
      const link = /<a href="(\/incident\?service=tour&(?:amp|#38);at=[^"]+)">timeline<\/a>/.exec(page);
      if (!link) throw new Error(`no timeline link: ${page.match(/<ol class="rows">.*?<\/ol>/gs)?.join("\n")}`);
      const linked = await fetch(`${base}${link[1].replace(/&(amp|#38);/g, "&")}`);
      expect(linked.status).toBe(200);
      const body = await linked.text();
      expect(body).toStartWith(
        `tour: outage ${markdown.slice("## tour: outage of ".length, "## tour: outage of ".length + 19)}`,
      );
      expect(body).toContain("[RESTART] tour: ");
    }, 60_000);

    test("a line the service wrote with no time of its own: placed between the two passes that saw it", async () => {
      box = openPlace(where);
      const port = await freePort();
      const pidfile = box.scratch("tour.pid").inside;
      // A service that says why it dies, in words with no time (as most do), to the output file tend made.
      const script = box.scratch("dies.ts").inside;
      box.writeScratch(
        "dies.ts",
        `const say = (line) => require("node:fs").writeSync(1, line + "\\n");\n` +
          `say("warming cache");\n` +
          `Bun.serve({ port: ${port}, hostname: "127.0.0.1", fetch(request) {\n` +
          `  if (new URL(request.url).pathname === "/die") {\n` +
          `    say("out of memory: giving up"); setTimeout(() => process.exit(1), 50); }\n` +
          `  return new Response("ok"); } });\n`,
      );
      box.configure({
        services: [
          {
            name: "tour",
            pidfile,
            grace: "0s",
            cooldown: "0s",
            check: { http: `http://127.0.0.1:${port}/` },
            restart: { spawn: [box.bun, script] },
          },
        ],
      });
      expect((await box.tend(["watchdog"])).stdout).toContain("[START] tour");
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "up");
      expect((await box.tend(["watchdog"])).code).toBe(0); // a look at its output: "warming cache" is there
      const first = (await tourPid()).here;
      await fetch(`http://127.0.0.1:${port}/die`);
      await waitFor(() => !alive(first), 10_000, "gone");
      expect((await box.tend(["watchdog"])).stdout).toMatch(/\[WARN\] tour is not running .*\(crash\)/);

      const incident = JSON.parse((await box.tend(["watchdog", "incident", "tour", "--json"])).stdout);
      const timeline: Line[] = incident.timeline;
      const said = timeline.findIndex(
        (line) => line.source === "service" && /^out of memory: giving up/.test(line.text),
      );
      const found = timeline.findIndex((line) => /^\[WARN\] tour is not running/.test(line.text));
      expect(said).toBeGreaterThanOrEqual(0);
      expect(timeline[said].text).toMatch(
        /^out of memory: giving up \(written between \d\d:\d\d:\d\d and \d\d:\d\d:\d\d\)$/,
      );
      // Written before the pass that found it gone, and placed so (the whole timeline said if not: seen once,
      // in make fresh-check's first run, not since).
      if (said >= found) console.log(timeline.map((line) => `${line.at} ${line.source} ${line.text}`).join("\n"));
      expect(said).toBeLessThan(found);
      // Said while it started: the file was looked at just before the start (0 bytes) and after its
      // verification, so the line is placed between the two, after the START.
      const warming = timeline.findIndex((line) => line.source === "service" && line.text.startsWith("warming cache"));
      const start = timeline.findIndex((line) => /^\[START\] tour: started pid/.test(line.text));
      expect(warming).toBeGreaterThan(start);
      expect(timeline[warming].text).toMatch(/\(written between \d\d:\d\d:\d\d and \d\d:\d\d:\d\d\)$/);
    }, 60_000);

    test("usage: no outage, an unknown service, a bad --at; outside text is sanitised", async () => {
      box = openPlace(where);
      box.configure({ services: [{ name: "quiet", check: { tcp: "127.0.0.1:1" } }] });
      const none = await box.tend(["watchdog", "incident", "quiet"]);
      expect(none).toMatchObject({ code: 2, stderr: expect.stringContaining("no outage of quiet is recorded") });
      expect((await box.tend(["watchdog", "incident", "nosuch"])).stderr).toContain("no such service: nosuch");
      expect((await box.tend(["watchdog", "incident", "quiet", "--at", "yesterday"])).stderr).toContain(
        '--at: "yesterday" is not a time',
      );
      expect((await box.tend(["watchdog", "incident", "--last", "--at", "2026-01-01 00:00:00"])).code).toBe(2);
      // A failing check's words (outside text) go through the sanitiser: no escape sequence reaches the terminal.
      for (let pass = 0; pass < 3; pass++) await box.tend(["watchdog"]);
      const log = box.stateFile("watchdog.log");
      writeFileSync(log, readFileSync(log, "utf8") + `[${stamp()}] [WARN] quiet said \u001b[31mred\u001b[0m\n`);
      const text = (await box.tend(["watchdog", "incident", "quiet"])).stdout;
      expect(text).toContain("quiet: outage");
      expect(text).not.toContain("\u001b");
    });

    test("a busy spell that was not restarted: its BUSY lines, no restart, the numbers say so", async () => {
      box = openPlace(where);
      const { control, server, url } = controlledServer();
      stops.push(() => server.stop(true));
      const busyLog = box.scratch("engine.log").inside;
      box.writeScratch("engine.log", "indexing\n");
      box.configure({
        services: [
          {
            name: "engine",
            failures: 2,
            check: { http: url, timeout: "1s" },
            busy: { log: busyLog, fresh: "10m" },
            restart: { command: ["true"] },
          },
        ],
      });
      await box.tend(["watchdog"]);
      control.status = 503;
      for (let pass = 0; pass < 3; pass++) await box.tend(["watchdog"]);
      control.status = 200;
      await box.tend(["watchdog"]);
      const incident = JSON.parse((await box.tend(["watchdog", "incident", "engine", "--json"])).stdout);
      const texts = incident.timeline.map((line: Line) => line.text);
      expect(texts.some((text: string) => /^\[BUSY\] engine /.test(text))).toBe(true);
      expect(texts.some((text: string) => /^\[RESTART\]/.test(text))).toBe(false);
      expect(incident.numbers).toMatchObject({ restarted_s: null, recovered_s: null });
      expect((await box.tend(["watchdog", "incident", "engine"])).stdout).toContain("not restarted");
    });

    test("a crash in loop mode: the loop's crash watch starts it again; the timeline says so", async () => {
      box = openPlace(where);
      const port = await freePort();
      const pidfile = box.scratch("tour.pid").inside;
      box.configure({
        services: [
          {
            name: "tour",
            pidfile,
            grace: "0s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "1s" },
            restart: { spawn: [box.bun, box.server, String(port)] },
          },
        ],
      });
      const loop = await box.spawnTend(["watchdog", "run", "--interval", "1h"]);
      stops.push(() => loop.kill("SIGKILL"));
      await waitFor(() => box.read("watchdog.log").includes("[START] tour"), 20_000, "started by the loop");
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => null)) !== null, 10_000, "up");
      // Its first start verified (healthy), then killed: a crash, not a start that failed.
      await waitFor(() => box.read("services/tour.json").includes('"word":"healthy"'), 20_000, "verified healthy");
      process.kill((await tourPid()).here, "SIGKILL");
      await waitFor(
        () => /\[RECOVERED\] tour/.test(box.read("watchdog.log")),
        20_000,
        "started again and verified",
      ).catch((error) => {
        throw new Error(`${error}\n${box.read("watchdog.log")}`);
      });
      loop.kill("SIGTERM");
      await loop.exited;
      const incident = JSON.parse((await box.tend(["watchdog", "incident", "tour", "--json"])).stdout);
      expect(incident.outage.reason).toBe("crash");
      const texts: string[] = incident.timeline.map((line: Line) => line.text);
      expect(texts.some((text) => /^\[RESTART\] tour: /.test(text))).toBe(true);
      expect(texts.some((text) => /^\[RECOVERED\] tour/.test(text))).toBe(true);
      expect(incident.numbers.restarted_s).toBeLessThanOrEqual(2); // the crash watch, not the next pass an hour later
    }, 60_000);
  });

// The library's ordering, on a state and log written here: a log line is stamped to the second and
// placed at its end, after everything stamped finer in it — its last millisecond too (a look at
// 36.9992 once sorted after a line stamped 36, in make fresh-check: +999 was not the end of the second).
test("a line seen by a look in the last millisecond of a second comes before the log line of that second", async () => {
  await inAStateDir(async ({ state, config, second, freshState, localStamp, collectIncident }) => {
    writeFileSync(join(state, "services", "tour.out"), "out of memory: giving up\n");
    const log = `[${localStamp(new Date(second))}] [WARN] tour is not running (pid 7 is gone): starting it (crash)\n`;
    writeFileSync(join(state, "watchdog.log"), log);
    const recorded = {
      ...freshState(),
      outages: [{ from: second, to: second + 2000, reason: "crash" }],
      // The look before the line was written, and the one that saw it: in the last millisecond of the second.
      outputMarks: [
        [second - 90, 0],
        [second + 999.2385, 25],
      ] as [number, number][],
    };
    const incident = await collectIncident(config, "tour", { now: second + 5000, read: () => recorded });
    const texts = incident.timeline.map((line) => line.text);
    const said = texts.findIndex((line) => line.startsWith("out of memory: giving up (written between"));
    const found = texts.findIndex((line) => line.startsWith("[WARN] tour is not running"));
    expect(said).toBeGreaterThanOrEqual(0);
    expect(said).toBeLessThan(found);
  });
});

// A restart, its verification and the look after it in one second (the loaded flake of `a freeze`): the
// log says only the second, the state's events say each line's millisecond — the new process's line,
// seen by the look after the verification, comes after [RESTART] and before [RECOVERED].
test("a restart, its new process's line and its recovery in one second are told in that order", async () => {
  await inAStateDir(async ({ state, config, second, freshState, localStamp, collectIncident }) => {
    writeFileSync(join(state, "services", "tour.out"), "listening on 8080 pid 42\n");
    const stamp = `[${localStamp(new Date(second))}]`;
    const lines = [
      ["HUNG", "tour failed 2 checks in a row: no answer within 2.0s (HTTP 000)"],
      ["RESTART", "tour: started pid 42"],
      ["RECOVERED", "tour recovered after restart"],
    ];
    writeFileSync(join(state, "watchdog.log"), lines.map(([tag, said]) => `${stamp} [${tag}] ${said}\n`).join(""));
    const recorded = {
      ...freshState(),
      outages: [{ from: second - 30_000, to: second + 900, reason: "hung" }],
      events: [
        { at: second + 40, tag: "HUNG", message: lines[0][1], event: "restart" },
        { at: second + 120, tag: "RESTART", message: lines[1][1] },
        { at: second + 910, tag: "RECOVERED", message: lines[2][1], event: "recovered" },
      ],
      // Just before the action, and after the verification.
      outputMarks: [
        [second + 60, 0],
        [second + 905, 25],
      ] as [number, number][],
    };
    const incident = await collectIncident(config, "tour", { now: second + 5000, read: () => recorded });
    const texts = incident.timeline.filter((line) => line.source !== "notification").map((line) => line.text);
    const at = (start: string) => texts.findIndex((line) => line.startsWith(start));
    const story = [
      at("[HUNG] tour"),
      at("[RESTART] tour"),
      at("listening on 8080 pid 42 (written between"),
      at("[RECOVERED]"),
    ];
    expect(story.every((index) => index >= 0)).toBe(true);
    expect([...story].sort((a, b) => a - b)).toEqual(story);
  });
});

// #64: an open outage said "not detected as down; not restarted" beside the 🚨 it sent, and its timeline was
// the service's whole access log. Now: open, detected by the 🚨, and the service's lines around events only.
test("an open outage: said open, detected by its 🚨, and only the service's lines around the events", async () => {
  await inAStateDir(async ({ state, config, second, freshState, localStamp, collectIncident }) => {
    const { renderIncident } = await import("../lib/views/incident.ts");
    const stamp = (ms: number) => localStamp(new Date(ms));
    // An access log: a stamped line every 100 ms for 50 s, across the outage.
    const access = Array.from({ length: 500 }, (_, i) => `${stamp(second - 20_000 + i * 100)} GET / 200 ${i}`);
    writeFileSync(join(state, "services", "tour.out"), access.join("\n") + "\n");
    const failed = "tour: tour.service is failed: restart held";
    writeFileSync(join(state, "watchdog.log"), `[${stamp(second)}] [WARN] ${failed}\n`);
    const recorded = {
      ...freshState(),
      outage: { since: second, reason: "failing", notified: true },
      events: [{ at: second + 5, tag: "WARN", message: failed, event: "failed" }],
    };
    const now = second + 30_000;
    const incident = await collectIncident(config, "tour", { now, read: () => recorded });
    expect(incident.outage.open).toBe(true);
    expect(incident.numbers.detected_s).toBe(0); // the 🚨 sent with the first WARN
    const own = incident.timeline.filter((line) => line.source === "service");
    expect(own.length).toBeGreaterThan(0);
    expect(own.length).toBeLessThanOrEqual(2 * 20 * 2); // two events (the line, its 🚨): 20 before and after each
    expect(renderIncident(incident)).toContain(`open: down since ${stamp(second)}, not yet recovered`);
    expect(renderIncident(incident)).not.toContain("not detected as down");
  });
});

/** A state dir with one spawn service `tour`, its config, and a second a minute ago: the ordering tests' place. */
async function inAStateDir(
  body: (place: {
    state: string;
    config: import("../lib/config/types.ts").Config;
    second: number;
    freshState: typeof import("../lib/core/state.ts").freshState;
    localStamp: typeof import("../lib/core/time.ts").localStamp;
    collectIncident: typeof import("../lib/views/incident.ts").collectIncident;
  }) => Promise<void>,
) {
  const { mkdtempSync, mkdirSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { parseConfig } = await import("../lib/config/load.ts");
  const { freshState } = await import("../lib/core/state.ts");
  const { localStamp } = await import("../lib/core/time.ts");
  const { collectIncident } = await import("../lib/views/incident.ts");
  const dir = mkdtempSync(join(tmpdir(), "tend-incident-"));
  try {
    const state = join(dir, "state");
    mkdirSync(join(state, "services"), { recursive: true, mode: 0o700 });
    const text =
      `[watchdog]\nstate_dir = "${state}"\n[[service]]\nname = "tour"\npidfile = "${dir}/tour.pid"\n` +
      `[service.check]\nhttp = "http://127.0.0.1:9/"\n[service.restart]\nspawn = ["true"]\n`;
    const config = parseConfig(text, join(dir, "tend.toml"));
    const second = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    await body({ state, config, second, freshState, localStamp, collectIncident });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
