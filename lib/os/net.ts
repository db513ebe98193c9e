/** fetch aborted by AbortSignal.timeout: the curl --max-time case. */
export const isTimeout = (error: unknown) => ["TimeoutError", "AbortError"].includes((error as Error)?.name);

/** A network error in words: "connection refused", "name does not resolve", ... */
export function networkReason(error: unknown): string {
  const code = (error as { code?: string }).code;
  const known: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ConnectionRefused: "connection refused",
    ECONNRESET: "connection reset",
    ConnectionClosed: "connection closed",
    ENOTFOUND: "name does not resolve",
    DNSException: "name does not resolve",
    EAI_AGAIN: "name does not resolve",
    FailedToOpenSocket: "cannot open socket",
    EHOSTUNREACH: "host unreachable",
  };
  return (code && known[code]) ?? code ?? (error as Error).message ?? String(error);
}
