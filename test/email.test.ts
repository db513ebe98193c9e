// format = "email" against a real SMTP server on loopback (Debian's python3-aiosmtpd, started by
// the test: test/smtp-server.py), with STARTTLS offered (a certificate from the real openssl) and
// not, AUTH over TLS only, and a 5xx that makes a dead letter; the alert sent by a watchdog pass. tend runs
// on this host and inside the Termux-shaped phone (test/places.ts); the SMTP server is this host's.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCa } from "./certs.ts";
import { freePort, ROOT, TEND, waitFor, withOwnFiles } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place, type PlaceName } from "./places.ts";

let box: Place;
let where: PlaceName = "host";
/** The test's own files on this host (the SMTP server's record, the CA). */
let here = "";
const servers: ReturnType<typeof Bun.spawn>[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.kill("SIGTERM");
    await server.exited;
  }
  await box?.cleanup();
  rmSync(here, { recursive: true, force: true });
});
afterAll(() => closePlaces());

/** The SMTP server on a free port; its accepted messages and its session transcript. */
async function smtp(options: string[] = []) {
  const port = await freePort();
  const out = join(here, `smtp-${port}.jsonl`);
  // Debian's python3 (/usr/bin), where python3-aiosmtpd is installed; not whatever python3 PATH finds first.
  const server = Bun.spawn(["/usr/bin/python3", join(ROOT, "test", "smtp-server.py"), String(port), out, ...options], {
    stdout: "pipe",
    stderr: "pipe",
  });
  servers.push(server);
  const reader = server.stdout.getReader();
  const { value } = await reader.read();
  if (!new TextDecoder().decode(value).includes("ready"))
    throw new Error(`smtp-server: ${await new Response(server.stderr).text()}`);
  return {
    port,
    received: () =>
      existsSync(out)
        ? readFileSync(out, "utf8")
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line))
        : [],
    transcript: () => (existsSync(`${out}.transcript`) ? readFileSync(`${out}.transcript`, "utf8") : ""),
  };
}

function config(url: string, extra = "") {
  box.writeConfig(`[watchdog]
state_dir = "${box.state}"
[notify]
format = "email"
url = "${url}"
to = ["ops@example.org", "phone@example.org"]
from = "tend@example.org"
retries = 0
timeout = "5s"
${extra}
[[service]]
name = "web"
failures = 1
grace = "0s"
cooldown = "0s"
verify_timeout = "1s"
[service.check]
tcp = "127.0.0.1:1"
timeout = "300ms"
[service.restart]
command = ["true"]
`);
}

