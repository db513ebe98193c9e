// notify against a local webhook that fails in every way a real one does, then recovers; its failures
// (curl -f semantics, retries, the spool, dead letters), its formats and receivers' rules: every test on
// this host and inside the phone (test/places.ts).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { fixtureServer, freePort, killAll, spooledLine, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

type Mode = "ok" | "500" | "404" | "429" | "hang" | "401" | "424" | "429-telegram" | "429-discord" | "kuma-gone";
interface Seen {
  path: string;
  method: string;
  search: string;
  headers: Record<string, string>;
  /** The body as sent live: a late message's note (below) taken out, so both compare as one. */
  body: string;
  /** A late message's `late since T` note, as it was in the body (null: sent live). */
  late: string | null;
  raw: string;
  at: number;
  answered: Mode;
}

/** A late message's note, raw (text) or inside a JSON string. */
const LATE = /(?:\n|\\n)\(late since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/;

/** A webhook whose answers follow a script: each request takes the next mode (the last repeats). */
const hook = { modes: ["ok"] as Mode[], seen: [] as Seen[] };
let server: ReturnType<typeof Bun.serve>;
let base = "";
const SECRET = "tk_9f8e7d6c5b4a";

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 30,
    async fetch(request) {
      const url = new URL(request.url);
      const mode = hook.modes.length > 1 ? hook.modes.shift()! : hook.modes[0];
      hook.seen.push({
        path: url.pathname,
        search: url.search,
        method: request.method,
        headers: Object.fromEntries(request.headers),
        ...(await request
          .text()
          .then((raw) => ({ raw, body: raw.replace(LATE, ""), late: LATE.exec(raw)?.[0] ?? null }))),
        at: Date.now(),
        answered: mode,
      });
      switch (mode) {
        case "500":
          return new Response("E".repeat(150) + "F".repeat(150), { status: 500 });
        case "404":
          return new Response("no such topic", { status: 404 });
        case "401":
          return new Response(`bad token ${SECRET}`, { status: 401 });
        case "429":
          return new Response("slow down", { status: 429, headers: { "Retry-After": "1" } });
        case "kuma-gone": // Uptime Kuma's push endpoint, for a token it does not know or a paused monitor
          return Response.json({ ok: false, msg: "Monitor not found or not active." }, { status: 500 });
        case "424": // Apprise API: an upstream receiver failed
          return new Response('{"error":"one or more notifications could not be sent"}', { status: 424 });
        case "429-telegram": // no Retry-After header: the wait is in the JSON answer
          return Response.json({ ok: false, error_code: 429, parameters: { retry_after: 2 } }, { status: 429 });
        case "429-discord":
          return Response.json(
            { message: "You are being rate limited.", retry_after: 2.5, global: false },
            { status: 429 },
          );
        case "hang":
          await Bun.sleep(3000);
          return new Response("late");
        default:
          return new Response("ok");
      }
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => {
  server.stop(true);
  closePlaces();
});

let at: Place | null = null;
/** The example services a test started (each in its own process group). */
const fixtures: number[] = [];
afterEach(async () => {
  killAll(fixtures.splice(0));
  await at?.cleanup();
  at = null;
  hook.modes = ["ok"];
  hook.seen = [];
});

/** This test's place (this host or the phone), as setupIn or openIn made it. */
const here = () => at!;
function openIn(where: PlaceName): Place {
  return (at = openPlace(where));
}
function setupIn(where: PlaceName, notify: string, url = `${base}/topic/${SECRET}`) {
  const place = openIn(where);
  place.writeConfig(
    `[watchdog]\nstate_dir = "${place.state}"\n[notify]\nurl = "${url}"\ntimeout = "500ms"\n${notify}\n`,
  );
}
const notify = (...args: string[]) => here().tend(["notify", ...args]);
const spool = () =>
  here()
    .read("notify-spool.jsonl")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));

for (const where of PLACES)
  describe(`formats: each checked by the server that receives it (${where})`, () => {
    test("text (ntfy): body, Title, Priority, Tags headers", async () => {
      setupIn(where, "retries = 0");
      const result = await notify(
        "--title",
        "Disk",
        "--priority",
        "high",
        "--tag",
        "warning",
        "--tag",
        "disk",
        "disk 91% full",
      );
      expect(result.code).toBe(0);
      const [request] = hook.seen;
      expect(request.path).toBe(`/topic/${SECRET}`);
      expect(request.body).toBe("disk 91% full");
      expect(request.headers.title).toBe("Disk");
      expect(request.headers.priority).toBe("high");
      expect(request.headers.tags).toBe("warning,disk");
    });

    test.each([
      [
        "json",
        "/hook",
        (body: any) => expect(body).toMatchObject({ message: "hello", title: "T", event: "restart", service: "web" }),
      ],
      ["slack", "/services/T0/B0/xyz", (body: any) => expect(body).toEqual({ text: "*T*\nhello" })],
      // Discord: allowed_mentions with no parse types pings nobody.
      [
        "discord",
        "/api/webhooks/1/abc",
        (body: any) => expect(body).toEqual({ content: "T\nhello", allowed_mentions: { parse: [] } }),
      ],
    ] as [string, string, (body: unknown) => void][])("%s", async (format, path, check) => {
      setupIn(where, `format = "${format}"\nretries = 0`, `${base}${path}`);
      expect((await notify("--title", "T", "--event", "restart", "--service", "web", "hello")).code).toBe(0);
      expect(hook.seen[0].path).toBe(path);
      expect(hook.seen[0].headers["content-type"]).toBe("application/json");
      check(JSON.parse(hook.seen[0].body));
    });

    test("telegram: bot API sendMessage with the chat id from the URL", async () => {
      setupIn(where, 'format = "telegram"\nretries = 0', `${base}/bot123:${SECRET}/sendMessage?chat_id=-1001`);
      expect((await notify("hello")).code).toBe(0);
      expect(hook.seen[0].path).toBe(`/bot123:${SECRET}/sendMessage`);
      expect(JSON.parse(hook.seen[0].body)).toEqual({ chat_id: "-1001", text: "hello" });
    });

    test("alertmanager: POST /api/v2/alerts with labels and annotations", async () => {
      setupIn(where, 'format = "alertmanager"\nretries = 0', base);
      expect(
        (await notify("--event", "restart", "--service", "web", "--priority", "critical", "web restarted")).code,
      ).toBe(0);
      expect(hook.seen[0].path).toBe("/api/v2/alerts");
      const [alert] = JSON.parse(hook.seen[0].body);
      expect(alert.labels).toMatchObject({
        alertname: "TendNotification",
        event: "restart",
        service: "web",
        severity: "critical",
      });
      expect(alert.annotations.description).toBe("web restarted");
      expect(Date.parse(alert.startsAt)).toBeGreaterThan(0);
    });

    test("--dry-run prints the request it would send, URL redacted, and sends nothing", async () => {
      setupIn(where, "retries = 0");
      const result = await notify("--dry-run", "--title", "T", "hello");
      expect(result.stdout).toBe(`POST ${base}/…\nContent-Type: text/plain; charset=utf-8\nTitle: T\n\nhello\n`);
      expect(hook.seen.length).toBe(0);
    });

    test("MESSAGE - reads stdin", async () => {
      setupIn(where, "retries = 0");
      expect((await here().shell(`echo from stdin | ${here().tendPath} notify -`)).code).toBe(0);
      expect(hook.seen[0].body).toBe("from stdin");
    });
  });

