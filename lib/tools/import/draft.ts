// The draft tend.toml from what the reader found (./reader.ts): one service per check, its restart the
// one the script runs on that check's failing branch, its strikes the script's (1 when it acts on the
// first failure), every value with the line it came from, every default tend applied listed on top.
// A restart is carried over exactly or not at all: one it cannot carry is said (stderr, exit 1), and its
// service is watch-only with the reason. Pure.
import type { Check, Reading, Restart, ScriptAction, Sourced } from "./reader.ts";
import { durationText, shellLine } from "./reader.ts";

interface DraftService {
  name: string;
  nameWhy: string;
  line: number;
  keys: [string, Sourced][];
  check: [string, Sourced][];
  busy: [string, Sourced][];
  restart: [string, Sourced][];
  comments: string[];
}

interface Draft {
  text: string;
  services: number;
  /** Restarts the script makes that the draft does not: said on stderr, exit 1. */
  missing: string[];
}

const IDENT = /^[A-Za-z][\w.@-]{0,63}$/;
const DEFAULT_TIMEOUT = "5s";

interface DraftInput {
  path: string;
  reading: Reading;
  period: Sourced<string> | null;
  traps: string[];
  unmapped: string[];
  /** The sender `mail` would use (USER@HOST), for an email [notify]. */
  mailFrom: string;
}

export function writeDraft(input: DraftInput): Draft {
  const { reading } = input;
  const missing: string[] = [];
  const names = new Set<string>();
  const services: DraftService[] = [];
  const noTimeout: string[] = [];
  const checks = [...reading.checks].sort((a, b) => a.line - b.line);
  for (const check of checks) {
    const restarts = reading.restarts.filter((restart) => restart.check === check);
    const service = serviceOf(check, restarts, missing);
    service.name = unique(service.name, names);
    if (
      service.check.some(([key]) => key === "timeout") === false &&
      check.asks !== "log" &&
      check.asks !== "process"
    ) {
      service.check.push([
        "timeout",
        { value: DEFAULT_TIMEOUT, line: check.line, why: "not in the script: tend's default" },
      ]);
      noTimeout.push(service.name);
    }
    services.push(service);
  }
  for (const restart of reading.restarts.filter((one) => one.check === null))
    for (const action of restart.actions.filter((one) => one.shape !== "kill" && one.shape !== "tmux-kill"))
      missing.push(`line ${action.line}: ${action.text}: runs on no check's failure import can read`);

  const out: string[] = [
    `# A draft tend.toml from ${input.path} (tend watchdog import): read each value, then tend watchdog validate.`,
    "# Each value says the line of the script it comes from. Not in the script, so tend's defaults apply:",
    "#   grace 30s, cooldown 10m, backoff 10s doubling to 5m, max_restarts 5 within 1h, verify_timeout 60s",
  ];
  if (!input.period) out.push("#   interval 5m (no crontab line, comment or loop in the script names its period)");
  if (noTimeout.length)
    out.push(
      `#   timeout ${DEFAULT_TIMEOUT} for ${noTimeout.join(", ")} (the script sets none: it waited as long as it took)`,
    );
  if (missing.length) {
    out.push("#", "# Restarts the script makes that this draft does not (carry them over by hand):");
    for (const line of missing) out.push(`#   ${oneLine(line)}`);
  }
  if (input.traps.length) {
    out.push("#", "# Traps tend doctor --audit finds in the script (tend does each of these its own way):");
    out.push(...input.traps.map((trap) => `#   ${oneLine(trap)}`));
  }
  out.push("");
  const watchdog: string[] = [];
  if (input.period) watchdog.push(`interval = ${q(input.period.value)}${note(input.period)}`);
  if (reading.heartbeat) watchdog.push(`heartbeat_url = ${q(reading.heartbeat.value)}${note(reading.heartbeat)}`);
  if (watchdog.length) out.push("[watchdog]", ...watchdog, "");
  const notify = reading.notifies.find((one) => one.url);
  if (notify) {
    out.push("[notify]", `url = ${q(notify.url!)}  # line ${notify.line}: ${notify.why}`);
    if (notify.format !== "text") out.push(`format = ${q(notify.format)}`);
    if (notify.format === "email") {
      out.push(`to = ${q(notify.to!)}`);
      out.push(
        `from = ${q(notify.from ?? input.mailFrom)}${notify.from ? "" : "  # mail's own sender: you on this host"}`,
      );
    }
    out.push("");
  }
  for (const other of reading.notifies.filter((one) => one !== notify))
    out.push(`# line ${other.line}: a notification (${other.format}) not carried: ${other.why}`);
  if (reading.notifies.some((one) => one !== notify)) out.push("");
  for (const [index, service] of services.entries()) {
    out.push("[[service]]", `name = ${q(service.name)}  # ${service.nameWhy}`);
    // The script checks in order, each restart done before the next check; tend probes all at once. A
    // public URL checked after local services it may go through (a tunnel to an origin): said, not guessed.
    const url = service.check.find(([key]) => key === "http")?.[1].value;
    const origins = services.slice(0, index).filter((one) => one.restart.length && isLoopback(httpOf(one)));
    if (typeof url === "string" && !isLoopback(url) && origins.length) {
      const names = origins.map((one) => one.name);
      out.push(
        `# the script checked this after restarting ${names.join(", ")} when down; tend probes all at once: if this`,
        `# URL goes through one of them, add depends_on = [${q(names[0])}] here (it then waits on it, no restart)`,
      );
    }
    for (const comment of service.comments) out.push(`# ${comment}`);
    for (const [key, value] of service.keys) out.push(`${key} = ${toml(value.value)}${note(value)}`);
    out.push("[service.check]");
    for (const [key, value] of service.check) out.push(`${key} = ${toml(value.value)}${note(value)}`);
    if (service.busy.length) {
      out.push("[service.busy]");
      for (const [key, value] of service.busy) out.push(`${key} = ${toml(value.value)}${note(value)}`);
      out.push(
        '# max = "30m" is tend\'s default: a busy spell longer than that is restarted (the script had no bound)',
      );
    }
    if (service.restart.length) {
      out.push("[service.restart]");
      for (const [key, value] of service.restart) out.push(`${key} = ${toml(value.value)}${note(value)}`);
    }
    out.push("");
  }
  if (input.unmapped.length) {
    out.push("# Not mapped (tend does these itself, or they are yours to carry over):");
    out.push(...input.unmapped.map((line) => `#   ${oneLine(line)}`));
  }
  return { text: out.join("\n").trimEnd() + "\n", services: services.length, missing };
}

