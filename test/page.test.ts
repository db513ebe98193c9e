// The latency chart's dots (views/page.ts dotsPath), held to what they must draw: read back as the strokes
// an SVG renderer draws (M/m move, h a horizontal stroke, each with a 3.2 px round cap), every probe's
// point is covered, and nothing is drawn more than 1.6 px (half a dot) from a probe: touching dots of a
// row become one stroke, and no stroke crosses a gap between probes wider than a dot.
import { expect, test } from "bun:test";
import { dotsPath } from "../lib/views/page.ts";

/** The strokes a path draws: [y, x from, x to] each. */
function strokes(path: string): [number, number, number][] {
  const drawn: [number, number, number][] = [];
  let [x, y] = [0, 0];
  for (const [, command, a, b] of path.matchAll(/([Mmh])(-?\d+)(?: (-?\d+))?/g)) {
    if (command === "M") [x, y] = [Number(a), Number(b)];
    else if (command === "m") [x, y] = [x + Number(a), y + Number(b)];
    else drawn.push([y, x, (x += Number(a))]);
  }
  return drawn;
}

test("dotsPath: every probe covered, nothing drawn where no probe was (500 random days)", () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let day = 0; day < 500; day++) {
    // Left to right, 1 to 8 px apart (one point per two columns and outcome), a few rows (latency).
    const points: [number, number][] = [];
    for (let x = 34 + Math.floor(next() * 4); x < 296 && points.length < 140; x += 1 + Math.floor(next() * 8))
      points.push([x, 52 + Math.floor(next() * (next() < 0.8 ? 2 : 40))]);
    const drawn = strokes(dotsPath(points));
    for (const [x, y] of points)
      expect({
        day,
        point: [x, y],
        covered: drawn.some(([row, from, to]) => row === y && from <= x && x <= to),
      }).toEqual({
        day,
        point: [x, y],
        covered: true,
      });
    // Along each stroke, a probe at most 3 px from the next: the stroke is the dots it replaces.
    for (const [row, from, to] of drawn) {
      const xs = points.filter(([x, y]) => y === row && x >= from && x <= to).map(([x]) => x);
      expect(xs[0]).toBe(from);
      expect(xs.at(-1)).toBe(to);
      for (let index = 1; index < xs.length; index++) expect(xs[index] - xs[index - 1]).toBeLessThanOrEqual(3);
    }
  }
});

test("dotsPath: a flat day is one stroke; a lone probe a dot; none is nothing", () => {
  expect(dotsPath(Array.from({ length: 100 }, (_, index): [number, number] => [34 + 2 * index, 55]))).toBe(
    "M34 55h198",
  );
  expect(dotsPath([[40, 10]])).toBe("M40 10h0");
  expect(
    dotsPath([
      [40, 10],
      [50, 10],
      [52, 12],
    ]),
  ).toBe("M40 10h0m10 0h0m2 2h0");
  expect(dotsPath([])).toBe("");
});
