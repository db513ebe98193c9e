import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { DURATION_HINT, parseDuration } from "./duration.ts";
import { TendError, usageError } from "./errors.ts";
import { TMUX_TARGET } from "./tmux.ts";
import { isHttpUrl } from "./redact.ts";

export type Env = Record<string, string | undefined>;

export type Check =
  | { kind: "http"; url: string; expect: number[] | null; anyResponse: boolean; failCodes: number[] | null; contains: string | null; headers: Record<string, string>; timeoutMs: number }
  | { kind: "tcp"; host: string; port: number; timeoutMs: number }
  | { kind: "command"; argv: string[]; timeoutMs: number }
  | { kind: "process"; timeoutMs: number }
  | { kind: "log"; path: string; freshMs: number; timeoutMs: number };

export type RestartAction =
  | { kind: "spawn"; argv: string[]; cwd: string | null; env: Record<string, string>; output: string }
  | { kind: "tmux"; target: string; run: string }
  | { kind: "command"; argv: string[] }
  | { kind: "systemd"; unit: string }
  | { kind: "launchd"; label: string };

/** busy: the check fails, but a process listens on `port` and `log` changed within `fresh`. */
export interface BusyConfig {
  port: number | null;
  log: string | null;
  freshMs: number;
  maxMs: number;
}

export interface MemoryConfig {
  limitBytes: number | null;
  warnWithinMs: number;
  restartAboveBytes: number | null;
}

export interface Tunables {
  failures: number;
  timeoutMs: number;
  graceMs: number;
  cooldownMs: number;
  backoffMs: number;
  backoffMaxMs: number;
  maxRestarts: number;
  restartWindowMs: number;
  stopTimeoutMs: number;
  verifyTimeoutMs: number;
}

export interface ServiceConfig extends Tunables {
  name: string;
  enabled: boolean;
  /** PID sources (at most one): a pidfile or tmux pane tend restarts; a systemd unit or launchd job that their manager supervises. */
  pidfile: string | null;
  tmux: string | null;
  unit: string | null;
  launchd: string | null;
  check: Check;
  restart: RestartAction | null;
  dependsOn: string[];
  requiresDns: string | null;
  busy: BusyConfig | null;
  memory: MemoryConfig | null;
  /** Read systemd's NRestarts each pass (default: true with `unit`). */
  trackRestarts: boolean;
}

export interface WatchdogConfig {
  stateDir: string;
  log: string;
  intervalMs: number;
  bootDelayMs: number;
  concurrency: number;
  /** Pinged after each pass (dead-man switch); "/fail" appended while a service is down. */
  heartbeatUrl: string | null;
  /** Prometheus textfile-collector output, written atomically each pass; null = off. */
  metricsFile: string | null;
}

export const NOTIFY_FORMATS = ["text", "json", "slack", "discord", "telegram", "alertmanager"] as const;
export type NotifyFormat = (typeof NOTIFY_FORMATS)[number];

export interface NotifyConfig {
  /** null: no channel configured (notifications are then spooled until one is) */
  url: string | null;
  format: NotifyFormat;
  timeoutMs: number;
  retries: number;
  minIntervalMs: number;
}

export interface Config {
  path: string;
  watchdog: WatchdogConfig;
  notify: NotifyConfig;
  services: ServiceConfig[];
}

export const SERVICE_NAME = /^[A-Za-z0-9_.@-]+$/;

/** Built-in defaults, overridden by [defaults], then by the service, then (timeout) by the check. */
export const BUILTIN_TUNABLES: Tunables = {
  failures: 3,
  timeoutMs: 5_000,
  graceMs: 30_000,
  cooldownMs: 600_000,
  backoffMs: 10_000,
  backoffMaxMs: 300_000,
  maxRestarts: 5,
  restartWindowMs: 3_600_000,
  stopTimeoutMs: 2_000,
  verifyTimeoutMs: 60_000,
};

