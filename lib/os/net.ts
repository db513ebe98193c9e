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
 * One address for `host`, by the system's resolver (addressesOf), IPv4 first where the name has
 * both (as nodemailer's own resolving did: an SMTP server on 127.0.0.1 alone is found by "localhost"
 * where /etc/hosts says ::1 first). Rejects within `timeoutMs`, saying why.
 */
export async function systemAddress(host: string, timeoutMs: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const found = await Promise.race([
      addressesOf(host),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return found.find((address) => !address.includes(":")) ?? found[0];
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOTFOUND" ? "no such name" : (error as Error).message;
    throw new Error(`cannot resolve ${host}: ${why}`);
  } finally {
    clearTimeout(timer);
  }
}

/** "localhost" and every name under ".localhost" (RFC 6761 section 6.3). */
const isLocalhostName = (host: string) => /^(?:[^.]+\.)*localhost\.?$/i.test(host);

/** An IPv4 or IPv6 address as written (a URL's brackets already removed). */
const IP_ADDRESS = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)$/i;

/** A connection to one address failed so that the next one is tried (as curl moves on along its list). */
export const nextAddressHelps = (code: string | undefined) =>
  ["ECONNREFUSED", "ConnectionRefused", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"].includes(
    code ?? "",
  );

/**
 * The addresses to connect to for `host`, in the system resolver's order (getaddrinfo: /etc/hosts,
 * then DNS, sorted by RFC 6724 and gai.conf; on Android, netd through bionic): the list curl gets and
 * tries one by one. Not Bun's own resolver, which answers "localhost" with ::1 where /etc/hosts says
 * 127.0.0.1 and gives one address of a name that has two. An address as given stays itself. A
 * localhost name the resolver does not know (a host without /etc/hosts — debootstrap writes none —
 * and a DNS server that answers NXDOMAIN for it, as RFC 6761 asks) is 127.0.0.1, which curl connects
 * to without asking. Rejects with code ENOTFOUND when the name does not resolve; the caller's own
 * deadline bounds a resolver that does not answer.
 */
export async function addressesOf(host: string): Promise<string[]> {
  if (IP_ADDRESS.test(host)) return [host];
  let found: { address: string }[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const lookup = Bun.dns.lookup(host, { backend: "system" });
    // A localhost name is not waited for past a second (no /etc/hosts, a DNS server away): the loopback.
    found = isLocalhostName(host)
      ? await Promise.race([lookup, new Promise<[]>((resolve) => (timer = setTimeout(() => resolve([]), 1000)))])
      : await lookup;
  } catch {
  } finally {
    clearTimeout(timer);
  }
  const addresses = [...new Set(found.map((entry) => entry.address))];
  if (addresses.length) return addresses;
  if (isLocalhostName(host)) return ["127.0.0.1"];
  throw Object.assign(new Error(`cannot resolve ${host}`), { code: "ENOTFOUND" });
}
