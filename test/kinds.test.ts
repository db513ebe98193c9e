// Every check and restart kind is whole: a test of its own, a mention in the docs, and (when it runs
// programs) a doctor row. Adding a kind is one file and one registry line; this test says what else it owes.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CHECKS } from "../lib/checks/index.ts";
import { RESTARTS } from "../lib/restarts/index.ts";
import { ROOT } from "./helpers.ts";

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const files = (dir: string, ending: string) =>
  readdirSync(join(ROOT, dir))
    .filter((name) => name.endsWith(ending))
    .map((name) => `${dir}/${name}`);

const tests = files("test", ".ts")
  .filter((file) => file !== "test/kinds.test.ts")
  .map(read)
  .join("\n");
const docs = ["README.md", ...files("docs", ".md")].map(read).join("\n");

/**
 * A configuration in a test that uses the kind: `[service.check]` (or restart) then `KIND =` before
 * the next table, or the helpers' builder: `check: { KIND: …` (test/helpers.ts tomlConfig).
 */
const usedInTests = (table: "check" | "restart", kind: string) =>
  new RegExp(`\\[service\\.${table}\\][^\\[]*?\\n\\s*${kind}\\s*=`).test(tests) ||
  new RegExp(`\\b${table}: \\{\\s*(?:[\\w.]+: [^,{}]+(?:\\{[^}]*\\})?,\\s*)*"?${kind}"?:`).test(tests);

/** A call that runs an argv, then its first word: runCommand(["tmux", ...]), managerRestart(k, f, (u) => ["sv"]). */
const CALLS = String.raw`(?:runCommand|Bun\.spawn|spawnSync|runAction|managerRestart\([^,]+,[^,]+,)`;
const RUNS = new RegExp(CALLS + String.raw`\s*\(?\s*(?:\(\w+\)\s*=>\s*)?\[\s*"([\w.-]+)"`, "g");

/** The programs a source file names as the first word of an argv it runs: ["tmux", ...], ["sh", "-c", ...]. */
function programsRunBy(file: string, seen = new Set<string>()): Set<string> {
  const found = new Set<string>();
  if (seen.has(file)) return found;
  seen.add(file);
  const text = read(file);
  for (const match of text.matchAll(RUNS)) found.add(match[1]);
  // One level into the OS clients it imports (os/tmux.ts runs tmux for restarts/tmux.ts).
  for (const match of text.matchAll(/^import [^"]*"(\.\.\/os\/[\w-]+\.ts)";/gm)) {
    const imported = resolve(ROOT, dirname(file), match[1]).slice(ROOT.length + 1);
    for (const program of programsRunBy(imported, seen)) found.add(program);
  }
  return found;
}

/** What os/proc.ts runs on macOS for every kind (ps, sysctl): the doctor's "process start times" row covers it. */
const EVERY_KIND = new Set(["ps", "sysctl"]);
const ownPrograms = (file: string) => [...programsRunBy(file)].filter((program) => !EVERY_KIND.has(program));

const restartFile = (kind: string) => `lib/restarts/${kind}.ts`;
const checkFile = (kind: string) => (kind === "process" ? "lib/checks/process.ts" : `lib/checks/${kind}.ts`);

test.each(Object.keys(RESTARTS))(
  "restart.%s: tested, documented, its programs declared, a doctor row for them",
  (name) => {
    const kind = RESTARTS[name];
    expect({ kind: name, tested: usedInTests("restart", name) }).toEqual({ kind: name, tested: true });
    expect({ kind: name, documented: docs.includes(`restart.${name}`) }).toEqual({ kind: name, documented: true });
    const runs = ownPrograms(restartFile(name));
    expect(kind.tools).toEqual(expect.arrayContaining(runs));
    if (kind.tools.length) expect(kind.doctor?.name).toBeString();
  },
);

test.each(Object.keys(CHECKS))("check.%s: tested, documented, its programs declared, a doctor row for them", (name) => {
  const kind = CHECKS[name];
  expect({ kind: name, tested: usedInTests("check", name) }).toEqual({ kind: name, tested: true });
  expect({ kind: name, documented: docs.includes(`check.${name}`) }).toEqual({ kind: name, documented: true });
  const runs = ownPrograms(checkFile(name));
  expect(kind.tools ?? []).toEqual(expect.arrayContaining(runs));
  if (kind.tools?.length) expect(kind.doctor?.name).toBeString();
});

test("the rule sees what a kind runs: tmux through os/tmux.ts, systemctl in its own file", () => {
  expect([...programsRunBy(restartFile("tmux"))]).toContain("tmux");
  expect([...programsRunBy(restartFile("systemd"))]).toContain("systemctl");
  expect([...programsRunBy(restartFile("launchd"))]).toContain("launchctl");
  expect([...programsRunBy(restartFile("spawn"))]).toContain("sh");
  expect(usedInTests("restart", "no-such-kind")).toBe(false);
});

test("no file switches on a restart or check kind's name outside its registry and its own file", () => {
  const names = [...Object.keys(RESTARTS), ...Object.keys(CHECKS)];
  const switching = new RegExp(`(?:restart|action|check)\\??\\.kind\\s*===?\\s*"(${names.join("|")})"`);
  const offenders = Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard", "lib/*.ts"], {
    cwd: ROOT,
  })
    .stdout.toString()
    .trim()
    .split("\n")
    .filter((file) => !file.startsWith("lib/restarts/") && !file.startsWith("lib/checks/"))
    .filter((file) => switching.test(read(file)));
  expect(offenders).toEqual([]);
});
