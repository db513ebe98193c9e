// bench/results.ts: make bench writes bench/RESULTS.md itself, a run's rows in place of the same ids.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { mergeResults, parseResults, type ResultRow } from "../bench/results.ts";
import { ROOT } from "./helpers.ts";

const row = (id: string, tend: string): ResultRow => ({
  id,
  what: `measure ${id} | piped`,
  tend,
  peer: "-",
  ratio: "-",
  goal: "measured",
  met: "-",
  run: "",
});

test("a run's rows replace the same ids, the others keep theirs; runs no row uses are dropped", () => {
  const first = mergeResults(
    "",
    [row("P1", "11 ms"), row("P2", "20 s"), row("P10", "39 MiB")],
    "2026-11-30T05:17Z",
    "A",
  );
  const second = mergeResults(first, [row("P1", "9 ms")], "2026-12-01T20:00Z", "B");
  const { rows, runs } = parseResults(second);
  expect(rows.map((r) => [r.id, r.tend, r.run])).toEqual([
    ["P1", "9 ms", "2026-12-01T20:00Z"],
    ["P2", "20 s", "2026-11-30T05:17Z"],
    ["P10", "39 MiB", "2026-11-30T05:17Z"],
  ]);
  expect(rows[0].what).toBe("measure P1 | piped"); // a "|" in a cell is escaped, and read back
  expect([...runs.entries()]).toEqual([
    ["2026-11-30T05:17Z", "A"],
    ["2026-12-01T20:00Z", "B"],
  ]);
  const third = mergeResults(second, [row("P2", "19 s"), row("P10", "38 MiB")], "2026-12-02T08:00Z", "C");
  expect([...parseResults(third).runs.keys()]).toEqual(["2026-12-01T20:00Z", "2026-12-02T08:00Z"]);
});

test("bench/RESULTS.md is make bench's own: every row has its run, and every run its machine", () => {
  const text = readFileSync(join(ROOT, "bench", "RESULTS.md"), "utf8");
  const { rows, runs } = parseResults(text);
  expect(rows.length).toBeGreaterThanOrEqual(10);
  for (const { id, run } of rows) expect({ id, machine: runs.has(run) }).toEqual({ id, machine: true });
  expect(mergeResults(text, [], [...runs.keys()][0], runs.get([...runs.keys()][0])!)).toBe(text); // as written
});
