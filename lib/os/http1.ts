// One HTTP/1.1 GET over a socket, judged as curl's %{http_code} reports it (SPEC "Answers"): the
// status line and headers are the answer, the body is read only when a string is looked for in it,
// and every way of not answering has its own words. fetch cannot do this: it waits for a body it
// was not asked to read, and reports a clean close, a reset and a malformed answer all as ECONNRESET.
import { humanDuration } from "../core/duration.ts";
import { addressesOf, nextAddressHelps, socketWords } from "./net.ts";
import { after } from "./timer.ts";
import { stillClosing } from "./closing.ts";

interface GetOptions {
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
type BodyEnd = "complete" | "timeout" | "limit" | "broke";

type GetResult =
  | { answered: true; status: number; headersMs: number; found: boolean | null; bodyEnd: BodyEnd | null }
  | { answered: false; timedOut: boolean; words: string };

/** curl's limit on an answer's headers, interim answers' included: past it, no answer. */
const HEADER_LIMIT = 300 * 1024;
/** Interim answers (1xx) before the final one: bounded in count as in bytes (an endless 100 Continue). */
const INTERIM_LIMIT = 32;
/** curl's bound on one header line (the status line included): CURL_MAX_HTTP_HEADER, 100 KB. */
const LINE_LIMIT = 100 * 1024;
/**
 * A status line as curl reads it (7.88's `sscanf(" HTTP/%1d.%1d%c%3d%c")`, measured against it):
 * HTTP/1.0, 1.1 or 2.0 (or `HTTP/2`), one space, blanks, then at most three digits, a reason glued
 * on or not; a fourth digit is no answer. Any case: curl takes a lowercase `http/1.1 503` for
 * HTTP/1.0 200 (its fallback for lines it cannot read); tend reads the status it says.
 */
const STATUS_LINE = /^HTTP\/(?:([12])\.(\d)|(2)) [ \t]*(\d{1,3})(\d?)/i;

/** The status of a final or interim status line, or why it is none. */
function readStatus(line: string): { status: number } | { words: string } {
  const match = STATUS_LINE.exec(line);
  if (!match || match[5] !== "") return { words: "not an HTTP answer" };
  const version = match[3] ? "2.0" : `${match[1]}.${match[2]}`;
  if (!["1.0", "1.1", "2.0"].includes(version)) return { words: `not an HTTP answer (HTTP version ${version})` };
  const status = Number(match[4]);
  // As in curl: 000 or 099 is no answer, never a status to judge.
  return status < 100 ? { words: `not an HTTP answer (status ${match[4]})` } : { status };
}

/** TLS errors as the SPEC says them; `name` is the host the certificate had to be valid for. */
function tlsWords(code: string | undefined, message: string, name: string): string | null {
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
  // The server's alert, as curl names it (BoringSSL's reason in the message).
  if (/ALERT_PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL/i.test(message)) return "TLS version not supported by the server";
  if (/CERTIFICATE_REQUIRED/i.test(message)) return "the server requires a client certificate";
  if (/ALERT_HANDSHAKE_FAILURE/i.test(message))
    return "TLS handshake refused by the server (a client certificate or a cipher it requires?)";
  if (/wrong.version|packet.length|http.request|unknown.protocol/i.test(message))
    return "TLS handshake failed (the port speaks plain HTTP?)";
  if (code === "EPROTO" || code?.startsWith("ERR_SSL") || code?.startsWith("ERR_TLS")) return "TLS handshake failed";
  return null;
}

/** The certificate problems curl's -k skips (chain, dates, self-signed, the name). */
const CERTIFICATE_CODES = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "INVALID_CA",
  "CERT_REVOKED",
]);

/**
 * A handshake whose certificate did not verify, accepted as curl accepts it: with `insecure` (curl -k)
 * whatever the certificate problem; without, only a name mismatch on a certificate that has no
 * subjectAltName and whose CN is the name asked (an IP address included), the chain being good.
 */
