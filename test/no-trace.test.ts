// SPEC "Answers": a probe leaves no trace in the service's own log. Real servers with their own
// logs — Python's `http.server`, Node's `http` (the real node, not Bun's), Debian's nginx — each
// probed by 50 passes of the binary (each pass a process that exits after its answer), then their
// logs are read: only ordinary request lines, never a reset, a traceback or a closed-early note.
// Before: ~1 probe in 4 left a ConnectionResetError traceback in http.server's log.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort, Sandbox, waitFor } from "./helpers.ts";

const box = new Sandbox();
const children: Subprocess[] = [];
const ports: Record<string, number> = {};
const logs = {
  python: join(box.dir, "python.log"),
  node: join(box.dir, "node.log"),
  nginxAccess: join(box.dir, "nginx", "access.log"),
  nginxError: join(box.dir, "nginx", "error.log"),
};
const PROBES = 50;

/** An answer to a GET / on this port: the server is up (one more ordinary request in its log). */
async function answers(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  // Python's http.server, serving a directory whose listing is a body of some KiB (sent after the head).
  const served = join(box.dir, "served");
  mkdirSync(served);
  for (let n = 0; n < 60; n++) writeFileSync(join(served, `file-${n}-${"x".repeat(40)}.txt`), "x");
  ports.python = await freePort();
  children.push(
    Bun.spawn(["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", String(ports.python)], {
      cwd: served,
      stdout: Bun.file(logs.python),
      stderr: Bun.file(logs.python),
    }),
  );
  // Node's http: a body in two writes; every socket error and client error logged.
  ports.node = await freePort();
  const nodeServer = `
    const http = require("node:http");
    const server = http.createServer((req, res) => {
      console.log("request", req.method, req.url);
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("a".repeat(32 * 1024));
      setTimeout(() => res.end("b".repeat(32 * 1024)), 5);
    });
    server.on("connection", (socket) => socket.on("error", (e) => console.log("socket error", e.code)));
    server.on("clientError", (e, socket) => { console.log("clientError", e.code); socket.destroy(); });
    server.listen(${ports.node}, "127.0.0.1");`;
  children.push(Bun.spawn(["node", "-e", nodeServer], { stdout: Bun.file(logs.node), stderr: Bun.file(logs.node) }));
  // Debian's nginx, its error log at info: a client that resets or closes early is said there.
  ports.nginx = await freePort();
  mkdirSync(join(box.dir, "nginx"));
  const conf = join(box.dir, "nginx", "nginx.conf");
  writeFileSync(
    conf,
    // user root: the sandbox is root's, closed to nobody; a 60 KiB file, more than one write.
    `daemon off;\nuser root;\nworker_processes 1;\npid ${join(box.dir, "nginx", "pid")};\n` +
      `error_log ${logs.nginxError} info;\nevents { worker_connections 64; }\n` +
      `http {\n  access_log ${logs.nginxAccess};\n  client_body_temp_path ${join(box.dir, "nginx")};\n` +
      `  server {\n    listen 127.0.0.1:${ports.nginx};\n` +
      `    root ${join(box.dir, "nginx")};\n    location / { index page.txt; }\n  }\n}\n`,
  );
  writeFileSync(join(box.dir, "nginx", "page.txt"), "n".repeat(60 * 1024));
  children.push(
    Bun.spawn(["nginx", "-c", conf, "-p", join(box.dir, "nginx")], {
      stdout: "ignore",
      stderr: Bun.file(logs.nginxError),
    }),
  );
  for (const [name, port] of Object.entries(ports)) await waitFor(() => answers(port), 15_000, `${name} answering`);
});

afterAll(async () => {
  for (const child of children) child.kill();
  await Promise.all(children.map((child) => child.exited));
  box.cleanup();
});

test(`${PROBES} passes probe http.server, Node's http and nginx: their logs hold only ordinary requests`, async () => {
  box.configure({
    services: Object.entries(ports).map(([name, port]) => ({
      name,
      check: { http: `http://127.0.0.1:${port}/`, timeout: "5s" },
    })),
  });
  for (let pass = 0; pass < PROBES; pass++) {
    const result = await box.tend(["watchdog", "pass"]);
    expect(result.code).toBe(0);
  }
  for (const name of Object.keys(ports)) expect(box.stateOf(name).lastProbe).toMatchObject({ ok: true });
  // Each server has written its last line once it answered: the logs are read after a beat of polling.
  await waitFor(() => readFileSync(logs.python, "utf8").split('"GET / HTTP/1.1" 200').length > PROBES + 1, 5000);

  const python = readFileSync(logs.python, "utf8");
  console.log(`http.server's log, ${PROBES} probes:\n${python}`);
  const pythonLines = python.split("\n").filter((line) => line.trim());
  const pythonOdd = pythonLines.filter((line) => !/^Serving HTTP|"GET \/ HTTP\/1\.1" 200 -$/.test(line));
  expect(pythonOdd).toEqual([]);
  // PROBES + 1: the ready check is one more ordinary request.
  expect(pythonLines.filter((line) => line.includes('"GET / HTTP/1.1" 200'))).toHaveLength(PROBES + 1);

  const node = readFileSync(logs.node, "utf8").split("\n").filter(Boolean);
  expect(node.filter((line) => !line.startsWith("request GET"))).toEqual([]);
  expect(node.filter((line) => line === "request GET /")).toHaveLength(PROBES + 1);

  const access = readFileSync(logs.nginxAccess, "utf8").split("\n").filter(Boolean);
  expect(access.filter((line) => line.includes('"GET / HTTP/1.1" 200'))).toHaveLength(PROBES + 1);
  // nginx says a client that went early at info: "client prematurely closed", "reset by peer", "broken pipe".
  const nginxOdd = readFileSync(logs.nginxError, "utf8")
    .split("\n")
    .filter((line) => /client|reset|broken pipe|\[(error|crit|alert)\]/i.test(line));
  expect(nginxOdd).toEqual([]);
}, 120_000);
