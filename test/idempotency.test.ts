// A power cut in the middle of a delivery, as a SIGKILL of the tend process at the moment the
// receiver has the request: the message is spooled before it is sent (never lost), and a message
// the receiver got but tend never heard back about is sent again with the same idempotency key
// (X-Sequence-ID for ntfy, Idempotency-Key for webhooks), so a receiver that honours it keeps one.
// The cuts are made on this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Background, type Place } from "./places.ts";

let box: Place;
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await box?.cleanup();
});
afterAll(() => closePlaces());

interface Received {
  key: string | null;
  sequence: string | null;
  body: string;
}

/**
 * A receiver that keeps one message per idempotency key (as ntfy 2.16+ does per sequence id), and
 * can be told to SIGKILL the sender the moment a request arrives, answering (too late) after.
 */
function keyedReceiver() {
  const control = { victim: null as Background | null, hang: false };
  const requests: Received[] = [];
  const kept = new Map<string, string>();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 30,
    async fetch(request) {
      const body = await request.text();
      const key = request.headers.get("idempotency-key");
      requests.push({ key, sequence: request.headers.get("x-sequence-id"), body });
      if (control.victim) {
        // The power cut: after the receiver has it, before tend hears.
        process.kill(control.victim.tendPid(), "SIGKILL");
        control.victim = null;
        if (control.hang) await Bun.sleep(2000);
      }
      kept.set(key ?? `unkeyed-${requests.length}`, body);
      return new Response("ok");
    },
  });
  stops.push(() => server.stop(true));
  return { control, requests, kept, url: `http://127.0.0.1:${server.port}/alerts` };
}

const config = (url: string, format: string) => `
[watchdog]
state_dir = "${box.state}"
[notify]
url = "${url}"
format = "${format}"
timeout = "5s"
`;

async function notifyKilledBy(receiver: ReturnType<typeof keyedReceiver>, text: string) {
  const child = await box.spawnTend(["notify", "--event", "failed", "--service", "web", text]);
  receiver.control.victim = child;
  return child.exited;
}

/** tend, not blocking this process (the receiver answers from it). */
const tend = async (args: string[]) => (await box.tend(args)).code;

const spool = () => box.read("notify-spool.jsonl").split("\n").filter(Boolean);

for (const where of PLACES)
  describe(where, () => {
    for (const format of ["text", "json"]) {
      test(`${format}: delivered just before the cut, sent again after it with its key: kept once`, async () => {
        box = openPlace(where);
        const receiver = keyedReceiver();
        box.writeConfig(config(receiver.url, format));
        expect(await notifyKilledBy(receiver, "web is down")).not.toBe(0); // killed
        expect(receiver.requests).toHaveLength(1);
        // The cut came before tend heard the answer: its spool still holds the message (written ahead).
        expect(spool()).toHaveLength(1);
        expect(await tend(["notify", "--flush"])).toBe(0);
        await waitFor(() => receiver.requests.length === 2, 10_000, "the re-send");
        const [first, again] = receiver.requests;
        expect(first.key).toMatch(/^tend-[0-9a-f]{32}$/);
        expect(again.key).toBe(first.key);
        if (format === "text") {
          expect(first.sequence).toBe(first.key); // ntfy's sequence id: the second replaces the first
          expect(again.sequence).toBe(first.key);
        } else expect(JSON.parse(again.body).key).toBe(first.key);
        expect(receiver.kept.size).toBe(1); // one notification, not two
        expect(spool()).toEqual([]);
        // Another message has another key.
        expect(await tend(["notify", "web is up"])).toBe(0);
        await waitFor(() => receiver.requests.length === 3, 10_000, "a new message");
        expect(receiver.requests[2].key).not.toBe(first.key);
        expect(receiver.kept.size).toBe(2);
      }, 60_000);
    }

    test("cut while the request is in flight, unanswered: the message is not lost, it goes next run", async () => {
      box = openPlace(where);
      const receiver = keyedReceiver();
      receiver.control.hang = true;
      box.writeConfig(config(receiver.url, "text"));
      // Before the fix the message lived only in memory until it failed: a cut while sending lost it.
      await notifyKilledBy(receiver, "tunnel is down");
      expect(spool()).toHaveLength(1);
      expect(JSON.parse(spool()[0]).message).toBe("tunnel is down");
      receiver.control.hang = false;
      expect(await tend(["notify", "--flush"])).toBe(0);
      await waitFor(() => receiver.requests.length === 2, 10_000, "the message to arrive");
      expect(receiver.requests[1].body).toMatch(/^tunnel is down\n\(late since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/);
      expect(receiver.requests[1].key).toBe(receiver.requests[0].key);
      expect(spool()).toEqual([]);
    }, 60_000);
  });
