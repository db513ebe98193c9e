import { hostname } from "node:os";
import { TELEGRAM_NEEDS_CHAT, type NotifyFormat } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { ANSWER_BODY_LIMIT, isTimeout, networkReason, readBounded } from "../os/net.ts";
import { runCommand, saidBy } from "../os/run.ts";
import { redactUrl, scrub, scrubbedLine } from "../core/redact.ts";
import { escapeControls, oneLine } from "../core/sanitize.ts";
import { usageError } from "../core/errors.ts";
import type { Mail } from "./email.ts";

/**
 * An idempotency key made from what names one message (its service and time, a gap's start): the
 * same parts give the same key in every run, so a message said again is kept once.
 */
export const messageKey = (...parts: (string | number)[]) =>
  `tend-${new Bun.CryptoHasher("sha256").update(parts.join("\0")).digest("hex").slice(0, 32)}`;

/** One notification. */
export interface Message {
  message: string;
  title: string | null;
  priority: string | null;
  tags: string[];
  event: string | null;
  service: string | null;
  /** ISO-8601 creation time */
  time: string;
  /** For alertmanager: the alerts to post as they are (firing, or resolved with endsAt = now). */
  alerts?: AlertPayload[];
  /**
   * The idempotency key: one per message, the same in every attempt of it, across runs (it is
   * spooled with it). A receiver that honours one gets it (ntfy's X-Sequence-ID replaces the
   * notification in place; Idempotency-Key for webhooks; the email's Message-ID), so a message
   * delivered just before a power cut, and sent again after it, is not a second notification.
   */
  key?: string;
}

/** One Alertmanager alert (POST /api/v2/alerts). */
export interface AlertPayload {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

export interface Channel {
  url: string;
  format: NotifyFormat;
  timeoutMs: number;
  retries: number;
}

interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** format = "termux": the command that delivers it instead of a POST. */
  argv?: string[];
  /** What --dry-run shows for a body that holds a secret (Pushover's token and user key). */
  shownBody?: string;
  /** format = "email": the message to send over SMTP (lib/notify/email.ts) instead of a POST. */
  mail?: Mail;
}

/** Headers whose value is a secret: shown as … (--dry-run). */
const SECRET_HEADERS = /^(x-gotify-key|authorization)$/i;

export interface SendResult {
  ok: boolean;
  status: number | null;
  /** "HTTP 200", or what went wrong: "HTTP 500: <first 200 characters>", "no answer within 10s" */
  detail: string;
  attempts: number;
  /** Refused for good (a 3xx: redirects are not followed; a 4xx but 408/429): it will never be accepted as it is. */
  forGood?: boolean;
}

export interface SendOptions {
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

const RETRY_AFTER_CAP_MS = 30_000;

const slackEscape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * At most `limit` UTF-16 units, never cut inside a character (a surrogate pair stays whole), with
 * "…" where it was cut: within the limit however the receiver counts characters.
 */
export function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit - 1;
  if (/[\ud800-\udbff]/.test(text[end - 1] ?? "")) end--; // a high surrogate whose pair would be cut off
  return text.slice(0, end) + "…";
}

/** At most `limit` UTF-8 bytes, cut on a character boundary (never inside one), with "…" where it was cut. */
function cutBytes(text: string, limit: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= limit) return text;
  const room = limit - Buffer.byteLength("…");
  let end = room;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // back to the start of the character cut
  let kept = bytes.subarray(0, end).toString();
  // A character of several code points (an emoji with a variation selector) may still be split: a
  // lone surrogate cannot occur (the bytes were whole characters), and a trailing ZWJ is dropped.
  kept = kept.replace(/\u200d$/, "");
  return `${kept}…`;
}

