import { humanDuration } from "../core/duration.ts";
import { httpUrlProblem, redactUrl, shownUrl } from "../core/redact.ts";
import { httpGet } from "../os/http1.ts";
import { inWords, readRegularFile } from "../os/files.ts";
import { PROBE_BODY_LIMIT } from "../os/net.ts";
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
  /** A CA or certificate file to trust (curl --cacert); null: the system's. */
  ca?: string | null;
  /** Do not verify the certificate (curl -k). */
  insecure?: boolean;
};

/**
 * GET the URL; the status decides, as curl's %{http_code} (SPEC "Answers"). The body is read only
 * for `contains`, within the same timeout (curl --max-time) and at most 1 MiB.
 */
export const http = defineCheck<HttpCheck>({
  kind: "http",
  keys: ["http", "expect", "any_response", "fail_codes", "contains", "headers", "ca", "insecure", "timeout"],
  read(table, { timeoutMs, inState }) {
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
    const caPath = table.string("ca");
    const insecure = table.boolean("insecure") ?? false;
    const ca = caPath === undefined ? null : inState(caPath);
    if (ca !== null) {
      if (insecure) table.fail("ca", "ca and insecure = true exclude each other: insecure verifies nothing");
      try {
        readRegularFile(ca, PROBE_BODY_LIMIT, { follow: true });
      } catch (error) {
        table.fail("ca", `${JSON.stringify(caPath)}: ${inWords(error)}`);
      }
    }
    if ((ca !== null || insecure) && url && !url.startsWith("https:")) {
      table.fail(
        ca !== null ? "ca" : "insecure",
        `applies to https:// URLs only; ${JSON.stringify(shownUrl(url))} is not`,
      );
    }

    return url && !problem
      ? { kind: "http", url, expect, anyResponse, failCodes, contains, headers, ca, insecure, timeoutMs }
      : undefined;
  },
  async probe(check, context) {
    const finish = stopwatch();
    let ca: string | null = null;
    if (check.ca) {
      try {
        ca = readRegularFile(check.ca, PROBE_BODY_LIMIT, { follow: true });
      } catch (error) {
        return finish(false, `cannot read ca ${check.ca}: ${inWords(error)}`, { status: null });
      }
    }
    const got = await (context.httpGet ?? httpGet)(check.url, {
      headers: check.headers,
      timeoutMs: check.timeoutMs,
      contains: check.contains,
      ca,
      insecure: check.insecure,
      bodyLimit: PROBE_BODY_LIMIT,
    });
    // curl's code for no answer, so `grep 'HTTP 000'` finds these as it did in a watchdog.sh's log.
    if (!got.answered) {
      const words = got.timedOut ? got.words : `no answer: ${got.words}`;
      return finish(false, `${words} (HTTP 000)`, { timedOut: got.timedOut, status: null });
    }
    const { status } = got;
    const detail = `HTTP ${status}`;
    // The latency is the time to the headers, as the answer is the status (SPEC "Answers").
    const answer = (ok: boolean, text = detail) => ({ ...finish(ok, text, { status }), latencyMs: got.headersMs });
    if (check.anyResponse) return answer(true);
    if (check.failCodes) {
      if (check.failCodes.includes(status)) return answer(false, `${detail} (a fail code)`);
    } else if (check.expect ? !check.expect.includes(status) : status < 200 || status > 399) {
      return answer(false, `${detail} (expected ${check.expect ? check.expect.join("/") : "2xx/3xx"})`);
    }
    if (check.contains !== null && !got.found) {
      const lacks = `${detail}, body without ${JSON.stringify(check.contains)}`;
      const how: Record<string, string> = {
        complete: "",
        timeout: ` after ${humanDuration(check.timeoutMs)}`,
        limit: " in its first MiB",
        broke: " (the body broke off)",
      };
      return answer(false, lacks + how[got.bodyEnd ?? "complete"]);
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
    if (check.ca) plan["check.ca"] = check.ca;
    if (check.insecure) plan["check.insecure"] = true;
    return plan;
  },
});
