import { parseSize, SIZE_HINT } from "../core/size.ts";
import { DURATION_HINT, DURATION_MAX_MS, parseDuration } from "../core/duration.ts";
import { nearest } from "../core/nearest.ts";

export type Table = Record<string, unknown>;
export const isTable = (value: unknown): value is Table =>
  typeof value === "object" && value !== null && !Array.isArray(value);
export const show = (value: unknown) =>
  typeof value === "string"
    ? JSON.stringify(value)
    : typeof value === "number" && !Number.isFinite(value)
      ? `${value} (a number past what a duration or count can hold)` // 1e309 is Infinity, never "null"
      : (JSON.stringify(value) ?? String(value));
/**
 * Keys whose values are secrets (URLs, header and env values, tokens, peers): an error about them
 * never quotes the value, whatever its type (a type slip in `headers` must not print the Bearer).
 */
const SECRET_KEY = /(^|\.)(url|http|heartbeat_url|token|headers|env|peers)(\.|\[|$)/;
const isSecretKey = (path: string) => SECRET_KEY.test(path);
const typeName = (value: unknown) =>
  Array.isArray(value) ? "an array" : isTable(value) ? "a table" : `a ${typeof value}`;

/** Reads one table, remembering which keys were used so the rest can be reported as unknown. */
export class Reader {
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
  /** The value as an error may quote it: a secret-holding key's value never. */
  shown(key: string, value: unknown): string {
    return isSecretKey(this.at(key)) ? "the value (not shown: it may hold a secret)" : show(value);
  }
  fail(key: string, message: string) {
    this.errors.push(`${this.at(key)}: ${message}`);
  }
  /** An error about the table itself. */
  failHere(message: string) {
    this.errors.push(`${this.path}: ${message}`);
  }
  raw(key: string): unknown {
    this.used.add(key);
    return this.table[key];
  }
  /** "512MiB", "1GiB", "800MB" or a number of bytes. */
  size(key: string): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const bytes = parseSize(value);
    if (bytes === null) return void this.fail(key, `${this.shown(key, value)} is not a size (${SIZE_HINT})`);
    return bytes;
  }
  string(key: string, { nonEmpty = true } = {}): string | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "string") {
      return void this.fail(key, `${this.shown(key, value)} is ${typeName(value)}, expected a string`);
    }
    if (nonEmpty && value.trim() === "") return void this.fail(key, `must not be empty`);
    return value;
  }
  boolean(key: string): boolean | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "boolean") {
      return void this.fail(key, `${this.shown(key, value)} is ${typeName(value)}, expected true or false`);
    }
    return value;
  }
  duration(key: string): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const ms = parseDuration(value);
    if (ms === null) return void this.fail(key, `${this.shown(key, value)} is not a duration (${DURATION_HINT})`);
    if (ms > DURATION_MAX_MS)
      return void this.fail(key, `${this.shown(key, value)} is longer than 365d, the longest duration allowed`);
    return ms;
  }
  integer(key: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
      return void this.fail(key, `${this.shown(key, value)} is not ${range}`);
    }
    return value;
  }
  stringList(key: string): string[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
      return void this.fail(key, `${this.shown(key, value)} is not an array of strings`);
    }
    return value as string[];
  }
  argv(key: string): string[] | undefined {
    const argv = this.stringList(key);
    if (argv && (argv.length === 0 || argv[0] === "")) {
      return void this.fail(key, `must name a program: ["program", "arg", ...]`);
    }
    return argv;
  }
  /** HTTP statuses; with `noAnswer`, also curl's no-answer code, as 0 or "000" (read as 0), as blogtunnel takes it. */
  statusList(key: string, { noAnswer = false } = {}): number[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const read = (code: unknown) => (noAnswer && (code === "000" || code === 0) ? 0 : code);
    const valid = (code: unknown) =>
      (noAnswer && read(code) === 0) || (Number.isInteger(code) && (code as number) >= 100 && (code as number) <= 599);
    if (!Array.isArray(value) || value.length === 0 || !value.every(valid)) {
      const allowed = noAnswer
        ? 'HTTP status codes (100-599, and 0 or "000" for no answer)'
        : "HTTP status codes (100-599)";
      return void this.fail(key, `${this.shown(key, value)} is not a non-empty array of ${allowed}`);
    }
    return value.map(read) as number[];
  }
  stringMap(key: string): Record<string, string> | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!isTable(value) || Object.values(value).some((item) => typeof item !== "string")) {
      return void this.fail(key, `${this.shown(key, value)} is not a table of strings`);
    }
    return value as Record<string, string>;
  }
  sub(key: string): Reader | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!isTable(value))
      return void this.fail(key, `${this.shown(key, value)} is ${typeName(value)}, expected a table`);
    return new Reader(value, this.at(key), this.errors);
  }
  /** Exactly one of `keys` must be present; returns it. */
  oneOf(keys: string[]): string | undefined {
    const present = keys.filter((key) => this.has(key));
    if (present.length === 1) return present[0];
    const list = keys.join(", ");
    if (present.length === 0) this.failHere(`needs exactly one of ${list}`);
    else this.failHere(`has ${present.join(" and ")}; exactly one of ${list} is allowed`);
    return undefined;
  }
  /**
   * Keys that belong to a sibling kind (another check or restart kind) are named as such:
   * `does not apply to a tcp check (it takes: tcp, timeout)`.
   */
  refuseForeign(own: string[], all: string[], what: string) {
    for (const key of Object.keys(this.table)) {
      if (own.includes(key) || !all.includes(key)) continue;
      this.raw(key);
      this.fail(key, `does not apply to ${what} (it takes: ${own.join(", ")})`);
    }
  }
  /** Every key not read is unknown; a typo is named with the key it most likely meant. */
  finish(allowed?: string[]) {
    for (const key of Object.keys(this.table)) {
      if (this.used.has(key)) continue;
      this.unknown(key, allowed ?? []);
    }
  }
  /** `check.htp: unknown key, did you mean http?` */
  unknown(key: string, allowed: string[]) {
    this.used.add(key);
    const guess = nearest(key, allowed);
    const hint = guess ? `, did you mean ${guess}?` : allowed.length ? ` (allowed: ${allowed.join(", ")})` : "";
    this.fail(key, `unknown key${hint}`);
  }
}
