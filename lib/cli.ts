import minimist from "minimist";
import { DURATION_MAX_MS, parseDuration } from "./core/duration.ts";
import { errorMessage, EXIT, TendError, usageError } from "./core/errors.ts";
import { escapeLines } from "./core/sanitize.ts";
import { inWords } from "./os/files.ts";
import type { Paint } from "./views/status.ts";
import { VERSION, type Io } from "./io.ts";

export { processIo, VERSION, type Io } from "./io.ts";

interface CommandSpec {
  name: string;
  usage: string;
  string?: string[];
  boolean?: string[];
  alias?: Record<string, string>;
  default?: Record<string, unknown>;
  /** string options that may be given more than once (an array) */
  repeatable?: string[];
}

export type Args = minimist.ParsedArgs;

/** Parse argv (unknown flags are usage errors), answer --help/--version, map errors to exit codes. */
export async function runCli(
  spec: CommandSpec,
  argv: string[],
  io: Io,
  handler: (args: Args) => Promise<number>,
): Promise<number> {
  const strings = [...(spec.string ?? []), "config"];
  const booleans = [...(spec.boolean ?? []), "help", "version"];
  const known = new Set([
    ...strings,
    ...booleans,
    ...Object.keys(spec.alias ?? {}),
    ...Object.values(spec.alias ?? {}),
  ]);
  const unknown: string[] = [];
  const args = minimist(argv, {
    string: strings,
    boolean: booleans,
    alias: { h: "help", ...spec.alias },
    default: spec.default,
    unknown: (flag) => {
      if (flag.startsWith("-") && flag !== "-" && !known.has(flag.replace(/^--?(no-)?/, "").split("=")[0]))
        unknown.push(flag);
      return true;
    },
  });
  if (args.help) return (io.out(spec.usage), EXIT.ok);
  if (args.version) return (io.out(`tend ${VERSION}`), EXIT.ok);
  if (unknown.length)
    return (io.err(`${spec.name}: unknown option ${unknown.join(", ")}\n\n${spec.usage}`), EXIT.usage);
  for (const key of strings) {
    if (Array.isArray(args[key]) && !spec.repeatable?.includes(key))
      return (io.err(`${spec.name}: --${key} given more than once`), EXIT.usage);
  }
  try {
    return await handler(args);
  } catch (error) {
    if (error instanceof TendError) {
      io.err(`${spec.name}: ${escapeLines(error.message)}`);
      return error.exitCode;
    }
    const { stream } = error as { stream?: string };
    try {
      // Its own stdout failed (a full disk, a closed pipe): what it is, not an internal error.
      if (stream) io.err(`${spec.name}: cannot write to ${stream}: ${inWords(error)}`);
      else io.err(`${spec.name}: internal error: ${escapeLines(errorMessage(error))}`);
    } catch {} // stderr failed too: the exit code says it
    return EXIT.failed;
  }
}

/**
 * The flags argv gives (names without dashes, `--no-x` as x, `-abc` as a, b, c; aliases resolved),
 * before a `--`: so a subcommand can refuse the ones that are not its own.
 */
export function givenFlags(argv: string[], alias: Record<string, string> = {}): string[] {
  const given = new Set<string>();
  const names = { h: "help", ...alias };
  for (const token of argv) {
    if (token === "--") break;
    if (!token.startsWith("-") || token === "-" || /^-\d/.test(token)) continue;
    const bare = token.replace(/^--?/, "").split("=")[0].replace(/^no-/, "");
    const flags = token.startsWith("--") || bare.length === 1 ? [bare] : [...bare];
    for (const flag of flags) given.add(names[flag as keyof typeof names] ?? flag);
  }
  return [...given];
}

/** A duration flag (--interval 30s): null when absent; zero or unreadable is a usage error. */
export function durationFlag(flag: string, value: string | undefined): number | null {
  if (value === undefined) return null;
  const ms = parseDuration(value);
  if (ms === null || ms === 0) {
    throw usageError(`--${flag}: ${JSON.stringify(value)} is not a duration (e.g. 2s, 30s, 5m, 2h)`);
  }
  if (ms > DURATION_MAX_MS) throw usageError(`--${flag}: ${JSON.stringify(value)} is longer than 365d`);
  return ms;
}

const plain = (text: string) => text;

/** Colour only on a terminal and never with NO_COLOR; chalk is loaded only then (start-up stays at the floor). */
export async function paintFor(io: Io): Promise<Paint> {
  if (!io.tty || io.env.NO_COLOR !== undefined) return { ok: plain, bad: plain, warn: plain, dim: plain };
  const { Chalk } = await import("chalk");
  const chalk = new Chalk({ level: 1 });
  return { ok: chalk.green, bad: chalk.red, warn: chalk.yellow, dim: chalk.dim };
}
