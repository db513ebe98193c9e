// What a watchdog script does, read from its parse (./shell.ts) as its shell would run it: variables
// and their defaults, functions followed into with each call site's arguments, `for` over a literal
// list unrolled, if/case/&&/|| and early exits as the branch each command runs on. Each check (curl,
// wget, nc -z, /dev/tcp, pgrep/pidof/ps|grep, kill -0 on a pidfile, systemctl is-active, a log's age)
// is a service; each restart (systemctl, service, init.d, tmux, pm2, supervisorctl, docker, a
// backgrounded or nohup command, a start script) is the one that runs on that check's failing branch;
// a counter compared before it is the strike limit. Nothing runs; nothing is guessed: what cannot be
// read is said, with its line. Pure over the parse.
import { literalText, Parser, type Node, type Part, type Word } from "./shell.ts";
import {
  codesOf,
  curlCheck,
  durationText,
  globMatch,
  grepPattern,
  hostLabel,
  isHeartbeat,
  notifyFromCurl,
  optionAfter,
  parseSleep,
  portOf,
  safeArith,
  shellLine,
  wgetCheck,
} from "./commands.ts";

export { durationText, shellLine };

/** A value with the line of the script it comes from, and why. */
export interface Sourced<T = unknown> {
  value: T;
  line: number;
  why: string;
}

export interface Check {
  key: string;
  line: number;
  /** What it asks: the [service.check] key it becomes. */
  asks: "http" | "tcp" | "command" | "process" | "log";
  /** The [service.check] keys, each with its line. */
  table: Map<string, Sourced>;
  pidfile?: Sourced<string>;
  busy?: Map<string, Sourced>;
  /** curl -f (or wget): a status >= 400 fails; without it any answer passes the exit status. */
  failsOnHttpError?: boolean;
  judgedBy: Set<"status" | "code" | "body" | "output">;
  healthyCodes: Set<number>;
  failCodes: Set<number>;
  /** Code comparisons whose failing side no restart or count showed (a watch-only check's). */
  openCodes: { codes: number[]; inSet: boolean }[];
  notes: string[];
  /** Names the script gives it, best first. */
  names: { name: string; why: string; line: number; rank: number }[];
  port?: number;
  /** Folded into one check with another (`! pidof x && ! pgrep y`). */
  merged?: boolean;
}

export type ScriptAction =
  | { shape: "systemd"; unit: string; line: number; text: string }
  | { shape: "tmux"; target: string; run: string | null; socket: string | null; line: number; text: string }
  | { shape: "tmux-kill"; session: string; line: number; text: string }
  | {
      shape: "spawn";
      argv: string[];
      cwd: string | null;
      output: string | null;
      env: Record<string, string>;
      line: number;
      text: string;
      pidfile: string | null;
    }
  | {
      shape: "command";
      argv: string[];
      line: number;
      text: string;
      target: string | null;
      cwd: string | null;
      rank: number;
    }
  /** A stop before the start: by pattern (a trap), by PID, or a command (compose down, systemctl stop). */
  | { shape: "kill"; pattern: boolean; line: number; text: string; stop: string[] | null; cwd: string | null }
  | { shape: "unmappable"; line: number; text: string; why: string };

export interface Restart {
  check: Check | null;
  actions: ScriptAction[];
  line: number;
  limit: { n: number; line: number; text: string } | null;
  /** Names from the helper calls it runs in (strike blog ...), outermost first. */
  names: { name: string; line: number; why: string }[];
}

export interface Notify {
  url: string | null;
  format: string;
  line: number;
  to?: string;
  from?: string;
  why: string;
}

export interface Reading {
  checks: Check[];
  restarts: Restart[];
  notifies: Notify[];
  heartbeat: Sourced<string> | null;
  period: Sourced<string> | null;
  /** Lines whose commands were read into a value. */
  used: Set<number>;
  /** What was read but could not be mapped, with its line. */
  unreadable: { line: number; text: string; why: string }[];
  loop: boolean;
}

type OutputKind = "code" | "body" | "pids" | "count" | "word";

interface Value {
  text: string | null;
  line: number;
  /** The output of a check ($(curl ...)): its status code, body, PIDs, or a word. */
  output?: { check: Check; what: OutputKind };
  counter?: boolean;
  mtime?: string;
  now?: boolean;
  age?: string;
  file?: string;
  status?: Status;
  lastPid?: boolean;
}

type Status =
  | { kind: "check"; check: Check; healthy: boolean; contains?: Sourced<string> }
  /** $code compared: exit 0 exactly when (code in codes) === inSet; which side fails is what its branch does. */
  | { kind: "code"; check: Check; codes: number[]; inSet: boolean; line: number }
  | { kind: "limit"; n: number; reached: boolean; line: number; text: string }
  | { kind: "fresh"; log: string; seconds: number; fresh: boolean; line: number }
  | { kind: "listen"; port: number; listening: boolean; line: number }
  | null;

interface Cond {
  status: NonNullable<Status>;
  taken: boolean;
}

interface Frame {
  name: string;
  args: string[];
  line: number;
}

interface Ctx {
  conds: Cond[];
  params: (string | null)[];
  frames: Frame[];
  loopValue: string | null;
  cwd: { value: string | null };
  capture: { check: Check | null; what: OutputKind } | null;
  depth: number;
  background: boolean;
}

interface Result {
  status: Status;
  exits: boolean;
  /** After this statement, the rest runs only under this condition (an early exit on the other branch). */
  continueUnder: Cond | null;
  /** Output of the command, when it makes one the script reads ($(...)). */
  output?: Value;
}

const NONE: Result = { status: null, exits: false, continueUnder: null };
const IDENT = /^[A-Za-z][\w.@-]{0,63}$/;
const WRAPPERS = new Set(["sudo", "nohup", "setsid", "nice", "ionice", "exec", "command", "env", "doas"]);
const QUIET_COMMANDS = new Set([
  "echo",
  "printf",
  "log",
  "logger",
  "sleep",
  "true",
  ":",
  "date",
  "touch",
  "rm",
  "cat",
  "mkdir",
  "exit",
  "return",
  "local",
  "export",
  "readonly",
  "set",
  "trap",
  "shift",
  "wait",
  "cd",
  "source",
  ".",
  "tee",
  "chmod",
  "mv",
  "cp",
]);

export class Reader {
  private readonly vars = new Map<string, Value>();
  private readonly arrays = new Map<string, string[]>();
  private readonly functions = new Map<string, Extract<Node, { type: "function" }>>();
  private readonly checks = new Map<string, Check>();
  private readonly restarts: Restart[] = [];
  private readonly notifies: Notify[] = [];
  private heartbeat: Sourced<string> | null = null;
  private period: Sourced<string> | null = null;
  private loop = false;
  readonly used = new Set<number>();
  private readonly unreadable: { line: number; text: string; why: string }[] = [];
  private lastStatus: Status = null;
  private lastPidOf: ScriptAction | null = null;
  private steps = 0;

  constructor(
    private readonly scriptName: string,
    private readonly args: string[],
    /** What the script takes from its environment that is known: Termux's $PREFIX. */
    private readonly env: Record<string, string> = {},
  ) {}

  read(tree: Node): Reading {
    this.collectFunctions(tree);
    this.walk(tree, this.topCtx());
    const checks = [...this.checks.values()].filter((check) => check.judgedBy.size > 0 && !check.merged);
    return {
      checks,
      restarts: this.restarts,
      notifies: this.notifies,
      heartbeat: this.heartbeat,
      period: this.period,
      used: this.used,
      unreadable: this.unreadable,
      loop: this.loop,
    };
  }

  private topCtx(): Ctx {
    return {
      conds: [],
      params: this.args,
      frames: [],
      loopValue: null,
      cwd: { value: null },
      capture: null,
      depth: 0,
      background: false,
    };
  }

  /** Functions are known wherever they are defined (a script calls them after their definition). */
  private collectFunctions(node: Node) {
    if (node.type === "function") this.functions.set(node.name, node);
    else if (node.type === "list") for (const item of node.items) this.collectFunctions(item.node);
  }

  // ---- expansion ----

  private param(name: string, ctx: Ctx): Value | null {
    if (/^\d+$/.test(name)) {
      const index = Number(name) - 1;
      if (name === "0") return { text: this.scriptName, line: 0 };
      const value = ctx.params[index];
      return value === undefined ? { text: "", line: 0 } : { text: value, line: 0 };
    }
    if (name === "#") return { text: String(ctx.params.length), line: 0 };
    if (name === "!") return { text: null, line: 0, lastPid: true };
    if (name === "?") return { text: null, line: 0, status: this.lastStatus };
    if (name === "HOME") return this.vars.get(name) ?? { text: "~", line: 0 };
    const value = this.vars.get(name) ?? (name in this.env ? { text: this.env[name], line: 0 } : undefined);
    if (value?.line) this.used.add(value.line);
    return value ?? null;
  }

