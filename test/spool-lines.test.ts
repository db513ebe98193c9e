// The spool reads each line field by field (#39): a line of wrong types is a dead letter with its reason,
// never a reason for the spool to stop; a Retry-After that is not positive or not in the future is ignored.
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseRetryAfter } from "../lib/notify/send.ts";
import { recordingReceiver, Sandbox, spooledLine } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

test("a spool line with a wrong type is a dead letter with the reason; the rest is delivered", async () => {
  box = new Sandbox();
  const receiver = recordingReceiver();
  try {
    box.configure({ notify: { url: receiver.url, format: "json" } });
    mkdirSync(box.state, { recursive: true, mode: 0o700 });
    const line = (fields: Record<string, unknown>) =>
      spooledLine({ id: "00000000", url: `${receiver.url}/`, format: "json", ...fields });
    writeFileSync(
      join(box.state, "notify-spool.jsonl"),
      [
        line({ id: "bad1", message: "wedge", tags: "x" }),
        line({ id: "good1", message: "first" }),
        line({ id: "good2", message: "second" }),
      ].join("\n") + "\n",
      { mode: 0o600 },
    );
    const flushed = await box.tend(["notify", "--flush"]);
    expect(flushed.stderr).not.toContain("is not a function");
    const delivered = receiver.received.map((body) => JSON.parse(body).message.split("\n")[0]);
    expect(delivered).toEqual(["first", "second"]); // late, and said so
    expect(box.read("notify-spool.jsonl")).toBe("");
    const dead = box
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
    const listed = await box.tend(["notify", "--spool"]);
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
