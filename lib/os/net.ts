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
  const code = (error as { code?: string }).code;
  return oneLine((code && CONNECTION_WORDS[code]) ?? code ?? (error as Error).message ?? String(error));
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
