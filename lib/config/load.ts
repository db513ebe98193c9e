import { closeSync, existsSync, type Stats } from "node:fs";
import { refuseUnsafeConfig } from "./strict.ts";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { TendError, usageError } from "../core/errors.ts";
import { parseListen } from "../core/listen.ts";
import { keyProblem } from "../core/release-key.ts";
import { httpUrlProblem, shownUrl, smtpUrlProblem } from "../core/redact.ts";
import { inWords, openRegular, readBoundedOf } from "../os/files.ts";
import { statePaths } from "../state/dir.ts";
import { checkServiceGraph } from "./graph.ts";
import { isTable, Reader, show, type Table } from "./reader.ts";
import { BUILTIN_TUNABLES, checkWithin, readService, readTunables, TUNABLE_KEYS } from "./service-table.ts";
import {
  NOTIFY_FORMATS,
  TELEGRAM_NEEDS_CHAT,
  TERMUX_DESTINATION,
  type Config,
  type Env,
  type NotifyConfig,
  type NotifyFormat,
  type SelfUpdateConfig,
  type ServeConfig,
  type ServiceConfig,
  type WatchdogConfig,
} from "./types.ts";

/** A configuration larger than this is not one. */
const CONFIG_LIMIT = 4 * 1024 * 1024;

interface LoadOptions {
  /** --config; wins over everything. */
  path?: string;
  env?: Env;
}

/** SPEC lookup: --config > $TEND_CONFIG > $XDG_CONFIG_HOME/tend/tend.toml (~/.config) > /etc/tend/tend.toml. */
export function findConfig({ path, env = process.env }: LoadOptions = {}): string {
  if (path) return path;
  if (env.TEND_CONFIG) return env.TEND_CONFIG;
  const home = env.HOME || homedir();
  const candidates = [join(env.XDG_CONFIG_HOME || join(home, ".config"), "tend", "tend.toml"), "/etc/tend/tend.toml"];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new TendError(
      `no configuration found: pass --config PATH, set TEND_CONFIG, or create ${candidates.join(" or ")}`,
      2,
      "no-config",
    );
  }
  return found;
}

/** Read, parse and validate the configuration; throws TendError (exit 2) naming every bad key. */
export function loadConfig(options: LoadOptions = {}): Config {
  const path = findConfig(options);
  let opened: { fd: number; stats: Stats };
  try {
    opened = openRegular(path, { follow: true });
  } catch (error) {
    // Not readable (another user's, mode 0600): its owner and mode say more than "permission denied".
    refuseUnsafeConfig(path, null);
    throw usageError(`cannot read configuration ${path}: ${inWords(error)}`);
  }
  let read: { bytes: Buffer; more: boolean };
  try {
    // Checked on the descriptor that is read: a link flipped between the check and the read changes nothing.
    refuseUnsafeConfig(path, opened);
    read = readBoundedOf(opened.fd, opened.stats, CONFIG_LIMIT);
  } catch (error) {
    if (error instanceof TendError) throw error;
    throw usageError(`cannot read configuration ${path}: ${inWords(error)}`);
  } finally {
    closeSync(opened.fd);
  }
  const text = read.bytes.toString("utf8");
  // A bigger file is refused, never cut (services past a cut would go unwatched).
  if (read.more)
    throw usageError(`configuration ${path} is larger than 4 MiB: refused (nothing is watched from a cut file)`);
  return parseConfig(text, path, options.env ?? process.env);
}

/** The path a configuration made of the built-in defaults says it has (no file was found). */
export const BUILT_IN = "(built-in defaults).json";

/** The configuration, or the built-in defaults when no file exists (notify works without one). */
/** tend's defaults, no services: for what needs no configuration file. */
export const defaultConfig = (env: Env = process.env): Config => parseConfig("{}", BUILT_IN, env);

export function loadConfigOrDefaults(options: LoadOptions = {}): Config {
  try {
    findConfig(options);
  } catch {
    return parseConfig("{}", BUILT_IN, options.env ?? process.env);
  }
  return loadConfig(options);
}

function parseDocument(text: string, path: string): unknown {
  const json = path.endsWith(".json") || (!path.endsWith(".toml") && text.trimStart().startsWith("{"));
  let document: unknown;
  try {
    document = json ? JSON.parse(text) : Bun.TOML.parse(text);
  } catch (error) {
    if (json) throw usageError(`${path}: not valid JSON: ${(error as Error).message}`);
    throw usageError(`${path}:${tomlError(text, error as Error)}`);
  }
  // JSON keeps the last of two equal keys without a word (TOML refuses them): said, as TOML would.
  const duplicate = json ? duplicateJsonKey(text) : null;
  if (duplicate) throw usageError(`${path}: ${duplicate} is given twice (the second would silently win)`);
  return document;
}

