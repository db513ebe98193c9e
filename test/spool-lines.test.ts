// The spool reads each line field by field (#39): a line of wrong types is a dead letter with its reason,
// never a reason for the spool to stop; a Retry-After that is not positive or not in the future is ignored.
// The spool runs on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { parseRetryAfter } from "../lib/notify/send.ts";
import { recordingReceiver, spooledLine } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
afterEach(async () => {
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

for (const where of PLACES)
  test(`a spool line of a wrong type is a dead letter with its reason; the rest is delivered (${where})`, async () => {
    const place = (box = openPlace(where));
    const receiver = recordingReceiver();
    try {
      place.configure({ notify: { url: receiver.url, format: "json" } });
      const line = (fields: Record<string, unknown>) =>
        spooledLine({ id: "00000000", url: `${receiver.url}/`, format: "json", ...fields });
      place.writeState(
        "notify-spool.jsonl",
        [
          line({ id: "bad1", message: "wedge", tags: "x" }),
          line({ id: "good1", message: "first" }),
          line({ id: "good2", message: "second" }),
        ].join("\n") + "\n",
        0o600,
      );
      const flushed = await place.tend(["notify", "--flush"]);
      expect(flushed.stderr).not.toContain("is not a function");
      const delivered = receiver.received.map((body) => JSON.parse(body).message.split("\n")[0]);
      expect(delivered).toEqual(["first", "second"]); // late, and said so
      expect(place.read("notify-spool.jsonl")).toBe("");
      const dead = place
        .read("notify-dead.jsonl")
        .trim()
        .split("\n")
        .map((text) => JSON.parse(text));
      expect(dead).toEqual([
        expect.objectContaining({
          id: "bad1",
          message: "wedge",
          answer: "unreadable spool line: tags is not a list of strings",
        }),
      ]);
      const listed = await place.tend(["notify", "--spool"]);
      expect(listed.stdout).toContain("tags is not a list of strings");
    } finally {
      receiver.stop();
    }
  });

test("Retry-After: a positive number of seconds or a future HTTP-date; -5, 0, a past date or junk: ignored", () => {
  const now = Date.parse("2026-12-02T12:00:00Z");
  expect(parseRetryAfter("3", now)).toBe(3000);
  expect(parseRetryAfter("Wed, 02 Dec 2026 12:00:10 GMT", now)).toBe(10_000);
  for (const value of ["-5", "0", "Wed, 02 Dec 2026 11:59:00 GMT", "-1", "1e3", "soon", "", null])
    expect({ value, ms: parseRetryAfter(value, now) }).toEqual({ value, ms: null });
});
