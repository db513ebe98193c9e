import { CHECKS } from "../checks/index.ts";
import type { CheckConfig } from "../checks/kind.ts";
import { nearest } from "../core/nearest.ts";
import { TMUX_TARGET } from "../os/tmux.ts";
import { SERVICE_NAME, statePaths } from "../state/dir.ts";
import { impliedSource, RESTARTS } from "../restarts/index.ts";
import type { RestartConfig } from "../restarts/kind.ts";
import { Reader, show } from "./reader.ts";
import type { BusyConfig, Env, MemoryConfig, ReadContext, ServiceConfig, Tunables } from "./types.ts";

export { SERVICE_NAME };

/** Built-in defaults, overridden by [defaults], then by the service, then (timeout) by the check. */
export const BUILTIN_TUNABLES: Tunables = {
  failures: 3,
  failuresWithin: 0,
  timeoutMs: 5_000,
  graceMs: 30_000,
  cooldownMs: 600_000,
  backoffMs: 10_000,
  backoffMaxMs: 300_000,
  maxRestarts: 5,
  restartWindowMs: 3_600_000,
  stopTimeoutMs: 2_000,
  verifyTimeoutMs: 60_000,
  retryIntervalMs: 0,
  slowAboveMs: 0,
  remindEveryMs: 0,
  givenUpRetryMs: 0,
};

export const TUNABLE_KEYS: Record<string, { field: keyof Tunables; kind: "duration" | "count" }> = {
  failures: { field: "failures", kind: "count" },
  failures_within: { field: "failuresWithin", kind: "count" },
  timeout: { field: "timeoutMs", kind: "duration" },
  grace: { field: "graceMs", kind: "duration" },
  cooldown: { field: "cooldownMs", kind: "duration" },
  backoff: { field: "backoffMs", kind: "duration" },
  backoff_max: { field: "backoffMaxMs", kind: "duration" },
  max_restarts: { field: "maxRestarts", kind: "count" },
  restart_window: { field: "restartWindowMs", kind: "duration" },
  stop_timeout: { field: "stopTimeoutMs", kind: "duration" },
  verify_timeout: { field: "verifyTimeoutMs", kind: "duration" },
  retry_interval: { field: "retryIntervalMs", kind: "duration" },
  slow_above: { field: "slowAboveMs", kind: "duration" },
  remind_every: { field: "remindEveryMs", kind: "duration" },
  given_up_retry: { field: "givenUpRetryMs", kind: "duration" },
};

const PID_SOURCES = ["pidfile", "tmux", "unit", "launchd"];
export const SERVICE_KEYS = [
  "name",
  "enabled",
  ...PID_SOURCES,
  "check",
  "restart",
  "depends_on",
  "requires",
  "busy",
  "memory",
  "track_restarts",
  ...Object.keys(TUNABLE_KEYS),
];

export const BUSY_KEYS = ["port", "log", "fresh", "max"];
export const MEMORY_KEYS = ["limit", "warn_within", "restart_above"];

/** The probes a strike window may span: those a flapping verdict looks at (FLAP_WINDOW). */
const MAX_FAILURES_WITHIN = 20;

/** failures_within = M: at least `failures` (N of the last M), at most the 20 probes tend keeps. */
export function checkWithin(table: Reader, tunables: Tunables) {
  const within = tunables.failuresWithin;
  // Said where the table sets it (a service's `failures` above [defaults] failures_within too).
  const key = table.has("failures_within") ? "failures_within" : table.has("failures") ? "failures" : null;
  if (!within || !key) return;
  if (within < tunables.failures)
    table.fail(key, `failures_within = ${within} is below failures = ${tunables.failures} (N of the last M: M >= N)`);
  else if (within > MAX_FAILURES_WITHIN)
    table.fail(key, `failures_within = ${within} is above ${MAX_FAILURES_WITHIN} (the probes tend keeps per service)`);
}

export function readTunables(table: Reader, into: Tunables) {
  for (const [key, { field, kind }] of Object.entries(TUNABLE_KEYS)) {
    const value = kind === "duration" ? table.duration(key) : table.integer(key, key === "max_restarts" ? 0 : 1);
    if (key === "retry_interval" && value !== undefined && value < 1000) table.fail(key, "must be at least 1s");
    else if (["remind_every", "given_up_retry"].includes(key) && value !== undefined && value < 60_000)
      table.fail(key, "must be at least 1m (or left out: off)");
    else if (value !== undefined) into[field] = value;
  }
}

