// check.tcp send/expect against a real greeting server frozen with SIGSTOP: the kernel still
// completes the handshake for a stopped process, so a connect alone stays healthy; the service's
// own answer (SMTP's 220, Redis's +PONG after PING) does not come, and the check fails. validate and
// doctor say so of a tcp check without expect on a service tend restarts.
// tend runs on this host and inside the Termux-shaped phone (test/places.ts); the greeter is the test's.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, freePort, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Place | null = null;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await box?.cleanup();
  box = null;
});
afterAll(() => closePlaces());

const GREETER = `
const net = require("node:net");
const server = net.createServer((socket) => {
  socket.on("error", () => {});
  socket.write("220 greeter ESMTP ready\\r\\n");
  socket.on("data", (data) => { if (data.toString().includes("PING")) socket.write("+PONG\\r\\n"); });
});
server.listen(Number(process.argv[2]), "127.0.0.1", () => console.log("listening"));
`;

for (const where of PLACES)
  describe(`check.tcp send/expect (${where})`, () => {
    test("a frozen greeting server: connect alone stays healthy, expect (and send) fail, in words", async () => {
      const place = (box = openPlace(where));
      const dir = mkdtempSync(join(tmpdir(), "tend-greeter-"));
      const script = join(dir, "greeter.js");
      writeFileSync(script, GREETER);
      const port = await freePort();
      const greeter = Bun.spawn([BUN, script, String(port)], { stdout: "pipe" });
      stops.push(
        () => rmSync(dir, { recursive: true, force: true }),
        () => greeter.kill("SIGKILL"),
      );
      const reader = greeter.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("listening");
      const tcp = `127.0.0.1:${port}`;
      place.configure({
        defaults: { failures: 5 },
        services: [
          { name: "smtp", check: { tcp, expect: "220", timeout: "1s" } },
          { name: "redis", check: { tcp, send: "PING\r\n", expect: "+PONG", timeout: "1s" } },
          { name: "blind", check: { tcp, timeout: "1s" }, restart: { command: ["true"] } },
        ],
      });
      const probes = () =>
        Object.fromEntries(["smtp", "redis", "blind"].map((name) => [name, place.stateOf(name).lastProbe]));

      expect((await place.tend(["watchdog", "pass"])).code).toBe(0);
      expect(probes()).toMatchObject({
        smtp: { ok: true, detail: `${tcp} answered "220"` },
        redis: { ok: true, detail: `${tcp} answered "+PONG"` },
        blind: { ok: true, detail: `connected to ${tcp}` },
      });

      process.kill(greeter.pid, "SIGSTOP");
      try {
        expect((await place.tend(["watchdog", "pass"])).code).toBe(0);
        expect(probes()).toMatchObject({
          smtp: { ok: false, detail: 'connected, but no "220" within 1.0s' },
          redis: { ok: false, detail: 'connected, but no "+PONG" within 1.0s' },
          blind: { ok: true, detail: `connected to ${tcp}` }, // what a connect alone sees of a frozen process
        });
      } finally {
        process.kill(greeter.pid, "SIGCONT");
      }
      // Thawed: the queued connections are answered; the next pass is healthy again.
      await waitFor(
        async () => {
          await place.tend(["watchdog", "pass"]);
          return probes().smtp.ok && probes().redis.ok;
        },
        15_000,
        "healthy after SIGCONT",
      );

      // validate and doctor name the blind one (it has a restart), not the others; both still succeed.
      const validate = await place.tend(["watchdog", "validate"]);
      expect(validate.code).toBe(0);
      expect(validate.stderr).toContain("note: blind: check.tcp without expect cannot see the service frozen");
      expect(validate.stderr).not.toContain("smtp:");
      const doctor = JSON.parse((await place.tend(["doctor", "--json"])).stdout);
      const row = doctor.capabilities.find((entry: { name: string }) => entry.name === "tcp checks");
      expect(row).toMatchObject({ status: "limited" });
      expect(row.detail).toContain("blind: check.tcp without expect");
    }, 60_000);

    test("send without expect, or an expect longer than what is read: an error naming the key", async () => {
      const place = (box = openPlace(where));
      place.configure({ services: [{ name: "smtp", check: { tcp: "127.0.0.1:25", send: "HELO\r\n" } }] });
      const sendOnly = await place.tend(["watchdog", "validate"]);
      expect(sendOnly.code).toBe(2);
      expect(sendOnly.stderr).toContain("send");
      expect(sendOnly.stderr).toContain("give expect too");
      place.configure({ services: [{ name: "smtp", check: { tcp: "127.0.0.1:25", expect: "x".repeat(70_000) } }] });
      const long = await place.tend(["watchdog", "validate"]);
      expect(long.code).toBe(2);
      expect(long.stderr).toContain("expect");
      expect(long.stderr).toContain("64 KiB");
    });
  });