  /** A word's value: its text where every part is known, and what a lone $(...) or $X carries. */
  value(word: Word, ctx: Ctx): Value {
    const meaningful = word.parts.filter((part) => !(part.kind === "lit" && part.text === ""));
    if (meaningful.length === 1 && meaningful[0].kind !== "lit") return this.partValue(meaningful[0], ctx);
    let text: string | null = "";
    for (const part of word.parts) {
      const value = this.partValue(part, ctx);
      text = text === null || value.text === null ? null : text + value.text;
    }
    return { text, line: word.line };
  }

  private partValue(part: Part, ctx: Ctx): Value {
    switch (part.kind) {
      case "lit":
        return { text: part.text, line: 0 };
      case "param": {
        if (part.name.endsWith("[@]") || part.name.endsWith("[*]")) {
          const items = this.arrays.get(part.name.slice(0, -3));
          return { text: items ? items.join(" ") : null, line: 0 };
        }
        const found = this.param(part.name, ctx);
        const empty = !found || found.text === "";
        if ((part.op === ":-" && empty) || (part.op === "-" && !found)) return this.textValue(part.arg, ctx);
        if (part.op === ":=" && empty) return this.textValue(part.arg, ctx);
        if (part.op === "") return found ?? { text: null, line: 0 };
        if (part.op === ":-" || part.op === "-" || part.op === ":=") return found!;
        if (part.op === ":?" || part.op === "?") return empty ? { text: null, line: 0 } : found!;
        if (part.op === ":+" || part.op === "+") return empty ? { text: "", line: 0 } : this.textValue(part.arg, ctx);
        return { text: null, line: 0 };
      }
      case "subst":
        return this.substitution(part.body, ctx);
      case "arith":
        return this.arith(part.expr, ctx, 0);
    }
  }

  private textValue(text: string, ctx: Ctx): Value {
    if (!text) return { text: "", line: 0 };
    try {
      return this.value(new Parser(text).wholeWord(), ctx);
    } catch {
      return { text, line: 0 };
    }
  }

  /** The words a simple command runs with: "$@" and an unquoted array spread to several. */
  private words(words: Word[], ctx: Ctx): Value[] {
    const out: Value[] = [];
    for (const word of words) {
      const only = word.parts.length === 1 ? word.parts[0] : null;
      if (only && only.kind === "param" && (only.name === "@" || only.name === "*")) {
        out.push(...ctx.params.map((text) => ({ text, line: word.line })));
        continue;
      }
      if (only && only.kind === "param" && /\[[@*]\]$/.test(only.name)) {
        const items = this.arrays.get(only.name.slice(0, -3));
        if (items) {
          out.push(...items.map((text) => ({ text, line: word.line })));
          continue;
        }
      }
      const value = this.value(word, ctx);
      // An unquoted expansion is split on blanks, as the shell splits it.
      const split = !word.parts.some((part) => part.quoted) && word.parts.some((part) => part.kind !== "lit");
      if (split && value.text !== null && /\s/.test(value.text.trim()) && !value.output)
        out.push(
          ...value.text
            .trim()
            .split(/\s+/)
            .map((text) => ({ text, line: word.line })),
        );
      else if (split && value.text === "" && !value.output && !value.status) continue;
      else out.push(value);
    }
    return out;
  }

  /** $(( expr )): a number, a count, a log's age (now - mtime), or an increment (a counter). */
  private arith(expr: string, ctx: Ctx, line: number): Value {
    const tokens = this.arithTokens(expr, ctx);
    if (tokens.length === 1) return tokens[0];
    // X + 1: a counter going up.
    if (tokens.length === 3 && tokens[1].text === "+" && tokens[2].text === "1")
      return { text: null, line, counter: true };
    // now - mtime: the age of a file.
    if (tokens.length === 3 && tokens[1].text === "-" && tokens[0].now && tokens[2].mtime)
      return { text: null, line, age: tokens[2].mtime };
    const numbers = tokens.map((token) => token.text);
    if (numbers.every((text) => text !== null && /^[\d+\-*/ ]+$/.test(text))) {
      const evaluated = safeArith(numbers.join(" "));
      if (evaluated !== null) return { text: String(evaluated), line };
    }
    return { text: null, line };
  }

  private arithTokens(expr: string, ctx: Ctx): Value[] {
    const tokens: Value[] = [];
    try {
      const parser = new Parser(expr.replace(/\+\+/g, " + 1"));
      for (const raw of parser.tokens()) {
        if (/^[A-Za-z_]\w*$/.test(raw.raw)) tokens.push(this.vars.get(raw.raw) ?? { text: null, line: 0 });
        else tokens.push(this.value(raw, ctx));
      }
    } catch {
      return [{ text: null, line: 0 }];
    }
    return tokens;
  }

  /** $(...): run abstractly, capturing the check whose output it is. */
  private substitution(body: Node, ctx: Ctx): Value {
    const capture = { check: null as Check | null, what: "body" as OutputKind };
    const inner = { ...ctx, capture };
    const result = this.walk(body, inner);
    if (result.output) return result.output;
    if (capture.check)
      return { text: null, line: capture.check.line, output: { check: capture.check, what: capture.what } };
    return { text: null, line: 0, status: result.status };
  }

  // ---- walking ----

  private walk(node: Node, ctx: Ctx): Result {
    if (++this.steps > 200_000 || ctx.depth > 12) return NONE;
    const result = this.step(node, ctx);
    const status = result.status;
    if (status?.kind === "fresh") return { ...result, status: this.freshStatus(status, ctx) };
    if (status?.kind === "listen") return { ...result, status: this.listenStatus(status, ctx) };
    return result;
  }

  private step(node: Node, ctx: Ctx): Result {
    switch (node.type) {
      case "list":
        return this.walkList(node, ctx);
      case "andor":
        return this.walkAndOr(node, ctx);
      case "pipeline":
        return this.walkPipeline(node, ctx);
      case "simple":
        return this.walkSimple(node, ctx);
      case "if":
        return this.walkIf(node, ctx);
      case "case":
        return this.walkCase(node, ctx);
      case "for": {
        const items = node.items
          ? node.items.flatMap((word) => this.words([word], ctx).map((value) => value.text))
          : ctx.params;
        if (items.some((item) => item === null) || !items.length) {
          this.unreadable.push({
            line: node.line,
            text: `for ${node.name} in ...`,
            why: "a list the script does not spell out",
          });
          return this.walk(node.body, ctx);
        }
        for (const item of items) {
          this.vars.set(node.name, { text: item, line: node.line });
          this.walk(node.body, { ...ctx, loopValue: item });
        }
        return NONE;
      }
      case "while": {
        const forever =
          node.cond.type === "list" &&
          node.cond.items.length === 1 &&
          node.cond.items[0].node.type === "simple" &&
          ["true", ":", "[", "sleep"].includes(
            literalText(node.cond.items[0].node.words[0] ?? { parts: [], raw: "", line: 0 }),
          );
        if (forever && ctx.depth === 0) this.loop = true;
        const cond = this.walk(node.cond, ctx);
        const under = forever || !cond.status ? ctx : this.under(ctx, cond.status, !node.until);
        this.walk(node.body, { ...under, depth: ctx.depth + (forever ? 0 : 0) });
        return NONE;
      }
      case "group": {
        const inner = node.subshell ? { ...ctx, cwd: { value: ctx.cwd.value } } : ctx;
        const result = this.walk(node.body, inner);
        return node.subshell ? { ...result, exits: false } : result;
      }
      case "function":
        this.functions.set(node.name, node);
        return NONE;
      case "arith":
        return this.walkArith(node.expr, node.line, ctx);
      case "test": {
        const status = this.test(node.words, ctx, node.line);
        if (status) this.used.add(node.line);
        return { status, exits: false, continueUnder: null };
      }
      case "unreadable":
        this.unreadable.push({ line: node.line, text: node.text, why: "a shape import cannot read" });
        return NONE;
    }
  }

  /** How much has been read so far (a call that changes it contributed). */
  private found(): number {
    return (
      this.checks.size +
      this.restarts.reduce((n, r) => n + r.actions.length, 0) +
      this.notifies.length +
      this.increments
    );
  }

  private under(ctx: Ctx, status: Status, taken: boolean): Ctx {
    if (!status) return ctx;
    if (status.kind === "check") {
      status.check.judgedBy.add(status.contains ? "body" : "status");
      if (status.contains) status.check.table.set("contains", status.contains);
    }
    return { ...ctx, conds: [...ctx.conds, { status, taken }] };
  }

  private walkList(node: Extract<Node, { type: "list" }>, ctx: Ctx): Result {
    let last: Result = NONE;
    let current = ctx;
    for (const item of node.items) {
      last = this.walk(item.node, item.background ? { ...current, background: true } : current);
      if (item.background) this.background(item.node, current);
      if (last.exits) return { ...last, continueUnder: null };
      if (last.continueUnder) current = { ...current, conds: [...current.conds, last.continueUnder] };
    }
    return { ...last, continueUnder: null, exits: false };
  }