for (const where of PLACES)
  describe(`failures: curl -f semantics, retries, nothing lost (${where})`, () => {
    test("500: retried (1 + retries attempts), exit 1, status and 200 characters on stderr, spooled", async () => {
      setupIn(where, "retries = 2");
      hook.modes = ["500"];
      const result = await notify("--service", "web", "first");
      expect(result.code).toBe(1);
      expect(hook.seen.length).toBe(3);
      // The first 200 characters of the answer, marked as cut.
      expect(result.stderr).toContain(`HTTP 500: ${"E".repeat(150)}${"F".repeat(50)}…;`);
      expect(result.stderr).not.toContain("F".repeat(51));
      expect(spool().map((message) => message.message)).toEqual(["first"]);
    }, 20_000);

    test("404: not retried", async () => {
      setupIn(where, "retries = 2");
      hook.modes = ["404"];
      const result = await notify("x");
      expect(result.code).toBe(1);
      expect(hook.seen.length).toBe(1);
      expect(result.stderr).toContain("HTTP 404: no such topic");
    });

    test("429 with Retry-After: 1 is honoured, then delivered", async () => {
      setupIn(where, "retries = 2");
      hook.modes = ["429", "ok"];
      const result = await notify("x");
      expect(result.code).toBe(0);
      expect(hook.seen.length).toBe(2);
      expect(hook.seen[1].at - hook.seen[0].at).toBeGreaterThanOrEqual(950);
      expect(spool()).toEqual([]);
    });

    test("a JSON retry_after (Telegram's parameters.retry_after, Discord's retry_after) is honoured", async () => {
      setupIn(where, "retries = 1");
      for (const [mode, waitMs] of [
        ["429-telegram", 2000],
        ["429-discord", 2500],
      ] as const) {
        hook.modes = [mode, "ok"];
        hook.seen = [];
        expect((await notify(`rate limited by ${mode}`)).code).toBe(0);
        expect(hook.seen.length).toBe(2);
        // Beyond the first backoff (1 s) that would apply without it.
        expect({ mode, waited: hook.seen[1].at - hook.seen[0].at >= waitMs - 50 }).toEqual({ mode, waited: true });
      }
    });

    test("424 (Apprise API: an upstream failed) is a passing failure: spooled, never a dead letter", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["424"];
      const result = await notify("through apprise");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("HTTP 424");
      expect(spool().map((message) => message.message)).toEqual(["through apprise"]);
      expect(here().read("notify-dead.jsonl")).toBe("");
      hook.modes = ["ok"];
      expect((await notify("--flush")).code).toBe(0);
      expect(hook.seen.at(-1)!.body).toBe("through apprise");
    });

    test("ntfy (text): a body over 4096 bytes is cut to 4096 on a character boundary, with …", async () => {
      setupIn(where, "retries = 0");
      const long = "é".repeat(1500) + "🚨".repeat(300) + "tail"; // 3000 + 1200 + 4 bytes
      expect((await notify(long)).code).toBe(0);
      const [request] = hook.seen;
      const bytes = Buffer.byteLength(request.raw);
      expect(bytes).toBeLessThanOrEqual(4096);
      expect(bytes).toBeGreaterThan(4090);
      expect(request.raw.endsWith("🚨…")).toBe(true); // whole characters only
      expect(long.startsWith(request.raw.slice(0, -1))).toBe(true);
      expect(request.raw).not.toContain("\ufffd");
    });

    test("a webhook that hangs past the timeout fails as no answer", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["hang"];
      const result = await notify("x");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("no answer within 0.5s");
    });

    test("refused connections fail and are retried", async () => {
      setupIn(where, "retries = 1", `http://127.0.0.1:${await freePort()}/topic/${SECRET}`);
      const result = await notify("x");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("failed after 2 attempt(s): connection refused");
    }, 20_000);

    test("500 / hang / 429 / 500, then the webhook recovers: every message delivered once, in order", async () => {
      setupIn(where, "retries = 0");
      const sent: string[] = [];
      for (const mode of ["500", "hang", "429", "500"] as Mode[]) {
        hook.modes = [mode];
        const text = `message ${sent.length + 1} (${mode})`;
        sent.push(text);
        expect((await notify(text)).code).toBe(1);
      }
      expect(spool().map((message) => message.message)).toEqual(sent);
      hook.modes = ["ok"];
      hook.seen = [];
      const last = await notify("message 6 (ok)");
      expect(last.code).toBe(0);
      expect(hook.seen.map((request) => request.body)).toEqual([...sent, "message 6 (ok)"]);
      expect(spool()).toEqual([]);
    }, 30_000);

    test("a 400 goes to the dead letters (status, answer), never holds up the next; --retry-dead, --drop", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["404"];
      const refused = await notify("--title", "T", "too long for telegram");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("refused for good: HTTP 404: no such topic; kept in the dead letters");
      expect(spool()).toEqual([]); // nothing queues behind it
      hook.modes = ["ok"];
      expect((await notify("next one")).code).toBe(0);
      expect(hook.seen.at(-1)!.body).toBe("next one");
      const dead = here()
        .read("notify-dead.jsonl")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({
        message: "too long for telegram",
        status: 404,
        answer: "HTTP 404: no such topic",
      });
      expect(dead[0].url).toBe(`${base}/topic/${SECRET}`); // its own destination, for --retry-dead
      const listed = (await notify("--spool")).stdout;
      expect(listed).toContain("0 spooled, 1 dead letters");
      expect(listed).toContain(`dead    ${dead[0].id}`);
      expect(listed).not.toContain(SECRET);
      const status = JSON.parse((await here().tend(["watchdog", "status", "--json"])).stdout);
      expect(status.notify.dead).toBe(1);
      const retried = await notify("--retry-dead");
      expect(retried.code).toBe(0);
      expect(hook.seen.at(-1)!.body).toBe("too long for telegram");
      expect(here().read("notify-dead.jsonl")).toBe("");
      hook.modes = ["404"];
      await notify("again refused");
      // Retried and refused again: the retry failed (exit 1), and the letter is back among the dead.
      const refusedAgain = await notify("--retry-dead");
      expect(refusedAgain.code).toBe(1);
      expect(refusedAgain.stderr).toContain("1 refused for good, moved to the dead letters");
      expect((await notify("--drop", "all")).stdout).toBe("dropped 1 message(s)\n");
    });

    test("--flush needs no configured URL: each spooled message keeps its own destination", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["500"];
      await notify("kept");
      at!.configure({}); // the URL is gone from the config
      hook.modes = ["ok"];
      const flushed = await notify("--flush");
      expect(flushed.code).toBe(0);
      expect(flushed.stdout).toContain("flushed 1 spooled message(s)");
      expect(hook.seen.at(-1)).toMatchObject({ path: `/topic/${SECRET}`, body: "kept" });
    });

    test("a failing spooled message stops the flush; the new message queues behind it", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["500"];
      await notify("one"); // spooled: [one]
      await notify("two"); // "one" fails again: [one, two]
      expect(spool().map((message) => message.message)).toEqual(["one", "two"]);
      hook.modes = ["ok", "500"]; // "one" goes through, "two" fails: flushing stops there
      const result = await notify("three");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("queued behind 1 spooled message(s)");
      expect(spool().map((message) => message.message)).toEqual(["two", "three"]);
      hook.modes = ["ok"];
      expect((await notify("--flush")).code).toBe(0);
      const delivered = hook.seen.filter((request) => request.answered === "ok").map((request) => request.body);
      expect(delivered).toEqual(["one", "two", "three"]);
    });

    test("--no-spool reports and drops; the spool is not touched", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["500"];
      const result = await notify("--no-spool", "gone");
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("dropped: --no-spool");
      expect(here().read("notify-spool.jsonl")).toBe("");
    });

    test("secrets in the URL never appear in output, logs or the spool", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["401"];
      const result = await notify("x");
      expect(result.stderr).toContain(`delivery to ${base}/… refused for good`);
      expect(result.stderr).toContain("HTTP 401: bad token …");
      for (const text of [
        result.stdout,
        result.stderr,
        here().read("notify-spool.jsonl"),
        here().read("notify-state.json"),
      ])
        expect(text).not.toContain(SECRET);
    });
  });