export function readService(
  table: Reader,
  defaults: Tunables,
  inState: (path: string) => string,
  stateDir: string,
  env: Env = process.env,
): ServiceConfig | undefined {
  const name = table.string("name");
  if (name === undefined && !table.has("name")) table.fail("name", "is required");
  else if (name !== undefined && !SERVICE_NAME.test(name)) {
    table.fail("name", `${show(name)} may only hold 1 to 64 letters, digits and _ . @ -, not starting with - or .`);
  }

  const tunables = { ...defaults };
  readTunables(table, tunables);
  checkWithin(table, tunables);
  const pidfile = table.string("pidfile");
  const tmux = table.string("tmux");
  const unit = table.string("unit");
  const launchd = table.string("launchd");
  const sources = PID_SOURCES.filter((key) => table.has(key));
  if (sources.length > 1) table.fail(sources[1], `a service has one PID source: ${sources.join(" and ")} given`);
  if (tmux !== undefined && !TMUX_TARGET.test(tmux)) {
    table.fail("tmux", `${show(tmux)} is not "session:window" or "session:window.pane"`);
  }
  const enabled = table.boolean("enabled") ?? true;
  const dependsOn = table.stringList("depends_on") ?? [];
  let requiresDns: string | null = null;
  const requires = table.sub("requires");
  if (requires) {
    requiresDns = requires.string("dns") ?? null;
    requires.finish(["dns"]);
  }

  const context: ReadContext = {
    inState,
    hasPidSource: sources.length > 0,
    timeoutMs: tunables.timeoutMs,
    name: name ?? "service",
    paths: statePaths(stateDir),
    env,
  };
  const checkTable = table.sub("check");
  if (!checkTable && !table.has("check")) {
    table.fail("check", `is required: a [service.check] table with one of ${Object.keys(CHECKS).join(", ")}`);
  }
  const check = checkTable && readCheck(checkTable, context);
  const restartTable = table.sub("restart");
  const restart = restartTable ? readRestart(restartTable, context) : null;
  const busy = readBusy(table, inState);
  const memory = readMemory(table, sources.length > 0);
  const trackRestarts = table.boolean("track_restarts") ?? Boolean(unit);
  if (trackRestarts && !unit && table.has("track_restarts")) {
    table.fail("track_restarts", 'needs unit = "NAME.service" (NRestarts is read from systemd)');
  }
  if (restart && RESTARTS[restart.kind].needsPidfile && !pidfile) {
    table.fail("pidfile", `is required with restart.${restart.kind} (tend writes the PID there)`);
  }
  table.finish(SERVICE_KEYS);
  if (!name || !check || (restartTable && !restart)) return undefined;
  const implied = impliedSource(restart ?? null);
  return {
    name,
    enabled,
    pidfile: pidfile ? inState(pidfile) : null,
    // A restart kind may imply a pid source (restart.tmux alone makes its pane one).
    tmux: tmux ?? (implied && "tmux" in implied && sources.length === 0 ? implied.tmux : null),
    // The server restart.tmux's panes live on: the pane pid source asks the same one.
    tmuxSocket: implied && "tmux" in implied ? (implied.socket ?? null) : null,
    runit: implied && "runit" in implied && sources.length === 0 ? implied.runit : null,
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

/** [service.check]: exactly one kind's key, and only the keys that kind takes. */
function readCheck(table: Reader, context: ReadContext): CheckConfig | undefined {
  if (suggestKind(table, CHECKS)) return undefined;
  const kind = table.oneOf(Object.keys(CHECKS));
  if (!kind) return undefined;
  const { keys } = CHECKS[kind];
  const timeoutMs = table.duration("timeout") ?? context.timeoutMs;
  if (timeoutMs === 0) table.fail("timeout", "must be more than 0");
  table.refuseForeign(keys, keysOfAll(CHECKS), `a ${kind} check`);
  const check = CHECKS[kind].read(table, { ...context, timeoutMs });
  table.finish(keys);
  return check;
}

/** [service.restart]: exactly one kind's key, and only the keys that kind takes. */
function readRestart(table: Reader, context: ReadContext): RestartConfig | undefined {
  if (suggestKind(table, RESTARTS)) return undefined;
  const kind = table.oneOf(Object.keys(RESTARTS));
  if (!kind) return undefined;
  const { keys } = RESTARTS[kind];
  table.refuseForeign(keys, keysOfAll(RESTARTS), `restart.${kind}`);
  const action = RESTARTS[kind].read(table, context);
  table.finish(keys);
  return action;
}

type Kinds = Record<string, { keys: string[] }>;
const allKeys = new WeakMap<Kinds, string[]>();

/** Every key any kind of a registry takes (computed once: it is asked per service). */
function keysOfAll(kinds: Kinds): string[] {
  let keys = allKeys.get(kinds);
  if (!keys) allKeys.set(kinds, (keys = Object.values(kinds).flatMap((kind) => kind.keys)));
  return keys;
}

/**
 * No kind given, but a key that is a typo of one (`htp`): name that key and what it meant, rather
 * than "needs exactly one of …". True when it did.
 */
function suggestKind(table: Reader, kinds: Kinds): boolean {
  if (Object.keys(kinds).some((kind) => table.has(kind))) return false;
  const known = new Set(keysOfAll(kinds));
  const typos = Object.keys(table.table).filter((key) => !known.has(key) && nearest(key, Object.keys(kinds)));
  for (const key of typos) table.unknown(key, Object.keys(kinds));
  return typos.length > 0;
}

function readBusy(service: Reader, inState: (path: string) => string): BusyConfig | null {
  const table = service.sub("busy");
  if (!table) return null;
  const port = table.integer("port", 1, 65535) ?? null;
  const log = table.string("log");
  const busy: BusyConfig = {
    port,
    log: log ? inState(log) : null,
    freshMs: table.duration("fresh") ?? 180_000,
    maxMs: table.duration("max") ?? 1_800_000,
  };
  if (!table.has("port") && !table.has("log")) {
    service.fail("busy", "needs port, log, or both (what shows the service is working)");
  }
  table.finish(BUSY_KEYS);
  return busy;
}

function readMemory(service: Reader, hasPidSource: boolean): MemoryConfig | null {
  const table = service.sub("memory");
  if (!table) return null;
  const memory: MemoryConfig = {
    limitBytes: table.size("limit") ?? null,
    warnWithinMs: table.duration("warn_within") ?? 86_400_000,
    restartAboveBytes: table.size("restart_above") ?? null,
  };
  if (!table.has("limit") && !table.has("restart_above")) service.fail("memory", "needs limit, restart_above, or both");
  if (!hasPidSource) {
    service.fail(
      "memory",
      "needs a PID source on the service (pidfile, tmux, unit or launchd): RSS is read from its process tree",
    );
  }
  table.finish(MEMORY_KEYS);
  return memory;
}