  private walkAndOr(node: Extract<Node, { type: "andor" }>, ctx: Ctx): Result {
    let result = this.walk(node.first, ctx);
    // stat -c %Y LOG || echo 0: the value is the first command's (the fallback only when it fails).
    const output = result.output;
    let continueUnder: Cond | null = null;
    for (const { op, node: next } of node.rest) {
      const status = result.status;
      const branch = this.under(ctx, status, op === "&&");
      const after = this.walk(next, branch);
      if (after.exits && status) continueUnder = { status, taken: op !== "&&" };
      // a || b: the status is a's when a is a check and b acted on its failure (check || restart).
      result = status && !after.status ? { ...after, status } : after.status ? after : { ...after, status };
      if (op === "||" && result.status && status && after.status && sameCheck(status, after.status))
        result = { ...result, status: combine(status, after.status, "||") };
      if (!result.output && output) result = { ...result, output };
      const either = status && after.status ? this.either(status, after.status, op) : null;
      if (either) result = { ...result, status: either };
    }
    return { ...result, exits: false, continueUnder };
  }

  /**
   * `! pidof x && ! pgrep -f y` (both gone: act), `pidof x || pgrep -f y` (either there: fine): one check
   * that passes when either command does, as the script's condition does — never one of the two alone.
   */
  private either(a: NonNullable<Status>, b: NonNullable<Status>, op: "&&" | "||"): Status {
    if (a.kind !== "check" || b.kind !== "check" || a.check === b.check) return null;
    if (a.healthy !== b.healthy || a.healthy !== (op === "||")) return null;
    const [first, second] = [a.check.table.get("command")?.value, b.check.table.get("command")?.value];
    if (!Array.isArray(first) || !Array.isArray(second)) return null;
    const argv = ["sh", "-c", `${shellLine(first)} > /dev/null || ${shellLine(second)} > /dev/null`];
    const check = this.register(`command ${JSON.stringify(argv)}`, a.check.line, "command");
    check.table.set("command", {
      value: argv,
      line: a.check.line,
      why: `either check passes (lines ${a.check.line}, ${b.check.line})`,
    });
    check.names.push(...a.check.names, ...b.check.names);
    a.check.merged = b.check.merged = true;
    return { kind: "check", check, healthy: a.healthy };
  }

  private walkIf(node: Extract<Node, { type: "if" }>, ctx: Ctx): Result {
    let current = ctx;
    let continueUnder: Cond | null = null;
    let allExit = true;
    for (const clause of node.clauses) {
      const cond = this.walk(clause.cond, current);
      const body = this.walk(clause.body, this.under(current, cond.status, true));
      if (body.exits && cond.status && node.clauses.length === 1) continueUnder = { status: cond.status, taken: false };
      if (!body.exits) allExit = false;
      current = this.under(current, cond.status, false);
    }
    if (node.otherwise) {
      const body = this.walk(node.otherwise, current);
      const first = node.clauses[0];
      if (body.exits && node.clauses.length === 1 && !continueUnder) {
        const cond = this.conditionOf(first.cond, ctx);
        if (cond) continueUnder = { status: cond, taken: true };
      }
      if (!body.exits) allExit = false;
    } else allExit = false;
    return { status: null, exits: allExit, continueUnder: allExit ? null : continueUnder };
  }

  /** A condition's status again (already walked: read from the checks it registered, no new events). */
  private conditionOf(cond: Node, ctx: Ctx): Status {
    const saved = { restarts: this.restarts.length, notifies: this.notifies.length };
    const result = this.walk(cond, ctx);
    this.restarts.length = saved.restarts;
    this.notifies.length = saved.notifies;
    return result.status;
  }

  private walkCase(node: Extract<Node, { type: "case" }>, ctx: Ctx): Result {
    const subject = this.value(node.word, ctx);
    const check = subject.output?.what === "code" ? subject.output.check : null;
    if (!check && subject.text !== null) {
      // A known word (a sub-command `status)`, the script's $1): only the arm it matches runs.
      for (const arm of node.arms)
        if (arm.patterns.some((pattern) => globMatch(this.value(pattern, ctx).text ?? "\u0000", subject.text!)))
          return this.walk(arm.body, ctx);
      return NONE;
    }
    if (!check) {
      for (const arm of node.arms) this.walk(arm.body, ctx);
      return NONE;
    }
    // case $code in ...: each arm's codes, healthy or failing by what the arm does.
    check.judgedBy.add("code");
    const failing: number[] = [];
    const healthy: number[] = [];
    let defaultFails: boolean | null = null;
    for (const arm of node.arms) {
      const codes = arm.patterns.flatMap((pattern) => codesOf(this.value(pattern, ctx).text ?? ""));
      const isDefault = arm.patterns.some((pattern) => literalText(pattern) === "*");
      const before = { restarts: this.restarts.length, counters: this.increments };
      const statusHere: Status = { kind: "check", check, healthy: false };
      const bodyCtx = this.under(ctx, statusHere, true);
      // Walk once as failing; an arm that neither restarts nor counts is healthy: walk it again as such.
      const marker = this.restarts.length;
      this.walk(arm.body, bodyCtx);
      const acts = this.restarts.length > before.restarts || this.increments > before.counters;
      if (!acts) {
        this.restarts.length = marker;
        this.walk(arm.body, this.under(ctx, { kind: "check", check, healthy: true }, true));
      }
      if (isDefault) defaultFails = acts;
      else (acts ? failing : healthy).push(...codes);
      this.used.add(arm.line);
    }
    if (defaultFails) for (const code of healthy) check.healthyCodes.add(code);
    else for (const code of failing) check.failCodes.add(code);
    this.used.add(node.line);
    return NONE;
  }

  private increments = 0;

  /** A strike counted on this branch: a code comparison above it fails on this side. */
  private counted(ctx: Ctx) {
    this.increments++;
    for (let index = ctx.conds.length - 1; index >= 0; index--) {
      const { status, taken } = ctx.conds[index];
      if (status.kind === "check") return;
      if (status.kind === "code") return this.settleCodes(status, taken);
    }
  }

  /** The branch taken on a code comparison acts (restarts, counts): its side's codes fail. */
  private settleCodes(status: Extract<NonNullable<Status>, { kind: "code" }>, taken: boolean) {
    const check = status.check;
    check.openCodes = check.openCodes.filter((open) => open.codes !== status.codes);
    const failIn = status.inSet === taken;
    for (const code of status.codes) (failIn ? check.failCodes : check.healthyCodes).add(code);
  }

  private walkPipeline(node: Extract<Node, { type: "pipeline" }>, ctx: Ctx): Result {
    const results = node.commands.map((command, index) =>
      index === 0 ? this.walk(command, ctx) : this.filter(command, ctx, node),
    );
    let status = this.pipelineStatus(node, ctx, results);
    if (node.negated && status) status = negate(status);
    const last = results[results.length - 1];
    return { status, exits: false, continueUnder: null, output: last?.output };
  }

  /** A command after a pipe: grep/wc/awk on what came before (walked for its own effects otherwise). */
  private filter(command: Node, ctx: Ctx, _pipeline: Node): Result {
    if (command.type !== "simple") return this.walk(command, ctx);
    const argv = this.words(command.words, ctx).map((value) => value.text ?? "");
    if (
      ["grep", "egrep", "fgrep", "wc", "awk", "head", "tail", "jq", "sort", "cut", "tr", "sed", "xargs"].includes(
        argv[0],
      )
    )
      return NONE;
    return this.walkSimple(command, ctx);
  }