function acceptedAnyway(
  code: string | undefined,
  insecure: boolean,
  host: string,
  peer: () => { subject?: { CN?: string | string[] }; subjectaltname?: string } | undefined,
): boolean {
  if (!code || !CERTIFICATE_CODES.has(code)) return false;
  if (insecure) return true;
  if (code !== "ERR_TLS_CERT_ALTNAME_INVALID" && code !== "HOSTNAME_MISMATCH") return false;
  const certificate = peer();
  if (!certificate || certificate.subjectaltname) return false;
  const names = [certificate.subject?.CN ?? []].flat();
  const asked = host.replace(/^\[|\]$/g, "").toLowerCase();
  return names.some((name) => name.toLowerCase() === asked);
}

/**
 * The TLS version a server that refused ours offers ("TLS 1.0"), asked with one more handshake
 * that allows the old ones (node:tls: Bun.connect has no minVersion); null when it will not say
 * within `timeoutMs`. Only after a refusal: a probe that succeeds never pays for it.
 */
async function offeredTlsVersion(
  address: string,
  name: string,
  port: number,
  timeoutMs: number,
): Promise<string | null> {
  const { connect } = await import("node:tls");
  return new Promise((resolve) => {
    let socket: import("node:tls").TLSSocket;
    try {
      socket = connect({
        host: address,
        port,
        servername: IP_LITERAL.test(name) ? undefined : name,
        rejectUnauthorized: false, // the version is asked, not the certificate: nothing is sent
        minVersion: "TLSv1",
        ciphers: "ALL",
      });
    } catch {
      return resolve(null);
    }
    const done = (version: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(version);
    };
    const timer = setTimeout(() => done(null), Math.max(0, timeoutMs));
    socket.on("secureConnect", () =>
      done(
        socket
          .getProtocol()
          ?.replace(/^TLSv(\d)$/, "TLSv$1.0")
          .replace("TLSv", "TLS ") ?? null,
      ),
    );
    socket.on("error", () => done(null));
  });
}

