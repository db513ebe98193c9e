import { hostname } from "node:os";
import type { NotifyFormat } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { ANSWER_BODY_LIMIT, isTimeout, networkReason, readBounded } from "../os/net.ts";
import { redactUrl, scrub } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";

/** One notification, as spooled (no URL: the spool is sent to the configured channel). */
export interface Message {
  message: string;
  title: string | null;
  priority: string | null;
  tags: string[];
  event: string | null;
  service: string | null;
  /** ISO-8601 creation time */
  time: string;
}

export interface Channel {
  url: string;
  format: NotifyFormat;
  timeoutMs: number;
  retries: number;
}

export interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface SendResult {
  ok: boolean;
  status: number | null;
  /** "HTTP 200", or what went wrong: "HTTP 500: <first 200 characters>", "no answer within 10s" */
  detail: string;
  attempts: number;
}

export interface SendOptions {
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

const RETRY_AFTER_CAP_MS = 30_000;

/** Header values must be Latin-1: anything else goes as RFC 2047 (ntfy decodes it). */
const headerValue = (text: string) =>
  /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text).toString("base64")}?=`;

/** The HTTP request a format sends. */
export function buildRequest(message: Message, channel: Channel): HttpRequest {
  const json = (value: unknown, url = channel.url): HttpRequest => ({
    url,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(value),
  });
  const heading = message.title ? `${message.title}\n` : "";
  switch (channel.format) {
    case "text": {
      const headers: Record<string, string> = { "Content-Type": "text/plain; charset=utf-8" };
      if (message.title) headers.Title = headerValue(message.title);
      if (message.priority) headers.Priority = headerValue(message.priority);
      if (message.tags.length) headers.Tags = headerValue(message.tags.join(","));
      return { url: channel.url, headers, body: message.message };
    }
    case "json":
      return json({ ...message, host: hostname() });
    case "slack":
      return json({ text: message.title ? `*${message.title}*\n${message.message}` : message.message });
    case "discord":
      return json({ content: `${heading}${message.message}`.slice(0, 2000) });
    case "telegram": {
      // https://api.telegram.org/bot<TOKEN>/sendMessage?chat_id=<ID>: the chat goes in the body.
      const url = new URL(channel.url);
      const chatId = url.searchParams.get("chat_id");
      url.searchParams.delete("chat_id");
      return json({ chat_id: chatId, text: `${heading}${message.message}` }, url.toString());
    }
    case "alertmanager": {
      const url = channel.url.replace(/\/+$/, "");
      return json(
        [
          {
            labels: {
              alertname: message.event ?? "tend",
              service: message.service ?? "",
              severity: message.priority ?? "warning",
              instance: hostname(),
            },
            annotations: { summary: message.title ?? message.message.split("\n")[0], description: message.message },
            startsAt: message.time,
          },
        ],
        url.endsWith("/api/v2/alerts") ? url : `${url}/api/v2/alerts`,
      );
    }
  }
}

/** What --dry-run prints: the request, its URL redacted. */
export function describeRequest(request: HttpRequest): string {
  const headers = Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`);
  return [`POST ${redactUrl(request.url)}`, ...headers, "", request.body].join("\n");
}

const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

/**
 * POST with curl -f semantics: 2xx is success, anything else fails. Network errors, 5xx, 408
 * and 429 are retried with exponential backoff (Retry-After honoured up to 30 s).
 */
export async function send(
  request: HttpRequest,
  channel: Channel,
  { fetch: doFetch = fetch, sleep = Bun.sleep }: SendOptions = {},
): Promise<SendResult> {
  let last: SendResult = { ok: false, status: null, detail: "not sent", attempts: 0 };
  for (let attempt = 1; attempt <= channel.retries + 1; attempt++) {
    let retryAfterMs: number | null = null;
    try {
      const response = await doFetch(request.url, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        redirect: "manual",
        signal: AbortSignal.timeout(channel.timeoutMs),
      });
      const text = await readBounded(response, ANSWER_BODY_LIMIT);
      if (response.status >= 200 && response.status < 300)
        return { ok: true, status: response.status, detail: `HTTP ${response.status}`, attempts: attempt };
      const said = oneLine(text);
      last = {
        ok: false,
        status: response.status,
        detail: scrub(`HTTP ${response.status}${said ? `: ${said}` : ""}`, channel.url),
        attempts: attempt,
      };
      if (!retryable(response.status)) return last;
      retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
    } catch (error) {
      const detail = isTimeout(error) ? `no answer within ${humanDuration(channel.timeoutMs)}` : networkReason(error);
      last = { ok: false, status: null, detail: scrub(detail, channel.url), attempts: attempt };
    }
    if (attempt <= channel.retries)
      await sleep(Math.min(retryAfterMs ?? 1000 * 2 ** (attempt - 1), RETRY_AFTER_CAP_MS));
  }
  return last;
}

function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
