// A POSIX-shell (and common bash) parser for `watchdog import`: the script as its shell would read
// it — lists, and-or lists, pipelines, if/case/for/while/until, functions, groups and subshells,
// assignments, redirections, here-documents, and words with their quoting and expansions ($X,
// ${X:-d}, $(...), `...`, $((...))) kept as parts, so the reader can expand them with what it knows.
// It never throws: a statement it cannot read is kept as `unreadable` with its line, and the parse
// goes on at the next line (a shape it cannot read is never guessed, never the end of the draft).
// Pure over the text.

export type Part =
  | { kind: "lit"; text: string; quoted: boolean }
  | { kind: "param"; name: string; op: string; arg: string; quoted: boolean }
  | { kind: "subst"; body: Node; quoted: boolean }
  | { kind: "arith"; expr: string; quoted: boolean };

export interface Word {
  parts: Part[];
  /** The source text of the word, quotes included. */
  raw: string;
  line: number;
}

interface Redirect {
  op: string;
  fd: string;
  target: Word | null;
}

interface Assignment {
  name: string;
  value: Word | null;
  /** `NAME=(a b c)`: a bash array. */
  array: Word[] | null;
  line: number;
}

export type Node =
  | { type: "simple"; line: number; assigns: Assignment[]; words: Word[]; redirects: Redirect[] }
  | { type: "pipeline"; line: number; negated: boolean; commands: Node[] }
  | { type: "andor"; line: number; first: Node; rest: { op: "&&" | "||"; node: Node }[] }
  | { type: "list"; line: number; items: { node: Node; background: boolean }[] }
  | { type: "if"; line: number; clauses: { cond: Node; body: Node }[]; otherwise: Node | null }
  | { type: "case"; line: number; word: Word; arms: { patterns: Word[]; body: Node; line: number }[] }
  | { type: "for"; line: number; name: string; items: Word[] | null; body: Node }
  | { type: "while"; line: number; until: boolean; cond: Node; body: Node }
  | { type: "group"; line: number; subshell: boolean; body: Node; redirects: Redirect[] }
  | { type: "function"; line: number; name: string; body: Node }
  | { type: "arith"; line: number; expr: string }
  | { type: "test"; line: number; words: Word[] }
  | { type: "unreadable"; line: number; text: string };

const RESERVED_END = new Set(["then", "else", "elif", "fi", "do", "done", "esac", "}", "in"]);
const META = new Set([";", "&", "|", "(", ")", "<", ">", "\n"]);

class ParseError extends Error {}

export class Parser {
  private pos = 0;
  private readonly lineStarts: number[] = [0];
  private heredocs: { delimiter: string; strip: boolean }[] = [];

  constructor(
    private readonly src: string,
    private readonly firstLine = 1,
  ) {
    for (let i = 0; i < src.length; i++) if (src[i] === "\n") this.lineStarts.push(i + 1);
  }