for (const where of PLACES)
  describe(`spool and dedup (${where})`, () => {
    test("the spool keeps at most 1000; the next delivered message says how many were dropped", async () => {
      setupIn(where, "retries = 0");
      const old = Array.from({ length: 1000 }, (_, i) => spooledLine({ message: `old ${i}` }));
      here().writeState("notify-spool.jsonl", old.join("\n") + "\n");
      hook.modes = ["500"];
      expect((await notify("newest")).code).toBe(1);
      const kept = spool();
      expect(kept.length).toBe(1000);
      expect(kept[0].message).toBe("old 1");
      expect(kept.at(-1).message).toBe("newest");
      hook.modes = ["ok"];
      hook.seen = [];
      expect((await notify("--flush")).code).toBe(0);
      expect(hook.seen.length).toBe(1000);
      expect(hook.seen[0].body).toBe("old 1 (1 older message was dropped from a full spool)");
      expect(hook.seen[1].body).toBe("old 2");
    }, 60_000);

    test("concurrent notify processes never corrupt or duplicate the spool", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["500"];
      const texts = Array.from({ length: 12 }, (_, i) => `parallel ${i}`);
      const results = await Promise.all(texts.map((text) => notify(text)));
      expect(results.every((result) => result.code === 1)).toBe(true);
      expect(
        spool()
          .map((message) => message.message)
          .sort(),
      ).toEqual([...texts].sort());
      hook.modes = ["ok"];
      hook.seen = [];
      await Promise.all([notify("--flush"), notify("--flush"), notify("--flush")]);
      expect(hook.seen.map((request) => request.body).sort()).toEqual([...texts].sort());
    }, 60_000);

    test("same service+event within min_interval is suppressed and counted; the next one says so", async () => {
      // 4 s: the four calls below must fall inside it, even beside two busy cores (1 s ran out once).
      setupIn(where, 'retries = 0\nmin_interval = "4s"');
      expect((await notify("--service", "web", "--event", "restart", "web restarted")).code).toBe(0);
      const again = await notify("--service", "web", "--event", "restart", "web restarted");
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("suppressed");
      expect((await notify("--service", "db", "--event", "restart", "db restarted")).code).toBe(0); // another service
      await notify("--service", "web", "--event", "restart", "web restarted");
      expect(hook.seen.length).toBe(2);
      await waitFor(
        async () => {
          await notify("--service", "web", "--event", "restart", "web restarted");
          return hook.seen.length === 3;
        },
        20_000,
        "min_interval to pass",
      );
      expect(hook.seen[2].body).toMatch(/^web restarted \(\+\d+ similar suppressed\)$/);
    }, 60_000);

    test("a ✅ that answers an alert sent in its outage is never suppressed, however recent the last ✅", async () => {
      setupIn(where, 'retries = 0\nmin_interval = "1h"');
      const send = (event: string, text: string) => notify("--service", "blog", "--event", event, text);
      expect((await send("recovered", "✅ blog is healthy again")).code).toBe(0); // a first outage's ✅
      expect((await send("restart", "⚠️ blog restarted")).code).toBe(0);
      const answer = await send("recovered", "✅ blog recovered 3s after restart");
      expect(answer.stdout).not.toContain("suppressed");
      // With nothing sent to answer (a second ✅ at once), dedup holds as before.
      const repeat = await send("recovered", "✅ blog recovered again");
      expect(repeat.stdout).toContain("suppressed");
      expect(hook.seen.map((request) => request.body)).toEqual([
        "✅ blog is healthy again",
        "⚠️ blog restarted",
        "✅ blog recovered 3s after restart",
      ]);
    });

    test("a late message is the live body, byte for byte, plus `late since T`: each format, no inner one", async () => {
      setupIn(where, "retries = 0");
      const formats: [string, string][] = [
        ["text", `${base}/topic/${SECRET}`],
        ["json", `${base}/hook/${SECRET}`],
        ["slack", `${base}/slack/${SECRET}`],
        ["discord", `${base}/discord/${SECRET}`],
        ["telegram", `${base}/bot123:${SECRET}/sendMessage?chat_id=-1001`],
        ["gotify", `${base}/gotify/message?token=${SECRET}`],
        ["pushover", `${base}/1/messages.json?token=${SECRET}&user=u${SECRET}`],
        // A message sent by hand as an alert: its description carries the note (a pass's alerts carry their times).
        ["alertmanager", `${base}/am/${SECRET}`],
      ];
      for (const [format, url] of formats) {
        here().configure({ notify: { retries: 0 } });
        // A service per format: the same service+event again would be suppressed (min_interval).
        const args = ["--format", format, "--url", url, "--title", "⚠️ restarted web", "--service", `web-${format}`];
        hook.modes = ["500"];
        expect((await notify(...args, "--event", "restart", "web restarted")).code).toBe(1);
        const [spooled] = spool();
        hook.modes = ["ok"];
        hook.seen = [];
        expect((await notify("--flush")).code).toBe(0);
        const [late] = hook.seen;
        const since = `\n(late since ${spooled.time.slice(0, 19).replace("T", " ")} UTC)`;
        // The live request for that message and its note: what --dry-run prints.
        const dry = await notify(...args, "--event", "restart", "--dry-run", `web restarted${since}`);
        const liveBody = dry.stdout.slice(dry.stdout.indexOf("\n\n") + 2).replace(/\n$/, "");
        // The time: the message's own (when it was created), not the dry run's.
        // Pushover's form holds its token and user (--dry-run shows them as …): compared without them.
        const comparable = (body: string) =>
          format === "json"
            ? { ...JSON.parse(body), time: spooled.time, key: spooled.key } // the dry run's message has no key
            : format === "pushover"
              ? { ...Object.fromEntries(new URLSearchParams(body)), token: "", user: "" }
              : format === "alertmanager"
                ? JSON.parse(body).map((alert: object) => ({ ...alert, startsAt: spooled.time }))
                : body;
        expect({ format, body: comparable(late.raw) }).toEqual({ format, body: comparable(liveBody) });
        console.log(`late ${format}: ${JSON.stringify(late.raw.replaceAll(SECRET, "SECRET"))}`);
        if (format !== "pushover") expect(late.raw).not.toContain(SECRET); // never its URL (pushover: its form)
        if (format === "json") {
          expect(Object.keys(JSON.parse(late.raw)).sort()).toEqual(
            ["event", "host", "key", "message", "priority", "service", "tags", "time", "title"].sort(),
          );
          expect(JSON.parse(late.raw).time).toBe(spooled.time);
        }
        // The note is there (in a form, encoded).
        const decoded = format === "pushover" ? (new URLSearchParams(late.raw).get("message") ?? "") : late.raw;
        expect(LATE.test(decoded)).toBe(true);
      }
    });

    test("a new alert to a receiver that answers is never behind a hung receiver's spooled message", async () => {
      setupIn(where, "retries = 0");
      const hung = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
      const asked: number[] = [];
      hung.reload({ fetch: () => (asked.push(Date.now()), new Promise<Response>(() => {})) });
      try {
        // A message spooled to the old receiver, which now hangs.
        here().configure({ notify: { retries: 0, timeout: "6s" } });
        const old = `http://127.0.0.1:${hung.port}/old-topic`;
        expect((await notify("--url", `http://127.0.0.1:1/`, "for the old receiver")).code).toBe(1);
        const [entry] = spool();
        here().writeState("notify-spool.jsonl", JSON.stringify({ ...entry, url: old }) + "\n");
        hook.modes = ["ok"];
        hook.seen = [];
        const sending = notify("--url", `${base}/topic/${SECRET}`, "🚨 web is down");
        await waitFor(() => asked.length === 1, 10_000, "the hung receiver to be asked");
        await waitFor(() => hook.seen.length === 1, 10_000, "the healthy receiver to get the alert");
        // It arrived while the hung receiver was still being waited for (6 s), not after it.
        expect(hook.seen[0].at - asked[0]).toBeLessThan(5000);
        console.log(`the healthy receiver got the alert ${hook.seen[0].at - asked[0]} ms after the hung one was asked`);
        expect(hook.seen[0].body).toBe("🚨 web is down");
        expect((await sending).code).toBe(0);
        expect(spool().map((message) => message.message)).toEqual(["for the old receiver"]);
        // Its first try (refused), then this one.
        expect(spool()[0]).toMatchObject({ attempts: 2, lastError: "no answer within 6.0s" });
      } finally {
        hung.stop(true);
      }
    });

    test("the spool's budget: 15 s in all, one attempt per spooled message, however many receivers hang", async () => {
      setupIn(where, "retries = 3");
      here().configure({ notify: { retries: 3, timeout: "60s" } });
      const hung = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
      let asked = 0;
      hung.reload({ fetch: () => (asked++, new Promise<Response>(() => {})) });
      try {
        const lines = ["a", "b", "c"].flatMap((topic) =>
          [1, 2].map((n) =>
            spooledLine({
              message: `${topic} ${n}`,
              id: `${topic}${n}`,
              url: `http://127.0.0.1:${hung.port}/${topic}`,
              format: "text",
            }),
          ),
        );
        here().writeState("notify-spool.jsonl", lines.join("\n") + "\n");
        const started = Date.now();
        const flushed = await notify("--flush");
        const tookMs = Date.now() - started;
        expect(flushed.stderr).toContain("still spooled");
        expect(flushed.code).toBe(1);
        expect(tookMs).toBeGreaterThanOrEqual(14_500); // three destinations side by side, 60 s timeouts, cut at 15 s
        expect(tookMs).toBeLessThan(30_000);
        expect(asked).toBe(3); // one attempt for each destination's first message; the second waits behind it
        expect(spool()).toHaveLength(6);
      } finally {
        hung.stop(true);
      }
    }, 60_000);

    test("the spool's budget holds with three hung receivers of three protocols: HTTP, SMTP, termux", async () => {
      // SMTP: a server that accepts and never greets (a tarpit). termux: termux-notification as it is
      // without the Termux:API app, hanging forever (a stand-in on PATH: no phone here). HTTP: no answer.
      const tarpit = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      const hung = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
      setupIn(
        where,
        `retries = 3\nto = "ops@example.org"\nfrom = "tend@example.org"`,
        `smtp://127.0.0.1:${tarpit.port}`,
      );
      here().configure({ notify: { retries: 3, timeout: "60s" } });
      const place = here();
      place.writeScratch("bin/termux-notification", `#!${place.sh}\nexec sleep 600\n`, 0o755);
      const bin = place.scratch("bin").inside;
      const line = (id: string, url: string, format: string) =>
        spooledLine({ message: `to ${format}`, id, url, format });
      try {
        const lines = [
          line("http1", `http://127.0.0.1:${hung.port}/t`, "text"),
          line("smtp1", `smtp://127.0.0.1:${tarpit.port}`, "email"),
          line("termux1", "termux://", "termux"),
        ];
        here().writeState("notify-spool.jsonl", lines.join("\n") + "\n");
        const started = Date.now();
        const flushed = await place.shell(`PATH='${bin}':"$PATH" ${place.tendPath} notify --flush`);
        const tookMs = Date.now() - started;
        expect(flushed.code).toBe(1);
        expect(flushed.stderr).toContain("still spooled");
        // Side by side and cut at the budget (15 s), not 3 x 60 s nor the SMTP steps one after another.
        expect(tookMs).toBeLessThan(30_000);
        expect(
          spool()
            .map((entry) => entry.id)
            .sort(),
        ).toEqual(["http1", "smtp1", "termux1"]);
        expect(spool().every((entry) => entry.attempts === 1)).toBe(true);
      } finally {
        hung.stop(true);
        tarpit.stop(true);
      }
    }, 60_000);

    test("spool_max_age and spool_max_attempts make dead letters, said once; --spool says age, attempts", async () => {
      setupIn(where, 'retries = 0\nspool_max_attempts = 2\nspool_max_age = "1h"');
      hook.modes = ["500"];
      expect((await notify("tried twice")).code).toBe(1);
      expect((await notify("--flush")).code).toBe(1); // attempt 2
      const listed = (await notify("--spool")).stdout;
      expect(listed).toMatch(
        new RegExp(
          String.raw`spooled \w+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+(\.\d)?s ago\)  ` +
            String.raw`text http://127\.0\.0\.1:\d+/…  tried twice  \(2 attempt\(s\), last: HTTP 500`,
        ),
      );
      expect(listed).not.toContain(SECRET);
      // An old one: past spool_max_age.
      const [tried] = spool();
      const old = {
        ...tried,
        id: "old1",
        message: "from yesterday",
        attempts: 0,
        time: new Date(Date.now() - 7_200_000).toISOString(),
      };
      here().writeState("notify-spool.jsonl", [tried, old].map((line) => JSON.stringify(line)).join("\n") + "\n");
      hook.seen = [];
      const flushed = await notify("--flush");
      expect(hook.seen).toEqual([]); // neither is sent again
      expect(flushed.code).toBe(0);
      expect(spool()).toEqual([]);
      const dead = here()
        .read("notify-dead.jsonl")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(dead.map((letter) => letter.answer)).toEqual([
        expect.stringMatching(/^expired: failed 2 times \(spool_max_attempts 2\); last: HTTP 500/),
        expect.stringMatching(/^expired: spooled 2h(0m)? ago \(spool_max_age 1h\)/),
      ]);
      expect(here().read("watchdog.log")).toContain(
        "2 spooled notification(s) older than 1h or failed 2 times: moved to notify-dead.jsonl",
      );
    });

    test("notify by hand logs like a pass; 'still not delivered' only when the count changes or hourly", async () => {
      setupIn(where, "retries = 0");
      hook.modes = ["500"];
      expect((await notify("first")).code).toBe(1);
      expect(here().read("watchdog.log")).toMatch(
        /\[NOTIFY\] could not send "first" to http:\/\/127\.0\.0\.1:\d+\/…: HTTP 500/,
      );
      const summaries = () =>
        here()
          .read("watchdog.log")
          .split("\n")
          .filter((line) => line.includes("still not delivered"));
      await notify("--flush");
      await notify("--flush");
      expect(summaries()).toHaveLength(1); // said once for 1 waiting
      await notify("second");
      await notify("--flush");
      expect(summaries()).toHaveLength(2); // 2 waiting now: said again
      expect(summaries()[1]).toContain("2 spooled notification(s) still not delivered");
    });

    test("a spooled message with no destination of its own, and none configured, is kept untried", async () => {
      openIn(where).configure({});
      const entry = {
        message: "from an older spool",
        title: null,
        priority: null,
        tags: [],
        event: null,
        service: null,
      };
      const line = { ...entry, time: new Date().toISOString(), id: "old1", url: "", format: "text" };
      here().writeState("notify-spool.jsonl", JSON.stringify(line) + "\n");
      const flushed = await notify("--flush");
      expect(flushed.code).toBe(1); // still waiting
      expect(spool()).toEqual([line]); // no attempt counted, nothing lost
    });

    test("no URL anywhere: exit 2, nothing spooled", async () => {
      openIn(where).configure({});
      const result = await notify("hello");
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("no notification URL");
      expect(here().read("notify-spool.jsonl")).toBe("");
    });
  });

