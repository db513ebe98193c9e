// Probes against real servers, sockets, commands and processes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { utimesSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import type { HttpCheck } from "../lib/checks/http.ts";
import { probe } from "../lib/checks/index.ts";
import { readProc } from "../lib/os/proc.ts";
import { alive, freePort, procState, Sandbox, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES } from "./places.ts";

const box = new Sandbox();
let url = "";
let server: ReturnType<typeof Bun.serve>;
const seenHeaders: Record<string, string>[] = [];

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const path = new URL(request.url).pathname;
      seenHeaders.push(Object.fromEntries(request.headers));
      if (path === "/slow") await Bun.sleep(1500);
      if (path === "/slow-body") {
        const stream = new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode("partial"));
            await Bun.sleep(3000);
            controller.close();
          },
        });
        return new Response(stream);
      }
      const status = Number(/^\/(\d{3})$/.exec(path)?.[1] ?? 200);
      return new Response(path === "/body" ? "status: all good" : "hello", {
        status,
        headers: status === 302 ? { location: "/" } : {},
      });
    },
  });
  url = `http://127.0.0.1:${server.port}`;
});
afterAll(() => {
  server.stop(true);
  box.cleanup();
  closePlaces();
});

const http = (path: string, extra: Partial<HttpCheck> = {}): HttpCheck => ({
  kind: "http",
  url: url + path,
  expect: null,
  anyResponse: false,
  failCodes: null,
  contains: null,
  headers: {},
  timeoutMs: 1000,
  ...extra,
});

