// `watchdog import SCRIPT [--out FILE]`: a draft tend.toml from a hand-written watchdog script (SPEC
// Commands). The script is read, never run: its variables are expanded as the shell would from their
// defaults (`X=${X:-20}`), its functions followed into with their arguments, and each check site (a
// curl, a pgrep or kill -0, a log's age) becomes a service with what the script does around it: the
// name it passes on, the tmux window it respawns (socket, command), the codes it treats as down, the
// busy log it spares. Every value says the line it came from; every line it could not map is kept as a
// comment saying so; the traps doctor --audit finds are listed on top. Pure over the text.
import { auditText, curlCalls } from "./audit.ts";
import { shellWords } from "./installed.ts";

export interface ImportResult {
  /** The draft's text: TOML with comments. */
  draft: string;
  /** How many services it mapped (0: nothing could be mapped). */
  services: number;
}

interface Line {
  number: number;
  text: string;
}

interface Fn {
  name: string;
  line: number;
  body: Line[];
}

/** A service found at a check site. */
interface Draft {
  name: string;
  line: number;
  check: Record<string, unknown>;
  notes: Map<string, string>;
  busy?: Record<string, unknown>;
  restart?: Record<string, unknown>;
  pidfile?: string;
}

const IDENT = /^[A-Za-z][\w.@-]{0,63}$/;
const TMUX_TARGET = /^[^:\s/$"'=]+:[^.\s/$"']+(\.\d+)?$/;

/** The script's lines, continuation lines joined, each with the number of its first line. */
function logicalLines(text: string): Line[] {
  const lines: Line[] = [];
  let pending: Line | null = null;
  text.split("\n").forEach((raw, index) => {
    const current = pending
      ? { number: pending.number, text: `${pending.text} ${raw.trim()}` }
      : { number: index + 1, text: raw };
    if (/\\$/.test(current.text)) pending = { number: current.number, text: current.text.slice(0, -1) };
    else {
      pending = null;
      lines.push(current);
    }
  });
  return lines;
}

/** A line without its comment (a # that starts a word, outside quotes). */
function code(text: string): string {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote) {
      if (char === quote) quote = null;
      else if (char === "\\" && quote === '"') i++;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === "#" && (i === 0 || /\s/.test(text[i - 1]))) return text.slice(0, i).trimEnd();
  }
  return text;
}

class Script {
  readonly vars = new Map<string, { value: string; line: number }>();
  readonly functions = new Map<string, Fn>();
  /** Top-level lines (outside function bodies). */
  readonly top: Line[] = [];
  readonly used = new Set<number>();

  constructor(readonly lines: Line[]) {
    for (let index = 0; index < lines.length; index++) {
      const { number, text } = lines[index];
      const body = code(text);
      const fn = /^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{(.*)$/.exec(body);
      if (fn) {
        const rest = fn[2];
        const lines: Line[] = [];
        // A one-line body ends with its own }: else up to the line that closes it.
        if (/\}\s*;?\s*$/.test(rest)) lines.push({ number, text: rest.replace(/\}\s*;?\s*$/, "") });
        else {
          if (rest.trim()) lines.push({ number, text: rest });
          while (++index < this.lines.length && !/^\s*\}\s*;?\s*(#.*)?$/.test(this.lines[index].text))
            lines.push(this.lines[index]);
        }
        this.functions.set(fn[1], { name: fn[1], line: number, body: lines });
        continue;
      }
      const assignment = /^\s*(?:export\s+|readonly\s+)?([A-Za-z_]\w*)=(.*)$/.exec(body);
      // A command substitution is a statement (a check's answer): kept with the lines, not as a value.
      if (assignment && !/^\s*(if|then|else|case|for|while)\b/.test(body) && !/^["']?(\$\(|`)/.test(assignment[2])) {
        this.vars.set(assignment[1], { value: this.value(assignment[2]), line: number });
        continue;
      }
      this.top.push({ number, text });
    }
  }

  /** An assignment's value: `${X:-default}` is its default, quotes removed, references expanded. */
  private value(raw: string): string {
    const trimmed = raw.trim();
    const fallback = /^"?\$\{\w+:?-(.*)\}"?$/.exec(trimmed);
    const text = fallback ? fallback[1] : trimmed;
    const words = shellWords(text.startsWith("$(") ? `'${text}'` : text);
    return this.expand(words.length === 1 ? words[0] : text);
  }

  /** $X, ${X}, ${X:-d} expanded from the script's values, $1... from `params`; unknown ones left. */
  expand(text: string, params: string[] = []): string {
    return text
      .replace(
        /\$\{(\w+)(:?-([^}]*))?\}/g,
        (all, name: string, _, fallback?: string) => this.lookup(name, params) ?? fallback ?? all,
      )
      .replace(/\$(\w+)/g, (all, name: string) => this.lookup(name, params) ?? all);
  }

