import type { TLSSocket } from "node:tls";
import { humanDuration } from "../core/duration.ts";
import { oneLine } from "../core/sanitize.ts";
import { addressesOf, networkReason, nextAddressHelps } from "../os/net.ts";
import { after } from "../os/timer.ts";
import { defineCheck, stopwatch, type ProbeResult } from "./kind.ts";
import { address, readHostPort } from "./tcp.ts";

type TlsCheck = {
  kind: "tls";
  host: string;
  port: number;
  /** SNI and the name the certificate must be valid for (default: host). */
  servername: string;
  warnDays: number;
  failDays: number;
  /** Accept a chain that does not verify (self-signed); expiry still counts. */
  insecure: boolean;
  timeoutMs: number;
};

const DAY_MS = 86_400_000;
const days = (ms: number) => {
  const value = ms / DAY_MS;
  return `${value < 10 ? value.toFixed(1) : Math.floor(value)} days`;
};
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Handshake errors in words: the chain, the name, the dates. */
function handshakeReason(error: NodeJS.ErrnoException): string {
  const known: Record<string, string> = {
    CERT_HAS_EXPIRED: "the certificate has expired",
    CERT_NOT_YET_VALID: "the certificate is not valid yet",
    DEPTH_ZERO_SELF_SIGNED_CERT: "a self-signed certificate (insecure = true accepts it)",
    SELF_SIGNED_CERT_IN_CHAIN: "a self-signed certificate in the chain (insecure = true accepts it)",
    UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the chain does not verify: unable to verify the first certificate",
    UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the chain does not verify: unknown issuer",
    ERR_TLS_CERT_ALTNAME_INVALID: "the certificate is not valid for this name",
  };
  return (error.code && known[error.code]) ?? oneLine(error.message);
}

/**
 * TLS handshake and the peer certificate's expiry: a failed handshake, a chain that does not
 * verify (unless insecure), or fewer than fail_days left fails; fewer than warn_days is healthy
 * with a warning (the pass logs it and notifies 📅 at most once a day, without a strike).
 */
export const tls = defineCheck<TlsCheck>({
  kind: "tls",
  keys: ["tls", "servername", "warn_days", "fail_days", "insecure", "timeout"],
  read(table, { timeoutMs }) {
    const target = readHostPort(table, "tls");
    const servername = table.string("servername");
    const warnDays = table.integer("warn_days", 0, 3650) ?? 14;
    const failDays = table.integer("fail_days", 0, 3650) ?? 3;
    const insecure = table.boolean("insecure") ?? false;
    if (failDays > warnDays) table.fail("fail_days", `${failDays} is more than warn_days ${warnDays}: it must not be`);
    if (!target) return undefined;
    return { kind: "tls", ...target, servername: servername ?? target.host, warnDays, failDays, insecure, timeoutMs };
  },
  async probe(check, context) {
    // Loaded here, not at start-up: node:tls costs a pass that has no TLS check ~5 ms.
    const [{ connect }, { isIP }] = await Promise.all([import("node:tls"), import("node:net")]);
    const finish = stopwatch();
    const now = context.now ?? Date.now;
    return new Promise<ProbeResult>((resolve) => {
      let socket: TLSSocket | null = null;
      let settled = false;
      const done = (result: ProbeResult) => {
        if (settled) return;
        settled = true;
        cancel();
        socket?.destroy();
        resolve(result);
      };
      const cancel = after(check.timeoutMs, () =>
        done(finish(false, `no TLS handshake within ${humanDuration(check.timeoutMs)}`, { timedOut: true })),
      );
      // The resolver's addresses in its order (the deadline counts the lookup), the next after a refusal.
      const connectTo = (addresses: string[], index: number) => {
        if (settled) return;
        try {
          // SNI takes a name, never an address; an address is still checked against the certificate's IP names.
          const servername = isIP(check.servername) ? undefined : check.servername;
          socket = connect({
            host: addresses[index],
            port: check.port,
            servername,
            rejectUnauthorized: !check.insecure,
          });
        } catch (error) {
          return done(finish(false, `TLS handshake failed: ${oneLine((error as Error).message)}`));
        }
        const attempt = socket;
        attempt.once("secureConnect", () => judge(attempt));
        attempt.once("error", (error: NodeJS.ErrnoException) => {
          if (index + 1 < addresses.length && nextAddressHelps(error.code) && !settled) {
            attempt.destroy();
            return connectTo(addresses, index + 1);
          }
          failed(error);
        });
      };
      const judge = (socket: TLSSocket) => {
        const notAfter = Date.parse(socket.getPeerCertificate()?.valid_to ?? "");
        if (Number.isNaN(notAfter)) return done(finish(false, "the peer sent no certificate"));
        const left = notAfter - now();
        const expiry = { certExpiresAt: notAfter };
        if (left <= 0)
          return done(finish(false, `the certificate expired ${days(-left)} ago (${day(notAfter)})`, expiry));
        if (left < check.failDays * DAY_MS) {
          return done(
            finish(
              false,
              `the certificate expires in ${days(left)} (${day(notAfter)}), below fail_days ${check.failDays}`,
              expiry,
            ),
          );
        }
        const detail = `certificate valid for ${days(left)} (until ${day(notAfter)})`;
        const warning =
          left < check.warnDays * DAY_MS
            ? `the certificate for ${check.servername} expires in ${days(left)} (${day(notAfter)}), ` +
              `below warn_days ${check.warnDays}`
            : null;
        done(finish(true, detail, { warning, ...expiry }));
      };
      const failed = (error: NodeJS.ErrnoException) => {
        const network = ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH"].includes(
          error.code ?? "",
        );
        done(
          finish(
            false,
            network ? `no connection: ${networkReason(error)}` : `TLS handshake failed: ${handshakeReason(error)}`,
          ),
        );
      };
      addressesOf(check.host).then((addresses) => connectTo(addresses, 0), failed);
    });
  },
  describe: (check) =>
    `tls ${address(check)}${check.servername !== check.host ? ` (${check.servername})` : ""}, ` +
    `warn ${check.warnDays} days, fail ${check.failDays} days`,
  plan: (check) => ({
    "check.tls": address(check),
    "check.servername": check.servername,
    "check.warn_days": check.warnDays,
    "check.fail_days": check.failDays,
    "check.insecure": check.insecure,
  }),
});
