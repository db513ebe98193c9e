import { statSync } from "node:fs";
import { connect } from "node:net";
import type { Check } from "./config.ts";
import { humanDuration } from "./duration.ts";
import { isStopped, isZombie, type ProcInfo } from "./proc.ts";
import { runCommand } from "./run.ts";
import { isTimeout, networkReason } from "./net.ts";

export interface ProbeResult {
  ok: boolean;
  /** What was seen: "HTTP 200", "no answer within 2s", "pid 42 is stopped (T)". */
  detail: string;
  latencyMs: number;
  timedOut: boolean;
}

export interface ProbeContext {
  /** The service's main process, for check.process (null: none found). */
  process?: ProcInfo | null;
  fetch?: typeof fetch;
  now?: () => number;
}

/** Ask the service to do its job, once, within the check's timeout. */
export async function probe(check: Check, context: ProbeContext = {}): Promise<ProbeResult> {
  const started = performance.now();
  const finish = (ok: boolean, detail: string, timedOut = false): ProbeResult => ({
    ok,
    detail,
    timedOut,
    latencyMs: Math.round(performance.now() - started),
  });
  const timeoutText = `no answer within ${humanDuration(check.timeoutMs)}`;
  switch (check.kind) {
    case "http": {
      const doFetch = context.fetch ?? fetch;
      let status: number;
      let body: string;
      try {
        const response = await doFetch(check.url, {
          headers: check.headers,
          redirect: "manual",
          signal: AbortSignal.timeout(check.timeoutMs),
        });
        status = response.status;
        body = await response.text(); // the body counts toward the timeout, like curl --max-time
      } catch (error) {
        if (isTimeout(error)) return finish(false, timeoutText, true);
        return finish(false, `no answer: ${networkReason(error)}`);
      }
      const detail = `HTTP ${status}`;
      if (check.anyResponse) return finish(true, detail);
      if (check.failCodes) {
        if (check.failCodes.includes(status)) return finish(false, `${detail} (a fail code)`);
      } else if (check.expect ? !check.expect.includes(status) : status < 200 || status > 399) {
        return finish(false, `${detail} (expected ${check.expect ? check.expect.join("/") : "2xx/3xx"})`);
      }
      if (check.contains !== null && !body.includes(check.contains)) return finish(false, `${detail} but the body lacks ${JSON.stringify(check.contains)}`);
      return finish(true, detail);
    }
    case "tcp":
      return new Promise((resolve) => {
        const socket = connect({ host: check.host, port: check.port });
        const timer = setTimeout(() => {
          socket.destroy();
          resolve(finish(false, timeoutText, true));
        }, check.timeoutMs);
        socket.once("connect", () => {
          clearTimeout(timer);
          socket.destroy();
          resolve(finish(true, `connected to ${check.host}:${check.port}`));
        });
        socket.once("error", (error) => {
          clearTimeout(timer);
          resolve(finish(false, `no connection: ${networkReason(error)}`));
        });
      });
    case "command": {
      const result = await runCommand(check.argv, { timeoutMs: check.timeoutMs });
      if (result.error) return finish(false, `cannot run ${check.argv[0]}: ${result.error}`);
      if (result.timedOut) return finish(false, `command did not finish within ${humanDuration(check.timeoutMs)}`, true);
      if (result.exitCode === 0) return finish(true, "exit 0");
      const said = (result.stderr.trim() || result.stdout.trim()).split("\n")[0]?.slice(0, 200);
      return finish(false, `${result.signal ? `killed by ${result.signal}` : `exit ${result.exitCode}`}${said ? `: ${said}` : ""}`);
    }
    case "process": {
      const info = context.process ?? null;
      if (!info) return finish(false, "no process");
      if (isZombie(info)) return finish(false, `pid ${info.pid} is a zombie (${info.state})`);
      if (isStopped(info)) return finish(false, `pid ${info.pid} is stopped (${info.state})`);
      return finish(true, `pid ${info.pid} is running (${info.state})`);
    }
    case "log": {
      const now = (context.now ?? Date.now)();
      let modified: number;
      try {
        modified = statSync(check.path).mtimeMs;
      } catch (error) {
        return finish(false, `${check.path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
      }
      const age = Math.max(0, now - modified);
      if (age > check.freshMs) return finish(false, `log not written for ${humanDuration(age)} (fresh: ${humanDuration(check.freshMs)})`);
      return finish(true, `log written ${humanDuration(age)} ago`);
    }
  }
}
