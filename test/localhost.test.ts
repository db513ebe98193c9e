// "localhost" on a host without /etc/hosts (debootstrap writes none) and with a DNS server that does
// not know the name: the real curl reaches the loopback all the same (RFC 6761; curl 7.78+, and
// *.localhost since 7.85), and so does every check of tend's (http, https with its certificate's
// name, tcp, tls). Run in a mount namespace of the test's own: an empty /etc/hosts and a resolv.conf
// naming a DNS server nobody runs are bind-mounted over the host's, for that namespace only.
// Inside the Termux-shaped phone there is no /etc/resolv.conf (Android has none: its DNS is netd's, asked
// through bionic): tend's checks reach localhost there too.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer as createTlsServer, type Server } from "node:tls";
import { join } from "node:path";
import { makeCa } from "./certs.ts";
import { controlledServer, Sandbox, TEND, withOwnFiles } from "./helpers.ts";
import { closePlaces, openPlace } from "./places.ts";

const box = new Sandbox();
const web = controlledServer();
const certs = makeCa(join(box.dir, "ca"));
const leaf = certs.leaf(-1, 40, "DNS:localhost,DNS:api.localhost");
const tls: Server = createTlsServer({ cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) }, (socket) => {
  socket.on("error", () => {});
  socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
});
tls.on("tlsClientError", () => {});
const phone = openPlace("phone");
afterAll(async () => {
  await phone.cleanup();
  closePlaces();
  web.server.stop(true);
  tls.close();
  box.cleanup();
});

/** A shell in a mount namespace where no name resolves: no /etc/hosts entries, a DNS server that is not there. */
function withoutResolver(script: string) {
  writeFileSync(join(box.dir, "hosts"), "");
  writeFileSync(join(box.dir, "resolv.conf"), "nameserver 127.0.0.9\noptions timeout:1 attempts:1\n");
  const files = { "/etc/hosts": join(box.dir, "hosts"), "/etc/resolv.conf": join(box.dir, "resolv.conf") };
  return withOwnFiles(files, script, { env: box.env({ NODE_EXTRA_CA_CERTS: certs.ca }) });
}

const tlsListening = new Promise<number>((resolve) =>
  tls.listen(0, "127.0.0.1", () => resolve((tls.address() as { port: number }).port)),
);

/** The five checks of localhost names, the CA at `ca`. */
function localChecks(port: number, tlsPort: number, ca: string) {
  return [
    { name: "web", check: { http: `http://localhost:${port}/` } },
    { name: "sub", check: { http: `http://api.localhost:${port}/` } },
    { name: "secure", check: { http: `https://localhost:${tlsPort}/`, ca } },
    { name: "port", check: { tcp: `localhost:${port}` } },
    { name: "cert", check: { tls: `localhost:${tlsPort}` } },
  ];
}
const ALL_HEALTHY = { web: "healthy", sub: "healthy", secure: "healthy", port: "healthy", cert: "healthy" };
const states = (json: string) =>
  Object.fromEntries(
    (JSON.parse(json).services as { name: string; state: string }[]).map((row) => [row.name, row.state]),
  );

test("localhost without /etc/hosts: the real curl reaches it, and so does every check of tend's", async () => {
  const tlsPort = await tlsListening;
  const port = web.server.port!;
  const urls = [`http://localhost:${port}/`, `http://api.localhost:${port}/`, `https://localhost:${tlsPort}/`];
  // The oracle: this namespace really resolves nothing (getent), and curl answers all the same.
  const curl = await withoutResolver(
    `getent hosts localhost || echo unresolved; ` +
      urls.map((url) => `curl -s -o /dev/null -w '%{http_code} ' --cacert ${certs.ca} ${url}`).join("; "),
  );
  expect(curl.stdout).toBe("unresolved\n200 200 200 ");
  box.configure({ services: localChecks(port, tlsPort, certs.ca) });
  const pass = await withoutResolver(`${TEND} watchdog pass --config ${box.config}`);
  expect(pass.stderr).toBe("");
  expect(pass.code).toBe(0);
  const status = await withoutResolver(`${TEND} watchdog status --cached --json --config ${box.config}`);
  expect(states(status.stdout)).toEqual(ALL_HEALTHY);
  // A localhost name is still checked against the certificate: one it does not name is refused.
  box.configure({
    services: [{ name: "other", check: { http: `https://other.localhost:${tlsPort}/`, ca: certs.ca } }],
  });
  const refused = await withoutResolver(`${TEND} watchdog pass --config ${box.config}`);
  expect(refused.stdout).toContain("certificate not valid for other.localhost");
}, 60_000);

