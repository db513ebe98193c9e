// SPEC "Answers": `insecure = true` is curl -k — nothing of the certificate is verified, chain, dates nor
// name (a device's self-signed certificate made for example.com, probed at 127.0.0.1, is an answer) — and a
// certificate without subjectAltName is matched on its CN, an IP address included, as curl matches it.
// Debian's openssl serves each certificate (`s_server -www`); the real curl judges first, the binary's pass
// after, and the two verdicts must be the same.
import { afterAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { makeCa, selfSignedAs } from "./certs.ts";
import { freePort, Sandbox, waitFor } from "./helpers.ts";

const box = new Sandbox();
const servers: Subprocess[] = [];
afterAll(async () => {
  for (const server of servers) server.kill();
  await Promise.all(servers.map((server) => server.exited));
  box.cleanup();
});

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => (socket.destroy(), resolve(true)));
    socket.on("error", () => resolve(false));
  });

/** A self-signed certificate, as a device makes one: its subject and (if any) subjectAltName. */
const selfSigned = (name: string, subject: string, san: string | null) => selfSignedAs(box.dir, name, subject, san);

async function serve(cert: string, key: string): Promise<number> {
  const port = await freePort();
  const args = ["s_server", "-accept", `127.0.0.1:${port}`, "-cert", cert, "-key", key, "-www", "-quiet"];
  servers.push(Bun.spawn(["openssl", ...args], { stdout: "ignore", stderr: "ignore" }));
  await waitFor(() => canConnect(port), 10_000, `openssl s_server on ${port}`);
  return port;
}

async function curl(url: string, flags: string[]) {
  const child = Bun.spawn(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5", ...flags, url], {
    stdout: "pipe",
  });
  const code = await new Response(child.stdout).text();
  await child.exited;
  return /^[23]\d\d$/.test(code);
}

test("insecure is curl -k; a certificate without subjectAltName is matched on its CN: curl's verdicts", async () => {
  const device = selfSigned("device", "/CN=example.com", "DNS:example.com");
  const ca = makeCa(join(box.dir, "ca"));
  const other = ca.leaf(-1, 40, "DNS:other.example");
  const byIp = selfSigned("by-ip", "/CN=127.0.0.1", null);
  const ports = {
    device: await serve(device.cert, device.key),
    other: await serve(other.cert, other.key),
    byIp: await serve(byIp.cert, byIp.key),
  };
  const url = (port: number) => `https://127.0.0.1:${port}/`;
  const cases: { name: string; port: number; check: Record<string, unknown>; curl: string[]; words?: RegExp }[] = [
    { name: "device-insecure", port: ports.device, check: { insecure: true }, curl: ["-k"] },
    { name: "device-verified", port: ports.device, check: {}, curl: [], words: /^no answer: self-signed certificate/ },
    { name: "other-name-insecure", port: ports.other, check: { insecure: true }, curl: ["-k"] },
    {
      name: "other-name-ca",
      port: ports.other,
      check: { ca: ca.ca },
      curl: ["--cacert", ca.ca],
      words: /^no answer: certificate not valid for 127\.0\.0\.1/,
    },
    { name: "cn-ip-ca", port: ports.byIp, check: { ca: byIp.cert }, curl: ["--cacert", byIp.cert] },
  ];
  const oracle = await Promise.all(cases.map((one) => curl(url(one.port), one.curl)));
  expect(oracle).toEqual([true, false, true, false, true]);
  box.configure({
    services: cases.map((one) => ({ name: one.name, check: { http: url(one.port), timeout: "5s", ...one.check } })),
  });
  const pass = await box.tend(["watchdog", "pass"]);
  expect(pass.stderr).toBe("");
  cases.forEach((one, index) => {
    const probe = box.stateOf(one.name).lastProbe as { ok: boolean; detail: string };
    expect({ name: one.name, ok: probe.ok }).toEqual({ name: one.name, ok: oracle[index] });
    if (one.words) expect(probe.detail).toMatch(one.words);
  });
}, 60_000);