describe("http check", () => {
  test.each([
    ["2xx is healthy by default", "/200", {}, true, "HTTP 200"],
    ["3xx is healthy by default (redirects not followed)", "/302", {}, true, "HTTP 302"],
    ["4xx fails by default", "/404", {}, false, "HTTP 404 (expected 2xx/3xx)"],
    ["5xx fails by default", "/503", {}, false, "HTTP 503 (expected 2xx/3xx)"],
    ["expect lists the accepted statuses", "/204", { expect: [200] }, false, "HTTP 204 (expected 200)"],
    ["expect accepts a listed 4xx", "/401", { expect: [200, 401] }, true, "HTTP 401"],
    ["any_response: a 404 is an answer, so healthy", "/404", { anyResponse: true }, true, "HTTP 404"],
    ["fail_codes: only those fail", "/404", { failCodes: [502, 503, 504, 530] }, true, "HTTP 404"],
    ["fail_codes: a listed code fails", "/530", { failCodes: [502, 503, 504, 530] }, false, "HTTP 530 (a fail code)"],
    ["contains: body must hold the string", "/body", { contains: "all good" }, true, "HTTP 200"],
    ["contains: a 200 without it fails", "/200", { contains: "all good" }, false, 'HTTP 200, body without "all good"'],
  ] as [string, string, object, boolean, string][])("%s", async (_name, path, extra, ok, detail) => {
    const result = await probe(http(path, extra));
    expect(result.ok).toBe(ok);
    expect(result.detail).toBe(detail);
  });

  test("headers are sent", async () => {
    await probe(http("/200", { headers: { "X-Probe": "tend" } }));
    expect(seenHeaders.at(-1)?.["x-probe"]).toBe("tend");
  });

  test("an answer slower than the timeout is a timeout; inside it, healthy", async () => {
    const late = await probe(http("/slow", { timeoutMs: 500 }));
    expect(late).toMatchObject({ ok: false, timedOut: true, detail: "no answer within 0.5s (HTTP 000)" });
    expect(late.latencyMs).toBeLessThan(1400);
    const patient = await probe(http("/slow", { timeoutMs: 3000 }));
    expect(patient.ok).toBe(true);
    expect(patient.latencyMs).toBeGreaterThanOrEqual(1400);
  });

  // SPEC "Answers": a head that never completes is no answer, said with what did arrive (#63): curl's
  // %{http_code} reports the status line; tend's verdict stays "hung", its words say the status.
  test("a head that never completes: no answer, said with the status line or interim that arrived", async () => {
    const server = createServer((socket) => {
      socket.once("data", (request) => {
        const path = /^GET (\S+)/.exec(request.toString())?.[1];
        if (path === "/status-only") socket.write("HTTP/1.1 200 OK\r\n");
        if (path === "/drip-503") socket.write("HTTP/1.1 503 Service Unavailable\r\nServer: x\r\n");
        if (path === "/continue") socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX: 1\r\n");
        if (path === "/continue-only") socket.write("HTTP/1.1 100 Continue\r\n\r\n");
        if (path === "/long-line") socket.write(`HTTP/1.1 200 ${"O".repeat(120_000)}\r\n`);
      });
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const at = (path: string) => probe(http(path, { url: `http://127.0.0.1:${port}${path}`, timeoutMs: 400 }));
    try {
      const words = {
        "/status-only": "HTTP 200 status line, headers not complete within 0.4s (HTTP 000)",
        "/drip-503": "HTTP 503 status line, headers not complete within 0.4s (HTTP 000)",
        "/continue": "HTTP 200 status line, headers not complete within 0.4s (HTTP 000)",
        "/continue-only": "HTTP 100 Continue, then no final answer within 0.4s (HTTP 000)",
        "/long-line": "no answer: not an HTTP answer (a header line longer than 100 KB) (HTTP 000)",
      };
      for (const [path, detail] of Object.entries(words))
        expect({ path, ...(await at(path)) }).toMatchObject({ path, ok: false, detail });
    } finally {
      server.close();
    }
  });

  test("a body that stalls: the status answers; with contains, the search counts toward the timeout", async () => {
    expect(await probe(http("/slow-body", { timeoutMs: 700 }))).toMatchObject({ ok: true, detail: "HTTP 200" });
    const searched = await probe(http("/slow-body", { timeoutMs: 700, contains: "never" }));
    expect(searched).toMatchObject({ ok: false, detail: 'HTTP 200, body without "never" after 0.7s' });
  });

  test("a declared-length body that stalls is an answer; a gzip bomb is never inflated", async () => {
    // Raw sockets: headers say 100 bytes (read natively) or gzip (streamed and cut), then what they do.
    // 900 gzip members of 1 MiB of "a" each: under 1 MiB on the wire (a length within the bound), 900 MiB inflated.
    const member = Bun.gzipSync(new Uint8Array(1024 * 1024).fill(0x61));
    const bomb = Buffer.concat(Array.from({ length: 900 }, () => member));
    const sockets: import("node:net").Socket[] = [];
    const raw: Server = createServer((socket) => {
      sockets.push(socket);
      socket.once("data", (request) => {
        if (request.toString().startsWith("GET /stall ")) {
          socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"); // and nothing more
        } else {
          socket.write(`HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n\r\n`);
          socket.end(bomb);
        }
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(raw.address() as { port: number }).port}`;
    const stalled = await probe({ ...http(""), url: `${base}/stall`, timeoutMs: 700 });
    const searched = await probe({ ...http(""), url: `${base}/stall`, contains: "needle", timeoutMs: 700 });
    const bombed = await probe({ ...http(""), url: `${base}/bomb`, contains: "needle", timeoutMs: 5000 });
    for (const socket of sockets) socket.destroy();
    raw.close();
    expect(stalled).toMatchObject({ ok: true, detail: "HTTP 200" });
    expect(searched).toMatchObject({ ok: false, detail: 'HTTP 200, body without "needle" after 0.7s' });
    // Asked without Accept-Encoding and searched as the bytes came (curl without --compressed): its
    // < 1 MiB on the wire is read whole and never inflated to 900 MiB.
    expect(bombed).toMatchObject({ ok: false, detail: 'HTTP 200, body without "needle"' });
  });

  test("refused connection is a failure that says so", async () => {
    const port = await freePort();
    const result = await probe({ ...http(""), url: `http://127.0.0.1:${port}/` });
    expect(result.ok).toBe(false);
    expect(result.detail).toBe("no answer: connection refused (HTTP 000)");
  });

  test("a SIGSTOP-frozen server: alive by PID, failing by probe", async () => {
    const port = await freePort();
    const child = await box.server(port);
    process.kill(child.pid, "SIGSTOP");
    await waitFor(() => procState(child.pid) === "T", 5000, "stopped");
    const result = await probe({ ...http(""), url: `http://127.0.0.1:${port}/`, timeoutMs: 500 });
    expect(alive(child.pid)).toBe(true);
    expect(result).toMatchObject({ ok: false, timedOut: true });
    process.kill(child.pid, "SIGKILL");
  });
});

describe("tcp check", () => {
  let listener: Server;
  let port = 0;
  beforeAll(async () => {
    listener = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(() => listener.close());

  test("connect within the timeout is healthy", async () => {
    expect(await probe({ kind: "tcp", host: "127.0.0.1", port, timeoutMs: 1000 })).toMatchObject({
      ok: true,
      detail: `connected to 127.0.0.1:${port}`,
    });
  });
  test("nothing listening fails", async () => {
    const closed = await freePort();
    expect(await probe({ kind: "tcp", host: "127.0.0.1", port: closed, timeoutMs: 1000 })).toMatchObject({
      ok: false,
      detail: "no connection: connection refused",
    });
  });
});

describe("command check", () => {
  test("exit 0 is healthy, no shell involved", async () => {
    expect(await probe({ kind: "command", argv: ["test", "-d", "/"], timeoutMs: 2000 })).toMatchObject({
      ok: true,
      detail: "exit 0",
    });
    expect(await probe({ kind: "command", argv: ["echo", "$(false)"], timeoutMs: 2000 })).toMatchObject({ ok: true });
  });
  test("non-zero exit fails with what it said", async () => {
    const result = await probe({ kind: "command", argv: ["sh", "-c", "echo db down >&2; exit 3"], timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: false, detail: "exit 3: db down" });
  });
  test("a missing program fails and says so", async () => {
    const result = await probe({ kind: "command", argv: ["/nonexistent/check"], timeoutMs: 2000 });
    expect(result.ok).toBe(false);
    expect(result.detail).toStartWith("cannot run /nonexistent/check");
  });
  test("timeout kills the command's whole process group, grandchildren included", async () => {
    const marker = join(box.dir, "grandchild.pid");
    const result = await probe({
      kind: "command",
      argv: ["sh", "-c", `sleep 30 & echo $! > ${marker}; wait`],
      timeoutMs: 500,
    });
    expect(result).toMatchObject({ ok: false, timedOut: true, detail: "command did not finish within 0.5s" });
    const grandchild = Number(await Bun.file(marker).text());
    await waitFor(() => !alive(grandchild), 5000, "grandchild killed");
  });
});

describe("process check", () => {
  test("running is healthy; stopped (T) fails; zombie fails; none fails", async () => {
    const child = Bun.spawn(["sleep", "30"], { detached: true });
    box.track(child.pid);
    const running = await probe({ kind: "process", timeoutMs: 1000 }, { process: readProc(child.pid) });
    expect(running.ok).toBe(true);
    process.kill(child.pid, "SIGSTOP");
    await waitFor(() => procState(child.pid) === "T", 5000, "stopped");
    const stopped = await probe({ kind: "process", timeoutMs: 1000 }, { process: readProc(child.pid) });
    expect(stopped).toMatchObject({ ok: false, detail: `pid ${child.pid} is stopped (T)` });
    const zombie = { ...readProc(child.pid)!, state: "Z" };
    expect((await probe({ kind: "process", timeoutMs: 1000 }, { process: zombie })).detail).toBe(
      `pid ${child.pid} is a zombie (Z)`,
    );
    expect((await probe({ kind: "process", timeoutMs: 1000 }, { process: null })).detail).toBe("no process");
    process.kill(child.pid, "SIGKILL");
  });
  test("a real zombie (exited, not reaped) is not running", async () => {
    // sh starts a child that exits at once, then sleeps without reaping it: the child stays Z.
    const parent = Bun.spawn(["sh", "-c", "sleep 0 & exec sleep 30"], { detached: true });
    box.track(parent.pid);
    let zombiePid = 0;
    await waitFor(
      () => {
        for (const entry of new Bun.Glob("[0-9]*").scanSync({ cwd: "/proc", onlyFiles: false })) {
          const info = readProc(Number(entry));
          if (info?.ppid === parent.pid && info.state === "Z") zombiePid = info.pid;
        }
        return zombiePid > 0;
      },
      5000,
      "zombie child",
    );
    const result = await probe({ kind: "process", timeoutMs: 1000 }, { process: readProc(zombiePid) });
    expect(result).toMatchObject({ ok: false, detail: `pid ${zombiePid} is a zombie (Z)` });
    process.kill(parent.pid, "SIGKILL");
  });
});

describe("log freshness check", () => {
  test("modified within fresh is healthy; older fails; missing fails", async () => {
    const path = join(box.dir, "app.log");
    writeFileSync(path, "line\n");
    expect((await probe({ kind: "log", path, freshMs: 60_000, timeoutMs: 1000 })).ok).toBe(true);
    utimesSync(path, new Date(Date.now() - 5 * 60_000), new Date(Date.now() - 5 * 60_000));
    const stale = await probe({ kind: "log", path, freshMs: 60_000, timeoutMs: 1000 });
    expect(stale.ok).toBe(false);
    expect(stale.detail).toMatch(/^log not written for 5m( \d+s)? \(fresh: 60s\)$/);
    expect((await probe({ kind: "log", path: path + ".missing", freshMs: 60_000, timeoutMs: 1000 })).detail).toEndWith(
      ": no such file",
    );
  });

  for (const where of PLACES)
    test(`check.log through the binary: fresh is healthy, a stale log is a strike (${where})`, async () => {
      const at = openPlace(where);
      try {
        at.writeScratch("recorder.log", "recording\n");
        const log = at.scratch("recorder.log");
        at.configure({ services: [{ name: "recorder", check: { log: log.inside, fresh: "1m" } }] });
        await at.tend(["watchdog"]);
        expect(at.stateOf("recorder").verdict.word).toBe("healthy");
        utimesSync(log.outside, new Date(Date.now() - 5 * 60_000), new Date(Date.now() - 5 * 60_000));
        await at.tend(["watchdog"]);
        expect(at.read("watchdog.log")).toMatch(
          /\[WARN\] recorder failed health check \(log not written for 5m( \d+s)? \(fresh: 60s\), failure 1\/3\)/,
        );
      } finally {
        await at.cleanup();
      }
    });
});