const TUNABLE_KEYS: Record<string, { field: keyof Tunables; kind: "duration" | "count" }> = {
  failures: { field: "failures", kind: "count" },
  timeout: { field: "timeoutMs", kind: "duration" },
  grace: { field: "graceMs", kind: "duration" },
  cooldown: { field: "cooldownMs", kind: "duration" },
  backoff: { field: "backoffMs", kind: "duration" },
  backoff_max: { field: "backoffMaxMs", kind: "duration" },
  max_restarts: { field: "maxRestarts", kind: "count" },
  restart_window: { field: "restartWindowMs", kind: "duration" },
  stop_timeout: { field: "stopTimeoutMs", kind: "duration" },
  verify_timeout: { field: "verifyTimeoutMs", kind: "duration" },
};

const SIZE = /^(\d+(?:\.\d+)?)\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB)?$/i;
const SIZE_UNITS: Record<string, number> = { b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1000 ** 3, gib: 1024 ** 3 };

/** "512MiB", "1GiB", "800MB", "64M" (binary), or a number of bytes. */
export function parseSize(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) && value > 0 ? Math.round(value) : null;
  if (typeof value !== "string") return null;
  const match = SIZE.exec(value.trim());
  if (!match) return null;
  const bytes = Math.round(Number(match[1]) * SIZE_UNITS[(match[2] ?? "b").toLowerCase()]);
  return bytes > 0 ? bytes : null;
}

type Table = Record<string, unknown>;
const isTable = (value: unknown): value is Table => typeof value === "object" && value !== null && !Array.isArray(value);
const show = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value) ?? String(value));
const typeName = (value: unknown) => (Array.isArray(value) ? "an array" : isTable(value) ? "a table" : `a ${typeof value}`);

/** Reads one table, remembering which keys were used so the rest can be reported as unknown. */
class Reader {
  private readonly used = new Set<string>();
  constructor(
    readonly table: Table,
    readonly path: string,
    private readonly errors: string[],
  ) {}

  at(key: string) {
    return this.path ? `${this.path}.${key}` : key;
  }
  has(key: string) {
    return this.table[key] !== undefined;
  }
  fail(key: string, message: string) {
    this.errors.push(`${this.at(key)}: ${message}`);
  }
  raw(key: string): unknown {
    this.used.add(key);
    return this.table[key];
  }
  string(key: string, { nonEmpty = true } = {}): string | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "string") return void this.fail(key, `${show(value)} is ${typeName(value)}, expected a string`);
    if (nonEmpty && value.trim() === "") return void this.fail(key, `must not be empty`);
    return value;
  }
  boolean(key: string): boolean | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "boolean") return void this.fail(key, `${show(value)} is ${typeName(value)}, expected true or false`);
    return value;
  }
  duration(key: string): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const ms = parseDuration(value);
    if (ms === null) return void this.fail(key, `${show(value)} is not a duration (${DURATION_HINT})`);
    return ms;
  }
  integer(key: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
      return void this.fail(key, `${show(value)} is not ${range}`);
    }
    return value;
  }
  stringList(key: string): string[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
      return void this.fail(key, `${show(value)} is not an array of strings`);
    }
    return value as string[];
  }
  argv(key: string): string[] | undefined {
    const argv = this.stringList(key);
    if (argv && (argv.length === 0 || argv[0] === "")) return void this.fail(key, `must name a program: ["program", "arg", ...]`);
    return argv;
  }
  statusList(key: string): number[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const valid = (code: unknown) => Number.isInteger(code) && (code as number) >= 100 && (code as number) <= 599;
    if (!Array.isArray(value) || value.length === 0 || !value.every(valid)) {
      return void this.fail(key, `${show(value)} is not a non-empty array of HTTP status codes (100-599)`);
    }
    return value as number[];
  }
  stringMap(key: string): Record<string, string> | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!isTable(value) || Object.values(value).some((item) => typeof item !== "string")) {
      return void this.fail(key, `${show(value)} is not a table of strings`);
    }
    return value as Record<string, string>;
  }
  sub(key: string): Reader | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!isTable(value)) return void this.fail(key, `${show(value)} is ${typeName(value)}, expected a table`);
    return new Reader(value, this.at(key), this.errors);
  }
  /** Exactly one of `keys` must be present; returns it. */
  oneOf(keys: string[]): string | undefined {
    const present = keys.filter((key) => this.has(key));
    if (present.length === 1) return present[0];
    const list = keys.join(", ");
    if (present.length === 0) this.errors.push(`${this.path}: needs exactly one of ${list}`);
    else this.errors.push(`${this.path}: has ${present.join(" and ")}; exactly one of ${list} is allowed`);
    return undefined;
  }
  /** Every key not read is unknown. */
  finish(allowed?: string[]) {
    for (const key of Object.keys(this.table)) {
      if (this.used.has(key)) continue;
      const hint = allowed ? ` (allowed: ${allowed.join(", ")})` : "";
      this.fail(key, `unknown key${hint}`);
    }
  }
}

