const SIZE = /^(\d+(?:\.\d+)?)\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB|T|TB|TiB)?$/i;
const SIZE_UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

export const SIZE_HINT = 'e.g. "512MiB", "1GiB", "800MB" or a number of bytes';

/** "512MiB", "1GiB", "800MB", "64M" (binary), or a number of bytes. */
export function parseSize(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) && value > 0 ? Math.round(value) : null;
  if (typeof value !== "string") return null;
  const match = SIZE.exec(value.trim());
  if (!match) return null;
  const bytes = Math.round(Number(match[1]) * SIZE_UNITS[(match[2] ?? "b").toLowerCase()]);
  return bytes > 0 ? bytes : null;
}

const MIB = 1024 * 1024;
/** Bytes as MiB, one decimal below 10 MiB. */
export const mib = (bytes: number) => `${(bytes / MIB).toFixed(bytes < 10 * MIB ? 1 : 0)} MiB`;

/** Bytes in the largest binary unit that keeps a number >= 1: "512 B", "3.2 MiB", "1.5 GiB". */
export function humanSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
