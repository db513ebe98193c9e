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
import { controlledServer, run, Sandbox, TEND } from "./helpers.ts";
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
  const shell =
    `mount --bind ${box.dir}/hosts /etc/hosts && mount --bind ${box.dir}/resolv.conf /etc/resolv.conf && ` + script;
  // Spawned, not spawnSync: the servers it reaches answer from this process.
  return run(["unshare", "--mount", "--propagation", "private", "sh", "-c", shell], {
    env: box.env({ NODE_EXTRA_CA_CERTS: certs.ca }),
    timeoutMs: 30_000,
  });
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
