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

/** The samples a log holds; an entry that is not three to five numbers is skipped. */
export function parseSamples(log: string): LatencySample[] {
  const samples: LatencySample[] = [];
  for (const entry of log.split(" ")) {
    const fields = entry.split(",").map(Number);
    if (fields.length >= 3 && fields.length <= 5 && fields.every(Number.isFinite))
      samples.push(fields as LatencySample);
  }
  return samples;
}

/** A log of `samples` (state files of earlier versions kept them as arrays). */
export const encodeSamples = (samples: LatencySample[]): string =>
  samples.map((sample) => sample.map(Number).join(",")).join(" ");