export interface LoadOptions {
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
  if (!found) throw usageError(`no configuration found: pass --config PATH, set TEND_CONFIG, or create ${candidates.join(" or ")}`);
  return found;
}

/** Read, parse and validate the configuration; throws TendError (exit 2) naming every bad key. */
export function loadConfig(options: LoadOptions = {}): Config {
  const path = findConfig(options);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw usageError(`cannot read configuration ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  return parseConfig(text, path, options.env ?? process.env);
}

export function parseDocument(text: string, path: string): unknown {
  const json = path.endsWith(".json") || (!path.endsWith(".toml") && text.trimStart().startsWith("{"));
  try {
    return json ? JSON.parse(text) : Bun.TOML.parse(text);
  } catch (error) {
    // Bun's TOML errors carry no reliable line number: the message is what there is.
    throw usageError(`${path}: not valid ${json ? "JSON" : "TOML"}: ${(error as Error).message}`);
  }
}

export function parseConfig(text: string, path: string, env: Env = process.env): Config {
  const document = parseDocument(text, path);
  if (!isTable(document)) throw usageError(`${path}: the top level must be a table`);
  const errors: string[] = [];
  const root = new Reader(document, "", errors);
  const home = env.HOME || homedir();

  const watchdogTable = root.sub("watchdog") ?? new Reader({}, "watchdog", errors);
  const stateDirSetting = watchdogTable.string("state_dir");
  const stateDir = expandPath(
    stateDirSetting ?? env.TEND_STATE_DIR ?? join(env.XDG_STATE_HOME || join(home, ".local", "state"), "tend"),
    home,
    dirname(resolve(path)),
  );
  const inState = (value: string) => expandPath(value, home, stateDir);
  const watchdog: WatchdogConfig = {
    stateDir,
    log: inState(watchdogTable.string("log") ?? "watchdog.log"),
    intervalMs: watchdogTable.duration("interval") ?? 300_000,
    bootDelayMs: watchdogTable.duration("boot_delay") ?? 0,
    concurrency: watchdogTable.integer("concurrency", 1, 1024) ?? 16,
    heartbeatUrl: httpUrl(watchdogTable, "heartbeat_url"),
    metricsFile: null,
  };
  if (watchdog.intervalMs < 1000 && watchdogTable.has("interval")) watchdogTable.fail("interval", `must be at least 1s`);
  const metrics = watchdogTable.string("metrics_file", { nonEmpty: false });
  watchdog.metricsFile = metrics ? inState(metrics) : null;
  watchdogTable.finish(["state_dir", "log", "interval", "boot_delay", "metrics_file", "heartbeat_url", "concurrency"]);

  const notifyTable = root.sub("notify") ?? new Reader({}, "notify", errors);
  const format = notifyTable.string("format") ?? "text";
  if (!NOTIFY_FORMATS.includes(format as NotifyFormat)) notifyTable.fail("format", `${show(format)} is not one of ${NOTIFY_FORMATS.join(", ")}`);
  const notify: NotifyConfig = {
    url: httpUrl(notifyTable, "url") ?? (env.TEND_NOTIFY_URL || null),
    format: format as NotifyFormat,
    timeoutMs: notifyTable.duration("timeout") ?? 10_000,
    retries: notifyTable.integer("retries", 0, 10) ?? 2,
    minIntervalMs: notifyTable.duration("min_interval") ?? 900_000,
  };
  notifyTable.finish(["url", "format", "timeout", "retries", "min_interval"]);

  const defaults = { ...BUILTIN_TUNABLES };
  const defaultsTable = root.sub("defaults");
  if (defaultsTable) {
    readTunables(defaultsTable, defaults);
    defaultsTable.finish(Object.keys(TUNABLE_KEYS));
  }

  const services: ServiceConfig[] = [];
  const serviceList = root.raw("service");
  if (serviceList !== undefined && (!Array.isArray(serviceList) || !serviceList.every(isTable))) {
    errors.push(`service: must be an array of tables ([[service]] blocks)`);
  } else {
    (serviceList as Table[] | undefined)?.forEach((table, index) => {
      const service = readService(new Reader(table, `service[${index}]`, errors), defaults, inState);
      if (service) services.push(service);
    });
  }
  root.finish(["watchdog", "notify", "defaults", "service"]);
  checkServiceGraph(services, errors);

  if (errors.length) throw new TendError(`${path}: invalid configuration:\n  ${errors.join("\n  ")}`, 2);
  return { path: resolve(path), watchdog, notify, services };
}

/** An optional http(s) URL setting ("" = off). */
function httpUrl(table: Reader, key: string): string | null {
  const value = table.string(key, { nonEmpty: false });
  if (!value) return null;
  if (!isHttpUrl(value)) {
    table.fail(key, `${show(value.replace(/^(\w+:\/\/[^/]*).*/, "$1/…"))} is not an http:// or https:// URL`);
    return null;
  }
  return value;
}

