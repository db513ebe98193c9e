// House style, checked like any other behaviour: prettier's formatting and lines under 120 characters.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./helpers.ts";

const sources = () =>
  Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ts"], { cwd: ROOT })
    .stdout.toString()
    .trim()
    .split("\n")
    .filter(Boolean);

test("every TypeScript line is at most 120 characters", () => {
  const long = sources().flatMap((file) =>
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .flatMap((line, index) => ([...line].length > 120 ? [`${file}:${index + 1}`] : [])),
  );
  expect(long).toEqual([]);
});

test("the sources are formatted by prettier (make fmt)", () => {
  const check = Bun.spawnSync([join(ROOT, "node_modules/.bin/prettier"), "--check", ...sources()], {
    cwd: ROOT,
    stderr: "pipe",
  });
  expect(check.stderr.toString()).toBe("");
  expect(check.exitCode).toBe(0);
}, 60_000);
