import type { MemoryConfig } from "../config/types.ts";
import { humanDuration } from "./duration.ts";
import { mib } from "./size.ts";

/** Samples kept per service: about 2 days at a 5-minute interval. */
export const RSS_HISTORY = 600;
/** Fewer samples than this give no slope (noise). */
const MIN_SAMPLES = 4;

/** Least-squares slope of [time ms, bytes] samples, in bytes per ms; null with too few samples. */
export function slope(samples: [number, number][]): number | null {
  if (samples.length < MIN_SAMPLES) return null;
  const n = samples.length;
  const meanT = samples.reduce((sum, [t]) => sum + t, 0) / n;
  const meanB = samples.reduce((sum, [, b]) => sum + b, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const [t, b] of samples) {
    covariance += (t - meanT) * (b - meanB);
    variance += (t - meanT) ** 2;
  }
  return variance === 0 ? null : covariance / variance;
}

const MIB = 1024 * 1024;

interface MemoryVerdict {
  /** Above restart_above: restart preventively. */
  restart: string | null;
  /** The projection reaches the limit within warn_within. */
  warn: string | null;
}

/** From the samples (the newest last): warn with the rate and ETA, or ask for a restart. */
export function judgeMemory(name: string, memory: MemoryConfig, samples: [number, number][]): MemoryVerdict {
  const current = samples.at(-1)?.[1] ?? 0;
  const verdict: MemoryVerdict = { restart: null, warn: null };
  if (memory.restartAboveBytes !== null && current > memory.restartAboveBytes) {
    verdict.restart =
      `${name} uses ${mib(current)} (RSS of its process tree), ` +
      `above restart_above ${mib(memory.restartAboveBytes)}`;
  }
  const rate = slope(samples);
  if (memory.limitBytes !== null && rate !== null && rate > 0) {
    const etaMs = Math.max(0, (memory.limitBytes - current) / rate);
    if (etaMs <= memory.warnWithinMs) {
      const perHour = (rate * 3_600_000) / MIB;
      const rateText = `${perHour.toFixed(perHour < 10 ? 1 : 0)} MiB/h`;
      verdict.warn =
        `${name} memory grows ${rateText} (${mib(current)} now): ` +
        `reaches the limit ${mib(memory.limitBytes)} in ${humanDuration(etaMs)}`;
    }
  }
  return verdict;
}