for (const where of PLACES)
  describe(`the watchdog's alert path (${where})`, () => {
    function watchdogConfig(port: number, extra = "") {
      const place = (at = openPlace(where));
      place.writeConfig(`
  [watchdog]
  state_dir = "${place.state}"
  heartbeat_url = "${base}/ping/${SECRET}"
  ${extra}
  [notify]
  url = "${base}/topic/${SECRET}"
  timeout = "500ms"
  retries = 0
  [[service]]
  name = "web"
  failures = 1
  cooldown = "0s"
  grace = "0s"
  verify_timeout = "1s"
  [service.check]
  http = "http://127.0.0.1:${port}/"
  timeout = "300ms"
  [service.restart]
  command = ["true"]
  `);
    }
    const bodies = (prefix: string) =>
      hook.seen.filter((request) => request.path.startsWith(prefix)).map((request) => request.body);

    test("⚠️ restart and 🚨 failed recovery; a failed send is logged, spooled, shown, sent first later", async () => {
      const port = await freePort();
      watchdogConfig(port);
      hook.modes = ["500"];
      const pass = await at!.tend(["watchdog"]);
      expect(pass.stdout).toMatch(/\[NOTIFY\] could not send "⚠️ web failed 1 check in a row.*" to .*: HTTP 500/);
      expect(pass.stdout).toMatch(/\[NOTIFY\] could not send "🚨 web did not recover/);
      expect(pass.stdout).not.toContain(SECRET);
      expect(at!.read("watchdog.log")).not.toContain(SECRET);
      const status = await at!.tend(["watchdog", "status", "--json", "--cached"]);
      const report = JSON.parse(status.stdout);
      expect(report.notify.spooled).toBe(2);
      expect(report.notify.last_error.detail).toContain("HTTP 500");
      expect((await at!.tend(["watchdog", "status", "--cached"])).stdout).toContain(
        "notify: 2 undelivered in the spool",
      );

      hook.modes = ["ok"];
      hook.seen = [];
      const server = await fixtureServer(port, [], (pid) => fixtures.push(pid));
      const healed = await at!.tend(["watchdog"]);
      expect(healed.stdout).toContain("[NOTIFY] delivered 2 spooled notification(s)");
      const delivered = bodies("/topic/");
      expect(delivered[0]).toStartWith("⚠️ web failed 1 check in a row");
      expect(delivered[1]).toStartWith("🚨 web did not recover");
      expect(delivered[2]).toStartWith("✅ web is healthy again");
      // Each title names the event and the service, then the host (filters key on them).
      // Non-ASCII headers go as RFC 2047 encoded words (ntfy decodes them).
      const decoded = (header: string) =>
        header.replace(/=\?UTF-8\?B\?([^?]*)\?=/g, (_, base64) => Buffer.from(base64, "base64").toString());
      const titles = hook.seen
        .filter((request) => request.path.startsWith("/topic/"))
        .map((r) => decoded(r.headers.title));
      const host = at!.hostname;
      expect(titles).toEqual([
        `⚠️ restarted web on ${host}`,
        `🚨 web is down on ${host}`,
        `✅ web recovered on ${host}`,
      ]);
      expect(JSON.parse((await at!.tend(["watchdog", "status", "--json", "--cached"])).stdout).notify).toEqual({
        spooled: 0,
        dead: 0,
        last_error: null,
      });
      server.kill();
    }, 30_000);

    test("heartbeat_url is pinged after each pass, with /fail while a service is down", async () => {
      const port = await freePort();
      watchdogConfig(port);
      await at!.tend(["watchdog"]);
      expect(hook.seen.filter((request) => request.path.startsWith("/ping/")).map((request) => request.path)).toEqual([
        `/ping/${SECRET}/fail`,
      ]);
      hook.seen = [];
      const server = await fixtureServer(port, [], (pid) => fixtures.push(pid));
      await at!.tend(["watchdog"]);
      expect(hook.seen.filter((request) => request.path.startsWith("/ping/")).map((request) => request.path)).toEqual([
        `/ping/${SECRET}`,
      ]);
      server.kill();
    }, 30_000);
  });

for (const where of PLACES)
  describe(`each receiver's rules, checked in the body the receiver gets (${where})`, () => {
    test("telegram: chat_id is required (Bot API sendMessage has no default chat): exit 2, nothing sent", async () => {
      setupIn(where, 'format = "telegram"', `${base}/bot123:${SECRET}/sendMessage`);
      const run = await notify("hello");
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("notify.url: format telegram needs chat_id in the URL");
      expect(run.stderr).not.toContain(SECRET);
      expect(hook.seen).toEqual([]);
      here().configure({});
      const cli = await notify("--url", `${base}/bot1:x/sendMessage`, "--format", "telegram", "hi");
      expect(cli.code).toBe(2);
      expect(cli.stderr).toContain("format telegram needs chat_id in the URL");
      expect(hook.seen).toEqual([]);
    });

    test("telegram: text is at most 4096 characters (Bot API: 1-4096 characters)", async () => {
      setupIn(where, 'format = "telegram"\nretries = 0', `${base}/bot123:${SECRET}/sendMessage?chat_id=-1001`);
      expect((await notify("x".repeat(5000))).code).toBe(0);
      const body = JSON.parse(hook.seen[0].body);
      expect(body.text.length).toBeLessThanOrEqual(4096);
      expect(body.text).toEndWith("…");
    });

    test("discord: content ≤ 2000 characters, never cut in a character; allowed_mentions pings nobody", async () => {
      setupIn(where, 'format = "discord"\nretries = 0', `${base}/api/webhooks/1/abc`);
      // 1998 x, then emoji (2 UTF-16 units each) across the limit: a cut by units would split one.
      expect((await notify(`@everyone ${"x".repeat(1988)}${"🚨".repeat(20)}`)).code).toBe(0);
      const body = JSON.parse(hook.seen[0].body);
      expect(body.content.length).toBeLessThanOrEqual(2000);
      expect(body.content).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
      expect(body.allowed_mentions).toEqual({ parse: [] }); // "@everyone" in the text pings no one
    });

    test("slack: & < > are escaped (Slack's control characters in message text)", async () => {
      setupIn(where, 'format = "slack"\nretries = 0', `${base}/services/T/B/${SECRET}`);
      expect((await notify("--title", "<b>", "a < b & c > d")).code).toBe(0);
      expect(JSON.parse(hook.seen[0].body).text).toBe("*&lt;b&gt;*\na &lt; b &amp; c &gt; d");
    });

    test("ntfy: priority per event: 🚨 urgent, ⚠️ high, ✅ default, with the event as a tag", async () => {
      const port = await freePort();
      openIn(where).configure({
        notify: { url: `${base}/topic/${SECRET}`, retries: 0, min_interval: "0s" },
        services: [
          {
            name: "web",
            failures: 1,
            grace: "0s",
            cooldown: "0s",
            backoff: "0s",
            verify_timeout: "1s",
            check: { http: `http://127.0.0.1:${port}/`, timeout: "300ms" },
            restart: { command: ["true"] },
          },
        ],
      });
      await here().tend(["watchdog"]); // restart (⚠️) that does not recover (🚨)
      const server = await fixtureServer(port, [], (pid) => fixtures.push(pid));
      await here().tend(["watchdog"]); // ✅
      server.kill();
      const byEmoji = Object.fromEntries(hook.seen.map((request) => [[...request.body][0], request.headers]));
      expect(byEmoji["⚠"]).toMatchObject({ priority: "high", tags: "tend,restart" });
      expect(byEmoji["🚨"]).toMatchObject({ priority: "urgent", tags: "tend,failed" });
      expect(byEmoji["✅"]).toMatchObject({ priority: "default", tags: "tend,recovered" });
    }, 30_000);
  });

for (const where of PLACES)
  describe(`heartbeat: Uptime Kuma and healthchecks.io (${where})`, () => {
    function heartbeat(url: string, servicePort: number) {
      const place = (at = openPlace(where));
      place.configure({
        watchdog: { heartbeat_url: `${url}` },
        // failures = 1: down at the first failed probe (strike 1/3 is up: test/pass-wide.test.ts).
        services: [{ name: "web", failures: 1, check: { tcp: `127.0.0.1:${servicePort}` } }],
      });
    }
    const pings = () => hook.seen.filter((request) => !request.path.startsWith("/topic"));

    test("Uptime Kuma push URL: {status}, {msg} and {ping} (the pass's ms) are filled in, a GET", async () => {
      const port = await freePort();
      heartbeat(`${base}/api/push/${SECRET}?status={status}&msg={msg}&ping={ping}`, port);
      await at!.tend(["watchdog"]);
      expect(pings()[0]).toMatchObject({ method: "GET", path: `/api/push/${SECRET}` });
      expect(pings()[0].search).toMatch(/^\?status=down&msg=down%3A%20web&ping=\d+$/);
      const server = await fixtureServer(port, [], (pid) => fixtures.push(pid));
      await at!.tend(["watchdog"]);
      server.kill();
      expect(pings()[1].search).toMatch(/^\?status=up&msg=all%20services%20healthy&ping=\d+$/);
    }, 30_000);

    test("healthchecks.io: /fail goes on the path, never in the query; the body is the pass's summary", async () => {
      heartbeat(`${base}/ping/${SECRET}?rid=7`, await freePort());
      await at!.tend(["watchdog"]);
      expect(pings()[0]).toMatchObject({
        method: "POST",
        path: `/ping/${SECRET}/fail`,
        search: "?rid=7",
        body: "down: web",
      });
    });

    test("Uptime Kuma's 500 'Monitor not found or not active' is refused for good: said, then left a day", async () => {
      const port = await freePort();
      heartbeat(`${base}/api/push/${SECRET}?status={status}&msg={msg}`, port);
      hook.modes = ["kuma-gone"];
      const first = await at!.tend(["watchdog"]);
      expect(first.stdout).toContain("refused for good: HTTP 500");
      expect(first.stdout).toContain("Monitor not found or not active");
      expect(first.stdout).not.toContain(SECRET);
      const second = await at!.tend(["watchdog"]);
      expect(pings()).toHaveLength(1); // not pinged again every pass
      expect(second.stdout).not.toContain("heartbeat ping");
      // A day later it is tried (and said) again.
      const file = at!.stateFile("heartbeat-ping.json");
      const saved = JSON.parse(readFileSync(file, "utf8"));
      writeFileSync(file, JSON.stringify({ refused: { ...saved.refused, at: saved.refused.at - 86_400_001 } }));
      const later = await at!.tend(["watchdog"]);
      expect(pings()).toHaveLength(2);
      expect(later.stdout).toContain("refused for good");
    }, 30_000);

    test("a heartbeat answered by a redirect is not followed (it fails, logged)", async () => {
      const elsewhere = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("followed") });
      let redirected = 0;
      const redirector = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () => (redirected++, Response.redirect(`http://127.0.0.1:${elsewhere.port}/ping`, 302)),
      });
      let followed = 0;
      elsewhere.reload({ fetch: () => (followed++, new Response("followed")) });
      heartbeat(`http://127.0.0.1:${redirector.port}/ping/${SECRET}`, await freePort());
      const pass = await at!.tend(["watchdog"]);
      redirector.stop(true);
      elsewhere.stop(true);
      expect(redirected).toBe(1);
      expect(followed).toBe(0);
      expect(pass.stdout).toContain("[NOTIFY] heartbeat ping to");
      expect(pass.stdout).toContain("failed: HTTP 302");
    });
  });

