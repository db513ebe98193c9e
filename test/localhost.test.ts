// "localhost" on a host without /etc/hosts (debootstrap writes none) and with a DNS server that does
// not know the name: the real curl reaches the loopback all the same (RFC 6761; curl 7.78+, and
// *.localhost since 7.85), and so does every check of tend's (http, https with its certificate's
// name, tcp, tls). Run in a mount namespace of the test's own: an empty /etc/hosts and a resolv.conf
// naming a DNS server nobody runs are bind-mounted over the host's, for that namespace only.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer as createTlsServer, type Server } from "node:tls";
import { join } from "node:path";
import { makeCa } from "./certs.ts";
import { controlledServer, run, Sandbox, TEND } from "./helpers.ts";

const box = new Sandbox();
const web = controlledServer();
const certs = makeCa(join(box.dir, "ca"));
const leaf = certs.leaf(-1, 40, "DNS:localhost,DNS:api.localhost");
const tls: Server = createTlsServer({ cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) }, (socket) => {
  socket.on("error", () => {});
  socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
});
tls.on("tlsClientError", () => {});
afterAll(() => {
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

test("localhost without /etc/hosts: the real curl reaches it, and so does every check of tend's", async () => {
  const tlsPort = await new Promise<number>((resolve) =>
    tls.listen(0, "127.0.0.1", () => resolve((tls.address() as { port: number }).port)),
  );
  const port = web.server.port;
  const urls = [`http://localhost:${port}/`, `http://api.localhost:${port}/`, `https://localhost:${tlsPort}/`];
  // The oracle: this namespace really resolves nothing (getent), and curl answers all the same.
  const curl = await withoutResolver(
    `getent hosts localhost || echo unresolved; ` +
      urls.map((url) => `curl -s -o /dev/null -w '%{http_code} ' --cacert ${certs.ca} ${url}`).join("; "),
  );
  expect(curl.stdout).toBe("unresolved\n200 200 200 ");
  box.configure({
    services: [
      { name: "web", check: { http: urls[0] } },
      { name: "sub", check: { http: urls[1] } },
      { name: "secure", check: { http: urls[2], ca: certs.ca } },
      { name: "port", check: { tcp: `localhost:${port}` } },
      { name: "cert", check: { tls: `localhost:${tlsPort}` } },
    ],
  });
  const pass = await withoutResolver(`${TEND} watchdog pass --config ${box.config}`);
  expect(pass.stderr).toBe("");
  expect(pass.code).toBe(0);
  const status = await withoutResolver(`${TEND} watchdog status --cached --json --config ${box.config}`);
  const rows = JSON.parse(status.stdout).services as { name: string; state: string }[];
  expect(Object.fromEntries(rows.map((row) => [row.name, row.state]))).toEqual({
    web: "healthy",
    sub: "healthy",
    secure: "healthy",
    port: "healthy",
    cert: "healthy",
  });
  // A localhost name is still checked against the certificate: one it does not name is refused.
  box.configure({
    services: [{ name: "other", check: { http: `https://other.localhost:${tlsPort}/`, ca: certs.ca } }],
  });
  const refused = await withoutResolver(`${TEND} watchdog pass --config ${box.config}`);
  expect(refused.stdout).toContain("certificate not valid for other.localhost");
}, 60_000);
