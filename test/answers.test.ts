// SPEC "Answers": what counts as an answer is what curl's %{http_code} reports. A corpus of real
// server behaviours on raw sockets (and TLS servers with openssl-made certificates), each judged
// through the binary and, where curl is installed, compared with curl's own code. The corpus is judged on
// this host and inside the Termux-shaped phone (test/places.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { join } from "node:path";
import { makeCa } from "./certs.ts";
import { Sandbox } from "./helpers.ts";
import { closePlaces, openPlace, PLACES } from "./places.ts";

const box = new Sandbox();
const sockets: Socket[] = [];
const servers: Server[] = [];
const ports: Record<string, number> = {};
let ca = "";

/** What each server does once a request arrives: the corpus. */
const behaviours: Record<string, (socket: Socket) => void> = {
  "sse-chunked": (socket) =>
    socket.write(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
        "e\r\ndata: hello\n\n\r\n",
    ),
  "sse-plain": (socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: hello\n\n"),
  "held-open": (socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nsome"),
  trickle: (socket) => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
    const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(".")), 200);
  },
  truncated: (socket) => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this"),
  "broken-chunk": (socket) => socket.end("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n"),
  "status-503-streaming": (socket) => socket.write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 99\r\n\r\n"),
  "continue-then-200": (socket) =>
    socket.end("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
  "clean-close": (socket) => socket.end(),
  reset: (socket) => socket.resetAndDestroy(),
  malformed: (socket) => socket.write("HELLO there, I am not HTTP\r\n\r\n"),
  silent: () => {},
  "two-mib": (socket) => socket.write("HTTP/1.1 200 OK\r\n\r\n" + "a".repeat(2 * 1024 * 1024)),
};

function listen(server: Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as any).port)));
}

beforeAll(async () => {
  for (const [name, behave] of Object.entries(behaviours)) {
    ports[name] = await listen(
      createServer((socket) => {
        sockets.push(socket);
        socket.on("error", () => {});
        socket.once("data", () => behave(socket));
      }),
    );
  }
  const certs = makeCa(join(box.dir, "ca"));
  ca = certs.ca;
  const leaves = {
    good: certs.leaf(-1, 40),
    expired: certs.leaf(-30, -2),
    self: certs.selfSigned(40),
    other: certs.leaf(-1, 40, "DNS:other.example"),
  };
  for (const [name, leaf] of Object.entries(leaves)) {
    const tls = createTlsServer({ cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) }, (socket) => {
      sockets.push(socket);
      socket.on("error", () => {});
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    });
    tls.on("tlsClientError", () => {});
    ports[`tls-${name}`] = await listen(tls as unknown as Server);
  }
});

afterAll(() => {
  closePlaces();
  for (const socket of sockets) socket.destroy();
  for (const server of servers) server.close();
  box.cleanup();
});

const service = (name: string, url: string, extra = "", timeout = "20s") =>
  `[[service]]\nname = "${name}"\n[service.check]\nhttp = "${url}"\ntimeout = "${timeout}"\n${extra}\n`;
const local = (name: string, path = "/") => `http://127.0.0.1:${ports[name]}${path}`;