for (const where of PLACES)
  describe(`gotify and pushover: STAND-INS as their documented APIs (no server of either here) (${where})`, () => {
    test("gotify: POST /message, the token in X-Gotify-Key (not the URL), priority by event; 401 is dead", async () => {
      const seen: { path: string; search: string; key: string | null; body: any }[] = [];
      const gotify = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const url = new URL(request.url);
          seen.push({
            path: url.pathname,
            search: url.search,
            key: request.headers.get("x-gotify-key"),
            body: await request.json(),
          });
          if (request.headers.get("x-gotify-key") !== "AppToken.1")
            // Gotify's answer to a bad token
            return Response.json(
              { error: "Unauthorized", errorCode: 401, errorDescription: "you need to provide a valid access token" },
              { status: 401 },
            );
          return Response.json({ id: seen.length, appid: 1, message: "x", date: new Date().toISOString() });
        },
      });
      try {
        openIn(where).configure({ notify: { retries: 0, format: "gotify" } });
        const url = `http://127.0.0.1:${gotify.port}/message?token=AppToken.1`;
        const sent = await notify(
          "--url",
          url,
          "--title",
          "🚨 web is down on vm",
          "--priority",
          "urgent",
          "🚨 web did not recover",
        );
        expect(sent.code).toBe(0);
        expect(seen[0]).toEqual({
          path: "/message",
          search: "",
          key: "AppToken.1",
          body: { title: "🚨 web is down on vm", message: "🚨 web did not recover", priority: 9 },
        });
        const dry = await notify("--url", url, "--dry-run", "x");
        expect(dry.stdout).toContain("X-Gotify-Key: …");
        expect(dry.stdout).not.toContain("AppToken.1");
        const refused = await notify("--url", `http://127.0.0.1:${gotify.port}/message?token=wrong`, "x");
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain("refused for good: HTTP 401");
        expect(refused.stderr).not.toContain("wrong");
      } finally {
        gotify.stop(true);
      }
    });

    test("pushover: token and user in the form, message ≤ 1024, title ≤ 250; status 0 is refused", async () => {
      const seen: Record<string, string>[] = [];
      const pushover = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const form = Object.fromEntries(new URLSearchParams(await request.text()));
          seen.push(form);
          if (form.token !== "azGDORePK8gMaC0QOYAMyEEuzJnyUi")
            // Pushover's answer to a bad token
            return Response.json(
              { token: "invalid", errors: ["application token is invalid"], status: 0, request: "5042853c" },
              { status: 400 },
            );
          // A 200 whose status is 0: refused all the same.
          if (form.user === "u-soft-refusal") return Response.json({ status: 0, errors: ["user is disabled"] });
          return Response.json({ status: 1, request: "647d2300" });
        },
      });
      try {
        openIn(where).configure({ notify: { retries: 0, format: "pushover" } });
        const at = (token: string, user: string) =>
          `http://127.0.0.1:${pushover.port}/1/messages.json?token=${token}&user=${user}`;
        const good = at("azGDORePK8gMaC0QOYAMyEEuzJnyUi", "uQiRzpo4DXghDmr9QzzfQu27cmVRsG");
        const long = "x".repeat(2000);
        expect((await notify("--url", good, "--title", "t".repeat(300), "--priority", "urgent", long)).code).toBe(0);
        expect(seen[0]).toMatchObject({
          token: "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
          user: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
          priority: "1",
        });
        expect([...seen[0].message].length).toBe(1024);
        expect([...seen[0].title].length).toBe(250);
        const dry = await notify("--url", good, "--dry-run", "x");
        expect(dry.stdout).not.toContain("azGDORePK8gMaC0QOYAMyEEuzJnyUi");
        expect(dry.stdout).not.toContain("uQiRzpo4DXghDmr9QzzfQu27cmVRsG");
        for (const url of [
          at("bad", "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"),
          at("azGDORePK8gMaC0QOYAMyEEuzJnyUi", "u-soft-refusal"),
        ]) {
          const refused = await notify("--url", url, "refused");
          expect(refused.code).toBe(1);
          expect(refused.stderr).toContain("refused for good");
        }
        expect(here().read("notify-dead.jsonl").trim().split("\n")).toHaveLength(2);
        expect(spool()).toEqual([]);
      } finally {
        pushover.stop(true);
      }
    });
  });
