import { oneLine } from "./sanitize.ts";

/**
 * What is wrong with a URL of one of `schemes`, checked as its client parses it (scheme, host, port
 * 1-65535, no spaces or control characters), or null when it is fine.
 */
function urlProblem(url: string, schemes: string[], scheme: string): string | null {
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return "holds a space or a control character";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL (scheme://host[:port]/path)";
  }
  if (!schemes.includes(parsed.protocol)) return scheme;
  if (!parsed.hostname) return "has no host";
  if (parsed.port === "0") return "has port 0 (ports go from 1 to 65535)";
  return null;
}

/** An http(s) URL's problem, or null. */
export const httpUrlProblem = (url: string) =>
  urlProblem(url, ["http:", "https:"], "is not an http:// or https:// URL");

/** An email destination's problem (smtp:// with STARTTLS, smtps:// with TLS from the start), or null. */
export const smtpUrlProblem = (url: string) => urlProblem(url, ["smtp:", "smtps:"], "is not smtp:// or smtps://");

export const isHttpUrl = (url: string) => httpUrlProblem(url) === null;

/** scheme://host[:port]/… : paths, queries and user info can hold tokens, so they are never shown. */
export function redactUrl(url: string): string {
  if (url.startsWith("termux:")) return "termux-notification"; // format = "termux": a command, not a URL
  try {
    const parsed = new URL(url);
    const rest = parsed.pathname !== "/" || parsed.search ? "/…" : "/";
    return `${parsed.protocol}//${parsed.host}${rest}`;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * Remove every occurrence of a URL's secret parts from a text (an answer or an error can quote
 * them): the URL, its path and query, its user info and the Basic-auth value built from it, the
 * last path segment and each query value (tokens sit there: 3 characters are enough), and any
 * other path segment of 6 characters or more.
 */
export function scrub(text: string, url: string | null): string {
  if (!url) return text;
  let clean = text.split(url).join(redactUrl(url));
  try {
    const parsed = new URL(url);
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    const basic =
      user || password ? [Buffer.from(`${user}:${password}`).toString("base64"), `${user}:${password}`] : [];
    const segments = parsed.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    const last = segments.pop() ?? "";
    const short = [last, user, password, ...parsed.searchParams.values()].filter((part) => part.length >= 3);
    const long = [parsed.pathname, parsed.search, ...segments].filter((part) => part.length >= 6);
    const secrets = [...basic, ...short, ...long].sort((a, b) => b.length - a.length); // longest first
    for (const secret of secrets) clean = clean.split(secret).join("…");
  } catch {}
  return clean;
}

/**
 * Outside text (a receiver's answer, an error) as one safe line: its secrets removed first, then
 * escaped and cut — never cut first, or a secret split by the cut would be left half (and unrecognised).
 */
export const scrubbedLine = (text: string, url: string | null, max = 200): string => oneLine(scrub(text, url), max);

/** A URL in an error message: scheme://host[:port]/… when it parses, else its first characters, escaped. */
export function shownUrl(url: string): string {
  const shown = redactUrl(url);
  return shown === "(invalid URL)" ? oneLine(url.replace(/^([^/]*\/\/[^/?#]*).*$/s, "$1…"), 40) : shown;
}

/** How secrets are shown: hidden everywhere, except `plan --show-secrets`. */
export interface Shown {
  url: (url: string) => string;
  /** Header values, env values, tokens. */
  value: (value: string) => string;
  argv: (argv: string[]) => string[];
}
export const HIDDEN: Shown = { url: redactUrl, value: () => "…", argv: redactArgv };
export const REVEALED: Shown = { url: (url) => url, value: (value) => value, argv: (argv) => argv };

/** --password=x, token=x, api_key: x … : the value of an argument whose name says it is a secret. */
const SECRET_ASSIGNMENT =
  /^(-{0,2}[\w.-]*(?:pass(?:word)?|passwd|token|secret|api[_-]?key|auth|credentials?)[\w.-]*[=:])(.+)$/i;
const SECRET_FLAG = /^-{1,2}[\w.-]*(?:pass(?:word)?|passwd|token|secret|api[_-]?key|auth)[\w.-]*$/i;
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/** An argv with URL secrets and password/token-like values replaced by "…" (for the log). */
export function redactArgv(argv: string[]): string[] {
  return argv.map((arg, index) => {
    if (index > 0 && SECRET_FLAG.test(argv[index - 1]) && !arg.startsWith("-")) return "…";
    const assignment = SECRET_ASSIGNMENT.exec(arg);
    if (assignment) return `${assignment[1]}…`;
    return arg.replace(URL_IN_TEXT, (url) => redactUrl(url));
  });
}

/** A command as stdout and notifications show it: its program and how many arguments it has. */
export function shortArgv(argv: string[]): string {
  const count = argv.length - 1;
  return count ? `${argv[0]} … (${count} arg${count === 1 ? "" : "s"})` : argv[0];
}
