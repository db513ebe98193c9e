// The shapes of single commands a watchdog script runs, read from their words: a curl or wget call (its
// URL, timeout, -f, headers, a POST's data), a notification's receiver (Telegram, Slack, Discord,
// Pushover, Gotify, ntfy, a JSON webhook), a dead-man switch's ping, a grep's pattern, the codes a
// case pattern names. Pure over the words.
import type { Notify } from "./reader.ts";

/** A shell word list as one command line, quoted as sh reads it back. */
export function shellLine(argv: string[]): string {
  return argv.map((word) => (/^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(" ");
}

interface HttpCall {
  url: string;
  post: boolean;
  fail: boolean;
  code: boolean;
  head: boolean;
  timeout: string | null;
  timeoutFlag: string;
  insecure: boolean;
  insecureFlag: string;
  ca: string | null;
  headers: Record<string, string>;
  notes: string[];
  data: string[];
}

const CURL_VALUE_FLAGS = new Set([
  "-o",
  "--output",
  "-w",
  "--write-out",
  "-m",
  "--max-time",
  "--connect-timeout",
  "-H",
  "--header",
  "-d",
  "--data",
  "--data-raw",
  "--data-binary",
  "--data-urlencode",
  "-F",
  "--form",
  "-X",
  "--request",
  "-A",
  "--user-agent",
  "-u",
  "--user",
  "--cacert",
  "--retry",
  "--retry-delay",
  "--retry-max-time",
  "-e",
  "--referer",
  "--resolve",
  "-b",
  "--cookie",
  "--form-string",
  "-c",
  "--cookie-jar",
  "--json",
  "-T",
  "--upload-file",
  "--interface",
  "-x",
  "--proxy",
  "--cert",
  "--key",
]);

/** A call before its arguments are read; `fail`: a status of 400 or more fails its exit status. */
const emptyCall = (fail: boolean): HttpCall => ({
  url: "",
  post: false,
  fail,
  code: false,
  head: false,
  timeout: null,
  timeoutFlag: "",
  insecure: false,
  insecureFlag: "",
  ca: null,
  headers: {},
  notes: [],
  data: [],
});

export function curlCheck(args: string[]): HttpCall | null {
  const call = emptyCall(false);
  for (let index = 0; index < args.length; index++) {
    let arg = args[index];
    let value: string | undefined;
    const long = /^(--[\w-]+)=(.*)$/s.exec(arg);
    if (long) [arg, value] = [long[1], long[2]];
    else if (/^-[a-zA-Z]/.test(arg) && !arg.startsWith("--") && arg.length > 2) {
      // Bundled short flags (-sSfL), or a short flag with its value attached (-m10, -o/dev/null).
      const letters = arg.slice(1);
      const withValue = [...letters].findIndex((letter) => CURL_VALUE_FLAGS.has(`-${letter}`));
      for (const letter of withValue < 0 ? letters : letters.slice(0, withValue)) flag(`-${letter}`);
      if (withValue < 0) continue;
      arg = `-${letters[withValue]}`;
      value = letters.slice(withValue + 1) || args[++index];
    } else if (CURL_VALUE_FLAGS.has(arg)) value = args[++index];
    if (value === undefined && !arg.startsWith("-")) {
      if (!call.url && (/^https?:\/\//.test(arg) || /^[\w.-]+:\d+(\/|$)/.test(arg)))
        call.url = /^https?:/.test(arg) ? arg : `http://${arg}`;
      continue;
    }
    if (value === undefined) {
      flag(arg);
      continue;
    }
    switch (arg) {
      case "-m":
      case "--max-time":
        call.timeout = value;
        call.timeoutFlag = arg;
        break;
      case "--connect-timeout":
        call.notes.push(`--connect-timeout ${value} bounds only the connect`);
        break;
      case "-w":
      case "--write-out":
        if (value.includes("http_code") || value.includes("response_code")) call.code = true;
        break;
      case "-H":
      case "--header": {
        const header = /^([\w-]+):\s*(.*)$/.exec(value);
        if (header) call.headers[header[1]] = header[2];
        break;
      }
      case "-A":
      case "--user-agent":
        call.headers["User-Agent"] = value;
        break;
      case "-d":
      case "--data":
      case "--data-raw":
      case "--data-binary":
      case "--data-urlencode":
      case "-F":
      case "--form":
      case "--form-string":
      case "--json":
      case "-T":
      case "--upload-file":
        call.post = true;
        call.data.push(value);
        break;
      case "-X":
      case "--request":
        if (/^(POST|PUT)$/i.test(value)) call.post = true;
        if (/^HEAD$/i.test(value)) call.head = true;
        break;
      case "--cacert":
        call.ca = value;
        break;
      case "-u":
      case "--user":
        call.notes.push("-u (basic auth) is not carried: add an Authorization header by hand");
        break;
    }
  }
  function flag(name: string) {
    if (name === "-f" || name === "--fail" || name === "--fail-with-body") call.fail = true;
    else if (name === "-k" || name === "--insecure") {
      call.insecure = true;
      call.insecureFlag = name;
    } else if (name === "-I" || name === "--head") call.head = true;
    else if (name === "-L" || name === "--location")
      call.notes.push("-L: tend does not follow redirects (a 3xx is healthy by default)");
  }
  if (!call.url) return null;
  if (call.head) call.notes.push("-I (HEAD): tend asks with GET");
  return call;
}

export function wgetCheck(args: string[]): HttpCall | null {
  // wget fails on a status of 400 or more (exit 8), as curl -f does.
  const call = emptyCall(true);
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const timeout = /^(?:--timeout=|-T)(\d+(?:\.\d+)?)$/.exec(arg);
    if (timeout) [call.timeout, call.timeoutFlag] = [timeout[1], arg.startsWith("--") ? "--timeout" : "-T"];
    else if (arg === "-T" || arg === "--timeout") [call.timeout, call.timeoutFlag] = [args[++index] ?? null, arg];
    else if (arg === "--no-check-certificate") [call.insecure, call.insecureFlag] = [true, arg];
    else if (/^--post-(data|file)/.test(arg)) call.post = true;
    else if (arg === "-O" || arg === "-o" || arg === "--header" || arg === "-U") index++;
    else if (/^https?:\/\//.test(arg) && !call.url) call.url = arg;
  }
  return call.url ? call : null;
}

/** A dead-man switch's ping: healthchecks.io, Uptime Kuma's push, Cronitor, UptimeRobot, Better Uptime. */
const HEARTBEATS = new RegExp(
  [
    /hc-ping\.com|healthchecks\.io\/ping|\/api\/push\//,
    /cronitor\.link|uptimerobot\.com\/|betteruptime\.com\/api\/v1\/heartbeat/,
  ]
    .map((part) => part.source)
    .join("|"),
);

export function isHeartbeat(url: string): boolean {
  return HEARTBEATS.test(url);
}

export function notifyFromCurl(http: HttpCall, line: number): Notify {
  const url = http.url;
  const data = http.data.join("&");
  if (/api\.telegram\.org\/bot[^/]+\/send/.test(url)) {
    const parsed = new URL(url);
    const chat =
      parsed.searchParams.get("chat_id") ?? /(?:^|&|\s)chat_id=([^&\s]+)/.exec(data)?.[1] ?? jsonField(data, "chat_id");
    if (!chat) return { url: null, format: "telegram", line, why: "Telegram without a chat_id the script sets" };
    parsed.search = "";
    parsed.searchParams.set("chat_id", chat);
    return { url: parsed.toString(), format: "telegram", line, why: "Telegram's sendMessage, with its chat_id" };
  }
  if (/hooks\.slack\.com/.test(url)) return { url, format: "slack", line, why: "a Slack webhook" };
  if (/discord(app)?\.com\/api\/webhooks/.test(url)) return { url, format: "discord", line, why: "a Discord webhook" };
  if (/api\.pushover\.net/.test(url)) {
    const token = /(?:^|&)token=([^&\s]+)/.exec(data)?.[1];
    const user = /(?:^|&)user=([^&\s]+)/.exec(data)?.[1];
    if (!token || !user)
      return { url: null, format: "pushover", line, why: "Pushover without a token and user the script sets" };
    return {
      url: `https://api.pushover.net/1/messages.json?token=${token}&user=${user}`,
      format: "pushover",
      line,
      why: "Pushover",
    };
  }
  if (/\/message(\?|$)/.test(url) && /token=/.test(url))
    return { url, format: "gotify", line, why: "Gotify's /message" };
  if (/^\s*\{/.test(data)) {
    if (/"content"\s*:/.test(data))
      return { url, format: "discord", line, why: 'a JSON body with "content" (Discord\'s shape)' };
    if (/"text"\s*:/.test(data)) return { url, format: "slack", line, why: 'a JSON body with "text" (Slack\'s shape)' };
    return { url, format: "json", line, why: "a JSON body" };
  }
  return { url, format: "text", line, why: "a plain POST (ntfy's shape)" };
}

function jsonField(data: string, field: string): string | null {
  const match = new RegExp(`"${field}"\\s*:\\s*"?([^",}\\s]+)`).exec(data);
  return match ? match[1] : null;
}

export function optionAfter(args: string[], flag: string): string | null {
  const at = args.indexOf(flag);
  if (at >= 0) return args[at + 1] ?? null;
  const joined = args.find((arg) => arg.startsWith(flag) && arg.length > flag.length && !arg.startsWith("--"));
  return joined ? joined.slice(flag.length) : null;
}

export function grepPattern(argv: string[]): string | null {
  const rest = argv.slice(1);
  for (let index = 0; index < rest.length; index++) {
    const arg = rest[index];
    if (arg === "-e") return rest[index + 1] ?? null;
    if (arg === "-m" || arg === "-A" || arg === "-B" || arg === "-C") {
      index++;
      continue;
    }
    if (!arg.startsWith("-")) return arg;
  }
  return null;
}

/** The codes a case pattern or a regex names: 502, 000 (no answer: 0), 5* or 5?? (500-599). */
export function codesOf(pattern: string): number[] {
  return pattern.split("|").flatMap((one) => {
    const text = one.trim().replace(/^["']|["']$/g, "");
    if (/^\d{3}$/.test(text)) return [Number(text)];
    const wild = /^([1-5])(\*|\?\?|\[0-9\]\[0-9\])$/.exec(text);
    if (wild) return Array.from({ length: 100 }, (_, i) => Number(wild[1]) * 100 + i);
    return [];
  });
}

export function globMatch(pattern: string, text: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${regex}$`, "s").test(text);
}

export function safeArith(expr: string): number | null {
  if (!/^[\d+\-*/ ]+$/.test(expr)) return null;
  const tokens = expr.split(/\s+/).filter(Boolean);
  let total = Number(tokens[0]);
  for (let i = 1; i + 1 < tokens.length; i += 2) {
    const value = Number(tokens[i + 1]);
    if (tokens[i] === "+") total += value;
    else if (tokens[i] === "-") total -= value;
    else if (tokens[i] === "*") total *= value;
    else if (tokens[i] === "/" && value) total = Math.floor(total / value);
    else return null;
  }
  return Number.isFinite(total) ? total : null;
}

export function parseSleep(text: string): number | null {
  const match = /^(\d+)([smhd]?)$/.exec(text);
  if (!match) return null;
  return Number(match[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] as "" | "s" | "m" | "h" | "d"];
}

/** Seconds as a tend duration: 20s, 5m, 1h, 500ms. */
export function durationText(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds <= 0) return "1s";
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

const IDENT = /^[A-Za-z][\w.@-]{0,63}$/;

export function hostLabel(url: string): string | null {
  try {
    const host = new URL(url).hostname;
    if (host === "localhost" || /^[\d.]+$/.test(host) || host.startsWith("[")) return null;
    const label = host.split(".")[0];
    return IDENT.test(label) && label !== "www" && label !== "api" ? label : (host.split(".")[1] ?? null);
  } catch {
    return null;
  }
}

export function portOf(url: string): number | null {
  try {
    const parsed = new URL(url);
    return Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
  } catch {
    return null;
  }
}
