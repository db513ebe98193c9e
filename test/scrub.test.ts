// Secrets are removed before text is cut to its length limit, never after (#39): a receiver that quotes
// a token in its refusal, the token across the 200-character cut, leaves no part of it anywhere: on this
// host and inside the phone.
import { afterAll, afterEach, expect, test } from "bun:test";
import { scrubbedLine } from "../lib/core/redact.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
afterEach(async () => {
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

const TOKEN = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

test("one helper: scrubbed first, then cut", () => {
  const url = `http://gotify.example/message?token=${TOKEN}`;
  const answer = `${"x".repeat(180)} invalid token ${TOKEN} for this application`;
  const line = scrubbedLine(answer, url);
  expect(line.length).toBeLessThanOrEqual(201);
  for (let size = 4; size <= TOKEN.length; size++) expect(line).not.toContain(TOKEN.slice(0, size));
});

for (const where of PLACES)
  test(`a 400 quoting the token across the cut: none of it on stderr, the log, dead letters (${where})`, async () => {
    const at = (box = openPlace(where));
    const receiver = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const key = request.headers.get("x-gotify-key");
        return new Response(`${"x".repeat(180)} invalid token ${key} for this application`, { status: 400 });
      },
    });
    try {
      const url = `http://127.0.0.1:${receiver.port}/?token=${TOKEN}`;
      at.configure({ notify: { url, format: "gotify" } });
      const run = await at.tend(["notify", "hello"]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("HTTP 400: xxxx");
      // Refused for good: kept with the answer (its own destination too, in the 0600 file, to retry it).
      const dead = JSON.parse(at.read("notify-dead.jsonl"));
      expect(dead.answer).toStartWith("HTTP 400: xxxx");
      const everywhere = run.stdout + run.stderr + at.read("watchdog.log") + dead.answer;
      for (let size = 4; size <= TOKEN.length; size++) expect(everywhere).not.toContain(TOKEN.slice(0, size));
    } finally {
      receiver.stop(true);
    }
  });