/** behaviour → [URL, extra check keys, ok, detail]: the corpus table. */
function corpus(caFile = ca): [string, string, string, boolean, string][] {
  const https = (name: string, host = "localhost") => `https://${host}:${ports[`tls-${name}`]}/`;
  return [
    ["sse-chunked", local("sse-chunked"), "", true, "HTTP 200"],
    ["sse-plain", local("sse-plain"), "", true, "HTTP 200"],
    ["sse-fail-codes", local("sse-plain"), "fail_codes = [502, 503, 504, 530, 0]", true, "HTTP 200"],
    ["sse-any-response", local("sse-chunked"), "any_response = true", true, "HTTP 200"],
    ["sse-contains-found", local("sse-chunked"), 'contains = "hello"', true, "HTTP 200"],
    ["held-open", local("held-open"), "", true, "HTTP 200"],
    ["trickle", local("trickle"), "", true, "HTTP 200"],
    ["truncated", local("truncated"), "", true, "HTTP 200"],
    ["broken-chunk", local("broken-chunk"), "", true, "HTTP 200"],
    ["status-503-streaming", local("status-503-streaming"), "", false, "HTTP 503 (expected 2xx/3xx)"],
    ["continue-then-200", local("continue-then-200"), "", true, "HTTP 200"],
    ["clean-close", local("clean-close"), "", false, "no answer: connection closed without an answer (HTTP 000)"],
    ["reset", local("reset"), "", false, "no answer: connection reset (HTTP 000)"],
    ["refused", "http://127.0.0.1:1/", "", false, "no answer: connection refused (HTTP 000)"],
    ["malformed", local("malformed"), "", false, "no answer: not an HTTP answer (HTTP 000)"],
    ["silent", local("silent"), "", false, "no answer within 2.0s (HTTP 000)"],
    ["tls-good-ca", https("good"), `ca = "${caFile}"`, true, "HTTP 200"],
    ["tls-good-untrusted", https("good"), "", false, "no answer: certificate not trusted (HTTP 000)"],
    ["tls-self-signed", https("self"), "", false, "no answer: self-signed certificate (HTTP 000)"],
    ["tls-self-signed-insecure", https("self"), "insecure = true", true, "HTTP 200"],
    ["tls-expired", https("expired"), `ca = "${caFile}"`, false, "no answer: certificate expired (HTTP 000)"],
    [
      "tls-wrong-name",
      https("other"),
      `ca = "${caFile}"`,
      false,
      "no answer: certificate not valid for localhost (HTTP 000)",
    ],
    [
      "plain-http-on-https",
      `https://127.0.0.1:${ports["malformed"]}/`,
      "",
      false,
      "no answer: TLS handshake failed (the port speaks plain HTTP?) (HTTP 000)",
    ],
    // The TLS server closes on a plain request without an alert: there is no answer, and it closed.
    [
      "tls-on-http",
      `http://127.0.0.1:${ports["tls-good"]}/`,
      "",
      false,
      "no answer: connection closed without an answer (HTTP 000)",
    ],
  ];
}

for (const where of PLACES)
  test(`answers (${where}): the corpus, judged as curl reports it; no pass waits for a body it needs not`, async () => {
    const place = openPlace(where);
    try {
      place.writeScratch("ca.pem", readFileSync(ca, "utf8"));
      const rows = corpus(place.scratch("ca.pem").inside);
      place.writeConfig(
        `[watchdog]\nstate_dir = "${place.state}"\n` +
          rows
            .map(([name, url, extra]) => service(name, url, extra, ["silent"].includes(name) ? "2s" : "20s"))
            .join(""),
      );
      const started = Date.now();
      const run = await place.tend(["watchdog", "status", "--json"]);
      const elapsed = Date.now() - started;
      const probes = Object.fromEntries(JSON.parse(run.stdout).services.map((row: any) => [row.name, row.probe]));
      const table = rows.map(([name]) => `${name} → ${probes[name]?.ok ? "ok" : "fails"}, ${probes[name]?.detail}`);
      console.log(`corpus, ${where} (${elapsed} ms):\n  ${table.join("\n  ")}`);
      for (const [name, , , ok, detail] of rows) expect({ name, ...probes[name] }).toMatchObject({ name, ok, detail });
      // The endless, held-open and trickling bodies did not hold the probe to its 20 s timeout.
      for (const name of ["sse-chunked", "sse-plain", "held-open", "trickle", "status-503-streaming"])
        expect({ name, waited: probes[name].latency_ms >= 10_000 }).toEqual({ name, waited: false });
      expect(elapsed).toBeLessThan(15_000); // every 20 s timeout would have cost 20 s; the 2 s one is the floor
      // No internal code reaches the output.
      expect(run.stdout).not.toMatch(/ECONNRESET|EPROTO|Malformed_HTTP|DEPTH_ZERO|ERR_TLS|ConnectionClosed/);
    } finally {
      await place.cleanup();
    }
  });

