// Spans of time [from, to), as report and stats measure outages and gaps: merged once into a sorted,
// disjoint list, then measured or searched by binary search (a page of 100 services with 1000 outages
// each renders in milliseconds, never holding the loop's crash watch in `run --serve` for long).

export type Span = [number, number];

export const overlap = ([a, b]: Span, [c, d]: Span) => Math.max(0, Math.min(b, d) - Math.max(a, c));

/** The union of spans inside `within`, sorted and disjoint. */
export function mergeSpans(spans: Span[], within: Span = [-Infinity, Infinity]): Span[] {
  const clipped = spans
    .map(([a, b]) => [Math.max(a, within[0]), Math.min(b, within[1])] as Span)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  const merged: Span[] = [];
  for (const [a, b] of clipped) {
    const last = merged.at(-1);
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  return merged;
}

/** The index of the first merged span that ends after `at`. */
function firstEndingAfter(merged: Span[], at: number): number {
  let low = 0;
  let high = merged.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (merged[middle][1] <= at) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Total length of `merged` (sorted, disjoint) inside `within`. */
export function coveredBy(merged: Span[], within: Span): number {
  let total = 0;
  for (let index = firstEndingAfter(merged, within[0]); index < merged.length && merged[index][0] < within[1]; index++)
    total += overlap(merged[index], within);
  return total;
}

/** Whether `at` lies inside one of `merged` (sorted, disjoint; each span includes its start, not its end). */
export function inSpans(merged: Span[], at: number): boolean {
  const index = firstEndingAfter(merged, at);
  return index < merged.length && merged[index][0] <= at;
}
