// SPEC: every file tend reads that someone else may have made goes through one reader (lib/os/files.ts:
// non-blocking, no final symlink unless asked, fstat on the handle, a bound). This holds it: no other
// module of lib/ or scripts/ reads a file by its path. Opening to write (O_WRONLY, "w", "wx", "a") and
// a directory's descriptor (O_DIRECTORY: fsync, an ACL) are not reads.
import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRegularFile } from "../lib/os/files.ts";

const ROOT = join(import.meta.dir, "..");
const READER = "lib/os/files.ts";

const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );

const BY_PATH = /\b(readFileSync|copyFileSync|createReadStream|readFile|Bun\.file|Bun\.mmap|cpSync)\s*\(/;
const WRITE_ONLY = /O_WRONLY|O_DIRECTORY|^\s*\S+\s*,\s*"(w|wx|a|ax)"/;

/** Where a module reads a file by path: `file:line  what`. */
export function readsByPath(file: string, text: string): string[] {
  const found: string[] = [];
  const lines = text.split("\n");
  lines.forEach((line, index) => {
    if (/^\s*(\/\/|\*)/.test(line)) return; // a comment
    const by = BY_PATH.exec(line);
    if (by) found.push(`${file}:${index + 1}  ${by[1]}`);
    const open = /\bopenSync\s*\(/.exec(line);
    if (open) {
      // The call's arguments, up to its closing parenthesis (on this line or the next two).
      const call = [line.slice(open.index + open[0].length), ...lines.slice(index + 1, index + 3)].join(" ");
      if (!WRITE_ONLY.test(call)) found.push(`${file}:${index + 1}  openSync for reading`);
    }
    if (/from "node:fs\/promises"|from "fs\/promises"/.test(line)) found.push(`${file}:${index + 1}  fs/promises`);
  });
  return found;
}

test("no module but the one reader reads a file by its path", () => {
  const files = [...sources("lib"), ...sources("scripts")].filter((file) => file !== READER);
  expect(files.length).toBeGreaterThan(50);
  const found = files.flatMap((file) => readsByPath(file, readFileSync(join(ROOT, file), "utf8")));
  expect(found).toEqual([]);
});

test("the rule sees each way of reading by path, and lets writes and directories be", () => {
  const shapes = [
    `const text = readFileSync(path, "utf8");`,
    `copyFileSync(from, to);`,
    `const file = Bun.file(path);`,
    `fd = openSync(path, "r");`,
    `fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);`,
    `fd = openSync(path, constants.O_RDWR | constants.O_CREAT);`,
    `import { readFile } from "node:fs/promises";`,
  ];
  for (const shape of shapes) expect({ shape, found: readsByPath("x.ts", shape).length }).toEqual({ shape, found: 1 });
  const writes = [
    `fd = openSync(temp, "wx", 0o600);`,
    `fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);`,
    `fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);`,
    `// readFileSync(path) in a comment`,
  ];
  for (const shape of writes) expect({ shape, found: readsByPath("x.ts", shape) }).toEqual({ shape, found: [] });
});

// The one reader reads files of up to 64 KiB into one buffer it keeps (a pass's ~20 state files make no
// new memory each, #60): each text is exactly its own file's, whatever was read into that buffer before.
test("the one reader's texts, one after another: each exactly its file, whatever the buffer held before", () => {
  const dir = mkdtempSync(join(tmpdir(), "tend-reader-"));
  try {
    const files: [string, string][] = [
      ["long", "x".repeat(40_000) + "\n"],
      ["short", "short\n"],
      ["empty", ""],
      ["utf8", "é ✅ 🚨 " + "ü".repeat(5000)],
      ["just-under", "a".repeat(64 * 1024 - 1)], // its read (size + 1) fills the kept buffer exactly
      ["at-the-edge", "b".repeat(64 * 1024)], // one byte more than the kept buffer takes: a buffer of its own
      ["large", "c".repeat(200 * 1024)],
      ["short-again", "{}"],
    ];
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    for (const order of [files, [...files].reverse()])
      for (const [name, text] of order)
        expect({ name, text: readRegularFile(join(dir, name), 1024 * 1024) }).toEqual({ name, text });
    // Bounded as before: what is past the bound is not read, from the kept buffer or not.
    expect(readRegularFile(join(dir, "long"), 100)).toBe("x".repeat(100));
    expect(readRegularFile(join(dir, "large"), 100 * 1024)).toBe("c".repeat(100 * 1024));
    // A file whose size says 0 (/proc): read in blocks as it comes, the first into the kept buffer.
    expect(readRegularFile("/proc/self/mountinfo", 1024 * 1024)).toBe(readFileSync("/proc/self/mountinfo", "utf8"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
