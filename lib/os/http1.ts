// One HTTP/1.1 GET over a socket, judged as curl's %{http_code} reports it (SPEC "Answers"): the
// status line and headers are the answer, the body is read only when a string is looked for in it,
// and every way of not answering has its own words. fetch cannot do this: it waits for a body it
// was not asked to read, and reports a clean close, a reset and a malformed answer all as ECONNRESET.
import { humanDuration } from "../core/duration.ts";
import { connectName, socketWords } from "./net.ts";
import { after } from "./timer.ts";

export interface GetOptions {
  headers: Record<string, string>;
  timeoutMs: number;
  /** Look for this in the body (read within the same timeout, at most `bodyLimit` bytes). */
  contains?: string | null;
  /** PEM text of a CA or certificate to trust (curl --cacert). */
  ca?: string | null;
  /** Do not verify the certificate (curl -k). */
  insecure?: boolean;
  bodyLimit?: number;
}

/** Why the body search ended without finding the string. */
export type BodyEnd = "complete" | "timeout" | "limit" | "broke";

export type GetResult =
  | { answered: true; status: number; headersMs: number; found: boolean | null; bodyEnd: BodyEnd | null }
  | { answered: false; timedOut: boolean; words: string };

const HEADER_LIMIT = 64 * 1024;
const STATUS_LINE = /^HTTP\/\d(?:\.\d)? (\d{3})(?:[ \r]|$)/;

/** TLS errors as the SPEC says them; `name` is the host the certificate had to be valid for. */
export function tlsWords(code: string | undefined, message: string, name: string): string | null {
  switch (code) {
    case "CERT_HAS_EXPIRED":
      return "certificate expired";
    case "CERT_NOT_YET_VALID":
      return "certificate not valid yet";
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
    case "SELF_SIGNED_CERT_IN_CHAIN":
      return "self-signed certificate";
    case "ERR_TLS_CERT_ALTNAME_INVALID":
    case "HOSTNAME_MISMATCH":
      return `certificate not valid for ${name}`;
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
    case "UNABLE_TO_GET_ISSUER_CERT":
    case "UNABLE_TO_GET_ISSUER_CERT_LOCALLY":
    case "CERT_UNTRUSTED":
    case "CERT_SIGNATURE_FAILURE":
      return "certificate not trusted";
  }
  if (code === "EPROTO" || /wrong.version|packet.length|http.request|unknown.protocol|handshake/i.test(message))
    return "TLS handshake failed (the port speaks plain HTTP?)";
  if (code?.startsWith("ERR_SSL") || code?.startsWith("ERR_TLS")) return "TLS handshake failed";
  return null;
}

/** The request's bytes: Host, a User-Agent, Basic auth from the URL's user info; the check's headers win. */
export function requestText(url: URL, headers: Record<string, string>): string {
  const given = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
  const lines = [`GET ${url.pathname || "/"}${url.search} HTTP/1.1`];
  if (!given.has("host")) lines.push(`Host: ${url.host}`);
  if (!given.has("user-agent")) lines.push("User-Agent: tend");
  if (!given.has("accept")) lines.push("Accept: */*");
  if (url.username && !given.has("authorization")) {
    const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    lines.push(`Authorization: Basic ${Buffer.from(pair).toString("base64")}`);
  }
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push("Connection: close", "", "");
  return lines.join("\r\n");
}

interface Head {
  status: number;
  headers: Map<string, string>;
  /** Bytes after the head: the body's start. */
  rest: Buffer;
}

