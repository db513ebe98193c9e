import { humanDuration } from "../core/duration.ts";
import { httpUrlProblem, redactUrl, shownUrl } from "../core/redact.ts";
import { isTimeout, networkReason, PROBE_BODY_LIMIT, readBounded } from "../os/net.ts";
import { defineCheck, stopwatch } from "./kind.ts";

/** An HTTP header name: a token (RFC 9110). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export type HttpCheck = {
  kind: "http";
  url: string;
  expect: number[] | null;
  anyResponse: boolean;
  failCodes: number[] | null;
  contains: string | null;
  headers: Record<string, string>;
  timeoutMs: number;
};

/** GET the URL; the status (and `contains`) decide. The body counts toward the timeout, like curl --max-time. */
export const http = defineCheck<HttpCheck>({
  kind: "http",
  keys: ["http", "expect", "any_response", "fail_codes", "contains", "headers", "timeout"],
  read(table, { timeoutMs }) {
    const url = table.string("http");
    const headers = table.stringMap("headers") ?? {};
    const problem = url === undefined ? null : httpUrlProblem(url);
    if (problem) table.fail("http", `${JSON.stringify(shownUrl(url!))} ${problem}`);
    for (const [name, value] of Object.entries(headers)) {
      if (!HEADER_NAME.test(name))
        table.fail(`headers.${JSON.stringify(name)}`, "is not a header name (letters, digits, - and !#$%&'*+.^_`|~)");
      else if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) {
        table.fail(`headers.${name}`, "the value holds CR, LF or another control character, which HTTP does not allow");
      }
    }
    const expect = table.statusList("expect") ?? null;
    const anyResponse = table.boolean("any_response") ?? false;
    // No answer always fails; listing it (0 or "000", as in blogtunnel's --fail-codes) says so and is allowed.
    const failCodes = table.statusList("fail_codes", { noAnswer: true }) ?? null;
    if ([expect !== null, anyResponse, failCodes !== null].filter(Boolean).length > 1) {
      table.fail("expect", "expect, any_response and fail_codes exclude each other: choose one");
    }
    const contains = table.string("contains") ?? null;

    return url && !problem
      ? { kind: "http", url, expect, anyResponse, failCodes, contains, headers, timeoutMs }
      : undefined;
  },
  async probe(check, context) {
    const finish = stopwatch();
    let status: number;
    let body: string;
    try {
      const response = await (context.fetch ?? fetch)(check.url, {
        headers: check.headers,
        redirect: "manual",
        signal: AbortSignal.timeout(check.timeoutMs),
      });
      status = response.status;
      body = await readBounded(response, PROBE_BODY_LIMIT); // `contains` is searched within the first 1 MiB
    } catch (error) {
      // curl's code for no answer, so `grep 'HTTP 000'` finds these as it did in a watchdog.sh's log.
      if (isTimeout(error)) {
        return finish(false, `no answer within ${humanDuration(check.timeoutMs)} (HTTP 000)`, {
          timedOut: true,
          status: null,
        });
      }
      return finish(false, `no answer: ${networkReason(error)} (HTTP 000)`, { status: null });
    }
    const detail = `HTTP ${status}`;
    const answer = (ok: boolean, text = detail) => finish(ok, text, { status });
    if (check.anyResponse) return answer(true);
    if (check.failCodes) {
      if (check.failCodes.includes(status)) return answer(false, `${detail} (a fail code)`);
    } else if (check.expect ? !check.expect.includes(status) : status < 200 || status > 399) {
      return answer(false, `${detail} (expected ${check.expect ? check.expect.join("/") : "2xx/3xx"})`);
    }
    if (check.contains !== null && !body.includes(check.contains)) {
      return answer(false, `${detail} but the body lacks ${JSON.stringify(check.contains)}`);
    }
    return answer(true);
  },
  describe: (check) => `http ${redactUrl(check.url)}, timeout ${humanDuration(check.timeoutMs)}`,
  plan(check, shown) {
    const headers = Object.fromEntries(
      Object.entries(check.headers).map(([name, value]) => [name, shown.value(value)]),
    );
    const plan: Record<string, unknown> = { "check.http": shown.url(check.url), "check.headers": headers };
    if (check.anyResponse) plan["check.any_response"] = true;
    else if (check.failCodes) plan["check.fail_codes"] = check.failCodes;
    else plan["check.expect"] = check.expect ?? "2xx/3xx";
    if (check.contains !== null) plan["check.contains"] = check.contains;
    return plan;
  },
});