  lineAt(pos = this.pos): number {
    let low = 0;
    let high = this.lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.lineStarts[mid] <= pos) low = mid;
      else high = mid - 1;
    }
    return low + this.firstLine;
  }

  /** The whole text as a list; never throws. */
  program(): Node {
    const list = this.list(new Set());
    while (this.pos < this.src.length) {
      // A stray closer at the top (a `}` or `fi` without its opener): kept as unreadable, then on.
      const line = this.lineAt();
      const text = this.restOfLine();
      list.items.push({ node: { type: "unreadable", line, text }, background: false });
      list.items.push(...this.list(new Set()).items);
    }
    return list;
  }

  private restOfLine(): string {
    const end = this.src.indexOf("\n", this.pos);
    const stop = end < 0 ? this.src.length : end + 1;
    const text = this.src.slice(this.pos, stop).trim();
    this.pos = stop;
    return text;
  }

  private peek(offset = 0): string {
    return this.src[this.pos + offset] ?? "";
  }

  private startsWith(text: string): boolean {
    return this.src.startsWith(text, this.pos);
  }

  /** Blanks, line continuations and comments (not newlines). */
  private blanks() {
    for (;;) {
      const char = this.peek();
      if (char === " " || char === "\t" || char === "\r") this.pos++;
      else if (char === "\\" && this.peek(1) === "\n") this.pos += 2;
      else if (char === "#") {
        while (this.pos < this.src.length && this.peek() !== "\n") this.pos++;
      } else return;
    }
  }

  /** A newline: here-documents pending on the line just ended are skipped. */
  private newline(): boolean {
    if (this.peek() !== "\n") return false;
    this.pos++;
    for (const { delimiter, strip } of this.heredocs) {
      while (this.pos < this.src.length) {
        const end = this.src.indexOf("\n", this.pos);
        const stop = end < 0 ? this.src.length : end;
        let line = this.src.slice(this.pos, stop);
        if (strip) line = line.replace(/^\t+/, "");
        this.pos = end < 0 ? stop : stop + 1;
        if (line.replace(/\r$/, "") === delimiter) break;
      }
    }
    this.heredocs = [];
    return true;
  }

  /** Separators between statements: blanks, comments, newlines, `;` (not `;;`). */
  private separators() {
    for (;;) {
      this.blanks();
      if (this.newline()) continue;
      if (this.peek() === ";" && this.peek(1) !== ";") {
        this.pos++;
        continue;
      }
      return;
    }
  }

  /** The next bare word, not consumed (for reserved words at a command's start). */
  private nextBare(): string {
    const match = /^[^\s;&|()<>'"`$\\]+/.exec(this.src.slice(this.pos, this.pos + 64));
    return match ? match[0] : "";
  }

  private atListEnd(stops: Set<string>): boolean {
    this.blanks();
    if (this.pos >= this.src.length) return true;
    const char = this.peek();
    if (char === ")" || (char === ";" && this.peek(1) === ";")) return true;
    const bare = this.nextBare();
    return stops.has(bare) && RESERVED_END.has(bare) && this.boundaryAfter(bare.length);
  }

  private boundaryAfter(length: number): boolean {
    const next = this.src[this.pos + length] ?? "";
    return next === "" || /[\s;&|()<>]/.test(next);
  }

  list(stops: Set<string>): Extract<Node, { type: "list" }> {
    const list: Extract<Node, { type: "list" }> = { type: "list", line: this.lineAt(), items: [] };
    for (;;) {
      this.separators();
      if (this.atListEnd(stops)) return list;
      const start = this.pos;
      const line = this.lineAt();
      try {
        const node = this.andOr(stops);
        this.blanks();
        let background = false;
        if (this.peek() === "&" && this.peek(1) !== "&") {
          this.pos++;
          background = true;
        }
        list.items.push({ node, background });
        this.blanks();
        const char = this.peek();
        if (char && char !== "\n" && char !== ";" && char !== "&" && char !== ")" && !this.atListEnd(stops))
          throw new ParseError(`unexpected ${char}`);
      } catch (error) {
        if (!(error instanceof ParseError)) throw error;
        this.pos = start;
        this.heredocs = [];
        list.items.push({ node: { type: "unreadable", line, text: this.restOfLine() }, background: false });
      }
    }
  }

  private andOr(stops: Set<string>): Node {
    const line = this.lineAt();
    const first = this.pipeline(stops);
    const rest: { op: "&&" | "||"; node: Node }[] = [];
    for (;;) {
      this.blanks();
      const op = this.startsWith("&&") ? "&&" : this.startsWith("||") ? "||" : null;
      if (!op) break;
      this.pos += 2;
      this.separators();
      rest.push({ op, node: this.pipeline(stops) });
    }
    return rest.length ? { type: "andor", line, first, rest } : first;
  }

  private pipeline(stops: Set<string>): Node {
    this.blanks();
    const line = this.lineAt();
    let negated = false;
    if (this.peek() === "!" && /\s/.test(this.peek(1))) {
      negated = true;
      this.pos++;
      this.blanks();
    }
    const commands = [this.command(stops)];
    for (;;) {
      this.blanks();
      if (this.peek() === "|" && this.peek(1) !== "|") {
        this.pos += this.peek(1) === "&" ? 2 : 1;
        this.separators();
        commands.push(this.command(stops));
      } else break;
    }
    return commands.length === 1 && !negated ? commands[0] : { type: "pipeline", line, negated, commands };
  }

  private expectWord(word: string) {
    this.separators();
    if (this.nextBare() !== word) throw new ParseError(`expected ${word}`);
    this.pos += word.length;
  }

  private command(stops: Set<string>): Node {
    this.blanks();
    const line = this.lineAt();
    const bare = this.nextBare();
    const reserved = (word: string) => bare === word && this.boundaryAfter(word.length);
    if (reserved("if")) return this.withRedirects(this.ifClause());
    if (reserved("case")) return this.withRedirects(this.caseClause());
    if (reserved("for")) return this.withRedirects(this.forClause());
    if (reserved("while") || reserved("until")) return this.withRedirects(this.whileClause(bare === "until"));
    if (reserved("function")) {
      this.pos += "function".length;
      this.blanks();
      const name = this.nextBare();
      if (!name) throw new ParseError("function without a name");
      this.pos += name.length;
      this.blanks();
      if (this.startsWith("()")) this.pos += 2;
      return this.functionBody(name, line);
    }
    if (reserved("{")) {
      this.pos++;
      const body = this.list(new Set(["}"]));
      this.expectWord("}");
      return this.withRedirects({ type: "group", line, subshell: false, body, redirects: [] });
    }
    if (this.startsWith("((")) {
      const end = this.matchingClose(this.pos + 2, "((", "))");
      const expr = this.src.slice(this.pos + 2, end);
      this.pos = end + 2;
      return { type: "arith", line, expr };
    }
    if (this.peek() === "(") {
      this.pos++;
      const body = this.list(new Set());
      this.blanks();
      if (this.peek() !== ")") throw new ParseError("unclosed (");
      this.pos++;
      return this.withRedirects({ type: "group", line, subshell: true, body, redirects: [] });
    }
    if (reserved("[[")) {
      this.pos += 2;
      const words: Word[] = [];
      for (;;) {
        this.blanks();
        if (this.nextBare() === "]]") {
          this.pos += 2;
          break;
        }
        if (this.pos >= this.src.length || this.peek() === "\n") throw new ParseError("unclosed [[");
        const op = /^(&&|\|\||[<>()!])/.exec(this.src.slice(this.pos, this.pos + 2));
        if (op) {
          this.pos += op[0].length;
          words.push({ parts: [{ kind: "lit", text: op[0], quoted: false }], raw: op[0], line: this.lineAt() });
        } else words.push(this.word(true));
      }
      return this.withRedirects({ type: "test", line, words });
    }
    if (stops.has(bare) && RESERVED_END.has(bare)) throw new ParseError(`unexpected ${bare}`);
    return this.simple(line);
  }

  private functionBody(name: string, line: number): Node {
    this.separators();
    const body = this.command(new Set());
    return { type: "function", line, name, body };
  }

  private withRedirects<T extends Node>(node: T): T {
    for (;;) {
      this.blanks();
      const redirect = this.redirect();
      if (!redirect) return node;
      if (node.type === "group") node.redirects.push(redirect);
    }
  }

  /** The index of the closer that matches an opener at depth 1 from `from` (quotes skipped). */
  private matchingClose(from: number, open: string, close: string): number {
    let depth = 1;
    for (let i = from; i < this.src.length; i++) {
      const char = this.src[i];
      if (char === "'" || char === '"') {
        const end = this.src.indexOf(char, i + 1);
        if (end < 0) break;
        i = end;
      } else if (char === "\\") i++;
      else if (this.src.startsWith(close, i)) {
        if (--depth === 0) return i;
        i += close.length - 1;
      } else if (this.src.startsWith(open, i)) {
        depth++;
        i += open.length - 1;
      }
    }
    throw new ParseError(`unclosed ${open}`);
  }

  private ifClause(): Node {
    const line = this.lineAt();
    this.pos += 2;
    const clauses: { cond: Node; body: Node }[] = [];
    let otherwise: Node | null = null;
    for (;;) {
      const cond = this.list(new Set(["then"]));
      this.expectWord("then");
      const body = this.list(new Set(["elif", "else", "fi"]));
      clauses.push({ cond, body });
      this.separators();
      const next = this.nextBare();
      if (next === "elif") {
        this.pos += 4;
        continue;
      }
      if (next === "else") {
        this.pos += 4;
        otherwise = this.list(new Set(["fi"]));
        this.expectWord("fi");
        break;
      }
      this.expectWord("fi");
      break;
    }
    return { type: "if", line, clauses, otherwise };
  }

  private caseClause(): Node {
    const line = this.lineAt();
    this.pos += 4;
    this.blanks();
    const word = this.word(false);
    this.expectWord("in");
    const arms: { patterns: Word[]; body: Node; line: number }[] = [];
    for (;;) {
      this.separators();
      if (this.nextBare() === "esac" && this.boundaryAfter(4)) {
        this.pos += 4;
        return { type: "case", line, word, arms };
      }
      if (this.pos >= this.src.length) throw new ParseError("unclosed case");
      const armLine = this.lineAt();
      if (this.peek() === "(") this.pos++;
      const patterns: Word[] = [];
      for (;;) {
        this.blanks();
        patterns.push(this.word(false));
        this.blanks();
        if (this.peek() === "|") {
          this.pos++;
          continue;
        }
        if (this.peek() === ")") {
          this.pos++;
          break;
        }
        throw new ParseError("a case pattern without )");
      }
      const body = this.list(new Set(["esac"]));
      this.blanks();
      if (this.startsWith(";;") || this.startsWith(";&")) this.pos += this.startsWith(";;&") ? 3 : 2;
      arms.push({ patterns, body, line: armLine });
    }
  }

  private forClause(): Node {
    const line = this.lineAt();
    this.pos += 3;
    this.blanks();
    if (this.startsWith("((")) throw new ParseError("a C-style for");
    const name = this.nextBare();
    this.pos += name.length;
    this.blanks();
    let items: Word[] | null = null;
    if (this.nextBare() === "in" && this.boundaryAfter(2)) {
      this.pos += 2;
      items = [];
      for (;;) {
        this.blanks();
        const char = this.peek();
        if (!char || char === "\n" || char === ";") break;
        items.push(this.word(false));
      }
    }
    this.expectWord("do");
    const body = this.list(new Set(["done"]));
    this.expectWord("done");
    return { type: "for", line, name, items, body };
  }

  private whileClause(until: boolean): Node {
    const line = this.lineAt();
    this.pos += until ? 5 : 5;
    const cond = this.list(new Set(["do"]));
    this.expectWord("do");
    const body = this.list(new Set(["done"]));
    this.expectWord("done");
    return { type: "while", line, until, cond, body };
  }

  private redirect(): Redirect | null {
    const match = /^(\d*)(&>>|&>|>>|>&|<&|<<<|<<-|<<|<>|>\||>|<)/.exec(this.src.slice(this.pos, this.pos + 8));
    if (!match) return null;
    this.pos += match[0].length;
    const op = match[2];
    this.blanks();
    if (op === "<<" || op === "<<-") {
      const target = this.word(false);
      this.heredocs.push({ delimiter: literalText(target), strip: op === "<<-" });
      return { op, fd: match[1], target };
    }
    return { op, fd: match[1], target: this.word(false) };
  }

  private simple(line: number): Node {
    const node: Extract<Node, { type: "simple" }> = { type: "simple", line, assigns: [], words: [], redirects: [] };
    for (;;) {
      this.blanks();
      const char = this.peek();
      if (!char || char === "\n" || char === ";" || char === "&" || char === "|" || char === ")") break;
      if (char === "(") {
        // `name() { ... }`: a function definition.
        if (node.words.length === 1 && !node.assigns.length && this.peek(1) === ")") {
          this.pos += 2;
          return this.functionBody(literalText(node.words[0]), line);
        }
        throw new ParseError("unexpected (");
      }
      const redirect = this.redirect();
      if (redirect) {
        node.redirects.push(redirect);
        continue;
      }
      if (!node.words.length) {
        const assignment = /^([A-Za-z_]\w*)(\+?=)/.exec(this.src.slice(this.pos, this.pos + 80));
        if (assignment) {
          this.pos += assignment[0].length;
          if (this.peek() === "(") {
            this.pos++;
            const array: Word[] = [];
            for (;;) {
              this.separators();
              if (this.peek() === ")") {
                this.pos++;
                break;
              }
              if (this.pos >= this.src.length) throw new ParseError("unclosed array");
              array.push(this.word(false));
            }
            node.assigns.push({ name: assignment[1], value: null, array, line: this.lineAt() });
          } else {
            const end = this.peek();
            const value = !end || /[\s;&|)]/.test(end) ? null : this.word(false);
            node.assigns.push({ name: assignment[1], value, array: null, line });
          }
          continue;
        }
      }
      node.words.push(this.word(false));
    }
    if (!node.words.length && !node.assigns.length && !node.redirects.length) throw new ParseError("empty command");
    return node;
  }

  /** Arithmetic's tokens: names, numbers, expansions, quoted words and operators, each its own word. */
  tokens(): Word[] {
    const out: Word[] = [];
    const lit = (text: string, line: number): Word => ({
      parts: [{ kind: "lit", text, quoted: false }],
      raw: text,
      line,
    });
    for (;;) {
      this.blanks();
      while (this.newline()) this.blanks();
      if (this.pos >= this.src.length) return out;
      const line = this.lineAt();
      const char = this.peek();
      if (char === "$" || char === "`") {
        const start = this.pos;
        const parts: Part[] = [];
        if (!this.expansion(parts, false)) {
          this.pos++;
          parts.push({ kind: "lit", text: "$", quoted: false });
        }
        out.push({ parts, raw: this.src.slice(start, this.pos), line });
        continue;
      }
      if (char === '"' || char === "'") {
        out.push(this.word(true));
        continue;
      }
      const rest = this.src.slice(this.pos, this.pos + 80);
      const token = /^([A-Za-z_]\w*|\d+(\.\d+)?|>=|<=|==|!=|&&|\|\||\+\+|--|\+=|-=|\S)/.exec(rest)!;
      this.pos += token[0].length;
      out.push(lit(token[0], line));
    }
  }

  /** The whole text as one word, blanks and metacharacters literal (a `${X:-default}`'s default). */
  wholeWord(): Word {
    return this.word(false, true);
  }

  /** One word: up to an unquoted blank or metacharacter (`inTest`: `<`, `>` are words in [[ ]]). */
  word(inTest: boolean, toEnd = false): Word {
    const start = this.pos;
    const line = this.lineAt();
    const parts: Part[] = [];
    const lit = (text: string, quoted: boolean) => {
      const last = parts[parts.length - 1];
      if (last && last.kind === "lit" && last.quoted === quoted) last.text += text;
      else parts.push({ kind: "lit", text, quoted });
    };
    while (this.pos < this.src.length) {
      const char = this.peek();
      if (!toEnd && /\s/.test(char)) break;
      if (!toEnd && META.has(char) && !(inTest && (char === "<" || char === ">"))) break;
      if (char === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end < 0) throw new ParseError("unclosed '");
        lit(this.src.slice(this.pos + 1, end), true);
        this.pos = end + 1;
      } else if (char === '"') {
        this.pos++;
        for (;;) {
          if (this.pos >= this.src.length) throw new ParseError('unclosed "');
          const inner = this.peek();
          if (inner === '"') {
            this.pos++;
            break;
          }
          if (inner === "\\" && /["\\$`\n]/.test(this.peek(1))) {
            if (this.peek(1) !== "\n") lit(this.peek(1), true);
            this.pos += 2;
          } else if (inner === "$" || inner === "`") {
            if (!this.expansion(parts, true)) (lit(inner, true), this.pos++);
          } else {
            lit(inner, true);
            this.pos++;
          }
        }
      } else if (char === "\\") {
        if (this.peek(1) !== "\n") lit(this.peek(1), true);
        this.pos += 2;
      } else if (char === "$" || char === "`") {
        if (!this.expansion(parts, false)) (lit(char, false), this.pos++);
      } else {
        lit(char, false);
        this.pos++;
      }
    }
    if (this.pos === start) throw new ParseError("expected a word");
    return { parts, raw: this.src.slice(start, this.pos), line };
  }

  /** An expansion at `$` or a backquote, into `parts`; false when the `$` is a plain character. */
  private expansion(parts: Part[], quoted: boolean): boolean {
    const line = this.lineAt();
    if (this.peek() === "`") {
      let end = this.pos + 1;
      let inner = "";
      for (; end < this.src.length && this.src[end] !== "`"; end++) {
        if (this.src[end] === "\\" && /[`\\$]/.test(this.src[end + 1] ?? "")) end++;
        inner += this.src[end];
      }
      if (end >= this.src.length) throw new ParseError("unclosed `");
      this.pos = end + 1;
      parts.push({ kind: "subst", body: new Parser(inner, line).program(), quoted });
      return true;
    }
    const next = this.peek(1);
    if (next === "(" && this.peek(2) === "(") {
      const end = this.matchingClose(this.pos + 3, "(", ")");
      // $(( ... )): its closing )) — the first ) closes the inner paren count.
      const close = this.src.indexOf("))", end);
      const stop = this.src[end + 1] === ")" ? end : close;
      if (stop < 0) throw new ParseError("unclosed $((");
      parts.push({ kind: "arith", expr: this.src.slice(this.pos + 3, stop), quoted });
      this.pos = stop + 2;
      return true;
    }
    if (next === "(") {
      this.pos += 2;
      const body = this.list(new Set());
      this.separators();
      if (this.peek() !== ")") throw new ParseError("unclosed $(");
      this.pos++;
      parts.push({ kind: "subst", body, quoted });
      return true;
    }
    if (next === "{") {
      const end = this.matchingClose(this.pos + 2, "{", "}");
      const inside = this.src.slice(this.pos + 2, end);
      this.pos = end + 1;
      const match = /^(#?)([A-Za-z_]\w*|\d+|[@*#?$!])(\[[^\]]*\])?(.*)$/s.exec(inside);
      if (!match) {
        parts.push({ kind: "param", name: "", op: "?", arg: inside, quoted });
        return true;
      }
      const rest = match[4];
      const op = /^(:?[-=+?]|##?|%%?|\/\/?|:)/.exec(rest);
      const name = match[2] + (match[3] ?? "");
      parts.push({
        kind: "param",
        name: match[1] ? `#${name}` : name,
        op: op ? op[0] : rest ? "?" : "",
        arg: op ? rest.slice(op[0].length) : rest,
        quoted,
      });
      return true;
    }
    const simple = /^\$([A-Za-z_]\w*|\d|[@*#?$!])/.exec(this.src.slice(this.pos, this.pos + 80));
    if (!simple) return false;
    parts.push({ kind: "param", name: simple[1], op: "", arg: "", quoted });
    this.pos += simple[0].length;
    return true;
  }
}

/** A word's text when it has no expansions (a here-document's delimiter, a function's name). */
export function literalText(word: Word): string {
  return word.parts.map((part) => (part.kind === "lit" ? part.text : "")).join("");
}

/** A parsed script. */
export function parseScript(text: string): Node {
  return new Parser(text).program();
}