  private pipelineStatus(node: Extract<Node, { type: "pipeline" }>, ctx: Ctx, results: Result[]): Status {
    const simple = node.commands.map((command) =>
      command.type === "simple" ? this.words(command.words, ctx).map((value) => value.text ?? "") : [],
    );
    const first = results[0];
    const source = first.status?.kind === "check" ? first.status.check : (ctx.capture?.check ?? null);
    const greps = simple.slice(1).filter((argv) => /^(e|f)?grep$/.test(argv[0] ?? ""));
    const last = simple[simple.length - 1] ?? [];
    // curl ... | grep -q TEXT: the body must hold it.
    if (source?.asks === "http" && greps.length) {
      const pattern = grepPattern(greps[0]);
      if (pattern !== null) {
        const invert = greps[0].some((arg) => /^-\w*v/.test(arg));
        return {
          kind: "check",
          check: source,
          healthy: !invert,
          contains: { value: pattern, line: node.line, why: `grep ${shellLine([pattern])}` },
        };
      }
    }
    if (source?.asks === "http" && last[0] === "jq") {
      source.notes.push(
        `the body is judged by jq (line ${node.line}): tend's contains is a plain substring; not mapped`,
      );
      source.judgedBy.add("status");
      return { kind: "check", check: source, healthy: true };
    }
    // ps ... | grep [-v grep] | grep PATTERN [| wc -l]: a process by pattern, as pgrep -f does.
    if (simple[0]?.[0] === "ps" && greps.length) {
      const patterns = greps.filter((argv) => !(argv.some((arg) => /^-\w*v/.test(arg)) && argv.includes("grep")));
      const pattern = patterns.length ? grepPattern(patterns[patterns.length - 1]) : null;
      if (pattern) {
        const check = this.processByPattern(
          ["pgrep", "-f", pattern.replace(/^\[(.)\]/, "$1")],
          node.line,
          `ps | grep ${shellLine([pattern])} (line ${node.line}) is pgrep -f`,
        );
        check.judgedBy.add("status");
        if (ctx.capture) {
          ctx.capture.check = check;
          ctx.capture.what = last[0] === "wc" || greps.some((argv) => argv.includes("-c")) ? "count" : "pids";
        }
        return { kind: "check", check, healthy: true };
      }
    }
    if (source && ctx.capture && last[0] === "wc") {
      ctx.capture.check = source;
      ctx.capture.what = "count";
    }
    // ss -ltn | grep :PORT, netstat -tln | grep :PORT: something listens (busy evidence).
    if ((simple[0]?.[0] === "ss" || simple[0]?.[0] === "netstat") && greps.length) {
      const port = /:(\d{1,5})\b/.exec(grepPattern(greps[greps.length - 1]) ?? "");
      if (port) return { kind: "listen", port: Number(port[1]), listening: true, line: node.line };
    }
    if (source && greps.length === 0 && results.length > 1) return first.status;
    return results[results.length - 1]?.status ?? null;
  }

  private walkArith(expr: string, line: number, ctx: Ctx): Result {
    // (( count++ )), (( count += 1 )): a counter going up.
    const increment = /^\s*(?:(\w+)\s*(\+\+|\+=\s*1)|\+\+\s*(\w+))\s*$/.exec(expr);
    if (increment) {
      const name = increment[1] ?? increment[3];
      this.vars.set(name, { text: null, line, counter: true });
      this.counted(ctx);
      return NONE;
    }
    const compare = /^(.*?)(>=|<=|==|!=|>|<)(.*)$/s.exec(expr);
    if (!compare) return NONE;
    this.used.add(line);
    const left = this.arith(compare[1], ctx, line);
    const right = this.arith(compare[3], ctx, line);
    const op = { ">=": "-ge", "<=": "-le", "==": "-eq", "!=": "-ne", ">": "-gt", "<": "-lt" }[compare[2]]!;
    return { status: this.compare(left, op, right, line, expr.trim()), exits: false, continueUnder: null };
  }

  // ---- tests: [ ], test, [[ ]] ----

  private test(words: Word[], ctx: Ctx, line: number): Status {
    const values = words.map((word) => ({ raw: literalText(word), value: this.value(word, ctx), word }));
    return this.testExpr(values, line);
  }