  private lookup(name: string, params: string[]): string | undefined {
    if (/^\d+$/.test(name)) return params[Number(name) - 1];
    return this.vars.get(name)?.value;
  }

  /** The line numbers of a variable's assignment used in `text`. */
  markVars(text: string) {
    for (const match of text.matchAll(/\$\{?(\w+)/g)) {
      const line = this.vars.get(match[1])?.line;
      if (line) this.used.add(line);
    }
  }
}

/** The words of a command, expanded: quotes removed after expansion, as the shell would. */
function words(script: Script, command: string, params: string[] = []): string[] {
  return shellWords(command).map((word) => script.expand(word, params));
}

/** A curl call's arguments in a line (up to the end of its command). */
function curlArgs(text: string): string | null {
  return curlCalls(text)[0] ?? null;
}

function optionValue(args: string[], long: string, short: string): string | null {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === long || arg === short) return args[index + 1] ?? null;
    if (arg.startsWith(`${long}=`)) return arg.slice(long.length + 1);
    if (short && arg.startsWith(short) && arg.length > short.length && !arg.startsWith("--"))
      return arg.slice(short.length);
  }
  return null;
}

/** A curl --max-time in seconds as a tend duration ("20s", "500ms"), or null. */
const seconds = (value: string) =>
  /^\d+(\.\d+)?$/.test(value)
    ? Number(value) >= 1
      ? `${Number(value)}s`
      : `${Math.round(Number(value) * 1000)}ms`
    : null;

/**
 * The statement block a check site decides in: its line, the assignments right after it (the answer,
 * a log's age), and the if/case that follows, to its fi/esac.
 */
function blockAfter(top: Line[], index: number): Line[] {
  const depthOf = (text: string) =>
    (code(text).match(/\b(if|case)\b/g) ?? []).length - (code(text).match(/\b(fi|esac)\b/g) ?? []).length;
  const block = [top[index]];
  let depth = depthOf(top[index].text);
  let at = index;
  if (depth === 0) {
    while (top[at + 1] && /^\s*\w+=/.test(top[at + 1].text)) block.push(top[++at]);
    if (top[at + 1] && /^\s*(if|case)\b/.test(top[at + 1].text) && /^\s*\w+=/.test(top[index].text)) {
      block.push(top[++at]);
      depth = depthOf(top[at].text);
    }
  }
  while (depth > 0 && ++at < top.length) {
    block.push(top[at]);
    depth += depthOf(top[at].text);
  }
  return block;
}