/** The final head in `buffer` (1xx interim answers skipped); null: not complete yet; "bad": not HTTP. */
export function parseHead(buffer: Buffer): Head | null | "bad" {
  let start = 0;
  for (;;) {
    const prefix = buffer.subarray(start, start + 5).toString("latin1");
    if (prefix.length > 0 && !"HTTP/".startsWith(prefix.slice(0, Math.min(prefix.length, 5)))) return "bad";
    const end = buffer.indexOf("\r\n\r\n", start, "latin1");
    if (end < 0) return buffer.length - start > HEADER_LIMIT ? "bad" : null;
    const lines = buffer.subarray(start, end).toString("latin1").split("\r\n");
    const statusLine = STATUS_LINE.exec(lines[0]);
    if (!statusLine) return "bad";
    const status = Number(statusLine[1]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon <= 0) return "bad";
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    start = end + 4;
    if (status >= 100 && status < 200 && status !== 101) continue; // 100 Continue, 103 Early Hints
    return { status, headers, rest: buffer.subarray(start) };
  }
}

/**
 * A body being read for a string: framed by Content-Length, chunked, or the close; decoded bytes
 * kept up to the limit and searched as they come (an endless stream that shows the string is found).
 */
class BodySearch {
  private body: Buffer;
  private size = 0;
  private pending = Buffer.alloc(0);
  private left: number | null;
  private chunked: boolean;
  private chunkLeft = 0;
  private needle: Buffer;
  done: { found: boolean; end: BodyEnd } | null = null;

  constructor(head: Head, contains: string, limit: number) {
    this.needle = Buffer.from(contains);
    this.body = Buffer.alloc(limit);
    const length = head.headers.get("content-length");
    this.chunked = /\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "");
    this.left = !this.chunked && length !== undefined && /^\d+$/.test(length) ? Number(length) : null;
    if ([204, 304].includes(head.status)) this.left = 0;
    if (this.left === 0) this.finish("complete");
  }

  private finish(end: BodyEnd) {
    if (!this.done) this.done = { found: this.body.subarray(0, this.size).includes(this.needle), end };
  }

  private keep(bytes: Buffer) {
    const from = Math.max(0, this.size - this.needle.length + 1);
    const room = this.body.length - this.size;
    bytes.copy(this.body, this.size, 0, Math.min(room, bytes.length));
    this.size += Math.min(room, bytes.length);
    if (this.body.subarray(from, this.size).includes(this.needle)) this.done = { found: true, end: "complete" };
    else if (this.size >= this.body.length) this.finish("limit");
  }

  add(data: Buffer) {
    if (this.done) return;
    if (!this.chunked) {
      const part = this.left === null ? data : data.subarray(0, this.left);
      if (this.left !== null) this.left -= part.length;
      this.keep(part);
      if (this.left === 0) this.finish("complete");
      return;
    }
    this.pending = Buffer.concat([this.pending, data]);
    while (!this.done) {
      if (this.chunkLeft > 0) {
        const part = this.pending.subarray(0, this.chunkLeft);
        this.chunkLeft -= part.length;
        this.pending = this.pending.subarray(part.length);
        this.keep(part);
        if (this.chunkLeft > 0 || this.done) return;
        this.chunkLeft = -2; // the CRLF after a chunk
      }
      if (this.chunkLeft === -2) {
        if (this.pending.length < 2) return;
        if (this.pending.subarray(0, 2).toString("latin1") !== "\r\n") return this.finish("broke");
        this.pending = this.pending.subarray(2);
        this.chunkLeft = 0;
      }
      const lineEnd = this.pending.indexOf("\r\n", 0, "latin1");
      if (lineEnd < 0) return void (this.pending.length > 1024 && this.finish("broke"));
      const size = /^([0-9a-fA-F]+)(;.*)?$/.exec(this.pending.subarray(0, lineEnd).toString("latin1"));
      if (!size) return this.finish("broke");
      this.pending = this.pending.subarray(lineEnd + 2);
      this.chunkLeft = parseInt(size[1], 16);
      if (this.chunkLeft === 0) return this.finish("complete");
    }
  }

  /** The connection ended: complete if the framing says so (or there is none), else broken off. */
  closed(clean: boolean) {
    this.finish(clean && this.left === null && !this.chunked ? "complete" : "broke");
  }

  timedOut() {
    this.finish("timeout");
  }
}

