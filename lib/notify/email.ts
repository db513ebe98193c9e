// format = "email": one message per event over SMTP, through nodemailer (loaded only when an email
// is sent). nodemailer because SMTP is more than it looks — EHLO extensions, STARTTLS, AUTH
// mechanisms, dot-stuffing, RFC 2047 subjects, line lengths — and nodemailer is the SMTP client most
// of Node's ecosystem relies on: maintained since 2010, no dependencies, MIT-0.
// url = "smtp://USER:PASS@HOST:587" (STARTTLS when the server offers it; with credentials it must:
// they are never sent in the clear) or "smtps://USER:PASS@HOST:465" (TLS from the first byte).
// The recipients and the sender ride in the URL's query (`to`, `from`), so a spooled email keeps
// its own destination as every other message does.
import { oneLine } from "../core/sanitize.ts";
import { humanDuration } from "../core/duration.ts";
import { scrubbedLine } from "../core/redact.ts";
import type { SendResult } from "./send.ts";
import { systemAddress } from "../os/net.ts";

export interface Mail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  /** The message's idempotency key as its Message-ID: a mail store keeps one message per id. */
  messageId?: string;
}

/** What nodemailer's SMTP transport takes and says, as far as tend uses it. */
interface SmtpError extends Error {
  code?: string;
  /** The SMTP command it failed at (STARTTLS, AUTH PLAIN, RCPT TO, ...). */
  command?: string;
  responseCode?: number;
  response?: string;
}

/** The SMTP server an email URL names, and its envelope. */
function smtpTarget(url: string): { secure: boolean; host: string; port: number; user: string; pass: string } {
  const parsed = new URL(url);
  const secure = parsed.protocol === "smtps:";
  return {
    secure,
    host: parsed.hostname.replace(/^\[|\]$/g, ""),
    port: Number(parsed.port) || (secure ? 465 : 587),
    user: decodeURIComponent(parsed.username),
    pass: decodeURIComponent(parsed.password),
  };
}

/** Send one email; SMTP 4xx and network failures are passing, 5xx and a refused TLS are for good. */
export async function sendMail(url: string, mail: Mail, timeoutMs: number): Promise<SendResult> {
  const { createTransport } = (await import("nodemailer")) as unknown as {
    createTransport: (options: object) => {
      sendMail: (mail: object) => Promise<{ response?: string }>;
      close: () => void;
    };
  };
  const target = smtpTarget(url);
  const credentials = target.user !== "";
  const started = Date.now();
  // Where to connect, by the system's resolver: nodemailer would ask DNS itself (c-ares, from
  // /etc/resolv.conf), which Android has none of — a phone's names resolve through netd, as curl's
  // getaddrinfo does (found in the Termux-shaped sandbox: a mail to a name hung there). A localhost the
  // resolver does not know is the loopback (os/net.ts). The certificate still answers for the name.
  let host: string;
  try {
    host = await systemAddress(target.host, timeoutMs);
  } catch (error) {
    return { ok: false, status: null, detail: `SMTP ${scrubbedLine((error as Error).message, url)}`, attempts: 1 };
  }
  const left = Math.max(1, timeoutMs - (Date.now() - started));
  const transport = createTransport({
    host,
    ...(host !== target.host ? { tls: { servername: target.host } } : {}),
    port: target.port,
    secure: target.secure,
    // Credentials never go in the clear: without TLS from the start, STARTTLS is then required.
    requireTLS: !target.secure && credentials,
    auth: credentials ? { user: target.user, pass: target.pass } : undefined,
    connectionTimeout: left,
    greetingTimeout: left,
    socketTimeout: left,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  // One deadline for the whole delivery (the name, connect, greeting, each command, the body):
  // nodemailer's own are per step, so a server that answers each command just in time would hold a
  // pass for minutes.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      transport.close();
      reject(new Error(`no answer within ${humanDuration(timeoutMs)} (the whole delivery)`));
    }, left);
  });
  try {
    const sending = transport.sendMail({ ...mail, disableFileAccess: true, disableUrlAccess: true });
    sending.catch(() => {}); // after the deadline, its own end says nothing more
    const sent = await Promise.race([sending, deadline]);
    return { ok: true, status: null, detail: `SMTP ${oneLine(sent.response ?? "250", 120)}`, attempts: 1 };
  } catch (error) {
    const failure = error as SmtpError;
    const code = failure.responseCode;
    const said = scrubbedLine(failure.response ?? failure.message, url);
    // Credentials need TLS: a server that has no STARTTLS (or refuses it) gets none, now or later.
    if (failure.code === "ETLS" || failure.command === "STARTTLS" || /STARTTLS/i.test(failure.message))
      return {
        ok: false,
        status: code ?? null,
        detail: `the SMTP server offers no STARTTLS: the credentials are not sent in the clear (${said})`,
        attempts: 1,
        forGood: true,
      };
    if (code !== undefined) {
      return { ok: false, status: code, detail: `SMTP ${said}`, attempts: 1, forGood: code >= 500 };
    }
    return { ok: false, status: null, detail: `SMTP ${said}`, attempts: 1 };
  } finally {
    clearTimeout(timer);
  }
}