/**
 * The key path of the first key an object of this (valid) JSON text holds twice, or null. A scan of
 * the text itself: JSON.parse keeps only the last.
 */
export function duplicateJsonKey(text: string): string | null {
  let at = 0;
  const space = () => {
    while (/\s/.test(text[at] ?? "")) at++;
  };
  const string = (): string => {
    const start = at;
    at++; // the opening quote
    while (text[at] !== '"') at += text[at] === "\\" ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at));
  };
  const value = (path: string): string | null => {
    space();
    if (text[at] === "{") {
      at++;
      const seen = new Set<string>();
      for (space(); text[at] !== "}"; space()) {
        const key = string();
        const here = path ? `${path}.${key}` : key;
        if (seen.has(key)) return here;
        seen.add(key);
        space();
        at++; // the colon
        const found = value(here);
        if (found) return found;
        space();
        if (text[at] === ",") at++;
      }
      at++;
      return null;
    }
    if (text[at] === "[") {
      at++;
      for (let index = 0; space(), text[at] !== "]"; index++) {
        const found = value(`${path}[${index}]`);
        if (found) return found;
        space();
        if (text[at] === ",") at++;
      }
      at++;
      return null;
    }
    if (text[at] === '"') return (string(), null);
    while (at < text.length && !/[\s,\]}]/.test(text[at])) at++; // a number, true, false, null
    return null;
  };
  return value("");
}

export function parseConfig(text: string, path: string, env: Env = process.env): Config {
  const document = parseDocument(text, path);
  if (!isTable(document)) throw usageError(`${path}: the top level must be a table`);
  const errors: string[] = [];
  const root = new Reader(document, "", errors);
  const home = env.HOME || homedir();

  const watchdog = readWatchdog(root.sub("watchdog") ?? new Reader({}, "watchdog", errors), env, home, path);
  const inState = (value: string) => expandPath(value, home, watchdog.stateDir);
  const notify = readNotify(root.sub("notify") ?? new Reader({}, "notify", errors), env);
  const serve = readServe(root.sub("serve") ?? new Reader({}, "serve", errors));
  const selfUpdate = readSelfUpdate(root.sub("self_update") ?? new Reader({}, "self_update", errors));

  const defaults = { ...BUILTIN_TUNABLES };
  const defaultsTable = root.sub("defaults");
  if (defaultsTable) {
    readTunables(defaultsTable, defaults);
    checkWithin(defaultsTable, defaults);
    defaultsTable.finish(Object.keys(TUNABLE_KEYS));
  }

  // One slot per [[service]] block (undefined where it is invalid): errors name the block's own index.
  let slots: (ServiceConfig | undefined)[] = [];
  const serviceList = root.raw("service");
  if (serviceList !== undefined && (!Array.isArray(serviceList) || !serviceList.every(isTable))) {
    errors.push(`service: must be an array of tables ([[service]] blocks)`);
  } else {
    slots = ((serviceList as Table[] | undefined) ?? []).map((table, index) =>
      readService(new Reader(table, `service[${index}]`, errors), defaults, inState, watchdog.stateDir, env),
    );
  }
  root.finish(["watchdog", "notify", "serve", "self_update", "defaults", "service"]);
  checkServiceGraph(slots, errors);
  const services = slots.filter((service): service is ServiceConfig => service !== undefined);

  if (errors.length) throw new TendError(`${path}: invalid configuration:\n  ${errors.join("\n  ")}`, 2);
  return { path: resolve(path), watchdog, notify, serve, selfUpdate, services, defaults };
}

/** The keys each top-level table takes (docs/configuration.md is checked against them). */
export const WATCHDOG_KEYS = [
  "state_dir",
  "log",
  "interval",
  "boot_delay",
  "metrics_file",
  "heartbeat_url",
  "concurrency",
  "log_max_size",
  "log_keep",
];
export const NOTIFY_KEYS = [
  "url",
  "format",
  "timeout",
  "retries",
  "min_interval",
  "spool_max_age",
  "spool_max_attempts",
  "to",
  "from",
];
export const SERVE_KEYS = ["listen", "token", "peers"];
export const SELF_UPDATE_KEYS = ["keys"];

