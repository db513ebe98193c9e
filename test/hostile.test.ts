// Outside text is hostile: each path where it enters tend is fed control bytes, newlines and
// forged log lines; every log line, stdout/stderr line, status row and webhook body stays clean. Each runs
// on this host and inside the Termux-shaped phone (test/places.ts), but another program's error, whose
// program is systemctl: a phone has no systemd.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { alive, Sandbox, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let current: Place | null = null;
let sandbox: Sandbox | null = null;
afterEach(async () => {
  await current?.cleanup();
  sandbox?.cleanup();
  current = sandbox = null;
});
afterAll(() => closePlaces());

/** A control byte, a line separator or a raw newline: what must never reach a line tend writes. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
const LOG_LINE = /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[[A-Z-]+\] [^\n]*$/;
/** What an attacker would like on a terminal or in a log: OSC title, bell, colour, clear, a forged line. */
const FORGED =
  "\u001b]0;pwned\u0007\u001b[31mred\u001b[2J\r\n[2026-01-01 00:00:00] [RECOVERED] web is fine\u0000\u2028x";

function expectCleanLog(text: string) {
  const lines = text.split("\n").filter(Boolean);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) {
    expect(line).toMatch(LOG_LINE);
    expect(line).not.toMatch(CONTROL);
  }
  // The forged line is never a line of its own: its text is only ever inside another message.
  expect(lines.some((line) => line.startsWith("[2026-01-01 00:00:00]"))).toBe(false);
}

/** A local webhook recording what it receives, answering with `answer`. */
function webhook(answer: () => Response) {
  const bodies: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      bodies.push(await request.text());
      return answer();
    },
  });
  return { bodies, server, url: `http://127.0.0.1:${server.port}/hook/topic-x7q` };
}