const httpOf = (service: DraftService) => service.check.find(([key]) => key === "http")?.[1].value;

/** A URL on this host (127.0.0.0/8, ::1, localhost). */
function isLoopback(url: unknown): boolean {
  if (typeof url !== "string") return false;
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

function serviceOf(check: Check, restarts: Restart[], missing: string[]): DraftService {
  const service: DraftService = {
    name: "",
    nameWhy: "",
    line: check.line,
    keys: [],
    check: [],
    busy: [],
    restart: [],
    comments: [],
  };
  const candidates = [...check.names];
  for (const restart of restarts) {
    for (const entry of restart.names) candidates.push({ ...entry, rank: entry.why.startsWith("the loop") ? 1 : 2 });
    for (const action of restart.actions) {
      const target = targetName(action);
      const rank = action.shape === "command" ? action.rank : 3;
      if (target) candidates.push({ name: target, why: `what it restarts`, line: action.line, rank });
    }
  }
  candidates.sort((a, b) => a.rank - b.rank);
  const chosen = candidates.find((candidate) => IDENT.test(candidate.name));
  const fallback = check.port ? `service-${check.port}` : "service";
  service.name = chosen?.name ?? fallback;
  service.nameWhy = chosen ? `line ${chosen.line}: ${chosen.why}` : "the script gives it no name: rename it";
  const limit = restarts.find((restart) => restart.limit)?.limit ?? null;
  const acting = restarts.length > 0;
  if (limit) service.keys.push(["failures", { value: limit.n, line: limit.line, why: limit.text }]);
  else if (acting)
    service.keys.push(["failures", { value: 1, line: restarts[0].line, why: "the script acts on the first failure" }]);
  if (check.pidfile) service.keys.push(["pidfile", check.pidfile]);
  for (const [key, value] of check.table) if (key !== "timeout") service.check.push([key, value]);
  if (check.asks === "http") httpRule(check, service);
  const timeout = check.table.get("timeout");
  if (timeout) service.check.push(["timeout", timeout]);
  for (const note of check.notes) service.comments.push(note);
  if (check.busy) for (const [key, value] of check.busy) service.busy.push([key, value]);
  if (restarts.length) restartOf(check, restarts, service, missing);
  else service.comments.push(`no restart on its failure in the script (line ${check.line}): watch only`);
  return service;
}

function httpRule(check: Check, service: DraftService) {
  const line = check.line;
  const sorted = (codes: Iterable<number>) => [...codes].sort((a, b) => a - b);
  let healthy = sorted(check.healthyCodes);
  let failing = sorted(check.failCodes);
  if (!healthy.length && !failing.length)
    for (const open of check.openCodes)
      if (open.inSet && open.codes.every((code) => code < 400)) healthy = sorted(new Set([...healthy, ...open.codes]));
  if (healthy.length) {
    const coversDefault = [...Array(200).keys()].every((i) => healthy.includes(200 + i));
    if (coversDefault)
      service.comments.push(`any status below 400 is healthy in the script: tend's default (line ${line})`);
    else service.check.push(["expect", { value: healthy, line, why: "the codes the script takes as healthy" }]);
    return;
  }
  if (failing.length) {
    service.check.push(["fail_codes", { value: failing, line, why: "the codes the script takes as down" }]);
    return;
  }
  if (check.table.has("contains") || check.table.has("any_response")) return;
  if (check.judgedBy.has("status") && !check.failsOnHttpError)
    service.check.push(["any_response", { value: true, line, why: "curl without -f: any answer passes" }]);
}

function targetName(action: ScriptAction): string | null {
  switch (action.shape) {
    case "systemd":
      return action.unit.replace(/\.service$/, "");
    case "tmux":
      return action.target.split(":")[1]?.split(".")[0] === "0"
        ? action.target.split(":")[0]
        : (action.target.split(":")[1]?.split(".")[0] ?? null);
    case "command":
      return (
        (action.target ?? action.cwd?.split("/").filter(Boolean).pop() ?? null)?.replace(/\.(service|sh)$/, "") ?? null
      );
    case "spawn": {
      const file = action.pidfile
        ?.split("/")
        .pop()
        ?.replace(/\.pid$/, "");
      return file ?? action.cwd?.split("/").filter(Boolean).pop() ?? null;
    }
    default:
      return null;
  }
}

function restartOf(check: Check, restarts: Restart[], service: DraftService, missing: string[]) {
  const actions = restarts.flatMap((restart) => restart.actions);
  const starts = actions.filter((action) => action.shape !== "kill" && action.shape !== "tmux-kill");
  const kills = actions.filter((action) => action.shape === "kill");
  const unmappable = starts.filter((action) => action.shape === "unmappable");
  const watchOnly = (why: string) => {
    missing.push(why);
    service.comments.push(`not restarted: ${why}`);
    if (!service.keys.some(([key]) => key === "failures")) return;
  };
  if (unmappable.length) {
    for (const action of unmappable)
      if (action.shape === "unmappable") watchOnly(`line ${action.line}: ${action.text}: ${action.why}`);
    return;
  }
  if (!starts.length) {
    const kill = kills[0];
    watchOnly(`line ${kill.line}: ${kill.text}: it only kills; what starts it again is not in the script`);
    return;
  }
  for (const kill of kills)
    if (kill.shape === "kill")
      service.comments.push(
        kill.pattern
          ? `line ${kill.line}: ${kill.text}: a kill by pattern; tend stops only what it started (by its pidfile)`
          : `line ${kill.line}: ${kill.text}: tend stops the old process itself`,
      );
  const line = starts[0].line;
  const first = starts[0];
  const sameKind = starts.every((action) => action.shape === first.shape);
  if (first.shape === "tmux" && sameKind) {
    const tmux = starts.find((action) => action.shape === "tmux" && action.run) ?? first;
    if (tmux.shape !== "tmux" || !tmux.run) {
      watchOnly(`line ${first.line}: ${first.text}: the pane's command is not in the script`);
      return;
    }
    service.restart.push(["tmux", { value: tmux.target, line: tmux.line, why: tmux.text }]);
    service.restart.push(["run", { value: tmux.run, line: tmux.line, why: "the pane's command" }]);
    if (tmux.socket) service.restart.push(["socket", { value: tmux.socket, line: tmux.line, why: "its tmux server" }]);
    if (/send-keys|send /.test(tmux.text))
      service.comments.push(
        `line ${tmux.line}: send-keys typed the command into the pane; tend respawns the pane with it`,
      );
    return;
  }
  if (first.shape === "systemd" && starts.every((action) => action.shape === "systemd" && action.unit === first.unit)) {
    service.restart.push(["systemd", { value: first.unit, line, why: first.text }]);
    service.comments.push(
      "tend never restarts a unit stopped on purpose (inactive); the script restarted it whatever its state",
    );
    return;
  }
  if (first.shape === "spawn" && starts.length === 1) {
    const viaShell = first.argv.some((word) => /[~$`|&;<>*?]/.test(word));
    const argv = viaShell ? ["sh", "-c", shellLine(first.argv)] : first.argv;
    service.restart.push(["spawn", { value: argv, line, why: `${first.text} &` }]);
    if (first.cwd) service.restart.push(["cwd", { value: first.cwd, line, why: "cd before it" }]);
    if (Object.keys(first.env).length) service.restart.push(["env", { value: first.env, line, why: "set before it" }]);
    if (first.output) service.restart.push(["output", { value: first.output, line, why: "its redirection" }]);
    if (!service.keys.some(([key]) => key === "pidfile")) {
      const pidfile = first.pidfile ?? `${service.name}.pid`;
      service.keys.push([
        "pidfile",
        {
          value: pidfile,
          line,
          why: first.pidfile ? "echo $! > it" : "spawn needs one: tend writes it (in its state dir)",
        },
      ]);
    }
    service.comments.push(
      "tend starts it itself (spawn): stop the copy the script started before tend's first pass, or it runs twice",
    );
    return;
  }
  // Commands (docker compose down; up -d, two units, a cd before): run in order, as the script did.
  const sequence = actions.filter(
    (action) => action.shape === "command" || (action.shape === "kill" && action.stop) || action.shape === "systemd",
  );
  const cwd = sequence.map((action) => ("cwd" in action ? action.cwd : null)).find(Boolean) ?? null;
  if (sequence.length === 1 && first.shape === "command" && !cwd) {
    service.restart.push(["command", { value: first.argv, line, why: "the script's restart" }]);
    return;
  }
  const text = (cwd ? `cd ${shellLine([cwd])} && ` : "") + sequence.map((action) => action.text).join("; ");
  const lines = sequence.map((action) => action.line).join(", ");
  service.restart.push(["command", { value: ["sh", "-c", text], line, why: `lines ${lines}, in the script's order` }]);
}

function unique(name: string, names: Set<string>): string {
  let candidate = name;
  for (let n = 2; names.has(candidate.toLowerCase()); n++) candidate = `${name}-${n}`;
  names.add(candidate.toLowerCase());
  return candidate;
}

const q = (text: string) => JSON.stringify(text);
const toml = (value: unknown): string => {
  if (value && typeof value === "object" && !Array.isArray(value))
    return `{ ${Object.entries(value)
      .map(([key, inner]) => `${/^[\w-]+$/.test(key) ? key : q(key)} = ${toml(inner)}`)
      .join(", ")} }`;
  if (Array.isArray(value)) return `[${value.map(toml).join(", ")}]`;
  return JSON.stringify(value);
};
const note = (value: Sourced) =>
  value.line ? `  # line ${value.line}: ${oneLine(value.why)}` : `  # ${oneLine(value.why)}`;
const oneLine = (text: string) =>
  text
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .replace(/\s+/g, " ")
    .slice(0, 160);

export { durationText };
