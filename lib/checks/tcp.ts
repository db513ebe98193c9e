import { humanDuration } from "../core/duration.ts";
import { show, type Reader } from "../config/reader.ts";
import { connectName, networkReason } from "../os/net.ts";
import { after } from "../os/timer.ts";
import { defineCheck, stopwatch, type ProbeResult } from "./kind.ts";

export type TcpCheck = {
  kind: "tcp";
  host: string;
  port: number;
  timeoutMs: number;
};

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

/** A TCP connect within the timeout. */
export const tcp = defineCheck<TcpCheck>({
  kind: "tcp",
  keys: ["tcp", "timeout"],
  read(table, { timeoutMs }) {
    const target = readHostPort(table, "tcp");
    return target && { kind: "tcp", ...target, timeoutMs };
  },
  async probe(check) {
    const { connect } = await import("node:net"); // not at start-up: a pass without TCP checks never needs it
    const finish = stopwatch();
    const host = await connectName(check.host);
    return new Promise<ProbeResult>((resolve) => {
      const socket = connect({ host, port: check.port });
      const done = (result: ProbeResult) => {
        cancel();
        socket.destroy();
        resolve(result);
      };
      const cancel = after(check.timeoutMs, () =>
        done(finish(false, `no answer within ${humanDuration(check.timeoutMs)}`, { timedOut: true })),
      );
      socket.once("connect", () => done(finish(true, `connected to ${address(check)}`)));
      socket.once("error", (error) => done(finish(false, `no connection: ${networkReason(error)}`)));
    });
  },
  describe: (check) => `tcp ${address(check)}, timeout ${humanDuration(check.timeoutMs)}`,
  plan: (check) => ({ "check.tcp": address(check) }),
});
