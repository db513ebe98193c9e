// Certificates made by the real openssl: a private CA and leaf certificates with chosen dates.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const DAY_MS = 86_400_000;
/** openssl ca's date form: YYMMDDHHMMSSZ (UTC). */
const stamp = (ms: number) =>
  new Date(ms).toISOString().replace(/^\d\d(\d\d)-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d).*$/, "$1$2$3$4$5$6Z");

function openssl(args: string[], cwd: string) {
  const result = Bun.spawnSync(["openssl", ...args], { cwd, stderr: "pipe", stdout: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]}: ${result.stderr.toString()}`);
}

export interface Leaf {
  cert: string;
  key: string;
  notAfter: number;
}

/** A CA in `dir` (ca.pem is what NODE_EXTRA_CA_CERTS points at) that signs leaves for localhost/127.0.0.1. */
export function makeCa(dir: string) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "index.txt"), "");
  writeFileSync(join(dir, "serial"), "1000\n");
  writeFileSync(
    join(dir, "ca.cnf"),
    `[ca]\ndefault_ca = d\n[d]\ndir = ${dir}\ndatabase = ${dir}/index.txt\nnew_certs_dir = ${dir}\n` +
      `serial = ${dir}/serial\ndefault_md = sha256\npolicy = p\ncopy_extensions = copy\nunique_subject = no\n` +
      `[p]\ncommonName = supplied\n`,
  );
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "3650",
      "-subj",
      "/CN=tend test CA",
    ],
    dir,
  );
  let count = 0;
  const request = (name: string, names = "DNS:localhost,IP:127.0.0.1") => {
    openssl(
      [
        "req",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${name}.key`,
        "-subj",
        "/CN=localhost",
        "-addext",
        `subjectAltName=${names}`,
        "-out",
        `${name}.csr`,
      ],
      dir,
    );
  };
  return {
    ca: join(dir, "ca.pem"),
    /** A leaf valid from `fromDays` (negative: in the past) to `toDays` from now, for `names` (SAN). */
    leaf(fromDays: number, toDays: number, names?: string): Leaf {
      const name = `leaf${++count}`;
      request(name, names);
      const notAfter = Math.floor((Date.now() + toDays * DAY_MS) / 1000) * 1000;
      openssl(
        [
          "ca",
          "-batch",
          "-config",
          "ca.cnf",
          "-cert",
          "ca.pem",
          "-keyfile",
          "ca.key",
          "-in",
          `${name}.csr`,
          "-out",
          `${name}.pem`,
          "-startdate",
          stamp(Date.now() + fromDays * DAY_MS),
          "-enddate",
          stamp(notAfter),
        ],
        dir,
      );
      return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`), notAfter };
    },
    /** Self-signed, valid for `days`: no chain to the CA. */
    selfSigned(days: number): Leaf {
      const name = `self${++count}`;
      openssl(
        [
          "req",
          "-x509",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-keyout",
          `${name}.key`,
          "-out",
          `${name}.pem`,
          "-days",
          String(days),
          "-subj",
          "/CN=localhost",
          "-addext",
          "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        dir,
      );
      return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`), notAfter: Date.now() + days * DAY_MS };
    },
  };
}

/** A real TLS server on port 0 serving `leaf`. */
export function tlsServer(leaf: Leaf) {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(leaf.cert), key: Bun.file(leaf.key) },
    fetch: () => new Response("ok"),
  });
}

/** A self-signed certificate in `dir`, as a device makes one: its subject and (if any) subjectAltName. */
export function selfSignedAs(dir: string, name: string, subject: string, san: string | null): Leaf {
  const extra = san ? ["-addext", `subjectAltName=${san}`] : [];
  openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", subject, ...extra].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.pem`,
    ]),
    dir,
  );
  return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`), notAfter: Date.now() + 30 * DAY_MS };
}
