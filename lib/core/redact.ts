/** An http:// or https:// URL with a host. */
export const isHttpUrl = (url: string) => /^https?:\/\/[^/\s]+/.test(url);

/** scheme://host[:port]/… : paths, queries and user info can hold tokens, so they are never shown. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const rest = parsed.pathname !== "/" || parsed.search ? "/…" : "/";
    return `${parsed.protocol}//${parsed.host}${rest}`;
  } catch {
    return "(invalid URL)";
  }
}

/** Remove every occurrence of a URL's secret parts from a text (error messages can quote URLs). */
export function scrub(text: string, url: string | null): string {
  if (!url) return text;
  let clean = text.split(url).join(redactUrl(url));
  try {
    const parsed = new URL(url);
    // Whole parts first, then each path segment and query value (an answer may quote just the token).
    const segments = parsed.pathname.split("/").map(decodeURIComponent);
    const values = [...parsed.searchParams.values()];
    const secrets = [parsed.pathname, parsed.search, parsed.password, parsed.username, ...segments, ...values].filter(
      (part) => part.length >= 6,
    );
    for (const secret of secrets) clean = clean.split(secret).join("…");
  } catch {}
  return clean;
}