/** `[self_update] keys = ["ed25519:BASE64", ...]`: the release keys `self-update --channel` trusts. */
function readSelfUpdate(table: Reader): SelfUpdateConfig {
  const raw = table.raw("keys");
  const keys: string[] = [];
  if (raw !== undefined && !Array.isArray(raw)) table.fail("keys", 'must be a list of "ed25519:BASE64" keys');
  else
    for (const [index, key] of (raw ?? []).entries()) {
      const problem = typeof key === "string" ? keyProblem(key) : `${show(key)} is not a string`;
      if (problem) table.fail(`keys[${index}]`, problem);
      else keys.push(key as string);
    }
  table.finish(SELF_UPDATE_KEYS);
  return { keys };
}

function readServe(table: Reader): ServeConfig {
  const listen = table.string("listen") ?? "127.0.0.1:9841";
  const address = parseListen(listen);
  if (!address) table.fail("listen", `${show(listen)} is not ADDR:PORT (127.0.0.1:9841, [::1]:9841, 0.0.0.0:9841)`);
  const token = table.string("token") ?? null;
  if (token !== null && (token.length < 16 || /\s/.test(token)))
    table.fail("token", "must be at least 16 characters, without spaces");
  if (address && !address.loopback && token === null)
    table.fail(
      "token",
      `is required when serve.listen is not loopback (${listen}): anyone on the network could read it`,
    );
  const peers = readPeers(table);
  table.finish(SERVE_KEYS);
  return { listen, token, peers };
}

/** `peers = ["http://vm:9841", { url = "http://mac:9841", token = "..." }]` */
function readPeers(table: Reader): ServeConfig["peers"] {
  const raw = table.raw("peers");
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return (table.fail("peers", "must be a list of URLs or { url, token } tables"), []);
  const peers: ServeConfig["peers"] = [];
  raw.forEach((entry, index) => {
    const key = `peers[${index}]`;
    const url = typeof entry === "string" ? entry : isTable(entry) ? entry.url : undefined;
    const token = isTable(entry) ? entry.token : undefined;
    const extra = isTable(entry) ? Object.keys(entry).filter((name) => name !== "url" && name !== "token") : [];
    if (typeof url !== "string") return table.fail(key, "must be a URL or a { url, token } table");
    const problem = httpUrlProblem(url);
    if (problem) return table.fail(`${key}.url`, `${JSON.stringify(shownUrl(url))} ${problem}`);
    if (token !== undefined && (typeof token !== "string" || token.length < 16))
      return table.fail(`${key}.token`, "must be a string of at least 16 characters");
    if (extra.length) return table.fail(`${key}.${extra[0]}`, "unknown key (allowed: url, token)");
    peers.push({ url: url.endsWith("/") ? url : `${url}/`, token: (token as string | undefined) ?? null });
  });
  return peers;
}

/** Where state lives without a `state_dir` setting: $TEND_STATE_DIR, else $XDG_STATE_HOME/tend. */
export const defaultStateDir = (env: Env, home: string) =>
  env.TEND_STATE_DIR ?? join(env.XDG_STATE_HOME || join(home, ".local", "state"), "tend");

/** log_max_size: "10MiB" by default; at least 64 KiB (a log that rotates every few lines keeps nothing). */
function readLogSize(table: Reader): number {
  const bytes = table.size("log_max_size");
  if (bytes !== undefined && bytes < 64 * 1024)
    table.fail("log_max_size", `${show(table.raw("log_max_size"))} is below the floor of 64KiB`);
  return bytes ?? 10 * 1024 * 1024;
}

function readWatchdog(table: Reader, env: Env, home: string, path: string): WatchdogConfig {
  const stateDirSetting = table.string("state_dir");
  const stateDir = expandPath(stateDirSetting ?? defaultStateDir(env, home), home, dirname(resolve(path)));
  const inState = (value: string) => expandPath(value, home, stateDir);
  const metrics = table.string("metrics_file", { nonEmpty: false });
  const logSetting = table.string("log");
  const watchdog: WatchdogConfig = {
    stateDir,
    log: logSetting ? inState(logSetting) : statePaths(stateDir).log,
    intervalMs: table.duration("interval") ?? 300_000,
    bootDelayMs: table.duration("boot_delay") ?? 0,
    concurrency: table.integer("concurrency", 1, 1024) ?? 16,
    heartbeatUrl: httpUrl(table, "heartbeat_url"),
    metricsFile: metrics ? inState(metrics) : null,
    rotation: { maxBytes: readLogSize(table), keep: table.integer("log_keep", 0, 100) ?? 3 },
  };
  if (watchdog.intervalMs < 1000 && table.has("interval")) table.fail("interval", `must be at least 1s`);
  table.finish(WATCHDOG_KEYS);
  return watchdog;
}

