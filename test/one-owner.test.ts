// SPEC "One owner is one module": a service's lock, the saving of its state, the recording of its lines as
// its last event and the restart's hooks are lib/owner/'s alone. The pass, the loop's crash watch,
// blogtunnel and the operator's commands go through it; no other module of lib/ or scripts/ calls what
// writes a service's state or takes its lock. lib/state/ (the files themselves) and core/state.ts (the
// pure record) define them.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const OWNER = "lib/owner/";
const DEFINED = ["lib/state/service-state.ts", "lib/core/state.ts"];

const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );

/** What writes a service's state, records a line as its last event, or takes its lock. */
const OWNERS_ONLY = /\b(writeState|saveObservations|withEvent|serviceLock)\s*\(/;

/** Where a module does an owner's work itself: `file:line  what`. */
export function ownersWork(file: string, text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, index) => {
    if (/^\s*(\/\/|\*)/.test(line)) return; // a comment
    const call = OWNERS_ONLY.exec(line);
    if (call) found.push(`${file}:${index + 1}  ${call[1]}`);
  });
  return found;
}

test("no module but lib/owner/ writes a service's state, records its last event or takes its lock", () => {
  const files = [...sources("lib"), ...sources("scripts")].filter(
    (file) => !file.startsWith(OWNER) && !DEFINED.includes(file),
  );
  expect(files.length).toBeGreaterThan(50);
  const found = files.flatMap((file) => ownersWork(file, readFileSync(join(ROOT, file), "utf8")));
  expect(found).toEqual([]);
});

test("the rule sees each of an owner's calls, and lets comments and reads be", () => {
  const shapes = [
    `writeState(stateDir, name, next);`,
    `  const saved = writeState(dir, name, state, { durable });`,
    `saveObservations(stateDir, name, loaded, state, 3);`,
    `next = withEvent(next, { at, tag, message });`,
    `const lock = await serviceLock(stateDir, name, 30_000);`,
    `paths.serviceLock(service.name)`,
  ];
  for (const shape of shapes) expect({ shape, found: ownersWork("x.ts", shape).length }).toEqual({ shape, found: 1 });
  const fine = [`// writeState(stateDir, name, next) is the owner's`, `const { state } = readState(stateDir, name);`];
  for (const shape of fine) expect({ shape, found: ownersWork("x.ts", shape).length }).toEqual({ shape, found: 0 });
});
