/** A listen address `ADDR:PORT` (`[::1]:9841` for IPv6), or null when it is not one. */
export function parseListen(text: string): { hostname: string; port: number; loopback: boolean } | null {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (!match) return null;
  const port = Number(match[3]);
  if (port > 65535) return null;
  const hostname = match[1] ?? match[2];
  return { hostname, port, loopback: isLoopback(hostname) };
}

/** 127.0.0.0/8, ::1 and localhost: what only this host can reach. */
export function isLoopback(hostname: string): boolean {
  return /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === "::1" || hostname.toLowerCase() === "localhost";
}
