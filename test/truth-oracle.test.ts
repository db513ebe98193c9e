// The ground-truth harness's oracle (bench/truth.ts compareOutages) on hand-made timelines: it must
// pass what is right and catch what is not, or the 100 seeds prove nothing.
import { expect, test } from "bun:test";
import { compareOutages, downSpans, TOLERANCE_MS } from "../bench/truth.ts";

const S = 1000;
const judge = (
  truth: [number, number][],
  recorded: { from: number; to: number; reason: string }[],
  kills: { at: number }[] = [],
) => {
  const said: string[] = [];
  compareOutages("svc", truth, recorded, kills, (what) => said.push(what));
  return said;
};

test("the stopwatch's spans: from its changes, sorted by when each probe was sent", () => {
  const changes = [
    { at: 5 * S, ok: true },
    { at: 2 * S, ok: false },
    { at: 2.1 * S, ok: false },
    { at: 9 * S, ok: false },
  ];
  expect(downSpans(changes, 0, 12 * S)).toEqual([
    [2 * S, 5 * S],
    [9 * S, 12 * S],
  ]);
});

test("outages within the tolerance agree; each is its nearest cluster's (seed 105: two kills 3.9 s apart)", () => {
  const truth: [number, number][] = [
    [10 * S, 12.3 * S],
    [16.2 * S, 16.5 * S],
  ];
  const recorded = [
    { from: 9.2 * S, to: 13 * S, reason: "crash" },
    { from: 16 * S, to: 17 * S, reason: "crash" },
  ];
  expect(judge(truth, recorded, [{ at: 10 * S }, { at: 16.2 * S }])).toEqual([]);
});

test("it catches what did not happen: too early, too long, overlapping, never seen, missed, a kill not a crash", () => {
  const truth: [number, number][] = [[20 * S, 30 * S]];
  expect(judge(truth, [{ from: 20 * S - TOLERANCE_MS - S, to: 30 * S, reason: "crash" }])).toEqual([
    expect.stringMatching(/^svc: outage from .* the stopwatch says/),
  ]);
  expect(judge(truth, [{ from: 20 * S, to: 30 * S + TOLERANCE_MS + S, reason: "crash" }])).toEqual([
    expect.stringMatching(/^svc: outage until .* the stopwatch says/),
  ]);
  expect(
    judge(truth, [
      { from: 20 * S, to: 26 * S, reason: "failing" },
      { from: 25 * S, to: 30 * S, reason: "failing" },
    ]),
  ).toContainEqual(expect.stringMatching(/^svc: outages overlap/));
  expect(judge(truth, [{ from: 50 * S, to: 55 * S, reason: "failing" }])).toEqual([
    expect.stringMatching(/^svc: an outage the stopwatch never saw/),
    expect.stringMatching(/^svc: down 10\.0s at .*, no outage/),
  ]);
  expect(judge(truth, [{ from: 20 * S, to: 30 * S, reason: "failing" }], [{ at: 20 * S }])).toEqual([
    expect.stringMatching(/^svc: killed at .*, outage reason failing/),
  ]);
  // Shorter than tend can be sure to see (one probe a period): may be missed.
  expect(judge([[40 * S, 40.5 * S]], [])).toEqual([]);
});
