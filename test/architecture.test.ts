// lib/'s layers, checked on the sources: which folder may import which, and imports before anything else.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ROOT } from "./helpers.ts";

const sources = (under: string) =>
  Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard", `${under}/*.ts`], { cwd: ROOT })
    .stdout.toString()
    .trim()
    .split("\n")
    .filter(Boolean);

/** The layer a lib file belongs to: its folder, or "top" for lib/cli.ts, lib/io.ts, lib/subcommands.ts. */
const layerOf = (file: string) => {
  const parts = file.split("/");
  return parts.length > 2 ? parts[1] : "top";
};

/** What each layer may never import (value imports, static or dynamic; `import type` is erased and free). */
const FORBIDDEN: Record<string, string[]> = {
  // The pure core: decisions, words, numbers. No file, process, network or clock.
  core: ["os", "state", "config", "checks", "restarts", "notify", "owner", "pass", "views", "operator", "tools", "top"],
  // The OS edge and what sits on it: never the engine, the views or the commands above them.
  os: ["state", "config", "checks", "restarts", "notify", "owner", "pass", "views", "operator", "tools", "top"],
  state: ["config", "checks", "restarts", "notify", "owner", "pass", "views", "operator", "tools", "top"],
  config: ["notify", "owner", "pass", "views", "operator", "tools", "top"],
  checks: ["notify", "owner", "pass", "views", "operator", "tools", "top"],
  restarts: ["notify", "owner", "pass", "views", "operator", "tools", "top"],
  notify: ["owner", "pass", "views", "operator", "tools", "top"],
  // A service's one owner (lib/owner/): its lock, its state saved, its lines recorded. Below the engine.
  owner: ["checks", "restarts", "pass", "views", "operator", "tools", "top"],
  // The pass engine: judges, acts, records (through the owner). Views read what it recorded; operators drive it.
  pass: ["views", "operator", "tools", "top"],
  // Read-only views: never an operator's command, never a service's owner.
  views: ["owner", "operator", "tools", "top"],
  operator: ["tools", "top"],
  tools: ["top"],
  top: [],
};

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
  line: number;
}

/** Strip comments and strings' contents enough to find top-level statements (the sources are prettier's). */
function statements(text: string): { line: number; text: string }[] {
  const lines = text.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " ")).split("\n");
  const found: { line: number; text: string }[] = [];
  let open: { line: number; text: string } | null = null;
  lines.forEach((raw, index) => {
    const line = raw.replace(/^\s*\/\/.*$/, "");
    if (open) {
      open.text += "\n" + line;
      if (/;\s*$/.test(line)) open = null;
      return;
    }
    if (!/^\S/.test(line)) return; // inside a block, or blank
    const statement = { line: index + 1, text: line };
    found.push(statement);
    if (/^(import|export)\b/.test(line) && !/;\s*$/.test(line)) open = statement;
  });
  return found;
}

function importsOf(file: string, text = readFileSync(join(ROOT, file), "utf8")): { imports: Import[]; late: string[] } {
  const imports: Import[] = [];
  const late: string[] = [];
  let body = false;
  for (const statement of statements(text)) {
    const isImport = /^import\b(?!\s*\()/.test(statement.text) || /^export\b[^=]*\bfrom\s+"/.test(statement.text);
    if (!isImport) {
      body = true;
      continue;
    }
    if (body) late.push(`${file}:${statement.line}`);
    const spec = /from\s+"([^"]+)"/.exec(statement.text)?.[1] ?? /^import\s+"([^"]+)"/.exec(statement.text)?.[1];
    if (!spec) continue;
    imports.push({
      from: file,
      to: spec,
      typeOnly: /^(import|export) type\b/.test(statement.text),
      line: statement.line,
    });
  }
  // Lazy imports load code too: they obey the same direction.
  text.split("\n").forEach((line, index) => {
    for (const match of line.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g))
      imports.push({ from: file, to: match[1], typeOnly: false, line: index + 1 });
  });
  return { imports, late };
}