/** The request's bytes: Host, a User-Agent, Basic auth from the URL's user info; the check's headers win. */
function requestText(url: URL, headers: Record<string, string>): string {
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

/** What the bytes so far hold: the final head, not yet (and the last interim answer seen), or no answer. */
type HeadParse =
  { kind: "head"; head: Head } | { kind: "more"; interim: string | null } | { kind: "bad"; words: string };

/**
 * The final head in `buffer`, read as leniently as curl (SPEC "Answers"): lines end in CRLF or a bare
 * LF (or a mix), the protocol in any case, obs-fold lines continue the header before them, a line
 * without a colon is skipped. 1xx interim answers (not 101) are skipped, at most INTERIM_LIMIT; every
 * head together at most HEADER_LIMIT bytes, however the bytes arrived. A status below 100 (000, 099)
 * is no answer, as in curl. `closed`: nothing more comes (the server closed): a head cut short after
 * its status line is taken as it is.
 */
function parseHead(buffer: Buffer, closed = false): HeadParse {
  let start = 0;
  let interims = 0;
  let interim: string | null = null;
  const larger = { kind: "bad", words: `headers larger than ${HEADER_LIMIT / 1024} KB` } as const;
  const tooLong = {
    kind: "bad",
    words: `not an HTTP answer (a header line longer than ${LINE_LIMIT / 1024} KB)`,
  } as const;
  for (;;) {
    const prefix = buffer
      .subarray(start, start + 5)
      .toString("latin1")
      .toUpperCase();
    if (!"HTTP/".startsWith(prefix)) return { kind: "bad", words: "not an HTTP answer" };
    const lines: string[] = [];
    let end = -1;
    for (let from = start; ;) {
      const newline = buffer.indexOf(10, from);
      // curl's bound: a header line (the status line included) past 100 KB is no answer, however it came.
      if ((newline < 0 ? buffer.length : newline) - from > LINE_LIMIT) return tooLong;
      if (newline < 0) break; // a line cut short is no line
      const line = buffer.subarray(from, newline).toString("latin1").replace(/\r$/, "");
      from = newline + 1;
      if (line === "") {
        end = from;
        break;
      }
      lines.push(line);
    }
    if (end < 0) {
      if (buffer.length > HEADER_LIMIT) return larger;
      // Closed inside the head, after a whole status line: that status is the answer, as curl has
      // it (a status line cut short is none).
      if (!closed || !lines.length) return { kind: "more", interim };
      end = buffer.length;
    }
    if (end > HEADER_LIMIT) return larger;
    const read = readStatus(lines[0]);
    if ("words" in read) return { kind: "bad", words: read.words };
    const { status } = read;
    const headers = new Map<string, string>();
    let last: string | null = null;
    for (const line of lines.slice(1)) {
      if (/^[ \t]/.test(line) && last !== null) {
        headers.set(last, `${headers.get(last)} ${line.trim()}`.trim()); // obs-fold: the header before goes on
        continue;
      }
      const colon = line.indexOf(":");
      if (colon <= 0) continue; // not a header: curl skips it too
      last = line.slice(0, colon).trim().toLowerCase();
      headers.set(last, line.slice(colon + 1).trim());
    }
    start = end;
    if (status >= 100 && status < 200 && status !== 101) {
      // 100 Continue, 103 Early Hints: the final answer follows.
      if (++interims > INTERIM_LIMIT)
        return { kind: "bad", words: `not an HTTP answer (more than ${INTERIM_LIMIT} interim answers)` };
      interim = lines[0].replace(/^\S+\s+/, "").trim();
      continue;
    }
    return { kind: "head", head: { status, headers, rest: buffer.subarray(start) } };
  }
}

/**
 * An answer's body, read to its end (framed by Content-Length, chunked, or the close) so that the
 * connection closes with FIN, never a reset (SPEC "Answers": a probe leaves no trace). At most
 * `limit` bytes; with a needle, searched as they come (an endless stream that shows it is found).
 */
class BodyReader {
  private kept: Buffer | null;
  private size = 0;
  private pending = Buffer.alloc(0);
  private left: number | null;
  private chunked: boolean;
  private chunkLeft = 0;
  private needle: Buffer | null;
  found = false;
  /** How the body ended (null: still coming). */
  end: BodyEnd | null = null;

  constructor(
    head: Head,
    contains: string | null,
    private limit: number,
  ) {
    this.needle = contains === null ? null : Buffer.from(contains);
    this.kept = this.needle ? Buffer.alloc(limit) : null;
    const length = head.headers.get("content-length");
    this.chunked = /\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "");
    this.left = !this.chunked && length !== undefined && /^\d+$/.test(length) ? Number(length) : null;
    // No body: 204, 304, and a 101's connection is another protocol's from here.
    if ([101, 204, 304].includes(head.status)) this.left = 0;
    if (this.left === 0) this.finish("complete");
  }

  private finish(end: BodyEnd) {
    this.end ??= end;
  }

  private keep(bytes: Buffer) {
    const part = Math.min(this.limit - this.size, bytes.length);
    if (this.kept && this.needle && !this.found) {
      const from = Math.max(0, this.size - this.needle.length + 1);
      bytes.copy(this.kept, this.size, 0, part);
      this.found = this.kept.subarray(from, this.size + part).includes(this.needle);
    }
    this.size += part;
    if (this.size >= this.limit) this.finish("limit");
  }

  add(data: Buffer) {
    if (this.end) return;
    if (!this.chunked) {
      const part = this.left === null ? data : data.subarray(0, this.left);
      if (this.left !== null) this.left -= part.length;
      this.keep(part);
      if (this.left === 0) this.finish("complete");
      return;
    }
    this.pending = Buffer.concat([this.pending, data]);
    while (!this.end) {
      if (this.chunkLeft > 0) {
        const part = this.pending.subarray(0, this.chunkLeft);
        this.chunkLeft -= part.length;
        this.pending = this.pending.subarray(part.length);
        this.keep(part);
        if (this.chunkLeft > 0 || this.end) return;
        this.chunkLeft = -2; // the line end after a chunk
      }
      if (this.chunkLeft === -2) {
        const lineEnd = this.pending.indexOf(10);
        if (lineEnd < 0) return void (this.pending.length > 2 && this.finish("broke"));
        if (this.pending.subarray(0, lineEnd).toString("latin1").replace(/\r$/, "") !== "") return this.finish("broke");
        this.pending = this.pending.subarray(lineEnd + 1);
        this.chunkLeft = 0;
      }
      const lineEnd = this.pending.indexOf(10);
      if (lineEnd < 0) return void (this.pending.length > 1024 && this.finish("broke"));
      const size = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(
        this.pending.subarray(0, lineEnd).toString("latin1").replace(/\r$/, ""),
      );
      if (!size) return this.finish("broke");
      this.pending = this.pending.subarray(lineEnd + 1);
      this.chunkLeft = parseInt(size[1], 16);
      // The last chunk: its trailers (if any) are not waited for.
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
  let released!: () => void;
  let cutNow: () => void = () => {};
  stillClosing(new Promise<void>((resolve) => (released = resolve)), () => cutNow());
  return new Promise<GetResult>((resolve) => {
    let received: Buffer = Buffer.alloc(0);
    let head: Head | null = null;
    let interim: string | null = null;
    let headersMs = 0;
    let body: BodyReader | null = null;
    let settled = false;
    let done = false;
    /** The TLS handshake was refused for its version: the answer is said once the server's is known. */
    let refused = false;
    let socket: { end(): void; terminate?(): void } | null = null;
    /** The verdict, once; the connection may go on until its body ends. */
    const settle = (result: GetResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    /** The connection's end, once: FIN after a body read to its end, else cut. */
    const release = (how: "end" | "cut") => {
      if (done) return;
      done = true;
      cancel();
      try {
        if (how === "end") socket?.end();
        else socket?.terminate?.() ?? socket?.end();
      } catch {}
      released();
    };
    cutNow = () => release("cut");
    const answer = () =>
      settle({
        answered: true,
        status: head!.status,
        headersMs,
        found: contains === null ? null : body!.found,
        bodyEnd: contains === null ? null : body!.end,
      });
    const noAnswer = (words: string, timedOut = false) => {
      settle({ answered: false, timedOut, words });
      release("cut");
    };
    /** After the head: the answer once its body decides it (found, or ended), the connection once the body ends. */
    const progress = () => {
      if (contains === null || body!.found || body!.end) answer();
      if (body!.end) release(body!.end === "complete" ? "end" : "cut");
    };
    const cancel = after(options.timeoutMs, () => {
      if (!head) return noAnswer(unfinished(received, interim, humanDuration(options.timeoutMs)), true);
      body!.timedOut();
      progress();
    });
    const onData = (data: Buffer) => {
      if (!asked) return;
      if (done) return;
      if (head) {
        body!.add(data);
        return progress();
      }
      received = received.length ? Buffer.concat([received, data]) : data;
      const parsed = parseHead(received);
      if (parsed.kind === "bad") return noAnswer(parsed.words);
      if (parsed.kind === "more") return void (interim = parsed.interim);
      onHead(parsed.head);
    };
    const onHead = (final: Head) => {
      head = final;
      headersMs = Math.round(performance.now() - started);
      received = Buffer.alloc(0);
      // The status decides: without `contains` the answer is given now; the body is read on only to close cleanly.
      body = new BodyReader(head, contains, options.bodyLimit ?? 1024 * 1024);
      if (head.rest.length) body.add(head.rest);
      progress();
    };
    const closed = (clean: boolean, error?: NodeJS.ErrnoException) => {
      if (refused) return;
      const code = error?.code;
      if (done) return;
      if (!head && received.length) {
        const parsed = parseHead(received, true);
        if (parsed.kind === "bad") return noAnswer(parsed.words);
        if (parsed.kind === "head") onHead(parsed.head);
        else interim = parsed.interim;
        if (done) return;
      }
      if (!head) {
        if (clean && interim) return noAnswer(`connection closed after ${interim} without a final answer`);
        // A TLS alert after the handshake (TLS 1.3's client certificate) is said as the alert.
        const alert = secure && !clean ? tlsWords(code, error?.message ?? "", host) : null;
        return noAnswer(clean ? "connection closed without an answer" : (alert ?? socketWords(code ?? "ECONNRESET")));
      }
      body!.closed(clean);
      progress();
      release("cut");
    };
    // Nothing the server says counts before the request is sent (over TLS: once its certificate is judged).
    let asked = false;
    const send = (open: { write(text: string): number }) => (
      (asked = true),
      open.write(requestText(target, options.headers))
    );
    // The resolver's addresses in its order, each tried as curl tries them: the next after a refusal.
    const connectTo = (addresses: string[], index: number) => {
      const hostname = addresses[index];
      let failed = false;
      const cannot = (error: NodeJS.ErrnoException) => {
        if (failed || done) return;
        failed = true;
        if (index + 1 < addresses.length && nextAddressHelps(error.code)) return connectTo(addresses, index + 1);
        noAnswer(socketWords(error.code));
      };
      Bun.connect({
        hostname,
        port,
        tls: secure
          ? {
              // tend judges the certificate itself, in handshake(), as curl does: -k skips every check,
              // and a certificate without subjectAltName is matched on its CN (an IP address included).
              rejectUnauthorized: false,
              serverName: IP_LITERAL.test(host) ? undefined : host,
              ...(options.ca ? { ca: options.ca } : {}),
            }
          : undefined,
        socket: {
          open(open) {
            // Answered meanwhile (the deadline passed while the name was looked up): closed at once.
            if (done) return void (open.terminate?.() ?? open.end());
            socket = open;
            if (!secure) send(open);
          },
          handshake(open, ok, error) {
            const code = (error as NodeJS.ErrnoException | null)?.code;
            // Bun says a certificate's problem as `error`, with `ok` true or false: the problem decides.
            const verified = error
              ? acceptedAnyway(code, options.insecure === true, host, () => open.getPeerCertificate?.())
              : ok;
            if (verified) return void send(open);
            const words = tlsWords(code, error?.message ?? "", host);
            if (words !== "TLS version not supported by the server") return noAnswer(words ?? "TLS handshake failed");
            refused = true; // its close is not the answer: the words wait for the version it offers
            const left = options.timeoutMs - (performance.now() - started);
            void offeredTlsVersion(hostname, host, port, left).then((version) =>
              noAnswer(version ? `${words} (it offers ${version})` : words),
            );
          },
          data: (_open, data) => onData(data),
          end: () => closed(true),
          close: (_open, error) => closed(!error, error as NodeJS.ErrnoException | undefined),
          error: (_open, error) => closed(false, error as NodeJS.ErrnoException),
          connectError: (_open, error) => cannot(error as NodeJS.ErrnoException),
        },
      }).catch(cannot);
    };
    addressesOf(host)
      .then((addresses) => connectTo(addresses, 0))
      .catch((error: NodeJS.ErrnoException) => noAnswer(socketWords(error.code)));
  });
}

/**
 * No final head within the timeout, said with what did arrive (SPEC: a head that never completes is
 * no answer — a hung service — stricter than curl's %{http_code}, which reports its status line).
 */
export function unfinished(received: Buffer, interim: string | null, within: string): string {
  // The last status line that arrived (after any interim 1xx heads): a final one whose headers never ended.
  const lines = [...received.toString("latin1").matchAll(/(?:^|\n)HTTP\/\d(?:\.\d)? (\d{3})[^\r\n]*\r?\n/g)];
  const status = lines.at(-1)?.[1];
  if (status && !status.startsWith("1")) return `HTTP ${status} status line, headers not complete within ${within}`;
  if (interim) return `HTTP ${interim}, then no final answer within ${within}`;
  return `no answer within ${within}`;
}
