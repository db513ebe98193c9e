const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

export const DURATION_HINT = 'use e.g. "250ms", "20s", "5m", "1h", "1d" or a number of seconds';
/** The longest duration tend takes: every one up to this works as written. */
export const DURATION_MAX_MS = 365 * 86_400_000;

/** "250ms" | "20s" | "5m" | "1h" | "1d" | seconds as a number -> milliseconds; null if not a duration. */
export function parseDuration(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : null;
  if (typeof value !== "string") return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const match = DURATION.exec(text);
  if (!match) return null;
  return Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
}

/** Milliseconds -> the shortest exact form ("90s" stays "90s", 300000 -> "5m"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/** A latency as a chart labels it, exact to 0.1 s: 250ms, 2.5s, 12.5s (never 13s for 12.5 s). */
export const latencyLabel = (ms: number) => (ms < 1000 ? `${Math.round(ms)}ms` : `${+(ms / 1000).toFixed(1)}s`);

/** "1 probe", "3 probes": a count with its noun. */
export const counted = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/** Human form for log lines: 3.2s, 42s, 12m 5s, 1h, 2d 3h (two largest units). */
export function humanDuration(ms: number): string {
  // A duration is never negative: tend's clock does not jump, and what it is handed is clamped here.
  ms = Math.max(0, ms);
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  let seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds}s`;
  const parts: string[] = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    const count = Math.floor(seconds / size);
    seconds -= count * size;
    if (count && parts.length < 2) parts.push(`${count}${unit}`);
    else if (parts.length) break;
  }
  return parts.join(" ");
}