for (const place of PLACES)
  describe(place, () => {
    beforeAll(() => void (where = place));
    test("email: alerts of a pass over STARTTLS and AUTH, one per event, emoji and service as subject", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      const certs = makeCa(join(here, "ca"));
      box.writeScratch("ca.pem", readFileSync(certs.ca, "utf8")); // the CA as tend is given it there
      const leaf = certs.leaf(-1, 30);
      const server = await smtp(["--cert", leaf.cert, "--key", leaf.key, "--auth", "tend:s3cret-mail-pass"]);
      config(`smtp://tend:s3cret-mail-pass@localhost:${server.port}`);
      const pass = await box.tend(["watchdog"], { NODE_EXTRA_CA_CERTS: box.scratch("ca.pem").inside });
      expect(pass.stdout).not.toContain("[NOTIFY]"); // delivered
      expect(pass.stdout).not.toContain("s3cret-mail-pass");
      await waitFor(() => server.received().length >= 2, 10_000, "the emails");
      const mails = server.received();
      // ⚠️ then 🚨: one message each, both over TLS, authenticated, to both recipients.
      expect(mails).toHaveLength(2);
      for (const mail of mails) {
        expect(mail).toMatchObject({
          from: "tend@example.org",
          to: ["ops@example.org", "phone@example.org"],
          tls: true,
          authenticated: true,
        });
      }
      // A long subject is folded over several lines (RFC 5322 2.2.3: a line break before white space): unfolded.
      const subjects = mails.map(
        (mail: { content: string }) =>
          /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(mail.content)?.[1].replace(/\r?\n(?=[ \t])/g, "") ?? "",
      );
      // RFC 2047 encoded words: the space between two adjacent ones is no text (dropped before decoding: once
      // decoded, a host name like s5fresh could end a word with "?=" or not, and was cut), then decoded.
      const decoded = subjects.map((subject: string) =>
        subject
          .replace(/(\?=)\s+(?==\?UTF-8\?)/gi, "$1")
          .replace(/=\?UTF-8\?[BQ]\?([^?]*)\?=/gi, (_whole, text) =>
            /=\?UTF-8\?B/i.test(_whole) ? Buffer.from(text, "base64").toString() : decodeQ(text),
          ),
      );
      const host = box.hostname;
      expect(decoded).toEqual([`⚠️ restarted web on ${host}`, `🚨 web is down on ${host}`]);
      const transcript = server.transcript();
      expect(transcript).toContain("STARTTLS");
      expect(transcript).toMatch(/>> b'AUTH PLAIN \*+'/); // over TLS, after STARTTLS; aiosmtpd masks it
      expect(transcript).not.toContain("s3cret-mail-pass");
      console.log(`the SMTP session of one alert (aiosmtpd's log):\n${transcript.split("\n").slice(0, 80).join("\n")}`);
    }, 60_000);

    test("email: credentials never go in the clear: a server without STARTTLS gets nothing (dead letter)", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      const plain = await smtp(); // no certificate: no STARTTLS offered
      config(`smtp://tend:s3cret-mail-pass@127.0.0.1:${plain.port}`);
      const refused = await box.tend(["notify", "🚨 web is down"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("the SMTP server offers no STARTTLS: the credentials are not sent in the clear");
      expect(plain.received()).toEqual([]);
      expect(plain.transcript()).not.toMatch(/>> b'AUTH/); // the client never sent AUTH
      expect(box.read("notify-dead.jsonl")).toContain("offers no STARTTLS");
      // Without credentials, a server without STARTTLS takes it as it is (a relay on loopback).
      config(`smtp://127.0.0.1:${plain.port}`);
      expect((await box.tend(["notify", "✅ web recovered"])).code).toBe(0);
      await waitFor(() => plain.received().length === 1, 10_000, "the email");
      expect(plain.received()[0]).toMatchObject({ tls: false, authenticated: false });
    }, 60_000);

    test("email: SMTP 5xx is refused for good (dead letter); 4xx is passing (spooled, then sent late)", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      const rejecting = await smtp(["--reject", "550 5.1.1 <ops@example.org>: no such user"]);
      config(`smtp://127.0.0.1:${rejecting.port}`);
      const dead = await box.tend(["notify", "🚨 web is down"]);
      expect(dead.code).toBe(1);
      // The addresses ride in the destination's query: scrubbed from what is said, as any URL's values are.
      expect(dead.stderr).toContain("refused for good: SMTP 550 5.1.1 <…>: no such user");
      expect(box.read("notify-dead.jsonl")).toContain("no such user");
      const busy = await smtp(["--reject", "451 4.3.0 try again later"]);
      config(`smtp://127.0.0.1:${busy.port}`);
      const later = await box.tend(["notify", "⚠️ restarted web"]);
      expect(later.code).toBe(1);
      expect(later.stderr).toContain("SMTP 451 4.3.0 try again later");
      expect(box.read("notify-spool.jsonl")).toContain("restarted web");
      // The spooled email keeps its own destination; a server that takes it delivers it late.
      const good = await smtp();
      const spooled = box.read("notify-spool.jsonl").replace(`:${busy.port}`, `:${good.port}`);
      writeFileSync(box.stateFile("notify-spool.jsonl"), spooled);
      expect((await box.tend(["notify", "--flush"])).code).toBe(0);
      await waitFor(() => good.received().length === 1, 10_000, "the late email");
      // The body (quoted-printable: the emoji as =E2=9A=A0=EF=B8=8F) is the live text and its note.
      expect(good.received()[0].content).toMatch(/restarted web\r?\n\(late since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/);
    }, 60_000);

    test("email configuration: smtp(s) URL, to and from required, checked addresses; exit 2 naming keys", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      const cases: [string, string][] = [
        [
          'url = "https://mail.example/"\nto = "a@b.c"\nfrom = "t@b.c"',
          'is not smtp:// or smtps:// (format = "email")',
        ],
        ['url = "smtp://mail.example:587"\nfrom = "t@b.c"', 'notify.to: is required with format = "email"'],
        [
          'url = "smtp://mail.example:587"\nto = "not an address"\nfrom = "t@b.c"',
          'notify.to: "not an address" is not an address',
        ],
        ['url = "smtp://mail.example:587"\nto = "a@b.c"', 'notify.from: is required with format = "email"'],
      ];
      for (const [keys, said] of cases) {
        box.writeConfig(`[watchdog]\nstate_dir = "${box.state}"\n[notify]\nformat = "email"\n${keys}\n`);
        const result = await box.tend(["watchdog", "validate"]);
        expect({ keys, code: result.code }).toEqual({ keys, code: 2 });
        expect(result.stderr).toContain(said);
      }
      box.configure({ notify: { format: "text", to: "a@b.c" } });
      expect((await box.tend(["watchdog", "validate"])).stderr).toContain('notify.to: is for format = "email"');
    });

    /** RFC 2047 Q encoding: _ is a space, =XX a byte. */
    function decodeQ(text: string): string {
      const bytes = text
        .replace(/_/g, " ")
        .replace(/=([0-9A-F]{2})/gi, (_whole, hex) => String.fromCharCode(parseInt(hex, 16)));
      return Buffer.from(bytes, "latin1").toString("utf8");
    }

    test("email: a name the system's resolver does not know: said as such, within the deadline", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      box.configure({
        notify: { url: "smtp://mail.tend-test.invalid:25", format: "email", from: "t@b.c", to: "o@b.c", timeout: "3s" },
      });
      const started = Date.now();
      const run = await box.tend(["notify", "--no-spool", "hello"]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("SMTP cannot resolve mail.tend-test.invalid: ");
      expect(Date.now() - started).toBeLessThan(15_000); // its 3 s timeout and retries (nodemailer's own DNS hung)
    }, 30_000);

    test("email: one deadline for the whole delivery: a tarpit answering each step just in time", async () => {
      box = openPlace(where);
      here = mkdtempSync(join(tmpdir(), "tend-email-"));
      // Each answer 1.5 s late: inside nodemailer's per-step 2 s, so per step it never times out.
      const sockets: import("node:net").Socket[] = [];
      const tarpit = (await import("node:net")).createServer((socket) => {
        sockets.push(socket);
        const say = (line: string) => setTimeout(() => !socket.destroyed && socket.write(`${line}\r\n`), 1500);
        say("220 tarpit ESMTP");
        socket.on("data", (data) => {
          for (const line of data.toString().split("\r\n").filter(Boolean))
            say(/^(EHLO|HELO)/i.test(line) ? "250 tarpit" : /^DATA/i.test(line) ? "354 go on" : "250 ok");
        });
      });
      await new Promise<void>((resolve) => tarpit.listen(0, "127.0.0.1", resolve));
      try {
        const port = (tarpit.address() as { port: number }).port;
        box.configure({
          notify: {
            url: `smtp://127.0.0.1:${port}`,
            format: "email",
            from: "t@b.c",
            to: "o@b.c",
            timeout: "2s",
            retries: 0,
          },
        });
        const started = Date.now();
        const run = await box.tend(["notify", "hello"]);
        const tookMs = Date.now() - started;
        expect(run.code).toBe(1);
        expect(run.stderr).toContain("no answer within 2.0s (the whole delivery)");
        expect(tookMs).toBeLessThan(6000); // one 2 s deadline; per step it was 5 x 1.5 s and more
      } finally {
        for (const socket of sockets) socket.destroy();
        tarpit.close();
      }
    }, 30_000);
  });

test("localhost said ::1 first (no /etc/hosts on a fresh Debian): the mail reaches a server on 127.0.0.1", async () => {
  box = openPlace("host");
  here = mkdtempSync(join(tmpdir(), "tend-email-"));
  const server = await smtp();
  config(`smtp://localhost:${server.port}`);
  // This run's /etc/hosts names ::1 first, as the resolver answered there (nss-myhostname's order).
  const hosts = join(here, "hosts");
  writeFileSync(hosts, "::1 localhost\n127.0.0.1 localhost\n");
  const sent = await withOwnFiles(
    { "/etc/hosts": hosts },
    `exec ${TEND} notify --config ${box.configFile.inside} "✅ web recovered"`,
    { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: here, TZ: "UTC" }, timeoutMs: 120_000 },
  );
  expect(sent.stderr).toBe("");
  expect(sent.code).toBe(0);
  await waitFor(() => server.received().length === 1, 10_000, "the mail");
}, 30_000);