/** The configuration, or the built-in defaults when no file exists (notify works without one). */
export function loadConfigOrDefaults(options: LoadOptions = {}): Config {
  try {
    findConfig(options);
  } catch {
    return parseConfig("{}", "(built-in defaults).json", options.env ?? process.env);
  }
  return loadConfig(options);
}

function readTunables(table: Reader, into: Tunables) {
  for (const [key, { field, kind }] of Object.entries(TUNABLE_KEYS)) {
    const value = kind === "duration" ? table.duration(key) : table.integer(key, key === "max_restarts" ? 0 : 1);
    if (value !== undefined) into[field] = value;
  }
}

function readService(table: Reader, defaults: Tunables, inState: (path: string) => string): ServiceConfig | undefined {
  const name = table.string("name");
  if (name === undefined && !table.has("name")) table.fail("name", "is required");
  else if (name !== undefined && !SERVICE_NAME.test(name)) table.fail("name", `${show(name)} may only hold letters, digits and _ . @ -`);

  const tunables = { ...defaults };
  readTunables(table, tunables);
  const pidfile = table.string("pidfile");
  const tmux = table.string("tmux");
  const unit = table.string("unit");
  const launchd = table.string("launchd");
  const sources = ["pidfile", "tmux", "unit", "launchd"].filter((key) => table.has(key));
  if (sources.length > 1) table.fail(sources[1], `a service has one PID source: ${sources.join(" and ")} given`);
  if (tmux !== undefined && !TMUX_TARGET.test(tmux)) table.fail("tmux", `${show(tmux)} is not "session:window" or "session:window.pane"`);
  const enabled = table.boolean("enabled") ?? true;
  const dependsOn = table.stringList("depends_on") ?? [];
  let requiresDns: string | null = null;
  const requires = table.sub("requires");
  if (requires) {
    requiresDns = requires.string("dns") ?? null;
    requires.finish(["dns"]);
  }

  const checkTable = table.sub("check");
  if (!checkTable && !table.has("check")) table.fail("check", "is required: a [service.check] table with one of http, tcp, command, process, log");
  const check = checkTable && readCheck(checkTable, tunables.timeoutMs, inState, sources.length > 0);
  const restartTable = table.sub("restart");
  const restart = restartTable ? readRestart(restartTable, inState, name ?? "service") : null;
  const busy = readBusy(table, inState);
  const memory = readMemory(table, sources.length > 0);
  const trackRestarts = table.boolean("track_restarts") ?? Boolean(unit);
  if (trackRestarts && !unit && table.has("track_restarts")) table.fail("track_restarts", "needs unit = \"NAME.service\" (NRestarts is read from systemd)");
  if (restart?.kind === "spawn" && !pidfile) table.fail("pidfile", "is required with restart.spawn (tend writes the PID there)");

  table.finish([
    "name", "enabled", "pidfile", "tmux", "unit", "launchd", "check", "restart", "depends_on", "requires", "busy", "memory",
    "track_restarts", ...Object.keys(TUNABLE_KEYS),
  ]);
  if (!name || !check || (restartTable && !restart)) return undefined;
  return {
    name,
    enabled,
    pidfile: pidfile ? inState(pidfile) : null,
    tmux: tmux ?? null,
    unit: unit ?? null,
    launchd: launchd ?? null,
    check,
    restart: restart ?? null,
    dependsOn,
    requiresDns,
    busy,
    memory,
    trackRestarts,
    ...tunables,
    timeoutMs: check.timeoutMs,
  };
}

