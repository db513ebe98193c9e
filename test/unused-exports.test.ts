// #60: no export that nobody imports. An export is a module's promise to others; one no other module
// (lib, scripts, tests, bench, release) names is dead weight or a private helper said public, and 160
// of them hid which functions the architecture really has. Every `export` declaration of lib/ and
// scripts/ must be named in another file: by an import, a namespace's member (`install.renderInstall`)
// or a test. The check is by word, so a name used elsewhere for something else hides a dead export;
// it never flags a live one.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const KINDS = String.raw`(?:function\*?|const|let|class|interface|type|enum|abstract\s+class)`;
const DECLARATION = new RegExp(String.raw`^export\s+(?:default\s+)?(?:async\s+)?${KINDS}\s+(\w+)`, "gm");

function sources(): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) found.set(path, readFileSync(join(ROOT, path), "utf8"));
    }
  };
  for (const dir of ["lib", "scripts", "test", "bench", "release"]) walk(dir);
  return found;
}

/** The exports of lib/ and scripts/ that no other file names. */
export function unusedExports(files: Map<string, string>): string[] {
  const unused: string[] = [];
  for (const [path, text] of files) {
    if (!path.startsWith("lib/") && !path.startsWith("scripts/")) continue;
    for (const [, name] of text.matchAll(DECLARATION)) {
      const word = new RegExp(`\\b${name}\\b`);
      if (![...files].some(([other, body]) => other !== path && word.test(body))) unused.push(`${path}: ${name}`);
    }
  }
  return unused;
}

test("every export of lib/ and scripts/ is named by another file", () => {
  expect(unusedExports(sources())).toEqual([]);
});

test("the check finds what it must: an export nobody names, not one a namespace or a test uses", () => {
  const files = new Map([
    [
      "lib/a.ts",
      "export function lonely() {}\nexport const used = 1;\nexport interface Shape {}\nfunction inner() {}\n",
    ],
    ["lib/b.ts", 'const a = await import("./a.ts");\na.used;\n'],
    ["test/a.test.ts", "let s: Shape;\n"],
  ]);
  expect(unusedExports(files)).toEqual(["lib/a.ts: lonely"]);
});