/** An IP literal (no SNI for it); the rest are names. */
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)$/i;

/**
 * GET `url` once. Never throws for what the network does; the socket is gone when it resolves.
 * Bun.connect, not node:net: its first connection costs ~10 ms less (bench battery), and it says a
 * clean close (end), a reset (ECONNRESET) and each TLS failure (handshake) apart.
 */
export async function httpGet(url: string, options: GetOptions): Promise<GetResult> {
  const target = new URL(url);
  const secure = target.protocol === "https:";
  const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(target.port || (secure ? 443 : 80));
  const started = performance.now();
  const contains = options.contains ?? null;
  return new Promise<GetResult>((resolve) => {
    let received = Buffer.alloc(0);
    let head: Head | null = null;
    let headersMs = 0;
    let search: BodySearch | null = null;
    let settled = false;
    let socket: { end(): void; terminate?(): void } | null = null;
    const settle = (result: GetResult) => {
      if (settled) return;
      settled = true;
      cancel();
      try {
        socket?.terminate?.() ?? socket?.end();
      } catch {}
      resolve(result);
    };
    const answer = () => {
      const done = search?.done ?? null;
      settle({
        answered: true,
        status: head!.status,
        headersMs,
        found: done?.found ?? null,
        bodyEnd: done?.end ?? null,
      });
    };
    const noAnswer = (words: string, timedOut = false) => settle({ answered: false, timedOut, words });
    const cancel = after(options.timeoutMs, () => {
      if (!head) return noAnswer(`no answer within ${humanDuration(options.timeoutMs)}`, true);
      search?.timedOut();
      answer();
    });
    const onData = (data: Buffer) => {
      if (settled) return;
      if (head) {
        search!.add(data);
        if (search!.done) answer();
        return;
      }
      received = Buffer.concat([received, data]);
      const parsed = parseHead(received);
      if (parsed === "bad") return noAnswer("not an HTTP answer");
      if (!parsed) return;
      head = parsed;
      headersMs = Math.round(performance.now() - started);
      received = Buffer.alloc(0);
      // The status decides: without `contains`, the body is never waited for (an endless stream is an answer).
      if (contains === null) return answer();
      search = new BodySearch(parsed, contains, options.bodyLimit ?? 1024 * 1024);
      if (search.done) return answer();
      onData(parsed.rest);
    };
    const closed = (clean: boolean, code?: string) => {
      if (settled) return;
      if (!head) return noAnswer(clean ? "connection closed without an answer" : socketWords(code ?? "ECONNRESET"));
      search?.closed(clean);
      answer();
    };
    const send = (open: { write(text: string): number }) => open.write(requestText(target, options.headers));
    connectName(host)
      .then((hostname) =>
        Bun.connect({
          hostname,
          port,
          tls: secure
            ? {
                rejectUnauthorized: !options.insecure,
                serverName: IP_LITERAL.test(host) ? undefined : host,
                ...(options.ca ? { ca: options.ca } : {}),
              }
            : undefined,
          socket: {
            open(open) {
              // Answered meanwhile (the deadline passed while a localhost name was looked up): closed at once.
              if (settled) return void (open.terminate?.() ?? open.end());
              socket = open;
              if (!secure) send(open);
            },
            handshake(open, ok, error) {
              if (ok) return void send(open);
              const code = (error as NodeJS.ErrnoException | null)?.code;
              noAnswer(tlsWords(code, error?.message ?? "", target.hostname) ?? "TLS handshake failed");
            },
            data: (_open, data) => onData(data),
            end: () => closed(true),
            close: (_open, error) => closed(!error, (error as NodeJS.ErrnoException | undefined)?.code),
            error: (_open, error) => closed(false, (error as NodeJS.ErrnoException).code),
            connectError: (_open, error) => noAnswer(socketWords((error as NodeJS.ErrnoException).code)),
          },
        }),
      )
      .catch((error: NodeJS.ErrnoException) => noAnswer(socketWords(error.code)));
  });
}
