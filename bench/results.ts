// bench/RESULTS.md, written by `make bench` itself: one row per measurement id, each from the
// latest run that measured it (`--only P1,P4` re-measures those rows and keeps the others), and
// the machine of every run a row still comes from. Nothing here is typed by hand.

export interface ResultRow {
  id: string;
  what: string;
  tend: string;
  peer: string;
  ratio: string;
  goal: string;
  met: string;
  /** The run it comes from: its start, "YYYY-MM-DDTHH:MMZ". */
  run: string;
}

const HEADER = "| | what | tend | peer | ratio | goal | met | run |";
const RULE = "| --- | --- | --- | --- | --- | --- | --- | --- |";
/** Cells never hold a bare "|": a row is one table line. */
const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");
const ORDER = (id: string) => {
  const [, number, suffix] = /^P(\d+)(\w*)$/.exec(id) ?? [, "999", id];
  return Number(number) * 100 + (suffix ? suffix.charCodeAt(0) - 96 : 0);
};

/** The rows and runs RESULTS.md holds now (none when it does not exist or is not one). */
export function parseResults(text: string): { rows: ResultRow[]; runs: Map<string, string> } {
  const rows: ResultRow[] = [];
  const runs = new Map<string, string>();
  for (const line of text.split("\n")) {
    const run = /^- `(\d{4}-\d\d-\d\dT\d\d:\d\dZ)`: (.+)$/.exec(line);
    if (run) runs.set(run[1], run[2]);
    if (!/^\| P\d/.test(line)) continue;
    // Split on the "|" that are not escaped.
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((part) => part.trim().replaceAll("\\|", "|"));
    if (cells.length !== 8) continue;
    const [id, what, tend, peer, ratio, goal, met, at] = cells;
    rows.push({ id, what, tend, peer, ratio, goal, met, run: at });
  }
  return { rows, runs };
}

/** RESULTS.md after a run: its rows replace the same ids; runs no row comes from any more are dropped. */
export function mergeResults(previous: string, fresh: Omit<ResultRow, "run">[], run: string, machine: string): string {
  const { rows, runs } = parseResults(previous);
  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const row of fresh) byId.set(row.id, { ...row, run });
  runs.set(run, machine);
  const kept = [...byId.values()].sort((a, b) => ORDER(a.id) - ORDER(b.id));
  const used = [...new Set(kept.map((row) => row.run))].sort();
  return [
    "# Benchmark results",
    "",
    "Written by `make bench` (`bun bench/bench.ts`, bench/results.ts): each row from the latest run that",
    'measured it (`BENCH_ARGS="--only P1,P4"` re-measures those rows and keeps the rest). What each row',
    "measures, and why the numbers are what they are: [docs/performance.md](../docs/performance.md).",
    "",
    HEADER,
    RULE,
    ...kept.map((row) =>
      [row.id, row.what, row.tend, row.peer, row.ratio, row.goal, row.met, row.run]
        .map(cell)
        .join(" | ")
        .replace(/^/, "| ")
        .replace(/$/, " |"),
    ),
    "",
    "Runs (start, machine, tend and the peers' versions):",
    "",
    ...used.map((at) => `- \`${at}\`: ${runs.get(at) ?? "not recorded"}`),
    "",
  ].join("\n");
}
