import { humanDuration } from "../core/duration.ts";
import { show, type Reader } from "../config/reader.ts";
import { oneLine } from "../core/sanitize.ts";
import { addressesOf, networkReason, nextAddressHelps } from "../os/net.ts";
import { after } from "../os/timer.ts";
import { defineCheck, stopwatch, type ProbeResult } from "./kind.ts";

type TcpCheck = {
  kind: "tcp";
  host: string;
  port: number;
  timeoutMs: number;
  /** Written once connected (a PING, a request line). */
  send?: string | null;
  /** The answer must hold this within the timeout (SMTP's 220, Redis's +PONG, SSH's banner). */
  expect?: string | null;
};

/** At most this much of a tcp answer is read for `expect`. */
const TCP_ANSWER_LIMIT = 64 * 1024;

/** "host:port" as written, IPv6 in brackets. */
export const address = ({ host, port }: { host: string; port: number }) =>
  `${host.includes(":") ? `[${host}]` : host}:${port}`;

/** A "host:port" setting ("[::1]:443" for IPv6); port 1-65535. */
export function readHostPort(table: Reader, key: string): { host: string; port: number } | undefined {
  const value = table.string(key);
  if (value === undefined) return undefined;
  const match = /^(\[[^\]]+\]|[^:\s]+):(\d+)$/.exec(value);
  const port = match ? Number(match[2]) : 0;
  if (!match || port < 1 || port > 65535)
    return void table.fail(key, `${show(value)} is not "host:port" (port 1-65535)`);
  return { host: match[1].replace(/^\[|\]$/g, ""), port };
}

/**
 * A TCP connect within the timeout; with `expect`, the service's own answer (after `send`, if given)
 * must hold it within the same timeout: a connect alone proves only that the kernel accepts, which a
 * frozen process's kernel still does.
 */
export const tcp = defineCheck<TcpCheck>({
  kind: "tcp",
  keys: ["tcp", "send", "expect", "timeout"],
  read(table, { timeoutMs }) {
    const target = readHostPort(table, "tcp");
    const send = table.string("send") ?? null;
    const expect = table.string("expect") ?? null;
    if (send !== null && expect === null)
      table.fail("send", "is written to see an answer: give expect too (the string the answer must hold)");
    if (expect !== null && Buffer.byteLength(expect) > TCP_ANSWER_LIMIT)
      table.fail("expect", `is longer than the ${TCP_ANSWER_LIMIT / 1024} KiB of an answer that is read`);
    return target && { kind: "tcp", ...target, timeoutMs, send, expect };
  },
  async probe(check) {
    const { connect } = await import("node:net"); // not at start-up: a pass without TCP checks never needs it
    const finish = stopwatch();
    const expect = check.expect ? Buffer.from(check.expect) : null;
    return new Promise<ProbeResult>((resolve) => {
      let socket: import("node:net").Socket | null = null;
      let settled = false;
      let answer = Buffer.alloc(0);
      let connected = false;
      const got = () => (answer.length ? ` (it said ${JSON.stringify(oneLine(answer.toString("utf8"), 80))})` : "");
      const done = (result: ProbeResult) => {
        if (settled) return;
        settled = true;
        cancel();
        // Closed with FIN once the answer is in: the service logs an ordinary connection, not a reset.
        if (result.ok) socket?.end();
        else socket?.destroy();
        resolve(result);
      };
      const cancel = after(check.timeoutMs, () => {
        const words = connected
          ? `connected, but no ${JSON.stringify(check.expect)} within ${humanDuration(check.timeoutMs)}${got()}`
          : `no answer within ${humanDuration(check.timeoutMs)}`;
        done(finish(false, words, { timedOut: true }));
      });
      // The resolver's addresses in its order (the deadline counts the lookup), the next after a refusal.
      const connectTo = (addresses: string[], index: number) => {
        if (settled) return;
        const attempt = (socket = connect({ host: addresses[index], port: check.port }));
        attempt.once("connect", () => {
          connected = true;
          if (!expect) return done(finish(true, `connected to ${address(check)}`));
          if (check.send) attempt.write(check.send);
        });
        attempt.on("data", (data: Buffer) => received(data));
        attempt.once("end", () => {
          if (connected && expect)
            done(finish(false, `connection closed without ${JSON.stringify(check.expect)}${got()}`));
        });
        attempt.once("error", (error: NodeJS.ErrnoException) => {
          if (!connected && index + 1 < addresses.length && nextAddressHelps(error.code) && !settled) {
            attempt.destroy();
            return connectTo(addresses, index + 1);
          }
          done(finish(false, `no connection: ${networkReason(error)}`));
        });
      };
      const received = (data: Buffer) => {
        if (!expect) return;
        answer = Buffer.concat([answer, data]).subarray(0, TCP_ANSWER_LIMIT);
        if (answer.includes(expect))
          return done(finish(true, `${address(check)} answered ${JSON.stringify(check.expect)}`));
        if (answer.length >= TCP_ANSWER_LIMIT)
          done(finish(false, `no ${JSON.stringify(check.expect)} in the first ${TCP_ANSWER_LIMIT / 1024} KiB${got()}`));
      };
      addressesOf(check.host).then(
        (addresses) => connectTo(addresses, 0),
        (error) => done(finish(false, `no connection: ${networkReason(error)}`)),
      );
    });
  },
  describe: (check) =>
    `tcp ${address(check)}${check.expect ? `, expect ${JSON.stringify(check.expect)}` : ""}, ` +
    `timeout ${humanDuration(check.timeoutMs)}`,
  plan: (check) => ({
    "check.tcp": address(check),
    ...(check.send ? { "check.send": JSON.stringify(check.send) } : {}),
    ...(check.expect ? { "check.expect": JSON.stringify(check.expect) } : {}),
  }),
});

/**
 * A tcp check without `expect` on a service tend restarts: it cannot see the service frozen (the
 * kernel accepts for a SIGSTOPped process). Said by validate and doctor, never an error.
 */
const blindTcp = (check: { kind: string; expect?: string | null }, restarts: boolean) =>
  restarts && check.kind === "tcp" && !check.expect;

/** What validate and doctor say of each service whose tcp check cannot see it frozen (blindTcp). */
export function blindTcpNotes(services: { name: string; check: { kind: string }; restart: unknown }[]): string[] {
  return services
    .filter((service) => blindTcp(service.check as TcpCheck, service.restart !== null))
    .map(
      (service) =>
        `${service.name}: check.tcp without expect cannot see the service frozen (the kernel accepts the ` +
        `connect for a stopped process too): give expect, and send if it speaks second ` +
        `(SMTP: expect "220"; Redis: send "PING\\r\\n", expect "+PONG"; SSH: expect "SSH-")`,
    );
}
