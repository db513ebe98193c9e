import type { LatencySample } from "./state.ts";

// The latency history is one string, "at,ms,ok[,1,cut]" per sample (1: it timed out, under the timeout
// `cut`), oldest first,
// space-separated. A pass reads and rewrites every service's state file: 1,000 samples as JSON
// arrays are 4,000 numbers to parse and print each time (milliseconds per pass on a phone); as a
// string they cost JSON next to nothing. Only stats and the page decode it.

/** The log with `sample` appended and, beyond `max` samples, the oldest dropped. */
export function appendSample(
  log: string,
  count: number,
  sample: LatencySample,
  max: number,
): { latencyLog: string; latencyCount: number } {
  const entry = sample.join(",");
  let kept = log;
  let keptCount = count;
  while (keptCount >= max && kept !== "") {
    const space = kept.indexOf(" ");
    kept = space === -1 ? "" : kept.slice(space + 1);
    keptCount--;
  }
  if (kept === "") keptCount = 0;
  return { latencyLog: kept === "" ? entry : `${kept} ${entry}`, latencyCount: keptCount + 1 };
}

/**
 * The samples a log holds; an entry that is not three to five numbers is skipped. Scanned by hand, not
 * split: a page shows 100 services' logs of 1,000 samples, and split/map/Number made it the page's
 * dearest step (a field of digits alone, as tend writes them, is summed; any other is given to Number).
 */
export function parseSamples(log: string): LatencySample[] {
  const samples: LatencySample[] = [];
  const length = log.length;
  for (let start = 0; start < length;) {
    let end = log.indexOf(" ", start);
    if (end === -1) end = length;
    const fields: number[] = [];
    let finite = true;
    for (let fieldStart = start, at = start; end > start && at <= end; at++) {
      if (at < end && log.charCodeAt(at) !== 44) continue; // 44: ","
      let value = 0;
      let digits = at > fieldStart;
      for (let char = fieldStart; digits && char < at; char++) {
        const digit = log.charCodeAt(char) - 48;
        if (digit < 0 || digit > 9) digits = false;
        else value = value * 10 + digit;
      }
      if (!digits) value = Number(log.slice(fieldStart, at));
      if (!Number.isFinite(value)) finite = false;
      fields.push(value);
      fieldStart = at + 1;
    }
    if (finite && fields.length >= 3 && fields.length <= 5) samples.push(fields as LatencySample);
    start = end + 1;
  }
  return samples;
}

/** A log of `samples` (state files of earlier versions kept them as arrays). */
export const encodeSamples = (samples: LatencySample[]): string =>
  samples.map((sample) => sample.map(Number).join(",")).join(" ");