  private testExpr(items: { raw: string; value: Value; word: Word }[], line: number): Status {
    const orAt = items.findIndex((item) => item.raw === "||" || item.raw === "-o");
    if (orAt > 0)
      return combineAny(this.testExpr(items.slice(0, orAt), line), this.testExpr(items.slice(orAt + 1), line), "||");
    const andAt = items.findIndex((item) => item.raw === "&&" || item.raw === "-a");
    if (andAt > 0)
      return combineAny(this.testExpr(items.slice(0, andAt), line), this.testExpr(items.slice(andAt + 1), line), "&&");
    if (items[0]?.raw === "!") {
      const inner = this.testExpr(items.slice(1), line);
      return inner ? negate(inner) : null;
    }
    if (items.length === 2) {
      const [op, operand] = items;
      const value = operand.value;
      if ((op.raw === "-z" || op.raw === "-n") && value.output) {
        const check = value.output.check;
        check.judgedBy.add(value.output.what === "body" ? "output" : "status");
        if (value.output.what === "body")
          check.table.set("any_response", { value: true, line, why: `[ ${op.raw} "$(curl ...)" ]` });
        return { kind: "check", check, healthy: op.raw === "-n" };
      }
      if (["-e", "-d", "-f"].includes(op.raw) && operand.value.text === null) {
        // [ -e /proc/$PID ] with PID from a pidfile.
        const pid = /\/proc\/\$\{?(\w+)/.exec(operand.word.raw);
        const source = pid ? this.vars.get(pid[1]) : null;
        if (source?.file)
          return {
            kind: "check",
            check: this.pidfileCheck(source.file, line, `[ ${op.raw} /proc/$PID ]`),
            healthy: true,
          };
      }
      return null;
    }
    if (items.length === 3)
      return this.compare(
        items[0].value,
        items[1].raw,
        items[2].value,
        line,
        items.map((i) => i.word.raw).join(" "),
        items[2].word.raw,
      );
    return null;
  }

  private compare(left: Value, op: string, right: Value, line: number, text: string, rawRight = ""): Status {
    const flip: Record<string, string> = { "-gt": "-lt", "-lt": "-gt", "-ge": "-le", "-le": "-ge" };
    if (right.output || right.counter || right.age || right.status !== undefined) {
      if (!(left.output || left.counter || left.age || left.status !== undefined))
        return this.compare(right, flip[op] ?? op, left, line, text);
    }
    const number = right.text !== null && /^-?\d+$/.test(right.text.trim()) ? Number(right.text) : null;
    const equal = op === "=" || op === "==" || op === "-eq";
    const unequal = op === "!=" || op === "-ne";
    // $code = 200, -ne 200, -ge 500: a status code rule.
    if (left.output?.what === "code") {
      const check = left.output.check;
      check.judgedBy.add("code");
      const coded = (codes: number[], inSet: boolean): Status => {
        check.openCodes.push({ codes, inSet });
        return { kind: "code", check, codes, inSet, line };
      };
      if (op === "=~") return coded(codesOf(rawRight.replace(/^\^|\$$/g, "").replace(/[()]/g, "")), true);
      if (number === null) return null;
      if (equal || unequal) return coded([number], equal);
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
      if (op === "-ge" || op === "-gt") return coded(range(op === "-ge" ? number : number + 1, 599), true);
      if (op === "-lt" || op === "-le") return coded(range(100, op === "-lt" ? number - 1 : number), true);
      return null;
    }
    // $count -ge 3: the strike limit.
    if (left.counter && number !== null && number > 0) {
      const reached: Record<string, number> = { "-ge": number, "-gt": number + 1, "-eq": number };
      if (op in reached) return { kind: "limit", n: reached[op], reached: true, line, text };
      if (op === "-lt") return { kind: "limit", n: number, reached: false, line, text };
      if (op === "-le") return { kind: "limit", n: number + 1, reached: false, line, text };
      return null;
    }
    // now - mtime of a log, against seconds: fresh or stale.
    if (left.age && number !== null) {
      if (op === "-gt" || op === "-ge") return { kind: "fresh", log: left.age, seconds: number, fresh: false, line };
      if (op === "-lt" || op === "-le") return { kind: "fresh", log: left.age, seconds: number, fresh: true, line };
      return null;
    }
    // systemctl is-active X = active
    if (left.output?.what === "word" && right.text !== null) {
      left.output.check.judgedBy.add("status");
      if (equal) return { kind: "check", check: left.output.check, healthy: right.text === "active" };
      if (unequal) return { kind: "check", check: left.output.check, healthy: right.text !== "active" };
      return null;
    }
    // a count of processes against 0.
    if ((left.output?.what === "count" || left.output?.what === "pids") && number !== null) {
      const check = left.output.check;
      check.judgedBy.add("status");
      const healthy =
        (op === "-gt" && number === 0) || (op === "-ge" && number === 1) || (unequal && number === 0)
          ? true
          : (equal && number === 0) || (op === "-lt" && number === 1) || (op === "-le" && number === 0)
            ? false
            : null;
      return healthy === null ? null : { kind: "check", check, healthy };
    }
    // $? -ne 0, $rc -eq 0: the status of what ran before.
    if (left.status && number === 0) {
      if (equal) return left.status;
      if (unequal || op === "-gt") return negate(left.status);
    }
    return null;
  }

  // ---- simple commands ----

  private walkSimple(node: Extract<Node, { type: "simple" }>, ctx: Ctx): Result {
    const result = this.simpleCommand(node, ctx);
    this.lastStatus = result.status;
    return result;
  }

  private simpleCommand(node: Extract<Node, { type: "simple" }>, ctx: Ctx): Result {
    if (!node.words.length) {
      for (const assign of node.assigns) this.assign(assign, ctx);
      // $(...) in a redirect-only or assignment line still ran: its status is the last one.
      const last = node.assigns[node.assigns.length - 1];
      const value = last ? this.vars.get(last.name) : undefined;
      return {
        status: value?.output ? this.statusOfOutput(value.output) : (value?.status ?? null),
        exits: false,
        continueUnder: null,
      };
    }
    const values = this.words(node.words, ctx);
    const argv = values.map((value) => value.text);
    const name = argv[0];
    if (name === null || name === undefined) {
      this.unreadable.push({
        line: node.line,
        text: node.words.map((w) => w.raw).join(" "),
        why: "a command named by a value the script does not set",
      });
      return NONE;
    }
    if (name === "exit" || name === "return") return { status: null, exits: true, continueUnder: null };
    if (name === "[" || name === "test") {
      const words = name === "[" ? node.words.slice(1, -1) : node.words.slice(1);
      const status = this.test(words, ctx, node.line);
      if (status) this.used.add(node.line);
      return { status, exits: false, continueUnder: null };
    }
    if (name === "cd") {
      ctx.cwd.value = argv[1] ?? "~";
      return NONE;
    }
    if (name === "let") return this.walkArith(argv.slice(1).join(" "), node.line, ctx);
    if (name === "source" || name === ".") {
      this.unreadable.push({
        line: node.line,
        text: node.words.map((w) => w.raw).join(" "),
        why: "settings from another file are not read: the values it sets are unknown here",
      });
      return NONE;
    }
    if (name === "local" || name === "export" || name === "readonly" || name === "declare") {
      for (const word of node.words.slice(1)) {
        const match = /^([A-Za-z_]\w*)=(.*)$/s.exec(word.raw);
        if (match) {
          const parser = new Parser(match[2]);
          let value: Word | null = null;
          try {
            value = match[2] ? parser.word(false) : null;
          } catch {
            value = null;
          }
          this.assign({ name: match[1], value, array: null, line: node.line }, ctx);
        }
      }
      return NONE;
    }
    const fn = this.functions.get(name);
    if (fn && !ctx.frames.some((frame) => frame.name === name)) {
      const args = argv.slice(1).map((text) => text ?? "");
      const frame = { name, args, line: node.line };
      const inner: Ctx = { ...ctx, params: argv.slice(1), frames: [...ctx.frames, frame], depth: ctx.depth + 1 };
      const before = this.found();
      const result = this.walk(fn.body, inner);
      this.used.add(fn.line);
      if (this.found() !== before || result.status || result.output) this.used.add(node.line);
      return { status: result.status, exits: false, continueUnder: null, output: result.output };
    }
    const plain = unwrap(argv.map((text) => text ?? "\u0000"));
    const command = plain.argv;
    const known = command.every((word) => !word.includes("\u0000"));
    // A value the script's $(...) carried: cat FILE, date +%s, stat -c %Y FILE.
    const output = this.outputOf(command, node, ctx);
    if (output) return { status: null, exits: false, continueUnder: null, output };
    const check = this.checkOf(command, plain.timeout, node, ctx, known, values);
    if (check) return check;
    if (this.notifyOf(command, node, known)) return NONE;
    if (
      this.restartOf(
        argv.map((text) => text ?? "\u0000"),
        node,
        ctx,
        known,
      )
    )
      return NONE;
    if (command[0] === "echo" && node.redirects.some((r) => r.op.includes(">")) && values.some((v) => v.lastPid)) {
      const target = node.redirects.find((r) => r.op.includes(">"))?.target;
      const file = target ? this.value(target, ctx).text : null;
      if (file && this.lastPidOf?.shape === "spawn") {
        this.lastPidOf.pidfile = file;
        this.used.add(node.line);
      }
    }
    if (command[0] === "sleep" && ctx.depth === 0 && this.loop && /^\d+[smhd]?$/.test(command[1] ?? "")) {
      const seconds = parseSleep(command[1]);
      if (seconds && seconds >= 1 && !this.period)
        this.period = { value: durationText(seconds), line: node.line, why: `the loop's sleep ${command[1]}` };
    }
    return NONE;
  }

  private assign(assign: { name: string; value: Word | null; array: Word[] | null; line: number }, ctx: Ctx) {
    if (assign.array) {
      const items = assign.array.map((word) => this.value(word, ctx).text);
      if (items.every((item): item is string => item !== null)) this.arrays.set(assign.name, items);
      return;
    }
    const value = assign.value ? this.value(assign.value, ctx) : { text: "", line: assign.line };
    if (value.counter) this.counted(ctx);
    if (value.counter || value.age || value.mtime || value.now || value.file) this.used.add(assign.line);
    if (value.output) this.used.add(assign.line);
    if (value.output || value.status)
      this.lastStatus = value.output ? this.statusOfOutput(value.output) : (value.status ?? null);
    this.vars.set(assign.name, { ...value, line: assign.line });
  }

  private statusOfOutput(output: NonNullable<Value["output"]>): Status {
    return { kind: "check", check: output.check, healthy: true };
  }

  /** What a command prints that a script compares: now, a file's mtime, a file's content. */
  private outputOf(argv: string[], node: Extract<Node, { type: "simple" }>, ctx: Ctx): Value | null {
    if (!ctx.capture) return null;
    const [name, ...rest] = argv;
    if (name === "date" && rest.includes("+%s") && !rest.includes("-r"))
      return { text: null, line: node.line, now: true };
    if (name === "date" && rest.includes("-r") && rest.includes("+%s")) {
      const file = rest[rest.indexOf("-r") + 1];
      return { text: null, line: node.line, mtime: file };
    }
    if (name === "stat" && (rest.includes("%Y") || rest.includes("-c%Y") || rest.includes("%m"))) {
      const file = rest.filter((arg) => !arg.startsWith("-") && arg !== "%Y" && arg !== "%m").pop();
      if (file) return { text: null, line: node.line, mtime: file };
    }
    if (name === "cat" && rest.length === 1) return { text: null, line: node.line, file: rest[0] };
    return null;
  }

  // ---- checks ----

  private register(key: string, line: number, asks: Check["asks"]): Check {
    let check = this.checks.get(key);
    if (!check) {
      check = {
        key,
        line,
        asks,
        table: new Map(),
        judgedBy: new Set(),
        healthyCodes: new Set(),
        failCodes: new Set(),
        openCodes: [],
        notes: [],
        names: [],
      };
      this.checks.set(key, check);
    }
    this.used.add(line);
    return check;
  }

  private processByPattern(argv: string[], line: number, why: string): Check {
    const check = this.register(`command ${JSON.stringify(argv)}`, line, "command");
    if (!check.table.has("command")) check.table.set("command", { value: argv, line, why });
    const pattern = argv[argv.length - 1];
    const base = pattern
      .split(/\s+/)
      .map((word) => word.split("/").pop()!)
      .find((word) => IDENT.test(word) && !/^(python\d?|node|java|bash|sh|ruby|perl|php)$/.test(word));
    if (base)
      check.names.push({
        name: base.replace(/\.(py|js|jar|sh|rb|pl|x86_64|bin|exe)$/, ""),
        why: `its process ${JSON.stringify(pattern)}`,
        line,
        rank: 4,
      });
    return check;
  }

  private pidfileCheck(file: string, line: number, why: string): Check {
    const check = this.register(`pidfile ${file}`, line, "process");
    check.table.set("process", { value: true, line, why });
    check.pidfile = { value: file, line, why: "the pidfile it reads" };
    check.judgedBy.add("status");
    const base = file
      .split("/")
      .pop()!
      .replace(/\.pid$/, "");
    if (IDENT.test(base)) check.names.push({ name: base, why: `its pidfile`, line, rank: 4 });
    return check;
  }

  private checkOf(
    argv: string[],
    wrapperTimeout: string | null,
    node: Extract<Node, { type: "simple" }>,
    ctx: Ctx,
    known: boolean,
    values: Value[],
  ): Result | null {
    const [name, ...rest] = argv;
    const line = node.line;
    // Registered here; judged once a condition reads its status or its output.
    const result = (check: Check, what: OutputKind = "body"): Result => {
      const site = ctx.frames[0];
      if (site && check.line === line) {
        // Found inside a helper (check_http URL): the service is at the call site, its value from the helper.
        check.line = site.line;
        const helpers = ctx.frames.map((frame) => frame.name).join(" → ");
        for (const [key, value] of check.table) {
          // The URL, host or argv is what the call site passes: its line, and the helper's.
          const passed = ["http", "tcp", "command"].includes(key);
          value.why = `${value.why} in ${helpers}()${passed ? ` (line ${value.line})` : ""}`;
          if (passed) value.line = site.line;
        }
        this.used.add(site.line);
      }
      if (ctx.capture && !ctx.capture.check && !node.redirects.some((r) => r.op === ">" && r.fd !== "2")) {
        ctx.capture.check = check;
        ctx.capture.what = what;
      }
      if (ctx.loopValue && IDENT.test(ctx.loopValue))
        check.names.push({ name: ctx.loopValue, why: "the loop's value", line, rank: 1 });
      for (const entry of frameNames(ctx.frames)) check.names.push({ ...entry, rank: 2 });
      return { status: { kind: "check", check, healthy: true }, exits: false, continueUnder: null };
    };
    if (name === "curl" || name === "wget") {
      if (!known) {
        const url = values.find((value) => value.text === null);
        if (values.some((value) => /^https?:/.test(value.text ?? ""))) return null;
        this.unreadable.push({
          line,
          text: node.words.map((w) => w.raw).join(" "),
          why: `its URL is not set in the script${url ? "" : ""}`,
        });
        return null;
      }
      const http = name === "curl" ? curlCheck(rest) : wgetCheck(rest);
      if (!http || http.post) return null;
      if (isHeartbeat(http.url)) {
        if (!this.heartbeat && !this.failingCheck(ctx))
          this.heartbeat = { value: http.url, line, why: "pinged after each run" };
        this.used.add(line);
        return NONE;
      }
      const options = [http.timeout ?? wrapperTimeout, http.fail, http.insecure, http.head, http.headers, http.ca];
      const check = this.register(`http ${http.url} ${JSON.stringify(options)}`, line, "http");
      if (!check.table.has("http")) {
        check.table.set("http", { value: http.url, line, why: `${name}` });
        const timeout = http.timeout ?? wrapperTimeout;
        if (timeout)
          check.table.set("timeout", {
            value: durationText(Number(timeout)),
            line,
            why: http.timeout ? `${name} ${http.timeoutFlag} ${timeout}` : `timeout ${timeout}`,
          });
        if (http.insecure) check.table.set("insecure", { value: true, line, why: `${name} ${http.insecureFlag}` });
        if (http.ca) check.table.set("ca", { value: http.ca, line, why: "--cacert" });
        if (Object.keys(http.headers).length) check.table.set("headers", { value: http.headers, line, why: "-H" });
        check.failsOnHttpError = http.fail;
        check.notes.push(...http.notes.map((note) => `${note} (line ${line})`));
        const host = hostLabel(http.url);
        if (host) check.names.push({ name: host, why: "its URL's host", line, rank: 5 });
        const port = portOf(http.url);
        if (port) check.port = port;
      }
      return result(check, http.code ? "code" : "body");
    }
    if (name === "nc" || name === "ncat" || name === "netcat") {
      const flags = rest.filter((arg) => arg.startsWith("-"));
      if (!flags.some((flag) => /z/.test(flag)) || !known) return null;
      const wait = optionAfter(rest, "-w");
      const positional = rest.filter(
        (arg, index) => !arg.startsWith("-") && !(rest[index - 1] === "-w" || rest[index - 1] === "-i"),
      );
      if (positional.length < 2 || !/^\d+$/.test(positional[1])) return null;
      const target = `${positional[0]}:${positional[1]}`;
      const check = this.register(`tcp ${target}`, line, "tcp");
      if (!check.table.has("tcp")) {
        check.table.set("tcp", { value: target, line, why: "nc -z" });
        const timeout = wait ?? wrapperTimeout;
        if (timeout && /^\d+(\.\d+)?$/.test(timeout))
          check.table.set("timeout", {
            value: durationText(Number(timeout)),
            line,
            why: wait ? `nc -w ${wait}` : `timeout ${timeout}`,
          });
        check.port = Number(positional[1]);
      }
      return result(check);
    }
    // timeout 3 bash -c '</dev/tcp/HOST/PORT', echo > /dev/tcp/HOST/PORT
    const devTcp = [...argv, ...node.redirects.map((r) => (r.target ? (this.value(r.target, ctx).text ?? "") : ""))]
      .map((text) => /\/dev\/tcp\/([^/\s]+)\/(\d+)/.exec(text))
      .find(Boolean);
    if (devTcp) {
      const target = `${devTcp[1]}:${devTcp[2]}`;
      const check = this.register(`tcp ${target}`, line, "tcp");
      if (!check.table.has("tcp")) {
        check.table.set("tcp", { value: target, line, why: "/dev/tcp" });
        if (wrapperTimeout)
          check.table.set("timeout", {
            value: durationText(Number(wrapperTimeout)),
            line,
            why: `timeout ${wrapperTimeout}`,
          });
        check.port = Number(devTcp[2]);
      }
      return result(check);
    }
    if ((name === "pgrep" || name === "pidof") && known) {
      const check = this.processByPattern(argv, line, name === "pgrep" ? "pgrep" : "pidof");
      return result(check, "pids");
    }
    if (name === "kill" && (rest[0] === "-0" || rest[0] === "-s0")) {
      const pidWord = node.words[node.words.length - 1];
      const pidValue = values[values.length - 1];
      const file = pidValue.file ?? this.catFile(pidWord, ctx);
      if (file) return result(this.pidfileCheck(file, line, "kill -0 $(cat PIDFILE)"));
      return null;
    }
    if (name === "ps" && (rest.includes("-p") || rest.some((arg) => /^-\w*p$/.test(arg)))) {
      const pidValue = values[values.length - 1];
      const file = pidValue.file ?? this.catFile(node.words[node.words.length - 1], ctx);
      if (file) return result(this.pidfileCheck(file, line, "ps -p $(cat PIDFILE)"));
      return null;
    }
    if (name === "systemctl" && rest[0] === "is-active" && known) {
      const units = rest.slice(1).filter((arg) => !arg.startsWith("-"));
      if (units.length !== 1) return null;
      const argvCheck = ["systemctl", "is-active", "--quiet", units[0]];
      const check = this.register(`command ${JSON.stringify(argvCheck)}`, line, "command");
      if (!check.table.has("command")) {
        check.table.set("command", { value: argvCheck, line, why: "systemctl is-active" });
        check.names.push({ name: units[0].replace(/\.service$/, ""), why: "its unit", line, rank: 4 });
      }
      return result(check, "word");
    }
    if (
      (name === "service" && rest[1] === "status") ||
      (/^\/etc\/init\.d\//.test(name ?? "") && rest[0] === "status")
    ) {
      if (!known) return null;
      const check = this.register(`command ${JSON.stringify(argv)}`, line, "command");
      if (!check.table.has("command")) {
        check.table.set("command", { value: argv, line, why: `${name} status` });
        const target = name === "service" ? rest[0] : name.split("/").pop()!;
        if (IDENT.test(target)) check.names.push({ name: target, why: "its service", line, rank: 4 });
      }
      return result(check);
    }
    // find LOG -mmin -N: the log was written within N minutes (output non-empty).
    if (name === "find" && known) {
      const at = rest.indexOf("-mmin");
      const value = at >= 0 ? rest[at + 1] : null;
      if (value && /^-\d+$/.test(value)) {
        const check = this.logCheck(rest[0], Number(value.slice(1)) * 60, line, `find -mmin ${value}`);
        return result(check, "pids");
      }
    }
    return null;
  }

  private catFile(word: Word, ctx: Ctx): string | null {
    const part = word.parts.find((p) => p.kind === "subst");
    if (part && part.kind === "subst") {
      const value = this.substitution(part.body, ctx);
      return value.file ?? null;
    }
    const param = word.parts.find((p) => p.kind === "param");
    if (param && param.kind === "param") return this.vars.get(param.name)?.file ?? null;
    return null;
  }

  private logCheck(log: string, seconds: number, line: number, why: string): Check {
    const check = this.register(`log ${log}`, line, "log");
    if (!check.table.has("log")) {
      check.table.set("log", { value: log, line, why });
      check.table.set("fresh", { value: durationText(seconds), line, why });
      const base = log
        .split("/")
        .pop()!
        .replace(/\.(log|txt|stamp)$/, "");
      if (IDENT.test(base)) check.names.push({ name: base, why: "its log", line, rank: 5 });
    }
    check.judgedBy.add("status");
    return check;
  }

  /** The check whose failing branch this context is on (a code comparison's either side, until known). */
  private failingCheck(ctx: Ctx): Check | null {
    for (let index = ctx.conds.length - 1; index >= 0; index--) {
      const { status, taken } = ctx.conds[index];
      if (status.kind === "check" && status.healthy !== taken) return status.check;
      if (status.kind === "code") return status.check;
    }
    return null;
  }

  /** Something listens on PORT (ss | grep): busy evidence inside a failing check. */
  private listenStatus(status: Extract<NonNullable<Status>, { kind: "listen" }>, ctx: Ctx): Status {
    const check = this.failingCheck(ctx);
    if (check) {
      check.busy ??= new Map();
      check.busy.set("port", { value: status.port, line: status.line, why: "something listens there (ss)" });
      this.used.add(status.line);
    }
    return null;
  }

  /** A fresh/stale comparison of a log's age: busy evidence inside a failing check, else a log check. */
  private freshStatus(status: Extract<NonNullable<Status>, { kind: "fresh" }>, ctx: Ctx): Status {
    const failing = this.failingCheck(ctx);
    if (failing && failing.asks === "http") {
      const check = failing;
      check.busy ??= new Map();
      check.busy.set("log", { value: status.log, line: status.line, why: "its log's age" });
      check.busy.set("fresh", {
        value: durationText(status.seconds),
        line: status.line,
        why: `${status.seconds} seconds`,
      });
      return null;
    }
    return {
      kind: "check",
      check: this.logCheck(status.log, status.seconds, status.line, `its age against ${status.seconds}s`),
      healthy: status.fresh,
    };
  }

  // ---- notifications ----

  private notifyOf(argv: string[], node: Extract<Node, { type: "simple" }>, known: boolean): boolean {
    const [name, ...rest] = argv;
    const line = node.line;
    if (name === "curl") {
      const http = curlCheck(rest.map((arg) => arg.replace(/\u0000/g, "\u0000")));
      if (!http?.post) return false;
      this.used.add(line);
      // The message may hold what only the run knows ($(hostname)); where it goes must be the script's.
      const where = [http.url, ...http.data.filter((field) => /^(chat_id|token|user)=/.test(field))];
      if (where.some((text) => text.includes("\u0000")) || !http.url) {
        this.notifies.push({
          url: null,
          format: "text",
          line,
          why: "a value it sends to is not set in the script (from the environment?)",
        });
        return true;
      }
      const found = notifyFromCurl(http, line);
      const same = this.notifies.some((one) => one.url === found.url && one.format === found.format);
      if (!same) this.notifies.push(found);
      return true;
    }
    if (name === "mail" || name === "mailx" || name === "sendmail") {
      this.used.add(line);
      const to = rest
        .filter((arg, index) => !arg.startsWith("-") && !["-s", "-r", "-a", "-c", "-b"].includes(rest[index - 1] ?? ""))
        .pop();
      const from = optionAfter(rest, "-r") ?? optionAfter(rest, "-f");
      // mail(1) to a local user (root) is that user on this host.
      const address = to && /^[a-z_][\w.-]*$/.test(to) ? `${to}@localhost` : to;
      if (!address || !/^[^@\s\u0000]+@[^@\s\u0000]+$/.test(address)) {
        this.notifies.push({ url: null, format: "email", line, why: "its recipient is not set in the script" });
        return true;
      }
      this.notifies.push({
        url: "smtp://localhost:25",
        format: "email",
        line,
        to: address,
        from: from ?? undefined,
        why: `${name} hands mail to this host's MTA`,
      });
      return true;
    }
    if (name === "termux-notification") {
      this.used.add(line);
      this.notifies.push({ url: null, format: "termux", line, why: "termux-notification" });
      return true;
    }
    return false;
  }

  // ---- restarts ----

  private restartOf(argv: string[], node: Extract<Node, { type: "simple" }>, ctx: Ctx, known: boolean): boolean {
    const action = this.actionOf(argv, node, ctx, known);
    if (!action) return false;
    this.used.add(node.line);
    if (action.shape === "spawn") this.lastPidOf = action;
    this.attach(action, ctx, node.line);
    return true;
  }

  private actionOf(
    argv: string[],
    node: Extract<Node, { type: "simple" }>,
    ctx: Ctx,
    known: boolean,
  ): ScriptAction | null {
    const raw = argv.filter((word) => word !== "");
    const [path, ...rest] = unwrap(raw).argv;
    const name = path?.split("/").pop() ?? "";
    const original = raw;
    const line = node.line;
    const text = known ? shellLine(original) : node.words.map((word) => word.raw).join(" ");
    const exact = (target: string | null, rank = 3): ScriptAction =>
      known
        ? { shape: "command", argv: original, line, text, target, cwd: ctx.cwd.value, rank }
        : { shape: "unmappable", line, text, why: "a value in it is not set in the script" };
    const stop = (): ScriptAction => ({
      shape: "kill",
      pattern: false,
      line,
      text,
      stop: known ? original : null,
      cwd: ctx.cwd.value,
    });
    if (ctx.background) return null; // a backgrounded command is read by background()
    if (name === "systemctl" && /^(restart|start|try-restart|reload-or-restart)$/.test(rest[0] ?? "")) {
      const units = rest.slice(1).filter((arg) => !arg.startsWith("-"));
      if (!known) return { shape: "unmappable", line, text, why: "its unit is not set in the script" };
      if (units.length === 1 && original[0] === "systemctl" && !ctx.cwd.value)
        return { shape: "systemd", unit: units[0], line, text };
      return exact(units[0] ?? null);
    }
    if (name === "systemctl" && /^(reboot|poweroff)$/.test(rest[0] ?? ""))
      return { shape: "unmappable", line, text, why: "it reboots the host: tend restarts services, never the host" };
    if (name === "reboot" || name === "shutdown")
      return { shape: "unmappable", line, text, why: "it reboots the host: tend restarts services, never the host" };
    if (name === "service" && /^(restart|start|try-restart|force-reload)$/.test(rest[1] ?? ""))
      return exact(rest[0] ?? null);
    if (/^\/etc\/(init|rc)\.d\//.test(path ?? "") && /^(restart|start)$/.test(rest[0] ?? "")) return exact(name);
    if (name === "systemctl" && rest[0] === "stop") return stop();
    if (name === "service" && rest[1] === "stop") return stop();
    if (name === "invoke-rc.d" && /^(restart|start)$/.test(rest[1] ?? "")) return exact(rest[0] ?? null);
    if (name === "pm2" && /^(restart|reload|start)$/.test(rest[0] ?? "")) return exact(rest[1] ?? null);
    if (name === "supervisorctl" && /^(restart|start)$/.test(rest[0] ?? "")) return exact(rest[1] ?? null);
    if (name === "docker" && /^(restart|start)$/.test(rest[0] ?? "")) return exact(rest[rest.length - 1] ?? null);
    if ((name === "docker" && rest[0] === "compose") || name === "docker-compose") {
      const verb = name === "docker" ? rest[1] : rest[0];
      if (/^(restart|up|start)$/.test(verb ?? "")) return exact(null);
      if (/^(down|stop)$/.test(verb ?? "")) return stop();
    }
    if (name === "sv" && /^(restart|start|up|t)$/.test(rest[0] ?? "")) return exact(rest[1]?.split("/").pop() ?? null);
    if (name === "launchctl" && /^(kickstart|start)$/.test(rest[0] ?? ""))
      return exact(rest[rest.length - 1]?.split("/").pop() ?? null);
    if (name === "screen" && rest.some((arg) => /^-\w*d\w*m|^-dmS$|^-dm$/.test(arg)))
      return exact(optionAfter(rest, "-S") ?? null);
    if (name === "tmux") return this.tmuxAction(rest, line, text, known);
    if (name === "pkill" || name === "killall")
      return { shape: "kill", pattern: true, line, text, stop: null, cwd: null };
    if (name === "kill" && rest[0] !== "-0")
      return { shape: "kill", pattern: false, line, text, stop: null, cwd: null };
    // A start script run by its path (./start.sh, /opt/app/restart-app.sh): the script's own restart.
    if (/(re)?start/i.test(name) && (path ?? "").includes("/")) return exact(name.replace(/\.sh$/, ""), 5);
    return null;
  }

  private tmuxAction(args: string[], line: number, text: string, known: boolean): ScriptAction | null {
    let socket: string | null = null;
    let index = 0;
    while (index < args.length && args[index].startsWith("-")) {
      if (args[index] === "-S" || args[index] === "-L") socket = args[++index] ?? null;
      else if (/^-[SL]./.test(args[index])) socket = args[index].slice(2);
      index++;
    }
    const [verb, ...rest] = args.slice(index);
    if (!known)
      return { shape: "unmappable", line, text, why: "a value in it (its target or command) is not set in the script" };
    const flagValue = (flag: string) => optionAfter(rest, flag);
    const positional = (flags: string[]) => {
      const out: string[] = [];
      for (let i = 0; i < rest.length; i++) {
        if (flags.includes(rest[i])) i++;
        else if (!rest[i].startsWith("-")) out.push(...rest.slice(i));
        if (out.length) break;
      }
      return out;
    };
    if (verb === "respawn-pane" || verb === "respawn-window" || verb === "respawnp" || verb === "respawnw") {
      const target = flagValue("-t");
      const command = positional(["-t", "-c", "-e"]);
      if (!target) return null;
      return {
        shape: "tmux",
        target: target.includes(":") ? target : `${target}:0`,
        run: command.length ? command.join(" ") : null,
        socket,
        line,
        text,
      };
    }
    if (verb === "new-window" || verb === "neww") {
      const session = flagValue("-t");
      const window = flagValue("-n");
      const command = positional(["-t", "-n", "-c", "-e", "-F"]);
      if (!session || !window) return null;
      return {
        shape: "tmux",
        target: `${session.replace(/:.*$/, "")}:${window}`,
        run: command.length ? command.join(" ") : null,
        socket,
        line,
        text,
      };
    }
    if (verb === "new-session" || verb === "new" || verb === "new-s") {
      const session = flagValue("-s");
      const window = flagValue("-n") ?? "0";
      const command = positional(["-s", "-n", "-c", "-e", "-x", "-y", "-F", "-t"]);
      if (!session) return null;
      return {
        shape: "tmux",
        target: `${session}:${window}`,
        run: command.length ? command.join(" ") : null,
        socket,
        line,
        text,
      };
    }
    if (verb === "send-keys" || verb === "send") {
      const target = flagValue("-t");
      const keys = positional(["-t", "-N"]).filter((key) => !/^(Enter|C-m|C-c|C-d|q|KPEnter)$/.test(key));
      if (!target || !keys.length) return null;
      return {
        shape: "tmux",
        target: target.includes(":") ? target : `${target}:0`,
        run: keys.join(" "),
        socket,
        line,
        text,
      };
    }
    if (verb === "kill-session" || verb === "kill-window" || verb === "kill-pane") {
      const target = flagValue("-t");
      return target ? { shape: "tmux-kill", session: target, line, text } : null;
    }
    return null;
  }

  /** A command started in the background (`cmd &`, `nohup cmd > log 2>&1 &`): a spawn. */
  private background(node: Node, ctx: Ctx) {
    const simple = innermostSimple(node);
    if (!simple) return;
    const { command: found, cwd } = simple;
    if (cwd) ctx.cwd.value = this.value(cwd, ctx).text;
    const argv = this.words(found.words, ctx).map((value) => value.text);
    if (argv.some((word) => word === null)) {
      this.attach(
        {
          shape: "unmappable",
          line: found.line,
          text: found.words.map((w) => w.raw).join(" "),
          why: "a value in it is not set in the script",
        },
        ctx,
        found.line,
      );
      return;
    }
    const plain = unwrap(argv as string[]).argv;
    if (!plain.length || QUIET_COMMANDS.has(plain[0]) || plain[0] === "curl") return;
    let output: string | null = null;
    for (const redirect of found.redirects) {
      const target = redirect.target ? this.value(redirect.target, ctx).text : null;
      if (
        (redirect.op === ">" || redirect.op === ">>" || redirect.op === "&>" || redirect.op === "&>>") &&
        redirect.fd !== "2" &&
        target &&
        target !== "/dev/null"
      )
        output = target;
    }
    const env: Record<string, string> = {};
    for (const assign of found.assigns) {
      const value = assign.value ? this.value(assign.value, ctx).text : "";
      if (value !== null) env[assign.name] = value;
    }
    const where = ctx.cwd.value;
    const action: ScriptAction = {
      shape: "spawn",
      argv: plain,
      cwd: where,
      output:
        output && where && !output.startsWith("/") && !output.startsWith("~")
          ? `${where.replace(/\/$/, "")}/${output}`
          : output,
      env,
      line: found.line,
      text: shellLine(argv as string[]),
      pidfile: null,
    };
    this.used.add(found.line);
    this.lastPidOf = action;
    this.attach(action, ctx, found.line);
  }

  /** A restart action joins the restart of the check whose failing branch it runs on. */
  private attach(action: ScriptAction, ctx: Ctx, line: number) {
    if (ctx.frames.length) {
      // Inside helpers (fail blog CMD → restart_pane → tmx): said at the call site, through the helpers.
      action.text = `${ctx.frames.map((frame) => `${frame.name}()`).join(" → ")} → ${action.text}`;
      action.line = ctx.frames[0].line;
    }
    let failing: Check | null = null;
    let limit: Restart["limit"] = null;
    for (let index = ctx.conds.length - 1; index >= 0; index--) {
      const { status, taken } = ctx.conds[index];
      if (status.kind === "limit" && status.reached === taken && !limit)
        limit = { n: status.n, line: status.line, text: status.text };
      if (status.kind === "check" && status.healthy !== taken) {
        failing = status.check;
        break;
      }
      if (status.kind === "code") {
        failing = status.check;
        this.settleCodes(status, taken);
        break;
      }
    }
    const names = frameNames(ctx.frames);
    if (ctx.loopValue && IDENT.test(ctx.loopValue))
      names.unshift({ name: ctx.loopValue, line, why: "the loop's value" });
    const open = failing ? this.restarts.find((restart) => restart.check === failing) : undefined;
    if (open) {
      open.actions.push(action);
      if (limit && !open.limit) open.limit = limit;
      return;
    }
    this.restarts.push({ check: failing, actions: [action], line, limit, names });
  }
}

const VERBS = /^(respawn-\w+|new-\w+|kill-\w+|send-keys|restart|start|stop|reload|status|is-active|[A-Z]+)$/;

/** The names a script's helpers are called with on the way (strike blog ...), outermost first. */
function frameNames(frames: Frame[]): { name: string; line: number; why: string }[] {
  return frames
    .map((frame) => ({
      name:
        frame.args.find((arg) => IDENT.test(arg) && !VERBS.test(arg) && !/^\d/.test(arg) && !arg.includes(":")) ?? "",
      line: frame.line,
      why: `the name it passes to ${frame.name}()`,
    }))
    .filter((entry) => entry.name);
}

/** The innermost simple command of a backgrounded statement, and a `cd DIR` before it in the same list. */
function innermostSimple(node: Node): { command: Extract<Node, { type: "simple" }>; cwd: Word | null } | null {
  if (node.type === "simple") return { command: node, cwd: null };
  if (node.type === "andor") {
    const nodes = [node.first, ...node.rest.map((entry) => entry.node)];
    const last = innermostSimple(nodes[nodes.length - 1]);
    const cd = nodes
      .slice(0, -1)
      .find((n) => n.type === "simple" && literalText(n.words[0] ?? { parts: [], raw: "", line: 0 }) === "cd");
    if (last && cd && cd.type === "simple") return { command: last.command, cwd: cd.words[1] ?? null };
    return last;
  }
  if (node.type === "group") {
    const items = node.body.type === "list" ? node.body.items : [];
    return items.length ? innermostSimple(items[items.length - 1].node) : null;
  }
  return null;
}

function unwrap(argv: string[]): { argv: string[]; timeout: string | null } {
  let index = 0;
  let timeout: string | null = null;
  while (index < argv.length) {
    const word = argv[index];
    if (word === "timeout") {
      index++;
      while (argv[index]?.startsWith("-")) index += argv[index] === "-s" || argv[index] === "-k" ? 2 : 1;
      const value = argv[index++] ?? "";
      timeout = /^\d+(\.\d+)?s?$/.test(value) ? value.replace(/s$/, "") : null;
      continue;
    }
    if (WRAPPERS.has(word)) {
      index++;
      while (argv[index]?.startsWith("-") || (word === "env" && /^\w+=/.test(argv[index] ?? ""))) {
        if (word === "sudo" && /^-[ug]$/.test(argv[index])) index++;
        if (word === "nice" && argv[index] === "-n") index++;
        index++;
      }
      continue;
    }
    break;
  }
  // sh -c "...": the command it runs, when it is one simple word list.
  return { argv: argv.slice(index), timeout };
}

function negate(status: NonNullable<Status>): NonNullable<Status> {
  switch (status.kind) {
    case "check":
      return { ...status, healthy: !status.healthy };
    case "code":
      return { ...status, inSet: !status.inSet };
    case "limit":
      return { ...status, reached: !status.reached };
    case "fresh":
      return { ...status, fresh: !status.fresh };
    case "listen":
      return { ...status, listening: !status.listening };
  }
}

function sameCheck(a: NonNullable<Status>, b: NonNullable<Status>): boolean {
  return (a.kind === "check" || a.kind === "code") && (b.kind === "check" || b.kind === "code") && a.check === b.check;
}

/** [ $c = 502 ] || [ $c = 503 ]: one rule over both codes (and != ... && != ...: the same, negated). */
function combine(a: NonNullable<Status>, b: NonNullable<Status>, op: string): NonNullable<Status> {
  if (
    a.kind === "code" &&
    b.kind === "code" &&
    a.check === b.check &&
    a.inSet === b.inSet &&
    a.inSet === (op === "||")
  ) {
    const codes = [...new Set([...a.codes, ...b.codes])];
    a.check.openCodes = a.check.openCodes.filter((open) => open.codes !== a.codes && open.codes !== b.codes);
    a.check.openCodes.push({ codes, inSet: a.inSet });
    return { ...a, codes };
  }
  return a;
}

function combineAny(a: Status, b: Status, op: string): Status {
  if (a && b) return combine(a, b, op);
  return a ?? b;
}
