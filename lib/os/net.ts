import { oneLine } from "../core/sanitize.ts";
/** fetch aborted by AbortSignal.timeout: the curl --max-time case. */
export const isTimeout = (error: unknown) => ["TimeoutError", "AbortError"].includes((error as Error)?.name);

/** Network and socket errors in words, for every client tend has (fetch, node:net, Bun.connect). */
const CONNECTION_WORDS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ConnectionRefused: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ConnectionClosed: "connection closed",
  ENOTFOUND: "name does not resolve",
  DNSException: "name does not resolve",
  EAI_AGAIN: "name does not resolve",
  EAI_NONAME: "name does not resolve",
  FailedToOpenSocket: "cannot open socket",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connection timed out",
  EADDRNOTAVAIL: "address not available",
  EMFILE: "too many open files (tend's own limit)",
  ENFILE: "too many open files (the system's limit)",
  ENOMEM: "out of memory",
};

/** A socket error code in words; one not known is "connection failed", never the internal code. */
export const socketWords = (code: string | undefined): string =>
  (code && CONNECTION_WORDS[code]) ?? "connection failed";

/** A network error in words: "connection refused", "name does not resolve", ... */
export function networkReason(error: unknown): string {
  // A DOMException's code is a number (a timeout's is 23): only a string code is an errno's name.
  const raw = (error as { code?: unknown } | null)?.code;
  const code = typeof raw === "string" ? raw : undefined;
  const message = (error as Error | null)?.message;
  return oneLine((code && CONNECTION_WORDS[code]) ?? code ?? (typeof message === "string" ? message : String(error)));
}

/** Bodies are read up to a bound: a probe's (1 MiB), a notify or heartbeat answer's (64 KiB). */
export const PROBE_BODY_LIMIT = 1024 * 1024;
export const ANSWER_BODY_LIMIT = 64 * 1024;

/** Read at most `limit` bytes of a response's body (the rest is never read: the stream is cancelled). */
export async function readBounded(response: Response, limit: number): Promise<string> {
  // A plain body whose length is declared and within the bound: read natively (HTTP framing stops
  // it there), sparing a stream reader per probe. Compressed or undeclared: streamed and cut.
  const length = response.headers.get("content-length");
  const encoding = response.headers.get("content-encoding");
  if (length !== null && /^\d+$/.test(length) && Number(length) <= limit && (!encoding || encoding === "identity"))
    return response.text();
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    const part = value.subarray(0, limit - size);
    chunks.push(part);
    size += part.length;
  }
  if (size >= limit) await reader.cancel().catch(() => {});
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/**
 * Where the system's resolver (getaddrinfo: /etc/hosts, then DNS; on Android, netd through bionic)
 * says `host` is: an address as given stays itself. Rejects within `timeoutMs`, saying why.
 */
export async function systemAddress(host: string, timeoutMs: number): Promise<string> {
  const { isIP } = await import("node:net");
  if (isIP(host)) return host;
  const { lookup } = await import("node:dns/promises");
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const found = await Promise.race([
      lookup(host, { all: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    // IPv4 first where the name has both (as nodemailer's own resolving did): a server on 127.0.0.1
    // alone is found by "localhost" where the resolver says ::1 first (a fresh Debian: no /etc/hosts).
    const chosen = found.find((entry) => entry.family === 4) ?? found[0];
    if (!chosen) throw Object.assign(new Error("no address"), { code: "ENOTFOUND" });
    return chosen.address;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOTFOUND" ? "no such name" : (error as Error).message;
    throw new Error(`cannot resolve ${host}: ${why}`);
  } finally {
    clearTimeout(timer);
  }
}

/** "localhost" and every name under ".localhost" (RFC 6761 section 6.3). */
export const isLocalhostName = (host: string) => /^(?:[^.]+\.)*localhost\.?$/i.test(host);

const localhostResolves = new Map<string, { resolves: boolean; until: number }>();

/**
 * The name to connect to for `host`: itself, but a localhost name the resolver does not know is
 * 127.0.0.1 (a host without /etc/hosts — debootstrap writes none — and a DNS server that answers
 * NXDOMAIN for it, as RFC 6761 asks). curl does the same without asking the resolver (7.78+,
 * *.localhost 7.85+); where the resolver knows the name, what it says is kept. Asked once a minute.
 */
export async function connectName(host: string, now = Date.now()): Promise<string> {
  if (!isLocalhostName(host)) return host;
  let known = localhostResolves.get(host);
  if (!known || known.until < now) {
    const { lookup } = await import("node:dns/promises");
    // A resolver that does not answer (no /etc/hosts, a DNS server away) is not waited for past a second.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const resolves = await Promise.race([
      lookup(host).then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 1000))),
    ]).finally(() => clearTimeout(timer));
    localhostResolves.set(host, (known = { resolves, until: now + 60_000 }));
  }
  return known.resolves ? host : "127.0.0.1";
}