for (const where of PLACES)
  describe(where, () => {
    test("a webhook's 500 body cannot forge a log line: NOTIFY is one escaped line, in log and stdout", async () => {
      const box = (current = openPlace(where));
      const hook = webhook(() => new Response(FORGED, { status: 500 }));
      box.configure({
        notify: { url: hook.url, retries: 0 },
        services: [{ name: "web", failures: 1, check: { tcp: "127.0.0.1:1" } }],
      });
      const pass = await box.tend(["watchdog"]);
      hook.server.stop(true);
      expect(pass.stdout).toContain("[NOTIFY] could not send");
      expect(pass.stdout).toContain(
        "HTTP 500: \\x1b]0;pwned\\x07\\x1b[31mred\\x1b[2J\\r\\n[2026-01-01 00:00:00] [RECOVERED]",
      );
      expectCleanLog(pass.stdout);
      expectCleanLog(box.read("watchdog.log"));
    });

    test("notify's stderr quotes the webhook's answer as one escaped line", async () => {
      const box = (current = openPlace(where));
      const hook = webhook(() => new Response(FORGED, { status: 400 }));
      box.configure({});
      const run = await box.tend(["notify", "--url", hook.url, "--no-spool", "hello"]);
      hook.server.stop(true);
      expect(run.code).toBe(1);
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(run.stderr.trimEnd()).not.toMatch(CONTROL);
      expect(run.stderr).toContain("HTTP 400: \\x1b]0;pwned");
    });

    test("a command check's output (ESC, OSC, BEL, CR) reaches log, stdout, status, webhook escaped", async () => {
      const box = (current = openPlace(where));
      const hook = webhook(() => new Response("ok"));
      const forged = box.scratch("forged.txt").inside;
      box.writeScratch("forged.txt", FORGED);
      box.configure({
        notify: { url: hook.url },
        services: [{ name: "db", failures: 1, check: { command: ["sh", "-c", `cat ${forged}; exit 3`] } }],
      });
      const pass = await box.tend(["watchdog"]);
      expect(pass.stdout).toContain("[WARN] db failed health check (exit 3: \\x1b]0;pwned\\x07");
      expectCleanLog(pass.stdout);
      expectCleanLog(box.read("watchdog.log"));
      const status = await box.tend(["watchdog", "status"]);
      expect(status.stdout).toContain("exit 3: \\x1b]0;pwned");
      expect(status.stdout).not.toMatch(CONTROL);
      await waitFor(() => hook.bodies.length > 0, 10_000, "the 🚨 notification");
      hook.server.stop(true);
      for (const body of hook.bodies) expect(body).not.toMatch(CONTROL);
      expect(hook.bodies.join("\n")).toContain("🚨 db is down (exit 3: \\x1b]0;pwned");
    });

    test("a corrupt state file's NUL and escape bytes are logged escaped: grep reads the log as text", async () => {
      const box = (current = openPlace(where));
      box.configure({ services: [{ name: "api", check: { tcp: "127.0.0.1:1" } }] });
      await box.tend(["watchdog"]);
      writeFileSync(box.stateFile("services/api.json"), `\u0000\u001b[2J${FORGED}`);
      const pass = await box.tend(["watchdog"]);
      expect(pass.stdout).toContain("[ERROR] api: corrupt state file reset (not JSON:");
      expectCleanLog(box.read("watchdog.log"));
      expect(box.read("watchdog.log")).not.toContain("\u0000");
      const grep = Bun.spawnSync(["grep", "-c", "corrupt state file", box.stateFile("watchdog.log")]);
      expect(grep.stdout.toString().trim()).toBe("1"); // not "Binary file matches"
    });

    test("a process whose argv holds escapes and a newline cannot forge safe-kill's 'sent SIGKILL' line", async () => {
      const box = (current = openPlace(where));
      const evil = "\u001b[2J\nsent SIGKILL to init (pid 1: /sbin/init)\u0007";
      const child = await box.startTarget(["sh", "-c", "sleep 300; :", evil], "evil.pid");
      const pidfile = child.pidfile;
      await waitFor(() => alive(child.here), 5000, "the process");
      await Bun.sleep(1100); // the pidfile must be written after the process started (1 s mtime slack)
      box.writeScratch("evil.pid", `${child.pid}\n`);
      const run = await box.tend(["safe-kill", "--dry-run", `pidfile:${pidfile}`]);
      expect(run.code).toBe(0);
      const lines = run.stdout.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(
        `would send SIGTERM to ${pidfile} (pid ${child.pid}: sh -c sleep 300; : \\x1b[2J\\nsent SIGKILL`,
      );
      expect(lines[0]).not.toMatch(CONTROL);
    });

    test("a heartbeat endpoint's answer is logged as one escaped line", async () => {
      const box = (current = openPlace(where));
      const hook = webhook(() => new Response(FORGED, { status: 503 }));
      box.configure({ watchdog: { heartbeat_url: hook.url } });
      const pass = await box.tend(["watchdog"]);
      hook.server.stop(true);
      expect(pass.stdout).toContain("[NOTIFY] heartbeat ping to");
      expect(pass.stdout).toContain("HTTP 503: \\x1b]0;pwned");
      expectCleanLog(box.read("watchdog.log"));
    });

    test("a pidfile or counter holding escapes is quoted escaped; nothing is started beside what may run", async () => {
      const box = (current = openPlace(where));
      const pidfile = `${box.state}/web.pid`;
      box.writeState("web.pid", "12\u001b[2J\n[X]");
      box.configure({
        services: [
          {
            name: "web",
            pidfile: "web.pid",
            grace: "0s",
            check: { tcp: "127.0.0.1:1" },
            restart: { spawn: ["sleep", "300"] },
          },
        ],
      });
      const pass = await box.tend(["watchdog"]);
      expect(pass.stdout).toContain(`[ERROR] web: ${pidfile} holds "12\\x1b[2J\\n[X]", not a PID (one line of digits)`);
      expect(pass.stdout).not.toContain("[RESTART]");
      expectCleanLog(box.read("watchdog.log"));
      const counter = box.scratch("count").inside;
      box.writeScratch("count", "\u001b[31m7\n");
      const tunnel = await box.tend([
        "blogtunnel",
        "--url",
        "http://127.0.0.1:1/",
        "--counter",
        counter,
        "--timeout",
        "1s",
      ]);
      expect(tunnel.stdout).toContain('holds "\\x1b[31m7", not a number');
      expect(tunnel.stdout).not.toMatch(CONTROL);
    });
  });

test("another program's error (STAND-IN systemctl: no systemd as PID 1 here) is logged escaped", async () => {
  const box = (sandbox = new Sandbox());
  const bin = join(box.dir, "bin");
  Bun.spawnSync(["mkdir", bin]);
  writeFileSync(join(box.dir, "forged.txt"), FORGED);
  writeFileSync(join(bin, "systemctl"), `#!/bin/sh\ncat ${join(box.dir, "forged.txt")} >&2\nexit 1\n`, { mode: 0o755 });
  box.configure({ services: [{ name: "blog", unit: "blog.service", check: { tcp: "127.0.0.1:1" } }] });
  const pass = await box.tend(["watchdog"], { env: { PATH: `${bin}:${process.env.PATH}` } });
  expect(pass.stdout).toContain(
    "[ERROR] blog: cannot read blog.service from systemd: systemctl show blog.service: \\x1b]0;pwned",
  );
  expectCleanLog(box.read("watchdog.log"));
});