const resolved = (from: string, spec: string) =>
  spec.startsWith(".") ? relative(ROOT, resolve(ROOT, dirname(from), spec)) : spec;

/** What the direction rule finds wrong in one file. */
function wrongImports(file: string, text?: string): string[] {
  const layer = layerOf(file);
  const wrong: string[] = [];
  for (const found of importsOf(file, text).imports) {
    if (found.typeOnly) continue;
    const target = resolved(file, found.to);
    if (!target.startsWith("lib/")) {
      // Packages and node: modules are I/O or weight the core must not carry.
      if (layer === "core") wrong.push(`${file}:${found.line} (core) imports ${found.to}`);
      continue;
    }
    const to = layerOf(target);
    if (FORBIDDEN[layer]?.includes(to)) wrong.push(`${file}:${found.line} (${layer}) imports ${target} (${to})`);
  }
  return wrong;
}

test("layers: core imports no I/O, the edge never the pass, the pass never a view, a view never an operator", () => {
  const wrong = sources("lib").flatMap((file) => wrongImports(file));
  expect(wrong).toEqual([]);
});

test("the layers are folders: pass/, views/, operator/ exist and lib/watchdog/ is gone", () => {
  const layers = new Set(sources("lib").map(layerOf));
  for (const layer of [
    "core",
    "os",
    "state",
    "config",
    "checks",
    "restarts",
    "notify",
    "owner",
    "pass",
    "views",
    "operator",
  ])
    expect(layers.has(layer)).toBe(true);
  expect(layers.has("watchdog")).toBe(false);
  // Every layer is one the direction rule knows.
  expect([...layers].filter((layer) => !(layer in FORBIDDEN))).toEqual([]);
});

test("imports come first in every file (nothing runs between them)", () => {
  const late = [...sources("lib"), ...sources("scripts")].flatMap((file) => importsOf(file).late);
  expect(late).toEqual([]);
});

test("the checker itself finds a forbidden import, a lazy one, a late one, and lets type imports be", () => {
  // The same functions on made-up files, so the tests above cannot pass by finding nothing.
  const text = [
    `import type { ServiceConfig } from "../config/types.ts";`,
    `import { a } from "./a.ts";`,
    `import {`,
    `  b,`,
    `} from "node:fs";`,
    `const x = 1;`,
    `import { c } from "../os/c.ts";`,
    `export const load = () => import("../pass/pass.ts");`,
  ].join("\n");
  expect(importsOf("lib/core/x.ts", text).late).toEqual(["lib/core/x.ts:7"]);
  expect(wrongImports("lib/core/x.ts", text)).toEqual([
    "lib/core/x.ts:3 (core) imports node:fs",
    "lib/core/x.ts:7 (core) imports lib/os/c.ts (os)",
    "lib/core/x.ts:8 (core) imports lib/pass/pass.ts (pass)",
  ]);
  expect(wrongImports("lib/views/x.ts", `import { run } from "../operator/operate.ts";\n`)).toEqual([
    "lib/views/x.ts:1 (views) imports lib/operator/operate.ts (operator)",
  ]);
  expect(wrongImports("lib/views/x.ts", `import { run } from "../pass/pass.ts";\n`)).toEqual([]);
});

test("no code path branches on an error's words: errors carry a code (TendError.code, errno)", () => {
  // A message is for people and may change; `isTendError(error, "locked")` or `error.code === "ENOENT"` is for code.
  const onWords =
    /\b(?:error|err|e)\)?\.message\)?\.(?:includes|startsWith|endsWith|match)\(|\.test\(\(?(?:error|err)\b/;
  const found = [...sources("lib"), ...sources("scripts")].flatMap((file) =>
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .flatMap((line, index) => (onWords.test(line) ? [`${file}:${index + 1}`] : [])),
  );
  expect(found).toEqual([]);
  // The rule sees the two forms it replaced.
  expect(onWords.test(`if (error instanceof TendError && error.message.includes("stayed locked")) throw error;`)).toBe(
    true,
  );
  expect(onWords.test(`if (!/no configuration found/.test((error as Error).message)) throw error;`)).toBe(true);
});