/** A line's simple commands: split at ; && || | outside quotes, and each $(...) or `...` inside on its own. */
function statements(text: string): string[] {
  const body = code(text);
  const inner = [...body.matchAll(/\$\(([^()]*)\)|`([^`]*)`/g)].map((match) => match[1] ?? match[2]);
  const outer = body.replace(/\$\(([^()]*)\)|`([^`]*)`/g, " _ ");
  const pieces: string[] = [];
  let quote: string | null = null;
  let current = "";
  for (let i = 0; i < outer.length; i++) {
    const char = outer[i];
    if (quote) {
      if (char === quote) quote = null;
      current += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      current += char;
    } else if (char === ";" || char === "|" || (char === "&" && outer[i + 1] === "&")) {
      pieces.push(current);
      current = "";
      if (outer[i + 1] === char) i++;
    } else current += char;
  }
  pieces.push(current);
  // Keywords lead a command (then, else, if ...); a case arm's pattern (`502)`) is not one either.
  const command = (piece: string) =>
    piece
      .replace(/^\s*(?:(?:then|else|elif|do|if|while|until|!)\s+)*/, "")
      .replace(/^\s*[^\s()"']+\)\s+/, "")
      .trim();
  return [...pieces, ...inner].map(command).filter(Boolean);
}

/** The calls of the script's own functions in a block, each with its expanded arguments. */
function calls(script: Script, block: Line[]): { fn: Fn; args: string[]; line: number }[] {
  const found: { fn: Fn; args: string[]; line: number }[] = [];
  for (const line of block) {
    for (const statement of statements(line.text)) {
      const parts = words(script, statement.trim());
      const fn = script.functions.get(parts[0] ?? "");
      if (fn) found.push({ fn, args: parts.slice(1), line: line.number });
    }
  }
  return found;
}

/** The lines a function runs, its own calls followed (to a depth), with its parameters bound. */
function unfold(script: Script, fn: Fn, args: string[], depth = 0): { text: string; params: string[]; line: number }[] {
  if (depth > 4) return [];
  const lines: { text: string; params: string[]; line: number }[] = [];
  for (const line of fn.body) {
    lines.push({ text: code(line.text), params: args, line: line.number });
    for (const statement of statements(line.text)) {
      const parts = shellWords(statement.trim());
      const inner = script.functions.get(parts[0] ?? "");
      if (inner && inner !== fn) {
        const bound = parts.slice(1).map((word) => script.expand(word, args));
        lines.push(...unfold(script, inner, bound, depth + 1));
      }
    }
  }
  return lines;
}

/** A name when the script gives none: its unit, its window, its pidfile, its URL's host or port. */
function nameFrom(draft: Draft): string {
  const restart = draft.restart ?? {};
  const candidates = [
    typeof restart.systemd === "string" ? restart.systemd.replace(/\.service$/, "") : null,
    typeof restart.tmux === "string" ? restart.tmux.split(":")[1]?.split(".")[0] : null,
    draft.pidfile
      ? draft.pidfile
          .split("/")
          .pop()!
          .replace(/\.pid$/, "")
      : null,
  ];
  if (typeof draft.check.http === "string") {
    const url = new URL(draft.check.http);
    const host = url.hostname.split(".")[0];
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    candidates.push(/^[A-Za-z]/.test(host) && host !== "localhost" ? host : `service-${port}`);
  }
  return candidates.find((name): name is string => Boolean(name && IDENT.test(name))) ?? "service";
}

/** A function and every function it calls, marked as mapped. */
function markReached(script: Script, fn: Fn, depth = 0) {
  if (depth > 8 || script.used.has(fn.line)) return;
  script.used.add(fn.line);
  for (const line of fn.body)
    for (const statement of statements(line.text)) {
      const inner = script.functions.get(shellWords(statement)[0] ?? "");
      if (inner) markReached(script, inner, depth + 1);
    }
}

/** A draft tend.toml from a watchdog script's text; `cronLine`: the crontab line that runs it, if any. */
export function importScript(path: string, text: string, cronLine: string | null = null): ImportResult {
  const script = new Script(logicalLines(text));
  const drafts: Draft[] = [];
  const topNotes: string[] = [];
  const global: {
    failures?: { value: number; line: number };
    notify?: { url: string; line: number };
    socket?: { value: string; line: number };
  } = {};

  // The tmux server the script's panes live on: `tmux -L NAME` / `tmux -S PATH`, wherever it is.
  for (const line of script.lines) {
    const tmux = /\btmux\s+(-[LS])\s+(\S+)/.exec(code(line.text));
    if (tmux && !global.socket) {
      const value = script.expand(shellWords(tmux[2])[0] ?? "");
      if (value && !value.includes("$")) global.socket = { value, line: line.number };
      script.markVars(tmux[2]);
    }
    // A strike limit: `-ge N` / `-gt N` on a count.
    const limit = /\[\s+"?\$\{?\w+\}?"?\s+-(ge|gt)\s+"?([^"\s\]]+)"?\s+\]/.exec(code(line.text));
    if (limit && !global.failures) {
      const value = Number(script.expand(limit[2]));
      // A strike limit is small: a larger number compared there is something else (seconds, bytes).
      if (Number.isInteger(value) && value > 0 && value <= 20)
        global.failures = { value: limit[1] === "gt" ? value + 1 : value, line: line.number };
      script.markVars(limit[2]);
    }
  }

  // Notifications: a curl that posts (-d/--data) to a URL, in a function or a line.
  for (const line of script.lines) {
    const args = curlArgs(code(line.text));
    if (!args) continue;
    const parts = shellWords(args);
    if (!parts.some((arg) => /^(-d|--data(-\w+)?|-F|--form)$/.test(arg) || /^--data(-\w+)?=/.test(arg))) continue;
    const url = parts.map((word) => script.expand(word)).find((word) => /^https?:\/\//.test(word));
    if (url && !global.notify) {
      global.notify = { url, line: line.number };
      script.markVars(args);
      for (const fn of script.functions.values())
        if (fn.line === line.number || fn.body.some((one) => one.number === line.number)) script.used.add(fn.line);
    }
  }

  const names = new Set<string>();
  const unique = (name: string) => {
    let candidate = name;
    for (let n = 2; names.has(candidate.toLowerCase()); n++) candidate = `${name}-${n}`;
    names.add(candidate.toLowerCase());
    return candidate;
  };

  for (let index = 0; index < script.top.length; index++) {
    const line = script.top[index];
    const body = code(line.text);
    if (!body.trim()) continue;
    // The check at this line: a curl (here or in a function it calls), a pgrep / kill -0, a log's age.
    const here = calls(script, [line]);
    let curl: { args: string[]; line: number } | null = null;
    const direct = curlArgs(body);
    if (direct) curl = { args: words(script, direct), line: line.number };
    else
      for (const call of here)
        for (const step of unfold(script, call.fn, call.args)) {
          const inner = curlArgs(step.text);
          if (inner && !curl) {
            curl = { args: words(script, inner, step.params), line: step.line };
            script.markVars(inner);
          }
        }
    const pidOnly = /\b(pgrep|pidof)\b|\bkill\s+-0\b/.exec(body);
    if (curl && optionValue(curl.args, "--data", "-d") !== null) continue; // a notification, not a check
    if (!curl && !pidOnly) continue;
    const block = blockAfter(script.top, index);
    const blockText = block.map((one) => code(one.text)).join("\n");
    const blockCalls = calls(script, block);
    const draft: Draft = { name: "", line: line.number, check: {}, notes: new Map() };
    if (curl) {
      const url = curl.args.find((arg) => /^https?:\/\//.test(arg));
      if (!url || url.includes("$")) {
        topNotes.push(
          `# not mapped (line ${line.number}): a curl whose URL is not known from the script: ${oneLine(body)}`,
        );
        continue;
      }
      draft.check.http = url;
      draft.notes.set("http", `line ${line.number}`);
      const timeout = optionValue(curl.args, "--max-time", "-m");
      if (timeout && seconds(timeout)) {
        draft.check.timeout = seconds(timeout);
        draft.notes.set("timeout", `--max-time ${timeout} (line ${curl.line})`);
      }
      const grep = /\|\s*grep\s+(?:-\w+\s+)*("[^"]+"|'[^']+'|[^\s|;]+)/.exec(blockText);
      if (grep) {
        draft.check.contains = script.expand(shellWords(grep[1])[0] ?? "");
        draft.notes.set("contains", `grep (line ${line.number})`);
      }
      // The codes the script decides by: `case $code in 502 | 503) strike` or `[ "$code" = 200 ]`.
      const arms = [...blockText.matchAll(/^\s*((?:\d{3}\s*\|\s*)*\d{3})\s*\)(.*)$/gm)];
      if (arms.length) {
        const codes = arms[0][1].split("|").map((one) => Number(one.trim()));
        draft.check.fail_codes = codes;
        draft.notes.set("fail_codes", `case (line ${line.number})`);
      } else {
        const ok = /"\$\{?\w+\}?"\s*(?:=|==|-eq)\s*"?(\d{3})"?/.exec(blockText);
        if (ok) {
          draft.check.expect = [Number(ok[1])];
          draft.notes.set("expect", `= ${ok[1]} (line ${line.number})`);
        }
      }
    } else if (pidOnly) {
      const pidfile = /kill\s+-0\s+"?\$\(cat\s+"?([^")\s]+)"?\)/.exec(body);
      draft.check.process = true;
      if (pidfile) draft.pidfile = script.expand(pidfile[1]);
      draft.notes.set(
        "process",
        `${pidOnly[0]} (line ${line.number}): judged by PID alone` +
          (pidfile ? "" : "; tend needs a pid source (pidfile or tmux)"),
      );
    }
    // The name the script gives it: the bare first argument its calls pass on (strike blog ...).
    const named = blockCalls
      .map((call) => call.args[0])
      .find((arg) => arg && IDENT.test(arg) && !TMUX_TARGET.test(arg));
    // The tmux window it respawns, and the command: the call's argument after the target.
    for (const call of blockCalls) {
      const at = call.args.findIndex((arg) => TMUX_TARGET.test(arg));
      if (at < 0) continue;
      draft.restart = { tmux: call.args[at] };
      const run = call.args[at + 1];
      if (run && !run.includes("$")) draft.restart.run = run;
      if (global.socket) draft.restart.socket = global.socket.value;
      draft.notes.set("restart", `line ${call.line}`);
      break;
    }
    if (!draft.restart) {
      const direct = /\btmux\s+(?:-[LS]\s+\S+\s+)?respawn-pane\s+(?:-k\s+)?-t\s+(\S+)\s+(.+)$/m.exec(blockText);
      if (direct) {
        draft.restart = {
          tmux: script.expand(shellWords(direct[1])[0] ?? ""),
          run: script.expand(shellWords(direct[2])[0] ?? ""),
        };
        if (global.socket) draft.restart.socket = global.socket.value;
      }
      const systemd = /\bsystemctl\s+restart\s+(\S+)/.exec(blockText);
      if (!draft.restart && systemd) draft.restart = { systemd: script.expand(shellWords(systemd[1])[0] ?? "") };
    }
    draft.name = unique(named ?? nameFrom(draft));
    if (draft.restart && "tmux" in draft.restart && !draft.restart.run) {
      draft.notes.set("run", "the pane's command is not known from the script: write it");
      draft.restart.run = "# write the pane's command here";
    }
    // The busy state: a log's age compared with a bound (stat -c %Y LOG ... -lt FRESH).
    const stat = /stat\s+-c\s+%Y\s+("[^"]+"|'[^']+'|\S+)/.exec(blockText);
    const bound = /-lt\s+"?\$\{?(\w+)\}?"?/.exec(blockText) ?? /-lt\s+"?(\d+)"?/.exec(blockText);
    if (curl && stat) {
      const log = script.expand(shellWords(stat[1])[0] ?? "").replace(/^(\$HOME|\$\{HOME\})\//, "~/");
      const fresh = bound ? (script.vars.get(bound[1])?.value ?? bound[1]) : null;
      draft.busy = { log };
      if (fresh && /^\d+$/.test(fresh)) draft.busy.fresh = `${fresh}s`;
      draft.notes.set("busy", `its log's age (line ${line.number})`);
      script.markVars(blockText);
    }
    for (const one of block) script.used.add(one.number);
    for (const call of blockCalls) markReached(script, call.fn);
    script.markVars(block.map((one) => one.text).join("\n"));
    drafts.push(draft);
    index += block.length - 1;
  }

  // The schedule of the crontab line that runs it: its period.
  const interval = cronLine ? cronPeriod(cronLine) : null;
  const out: string[] = [
    `# A draft tend.toml from ${path} (tend watchdog import): read each value, then tend watchdog validate.`,
    "# Each value says the script's line it comes from. tend's own keys (grace 30s, cooldown 10m, max_restarts 5)",
    "# are its defaults: no line of the script sets them.",
  ];
  const traps = auditText(path, text, {}, "script");
  if (traps.length) {
    out.push("#", "# Traps tend doctor --audit finds in the script (tend does each of these its own way):");
    for (const trap of traps)
      out.push(`#   ${trap.severity.toUpperCase()} line ${trap.line}: ${trap.trap}: ${trap.fix}`);
  }
  out.push("");
  if (interval || global.failures) {
    if (interval)
      out.push(
        "[watchdog]",
        `interval = ${q(interval)}  # the crontab line: ${oneLine(cronLine!.split(/\s+/).slice(0, 5).join(" "))}`,
        "",
      );
  }
  if (global.notify) out.push("[notify]", `url = ${q(global.notify.url)}  # line ${global.notify.line}`, "");
  if (global.failures)
    out.push("[defaults]", `failures = ${global.failures.value}  # line ${global.failures.line}`, "");
  for (const [index, draft] of drafts.entries()) {
    out.push("[[service]]", `name = ${q(draft.name)}`);
    // The script checks in order, each restart done before the next check; tend probes all at once. A
    // public URL checked after local services it may go through (a tunnel to an origin): said, not guessed.
    const origins = drafts.slice(0, index).filter((one) => one.restart && isLoopback(one.check.http));
    if (typeof draft.check.http === "string" && !isLoopback(draft.check.http) && origins.length) {
      const names = origins.map((one) => one.name);
      out.push(
        `# the script checked this after restarting ${names.join(", ")} when down; tend probes all at once: if this`,
        `# URL goes through one of them, add depends_on = [${q(names[0])}] here (it then waits on it, no restart)`,
      );
    }
    if (draft.pidfile) out.push(`pidfile = ${q(draft.pidfile)}`);
    out.push("[service.check]");
    for (const [key, value] of Object.entries(draft.check))
      out.push(`${key} = ${toml(value)}${note(draft.notes.get(key))}`);
    if (draft.busy) {
      out.push(`[service.busy]${note(draft.notes.get("busy"))}`);
      for (const [key, value] of Object.entries(draft.busy)) out.push(`${key} = ${toml(value)}`);
      out.push(
        '# max = "30m" is tend\'s default: a busy spell longer than that is restarted (the script had no bound)',
      );
    }
    if (draft.restart) {
      out.push(`[service.restart]${note(draft.notes.get("restart"))}`);
      for (const [key, value] of Object.entries(draft.restart))
        out.push(key === "run" && String(value).startsWith("#") ? `run = ""  ${value}` : `${key} = ${toml(value)}`);
    } else out.push("# no restart found for it in the script: watch only");
    out.push("");
  }
  // What could not be mapped: kept, saying so.
  const unmapped = script.top.filter(
    (line) => !script.used.has(line.number) && code(line.text).trim() && !/^\s*#/.test(line.text),
  );
  const functionsUnused = [...script.functions.values()].filter((fn) => !script.used.has(fn.line));
  if (topNotes.length || unmapped.length || functionsUnused.length) {
    out.push("# Not mapped (tend does these itself, or they are yours to carry over):");
    out.push(...topNotes);
    for (const fn of functionsUnused)
      out.push(`#   line ${fn.line}: function ${fn.name}()${why(fn.body.map((one) => one.text).join(" "))}`);
    for (const line of unmapped) out.push(`#   line ${line.number}: ${oneLine(line.text.trim())}${why(line.text)}`);
  }
  return { draft: out.join("\n") + "\n", services: drafts.length };
}

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

/** Why a line needs no mapping, when tend does it itself. */
function why(text: string): string {
  if (/\bflock\b|\.lock\b/.test(text)) return " (tend takes its own lock)";
  if (/heartbeat/.test(text)) return " (tend keeps its own heartbeat: status, /healthz)";
  if (/downtime/i.test(text)) return " (tend writes downtime.log itself)";
  if (/\becho\b.*>>\s*"?\$\{?LOG/.test(text)) return " (tend writes watchdog.log itself)";
  return "";
}

const q = (text: string) => JSON.stringify(text);
const toml = (value: unknown) => JSON.stringify(value);
const note = (text: string | undefined) => (text ? `  # ${text}` : "");
const oneLine = (text: string) => text.replace(/\s+/g, " ").slice(0, 160);

/** A cron schedule's period, when it has one: `*\/5 * * * *` 5m, `* * * * *` 1m, `0 * * * *` 1h. */
export function cronPeriod(line: string): string | null {
  const fields = line.trim().split(/\s+/).slice(0, 5);
  if (fields.length < 5) return null;
  const [minute, hour, ...rest] = fields;
  if (rest.some((field) => field !== "*")) return null;
  if (hour === "*" && minute === "*") return "1m";
  const every = /^\*\/(\d+)$/.exec(minute);
  if (hour === "*" && every) return `${every[1]}m`;
  if (/^\d+$/.test(minute) && hour === "*") return "1h";
  const hours = /^\*\/(\d+)$/.exec(hour);
  if (/^\d+$/.test(minute) && hours) return `${hours[1]}h`;
  return null;
}