const CHECK_KEYS: Record<Check["kind"], string[]> = {
  http: ["http", "expect", "any_response", "fail_codes", "contains", "headers", "timeout"],
  tcp: ["tcp", "timeout"],
  command: ["command", "timeout"],
  process: ["process", "timeout"],
  log: ["log", "fresh", "timeout"],
};

function readCheck(table: Reader, serviceTimeoutMs: number, inState: (path: string) => string, hasPidSource: boolean): Check | undefined {
  const kind = table.oneOf(Object.keys(CHECK_KEYS)) as Check["kind"] | undefined;
  if (!kind) return undefined;
  const timeoutMs = table.duration("timeout") ?? serviceTimeoutMs;
  if (timeoutMs === 0) table.fail("timeout", "must be more than 0");
  for (const key of Object.keys(table.table)) {
    if (!CHECK_KEYS[kind].includes(key) && Object.values(CHECK_KEYS).some((keys) => keys.includes(key))) {
      table.raw(key);
      table.fail(key, `does not apply to a ${kind} check (it takes: ${CHECK_KEYS[kind].join(", ")})`);
    }
  }
  let check: Check | undefined;
  switch (kind) {
    case "http": {
      const url = table.string("http");
      if (url !== undefined && !isHttpUrl(url)) table.fail("http", `${show(url)} is not an http:// or https:// URL`);
      const expect = table.statusList("expect") ?? null;
      const anyResponse = table.boolean("any_response") ?? false;
      const failCodes = table.statusList("fail_codes") ?? null;
      if ([expect !== null, anyResponse, failCodes !== null].filter(Boolean).length > 1) {
        table.fail("expect", "expect, any_response and fail_codes exclude each other: choose one");
      }
      const contains = table.string("contains") ?? null;
      const headers = table.stringMap("headers") ?? {};
      if (url) check = { kind, url, expect, anyResponse, failCodes, contains, headers, timeoutMs };
      break;
    }
    case "tcp": {
      const address = table.string("tcp");
      const match = address !== undefined ? /^(\[[^\]]+\]|[^:\s]+):(\d+)$/.exec(address) : null;
      const port = match ? Number(match[2]) : 0;
      if (address !== undefined && (!match || port < 1 || port > 65535)) table.fail("tcp", `${show(address)} is not "host:port" (port 1-65535)`);
      else if (match) check = { kind, host: match[1].replace(/^\[|\]$/g, ""), port, timeoutMs };
      break;
    }
    case "command": {
      const argv = table.argv("command");
      if (argv) check = { kind, argv, timeoutMs };
      break;
    }
    case "process": {
      const value = table.raw("process");
      if (value !== true) table.fail("process", `${show(value)}: only process = true is allowed`);
      else if (!hasPidSource) table.fail("process", "needs a PID source on the service: pidfile, tmux, unit or launchd");
      else check = { kind, timeoutMs };
      break;
    }
    case "log": {
      const path = table.string("log");
      const freshMs = table.duration("fresh");
      if (freshMs === undefined && !table.has("fresh")) table.fail("fresh", "is required with check.log (how recent the file must be)");
      if (path && freshMs !== undefined) check = { kind, path: inState(path), freshMs, timeoutMs };
      break;
    }
  }
  table.finish();
  return check;
}

const RESTART_KEYS = {
  spawn: ["spawn", "cwd", "env", "output"],
  tmux: ["tmux", "run"],
  command: ["command"],
  systemd: ["systemd"],
  launchd: ["launchd"],
};