for (const where of PLACES)
  test(`answers (${where}): with contains, the body is read within the timeout, a missing string said`, async () => {
    const sandbox = openPlace(where);
    sandbox.writeConfig(
      `[watchdog]\nstate_dir = "${sandbox.state}"\n` +
        service("stream-lacks", local("sse-chunked"), 'contains = "absent"', "1s") +
        service("held-lacks", local("held-open"), 'contains = "absent"', "1s") +
        service("truncated-lacks", local("truncated"), 'contains = "absent"', "1s") +
        service("truncated-holds", local("truncated"), 'contains = "only"', "1s") +
        service("complete-lacks", local("continue-then-200"), 'contains = "absent"', "1s") +
        service("big-lacks", local("two-mib"), 'contains = "absent"', "5s"),
    );
    const run = await sandbox.tend(["watchdog", "status", "--json"]);
    await sandbox.cleanup();
    const probes = Object.fromEntries(JSON.parse(run.stdout).services.map((row: any) => [row.name, row.probe]));
    expect(probes["stream-lacks"]).toMatchObject({ ok: false, detail: 'HTTP 200, body without "absent" after 1.0s' });
    expect(probes["held-lacks"]).toMatchObject({ ok: false, detail: 'HTTP 200, body without "absent" after 1.0s' });
    expect(probes["truncated-lacks"]).toMatchObject({
      ok: false,
      detail: 'HTTP 200, body without "absent" (the body broke off)',
    });
    expect(probes["truncated-holds"]).toMatchObject({ ok: true, detail: "HTTP 200" });
    expect(probes["complete-lacks"]).toMatchObject({ ok: false, detail: 'HTTP 200, body without "absent"' });
    expect(probes["big-lacks"]).toMatchObject({
      ok: false,
      detail: 'HTTP 200, body without "absent" in its first MiB',
    });
    // The latency is the time to the headers, not to the end of the body search.
    expect(probes["stream-lacks"].latency_ms).toBeLessThan(1000);
  });

test("answers: curl reports the same codes for the corpus (curl's %{http_code} is the reference)", async () => {
  // Not spawnSync: the servers live in this process and must answer while curl runs.
  const rows = corpus().filter(([name, , extra]) => !name.startsWith("tls-") || extra.startsWith("insecure"));
  const codes = await Promise.all(
    rows.map(async ([, url, extra]) => {
      const flags = extra.startsWith("insecure") ? ["-k"] : []; // curl's trust store is not the test CA
      const curl = Bun.spawn(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", ...flags, url],
        {
          stdout: "pipe",
          stderr: "ignore",
        },
      );
      return new Response(curl.stdout).text();
    }),
  );
  // An answer for tend (healthy, or a status that fails) is a status for curl; no answer is 000 for both.
  const seen = rows.map(([name], index) => ({ name, curl: codes[index] === "000" ? "000" : "answer" }));
  const expected = rows.map(([name, , , ok, detail]) => ({
    name,
    curl: ok || detail.startsWith("HTTP ") ? "answer" : "000",
  }));
  expect(seen).toEqual(expected);
});

for (const where of PLACES)
  test(`answers (${where}): blogtunnel takes an endless stream as an answer, configured or not`, async () => {
    const bare = openPlace(where);
    const counter = bare.scratch("counter");
    const alone = await bare.tend(
      ["blogtunnel", "--url", local("sse-chunked"), "--timeout", "5s", "--counter", counter.inside],
      { TEND_CONFIG: bare.scratch("none.toml").inside },
    );
    const alonesCount = readFileSync(counter.outside, "utf8");
    await bare.cleanup();
    const configured = openPlace(where);
    configured.configure({});
    const watched = await configured.tend([
      "blogtunnel",
      "--url",
      local("sse-chunked"),
      "--timeout",
      "5s",
      "--counter",
      configured.scratch("counter").inside,
    ]);
    const watchedCount = readFileSync(configured.scratch("counter").outside, "utf8");
    await configured.cleanup();
    expect(alone).toMatchObject({ code: 0 });
    expect(watched).toMatchObject({ code: 0 });
    expect([alonesCount, watchedCount]).toEqual(["0\n", "0\n"]);
  });

for (const where of PLACES)
  test(`answers (${where}): ca and insecure are checked as configuration`, async () => {
    const bad = openPlace(where);
    bad.writeScratch("ca.pem", readFileSync(ca, "utf8"));
    bad.writeConfig(
      `[watchdog]\nstate_dir = "${bad.state}"\n` +
        service("a", "https://localhost/", 'ca = "/nonexistent/ca.pem"') +
        service("b", "http://localhost/", "insecure = true") +
        service("c", "https://localhost/", `ca = "${bad.scratch("ca.pem").inside}"\ninsecure = true`),
    );
    const run = await bad.tend(["watchdog", "validate"]);
    await bad.cleanup();
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('service[0].check.ca: "/nonexistent/ca.pem": no such file');
    expect(run.stderr).toContain(
      'service[1].check.insecure: applies to https:// URLs only; "http://localhost/" is not',
    );
    expect(run.stderr).toContain("service[2].check.ca: ca and insecure = true exclude each other");
  });