function readNotify(table: Reader, env: Env): NotifyConfig {
  const format = table.string("format") ?? "text";
  if (!NOTIFY_FORMATS.includes(format as NotifyFormat)) {
    table.fail("format", `${show(format)} is not one of ${NOTIFY_FORMATS.join(", ")}`);
  }
  const notify: NotifyConfig = {
    // termux: the termux-notification command (Termux:API) is the receiver; a url is not used.
    url:
      format === "termux"
        ? TERMUX_DESTINATION
        : format === "email"
          ? emailUrl(table)
          : (httpUrl(table, "url") ?? (env.TEND_NOTIFY_URL || null)),
    format: format as NotifyFormat,
    timeoutMs: table.duration("timeout") ?? 10_000,
    retries: table.integer("retries", 0, 10) ?? 2,
    minIntervalMs: table.duration("min_interval") ?? 900_000,
    spoolMaxAgeMs: table.duration("spool_max_age") ?? 86_400_000,
    spoolMaxAttempts: table.integer("spool_max_attempts", 1, 100_000) ?? 100,
  };
  if (notify.spoolMaxAgeMs < 60_000 && table.has("spool_max_age")) table.fail("spool_max_age", "must be at least 1m");
  if (notify.format === "termux" && table.has("url"))
    table.fail("url", 'is not used with format = "termux" (termux-notification delivers, Termux:API)');
  if (notify.format === "telegram" && notify.url && !new URL(notify.url).searchParams.get("chat_id")) {
    table.fail(table.has("url") ? "url" : "format", TELEGRAM_NEEDS_CHAT);
  }
  if (format !== "email")
    for (const key of ["to", "from"]) if (table.has(key)) table.fail(key, 'is for format = "email"');
  table.finish(NOTIFY_KEYS);
  return notify;
}

const MAILBOX = /^[^\s@<>,;"]+@[^\s@<>,;"]+$/;

/**
 * format = "email": url = "smtp://USER:PASS@HOST:587" or "smtps://…:465", `to` (one or a list)
 * and `from`; carried as one destination URL (`to` and `from` in its query), so a spooled email keeps
 * its own, as every message does.
 */
function emailUrl(table: Reader): string | null {
  const value = table.string("url");
  const to = table.has("to") && typeof table.raw("to") === "string" ? [table.string("to")!] : table.stringList("to");
  const from = table.string("from");
  if (value === undefined)
    return (table.fail("url", 'is required with format = "email" (smtp://USER:PASS@HOST:587)'), null);
  const problem = smtpUrlProblem(value);
  if (problem) return (table.fail("url", `${JSON.stringify(shownUrl(value))} ${problem} (format = "email")`), null);
  const url = new URL(value);
  if (!to?.length) table.fail("to", 'is required with format = "email": one address or a list');
  for (const address of to ?? []) if (!MAILBOX.test(address)) table.fail("to", `${show(address)} is not an address`);
  if (from === undefined) table.fail("from", 'is required with format = "email"');
  else if (!MAILBOX.test(from)) table.fail("from", `${show(from)} is not an address`);
  for (const address of to ?? []) url.searchParams.append("to", address);
  if (from !== undefined) url.searchParams.set("from", from);
  return url.toString();
}

/** An optional http(s) URL setting ("" = off). */
function httpUrl(table: Reader, key: string): string | null {
  const value = table.string(key, { nonEmpty: false });
  if (!value) return null;
  const problem = httpUrlProblem(value);
  if (problem) {
    // Never the whole URL: its path or query may be a secret.
    table.fail(key, `${JSON.stringify(shownUrl(value))} ${problem}`);
    return null;
  }
  return value;
}

/** "~/x" -> home; relative -> base. */
export function expandPath(path: string, home: string, base: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(base, path);
}

/**
 * Where a TOML document is broken, as `LINE:COLUMN: not valid TOML: what`, with the line and a
 * caret. smol-toml says it exactly (Bun's parser does not); it is loaded only for a broken file.
 */
function tomlError(text: string, bunError: Error): string {
  try {
    (require("smol-toml") as typeof import("smol-toml")).parse(text);
  } catch (error) {
    const { line, column, message } = error as Error & { line?: number; column?: number };
    if (line && column) {
      const [what, ...snippet] = message.replace(/^Invalid TOML document: /, "").split("\n");
      return `${line}:${column}: not valid TOML: ${what}\n${snippet.filter(Boolean).join("\n")}`;
    }
  }
  return ` not valid TOML: ${bunError.message}`;
}