function readRestart(table: Reader, inState: (path: string) => string, name: string): RestartAction | undefined {
  const kind = table.oneOf(Object.keys(RESTART_KEYS)) as keyof typeof RESTART_KEYS | undefined;
  if (!kind) return undefined;
  for (const key of Object.keys(table.table)) {
    if (!RESTART_KEYS[kind].includes(key) && Object.values(RESTART_KEYS).some((keys) => keys.includes(key))) {
      table.raw(key);
      table.fail(key, `does not apply to restart.${kind} (it takes: ${RESTART_KEYS[kind].join(", ")})`);
    }
  }
  let action: RestartAction | undefined;
  switch (kind) {
    case "spawn": {
      const argv = table.argv("spawn");
      const cwd = table.string("cwd");
      const env = table.stringMap("env") ?? {};
      const output = table.string("output");
      if (argv) action = { kind, argv, cwd: cwd ? inState(cwd) : null, env, output: inState(output ?? `${name}.out`) };
      break;
    }
    case "tmux": {
      const target = table.string("tmux");
      const run = table.string("run");
      if (target !== undefined && !TMUX_TARGET.test(target)) table.fail("tmux", `${show(target)} is not "session:window" or "session:window.pane"`);
      if (run === undefined && !table.has("run")) table.fail("run", "is required with restart.tmux (the pane's command line)");
      if (target && run) action = { kind, target, run };
      break;
    }
    case "command": {
      const argv = table.argv("command");
      if (argv) action = { kind, argv };
      break;
    }
    case "systemd": {
      const unit = table.string("systemd");
      if (unit) action = { kind, unit };
      break;
    }
    case "launchd": {
      const label = table.string("launchd");
      if (label) action = { kind, label };
      break;
    }
  }
  table.finish();
  return action;
}

function readBusy(service: Reader, inState: (path: string) => string): BusyConfig | null {
  const table = service.sub("busy");
  if (!table) return null;
  const port = table.integer("port", 1, 65535) ?? null;
  const log = table.string("log");
  const busy: BusyConfig = { port, log: log ? inState(log) : null, freshMs: table.duration("fresh") ?? 180_000, maxMs: table.duration("max") ?? 1_800_000 };
  if (!table.has("port") && !table.has("log")) service.fail("busy", "needs port, log, or both (what shows the service is working)");
  table.finish(["port", "log", "fresh", "max"]);
  return busy;
}

function readMemory(service: Reader, hasPidSource: boolean): MemoryConfig | null {
  const table = service.sub("memory");
  if (!table) return null;
  const size = (key: string) => {
    const value = table.raw(key);
    if (value === undefined) return null;
    const bytes = parseSize(value);
    if (bytes === null) table.fail(key, `${show(value)} is not a size (e.g. "512MiB", "1GiB", "800MB" or a number of bytes)`);
    return bytes;
  };
  const memory: MemoryConfig = { limitBytes: size("limit"), warnWithinMs: table.duration("warn_within") ?? 86_400_000, restartAboveBytes: size("restart_above") };
  if (!table.has("limit") && !table.has("restart_above")) service.fail("memory", "needs limit, restart_above, or both");
  if (!hasPidSource) service.fail("memory", "needs a PID source on the service (pidfile, tmux, unit or launchd): RSS is read from its process tree");
  table.finish(["limit", "warn_within", "restart_above"]);
  return memory;
}

/** Duplicate names, unknown or self dependencies, and cycles. */
function checkServiceGraph(services: ServiceConfig[], errors: string[]) {
  const byName = new Map<string, number>();
  services.forEach((service, index) => {
    if (byName.has(service.name)) errors.push(`service[${index}].name: "${service.name}" is already used by service[${byName.get(service.name)}]`);
    else byName.set(service.name, index);
  });
  services.forEach((service, index) => {
    for (const dependency of service.dependsOn) {
      if (dependency === service.name) errors.push(`service[${index}].depends_on: "${dependency}" is the service itself`);
      else if (!byName.has(dependency)) errors.push(`service[${index}].depends_on: "${dependency}" is not a configured service`);
    }
  });
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (name: string, trail: string[]): void => {
    if (done.has(name)) return;
    if (visiting.has(name)) {
      errors.push(`depends_on: cycle ${[...trail.slice(trail.indexOf(name)), name].join(" -> ")}`);
      return;
    }
    visiting.add(name);
    const service = services[byName.get(name)!];
    for (const dependency of service?.dependsOn ?? []) if (byName.has(dependency) && dependency !== name) visit(dependency, [...trail, name]);
    visiting.delete(name);
    done.add(name);
  };
  for (const service of services) visit(service.name, []);
}

/** "~/x" -> home; relative -> base. */
export function expandPath(path: string, home: string, base: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(base, path);
}