/** Header values must be Latin-1: anything else goes as RFC 2047 (ntfy decodes it). */
const headerValue = (text: string) =>
  /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text).toString("base64")}?=`;

/**
 * The message as its receiver gets it: only a Message's own fields, whatever else the value holds
 * (a spooled one carries its id, URL and format: a webhook's secret path must never reach a payload).
 */
function liveMessage({ message, title, priority, tags, event, service, time, alerts, key }: Message): Message {
  return {
    message,
    title,
    priority,
    tags,
    event,
    service,
    time,
    ...(alerts ? { alerts } : {}),
    ...(key ? { key } : {}),
  };
}

/** What a message delivered late says after its text: when it was first to be sent (its creation). */
export const lateNote = (time: string) => {
  const at = new Date(time);
  return Number.isNaN(at.getTime())
    ? "\n(late)"
    : `\n(late since ${at.toISOString().slice(0, 19).replace("T", " ")} UTC)`;
};

/** The HTTP request a format sends. */
export function buildRequest(full: Message, channel: Channel): HttpRequest {
  const message = liveMessage(full);
  const json = (value: unknown, url = channel.url): HttpRequest => ({
    url,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(value),
  });
  const heading = message.title ? `${message.title}\n` : "";
  switch (channel.format) {
    case "text": {
      const headers: Record<string, string> = { "Content-Type": "text/plain; charset=utf-8" };
      // ntfy 2.16+: a second publish with the same sequence id replaces the first in place.
      if (message.key) Object.assign(headers, { "X-Sequence-ID": message.key, "Idempotency-Key": message.key });
      if (message.title) headers.Title = headerValue(message.title);
      if (message.priority) headers.Priority = headerValue(message.priority);
      if (message.tags.length) headers.Tags = headerValue(message.tags.join(","));
      // ntfy: a body over 4096 bytes becomes an attachment (or, without attachments, a 400).
      return { url: channel.url, headers, body: cutBytes(message.message, 4096) };
    }
    case "json": {
      const request = json({ ...message, host: hostname() });
      if (message.key) request.headers["Idempotency-Key"] = message.key; // draft-ietf-httpapi-idempotency-key-header
      return request;
    }
    case "slack": {
      // Slack: & < > are control characters in message text and must be escaped (api.slack.com, formatting).
      const text = message.title
        ? `*${slackEscape(message.title)}*\n${slackEscape(message.message)}`
        : slackEscape(message.message);
      return json({ text });
    }
    case "discord":
      // Discord: content at most 2000 characters; allowed_mentions with no parse types pings nobody.
      return json({ content: cut(`${heading}${message.message}`, 2000), allowed_mentions: { parse: [] } });
    case "telegram": {
      // Telegram: https://api.telegram.org/bot<TOKEN>/sendMessage?chat_id=<ID>; text of 1-4096 characters.
      const url = new URL(channel.url);
      const chatId = url.searchParams.get("chat_id");
      if (!chatId) throw usageError(TELEGRAM_NEEDS_CHAT);
      url.searchParams.delete("chat_id");
      return json({ chat_id: chatId, text: cut(`${heading}${message.message}`, 4096) }, url.toString());
    }
    case "gotify": {
      // Gotify: POST /message, the application token in X-Gotify-Key (never in the URL a proxy logs).
      const url = new URL(channel.url);
      const token = url.searchParams.get("token") ?? "";
      url.searchParams.delete("token");
      if (!url.pathname.endsWith("/message")) url.pathname = `${url.pathname.replace(/\/+$/, "")}/message`;
      const priority = GOTIFY_PRIORITY[message.priority ?? "default"] ?? 5;
      return {
        url: url.toString(),
        headers: { "Content-Type": "application/json", "X-Gotify-Key": token },
        body: JSON.stringify({ title: message.title ?? "tend", message: message.message, priority }),
      };
    }
    case "pushover": {
      // Pushover: the app token and user key in the form, message ≤ 1024 and title ≤ 250 characters.
      const url = new URL(channel.url);
      const form = new URLSearchParams({
        token: url.searchParams.get("token") ?? "",
        user: url.searchParams.get("user") ?? "",
        message: cut(message.message, 1024),
        priority: String(PUSHOVER_PRIORITY[message.priority ?? "default"] ?? 0),
      });
      if (message.title) form.set("title", cut(message.title, 250));
      url.search = "";
      const shown = new URLSearchParams(form);
      shown.set("token", "…");
      shown.set("user", "…");
      return {
        url: url.toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: form.toString(),
        shownBody: shown.toString(),
      };
    }
    case "email": {
      // One message per event; the subject is the title (the emoji, the event, the service), else the first line.
      const url = new URL(channel.url);
      const to = url.searchParams.getAll("to");
      const from = url.searchParams.get("from") ?? "";
      const subject = cut(message.title ?? message.message.split("\n")[0], 200);
      return {
        url: channel.url,
        headers: {},
        body: message.message,
        // A mail store keeps one message per Message-ID: the key makes a re-sent email the same one.
        mail: {
          from,
          to,
          subject,
          text: message.message,
          ...(message.key ? { messageId: `<${message.key}@tend>` } : {}),
        },
      };
    }
    case "termux": {
      // Termux:API: one notification id per service, so a ✅ replaces its 🚨 in the shade.
      const priority = TERMUX_PRIORITY[message.priority ?? "default"] ?? "default";
      const argv = ["termux-notification", "--id", `tend-${message.service ?? "tend"}`, "--priority", priority];
      if (message.title) argv.push("--title", message.title);
      argv.push("--content", cut(message.message, 4096));
      return { url: channel.url, headers: {}, body: message.message, argv };
    }
    case "alertmanager": {
      const url = channel.url.replace(/\/+$/, "");
      const alerts = message.alerts ?? [
        {
          // A message sent by hand: its own alertname; the watchdog's conditions have theirs (alertmanager.ts).
          labels: {
            alertname: "TendNotification",
            service: message.service ?? "",
            severity: ["critical", "warning", "info"].includes(message.priority ?? "") ? message.priority! : "warning",
            instance: hostname(),
            ...(message.event ? { event: message.event } : {}),
          },
          annotations: { summary: message.title ?? message.message.split("\n")[0], description: message.message },
          startsAt: message.time,
        },
      ];
      return json(alerts, url.endsWith("/api/v2/alerts") ? url : `${url}/api/v2/alerts`);
    }
  }
}

/** Gotify's 0-10: its Android app rings from 8 up, shows 4-7, keeps 1-3 quiet. */
const GOTIFY_PRIORITY: Record<string, number> = { urgent: 9, high: 7, default: 5, low: 2 };
/** Pushover's -2..2: 1 bypasses quiet hours; 2 (emergency) needs retry/expire and is not used. */
const PUSHOVER_PRIORITY: Record<string, number> = { urgent: 1, high: 0, default: 0, low: -1 };

/** ntfy's priorities in termux-notification's words (max, high, default, low, min). */
const TERMUX_PRIORITY: Record<string, string> = { urgent: "max", high: "high", default: "default", low: "low" };

/** termux-notification without the Termux:API app hangs forever: a hard limit, its process group killed. */
const TERMUX_TIMEOUT_MS = 10_000;

/** Deliver by termux-notification: exit 0 is success; anything else, a timeout included, is a passing failure. */
async function sendTermux(argv: string[]): Promise<SendResult> {
  const result = await runCommand(argv, { timeoutMs: TERMUX_TIMEOUT_MS });
  if (result.exitCode === 0) return { ok: true, status: null, detail: "termux-notification: done", attempts: 1 };
  const why = result.timedOut
    ? `no answer within ${humanDuration(TERMUX_TIMEOUT_MS)} (is the Termux:API app installed? ` +
      "its process group was killed)"
    : (result.error ?? `exit ${result.exitCode}${saidBy(result) ? `: ${saidBy(result)}` : ""}`);
  return { ok: false, status: null, detail: `termux-notification: ${oneLine(why)}`, attempts: 1 };
}

/** What --dry-run prints: the request, its URL redacted. */
export function describeRequest(request: HttpRequest): string {
  if (request.mail) {
    const { from, to, subject, text } = request.mail;
    const lines = [`SMTP ${redactUrl(request.url)}`, `From: ${from}`, `To: ${to.join(", ")}`, `Subject: ${subject}`];
    return [...lines.map(escapeControls), "", ...text.split("\n").map(escapeControls)].join("\n");
  }
  if (request.argv)
    return request.argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(" ");
  const headers = Object.entries(request.headers).map(
    ([name, value]) => `${name}: ${SECRET_HEADERS.test(name) ? "…" : escapeControls(value)}`,
  );
  // The body is the message: shown with its line breaks, every other control escaped.
  const body = (request.shownBody ?? request.body).split("\n").map(escapeControls).join("\n");
  return [`POST ${redactUrl(request.url)}`, ...headers, "", body].join("\n");
}

/** Passing failures, retried and spooled: 5xx, 408, 429, and 424 (Apprise API: an upstream receiver failed). */
const retryable = (status: number) => status >= 500 || status === 408 || status === 429 || status === 424;

/**
 * Telegram (`parameters.retry_after`) and Discord (`retry_after`) say in their JSON answer how long
 * to wait, in seconds (Discord: fractional); as Retry-After does.
 */
function jsonRetryAfter(text: string): number | null {
  try {
    const answer = JSON.parse(text);
    const seconds = answer?.parameters?.retry_after ?? answer?.retry_after;
    return typeof seconds === "number" && Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : null;
  } catch {
    return null;
  }
}

/**
 * POST with curl -f semantics: 2xx is success, anything else fails. Network errors, 5xx, 408
 * and 429 are retried with exponential backoff (Retry-After honoured up to 30 s).
 */
export async function send(
  request: HttpRequest,
  channel: Channel,
  { fetch: doFetch = fetch, sleep = Bun.sleep }: SendOptions = {},
): Promise<SendResult> {
  if (request.argv) return sendTermux(request.argv); // once: a hung app answers no better the second time
  if (request.mail) {
    const { sendMail } = await import("./email.ts"); // nodemailer only when an email is sent
    let result: SendResult = { ok: false, status: null, detail: "not sent", attempts: 0 };
    for (let attempt = 1; attempt <= channel.retries + 1; attempt++) {
      result = { ...(await sendMail(request.url, request.mail, channel.timeoutMs)), attempts: attempt };
      if (result.ok || result.forGood) return result;
      if (attempt <= channel.retries) await sleep(Math.min(1000 * 2 ** (attempt - 1), RETRY_AFTER_CAP_MS));
    }
    return result;
  }
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
      if (response.status >= 200 && response.status < 300) {
        // Pushover: an answer whose status is 0 is a refusal (a bad token or user), whatever the HTTP status.
        if (channel.format === "pushover" && refusedByPushover(text))
          return {
            ok: false,
            status: response.status,
            detail: `HTTP ${response.status}: ${scrubbedLine(text, channel.url)}`,
            attempts: attempt,
            forGood: true,
          };
        return { ok: true, status: response.status, detail: `HTTP ${response.status}`, attempts: attempt };
      }
      const said = scrubbedLine(text, channel.url);
      last = {
        ok: false,
        status: response.status,
        detail: `HTTP ${response.status}${said ? `: ${said}` : ""}`,
        attempts: attempt,
      };
      if (!retryable(response.status) || (channel.format === "pushover" && refusedByPushover(text)))
        return { ...last, forGood: true };
      retryAfterMs = parseRetryAfter(response.headers.get("retry-after")) ?? jsonRetryAfter(text);
    } catch (error) {
      const detail = isTimeout(error) ? `no answer within ${humanDuration(channel.timeoutMs)}` : networkReason(error);
      last = { ok: false, status: null, detail: scrub(detail, channel.url), attempts: attempt };
    }
    if (attempt <= channel.retries)
      await sleep(Math.min(retryAfterMs ?? 1000 * 2 ** (attempt - 1), RETRY_AFTER_CAP_MS));
  }
  return last;
}

/** Pushover answers `{"status":0,"errors":[...]}` to what it will never accept. */
function refusedByPushover(text: string): boolean {
  try {
    return JSON.parse(text)?.status === 0;
  } catch {
    return false;
  }
}

/**
 * Retry-After: delay-seconds (a positive number) or an HTTP-date in the future; anything else
 * (`-5`, `0`, a date past) is ignored, and the normal backoff applies.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  const text = value?.trim() ?? "";
  if (/^\d+$/.test(text)) return Number(text) > 0 ? Number(text) * 1000 : null;
  if (!/^[A-Za-z]{3}, /.test(text)) return null; // an HTTP-date starts with its day's name: "Wed, 21 Oct 2015 …"
  const at = Date.parse(text);
  return Number.isNaN(at) || at <= now ? null : at - now;
}