test("localhost in the phone (no resolv.conf): every check reaches it; an uncertified name is refused", async () => {
  const tlsPort = await tlsListening;
  expect((await phone.shell("ls /etc/resolv.conf 2>/dev/null; echo $?")).stdout).toBe("2\n");
  phone.writeScratch("ca.pem", readFileSync(certs.ca, "utf8"));
  const ca = phone.scratch("ca.pem").inside;
  phone.configure({ services: localChecks(web.server.port!, tlsPort, ca) });
  const pass = await phone.tend(["watchdog", "pass"], { NODE_EXTRA_CA_CERTS: ca });
  expect(pass.stderr).toBe("");
  expect(pass.code).toBe(0);
  expect(states((await phone.tend(["watchdog", "status", "--cached", "--json"])).stdout)).toEqual(ALL_HEALTHY);
  phone.configure({ services: [{ name: "other", check: { http: `https://other.localhost:${tlsPort}/`, ca } }] });
  expect((await phone.tend(["watchdog", "pass"])).stdout).toContain("certificate not valid for other.localhost");
}, 60_000);

/** A shell in a mount namespace whose /etc/hosts is `hosts`. */
function withHosts(hosts: string, script: string) {
  writeFileSync(join(box.dir, "hosts"), hosts);
  return withOwnFiles({ "/etc/hosts": join(box.dir, "hosts") }, script, { env: box.env() });
}

test("names resolve in the resolver's order, each address tried in turn: where curl connects, tend does", async () => {
  // Two different servers on one port, one on 127.0.0.1 and one on ::1; a second port on 127.0.0.1 only.
  const v4 = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("v4", { status: 200 }) });
  const v6 = Bun.serve({ hostname: "::1", port: v4.port, fetch: () => new Response("v6", { status: 503 }) });
  const lone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("v4", { status: 200 }) });
  const banner = (text: string) => ({ open: (socket: { end(text: string): void }) => socket.end(text), data() {} });
  const tcp4 = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: banner("v4\n") });
  const tcp6 = Bun.listen({ hostname: "::1", port: tcp4.port, socket: banner("v6\n") });
  try {
    // localhost is not special: /etc/hosts names 127.0.0.1 alone, as Debian's and this host's do. both.test
    // has both, ::1 written last: the resolver (RFC 6724) still gives ::1 first.
    const hosts = "127.0.0.1 localhost\n127.0.0.1 both.test\n::1 both.test\n";
    const urls = {
      local: `http://localhost:${v4.port}/`,
      both: `http://both.test:${v4.port}/`,
      refused6: `http://both.test:${lone.port}/`, // nothing on ::1 there: refused, then 127.0.0.1
    };
    const curl = await withHosts(
      hosts,
      Object.values(urls)
        .map((url) => `curl -s -o /dev/null --max-time 5 -w '%{http_code} %{remote_ip}\\n' ${url}`)
        .join("; "),
    );
    // The oracle: curl reached the v4 server by localhost, the v6 one by both.test, the v4 one after a refusal.
    expect(curl.stdout).toBe("200 127.0.0.1\n503 ::1\n200 127.0.0.1\n");
    box.configure({
      services: [
        ...Object.entries(urls).map(([name, http]) => ({ name, check: { http } })),
        { name: "banner-local", check: { tcp: `localhost:${tcp4.port}`, send: "?", expect: "v4" } },
        { name: "banner-both", check: { tcp: `both.test:${tcp4.port}`, send: "?", expect: "v6" } },
      ],
    });
    const pass = await withHosts(hosts, `${TEND} watchdog pass --config ${box.config}`);
    expect(pass.stderr).toBe("");
    const status = await withHosts(hosts, `${TEND} watchdog status --cached --json --config ${box.config}`);
    const seen = states(status.stdout);
    // Each http check as curl judged it (2xx healthy), the tcp checks as the banner each address says.
    const [local, both, refused6] = curl.stdout
      .split("\n")
      .map((line) => (line.startsWith("2") ? "healthy" : "failing"));
    expect(seen).toEqual({ local, both, refused6, "banner-local": "healthy", "banner-both": "healthy" });
    expect(pass.stdout).toContain("both failed health check (HTTP 503");
  } finally {
    for (const server of [v4, v6, lone]) server.stop(true);
    for (const listener of [tcp4, tcp6]) listener.stop(true);
  }
}, 60_000);
