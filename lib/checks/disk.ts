import { statfsSync } from "node:fs";
import { humanSize, parseSize, SIZE_HINT } from "../core/size.ts";
import { show, type Reader } from "../config/reader.ts";
import { defineCheck, stopwatch } from "./kind.ts";

/** A floor of free space: bytes, or a share of the filesystem (0-100 %). */
type Floor = { bytes: number } | { percent: number };

type DiskCheck = {
  kind: "disk";
  path: string;
  minFree: Floor | null;
  minFreeInodes: { count: number } | { percent: number } | null;
  timeoutMs: number;
};

const PERCENT = /^(\d+(?:\.\d+)?)\s*%$/;

function readPercent(table: Reader, key: string, value: unknown): number | null | undefined {
  if (typeof value !== "string" || !PERCENT.test(value.trim())) return null;
  const percent = Number(PERCENT.exec(value.trim())![1]);
  if (percent <= 0 || percent >= 100)
    return void table.fail(key, `${show(value)}: a share must be between 0% and 100%`);
  return percent;
}

const showFloor = (floor: Floor) => ("bytes" in floor ? humanSize(floor.bytes) : `${floor.percent}%`);
const showInodes = (floor: { count: number } | { percent: number }) =>
  "count" in floor ? `${floor.count} inodes` : `${floor.percent}% of the inodes`;
const share = (part: number, whole: number) => (whole ? `${((100 * part) / whole).toFixed(1)}%` : "-");

/** Free space (and inodes) of the filesystem that holds PATH, as an unprivileged process may use it. */
export const disk = defineCheck<DiskCheck>({
  kind: "disk",
  keys: ["disk", "min_free", "min_free_inodes", "timeout"],
  read(table, { timeoutMs, inState }) {
    const path = table.string("disk");
    let minFree: Floor | null = null;
    const free = table.raw("min_free");
    if (free !== undefined) {
      const percent = readPercent(table, "min_free", free);
      const bytes = percent === null ? parseSize(free) : null;
      if (percent) minFree = { percent };
      else if (bytes) minFree = { bytes };
      else if (percent === null) table.fail("min_free", `${show(free)} is not a size (${SIZE_HINT}) or a share ("5%")`);
    }
    let minFreeInodes: DiskCheck["minFreeInodes"] = null;
    const inodes = table.raw("min_free_inodes");
    if (inodes !== undefined) {
      const percent = readPercent(table, "min_free_inodes", inodes);
      if (percent) minFreeInodes = { percent };
      else if (Number.isInteger(inodes) && (inodes as number) > 0) minFreeInodes = { count: inodes as number };
      else if (percent === null) {
        table.fail("min_free_inodes", `${show(inodes)} is not a whole number of inodes (> 0) or a share ("5%")`);
      }
    }
    if (free === undefined && inodes === undefined) {
      table.fail("min_free", "is required with check.disk (or min_free_inodes, or both)");
    }
    if (!path || (free !== undefined && !minFree) || (inodes !== undefined && !minFreeInodes)) return undefined;
    return { kind: "disk", path: inState(path), minFree, minFreeInodes, timeoutMs };
  },
  async probe(check) {
    const finish = stopwatch();
    let stats;
    try {
      stats = statfsSync(check.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return finish(false, `${check.path}: ${code === "ENOENT" ? "no such file or directory" : (code ?? error)}`);
    }
    const total = stats.blocks * stats.bsize;
    const available = stats.bavail * stats.bsize;
    const space = `${humanSize(available)} free of ${humanSize(total)} (${share(available, total)})`;
    const inodes = `${stats.ffree} of ${stats.files} inodes free (${share(stats.ffree, stats.files)})`;
    const detail = check.minFreeInodes ? `${space}, ${inodes}` : space;
    if (check.minFree) {
      const floor = "bytes" in check.minFree ? check.minFree.bytes : (total * check.minFree.percent) / 100;
      if (available < floor) return finish(false, `${space}, below min_free ${showFloor(check.minFree)}`);
    }
    if (check.minFreeInodes) {
      if (!stats.files) return finish(false, `${check.path}: the filesystem reports no inode counts`);
      const floor =
        "count" in check.minFreeInodes ? check.minFreeInodes.count : (stats.files * check.minFreeInodes.percent) / 100;
      if (stats.ffree < floor)
        return finish(false, `${inodes}, below min_free_inodes ${showInodes(check.minFreeInodes)}`);
    }
    return finish(true, detail);
  },
  describe: (check) =>
    [
      `disk ${check.path}`,
      check.minFree && `min_free ${showFloor(check.minFree)}`,
      check.minFreeInodes && `min_free_inodes ${showInodes(check.minFreeInodes)}`,
    ]
      .filter(Boolean)
      .join(", "),
  plan: (check) => ({
    "check.disk": check.path,
    "check.min_free": check.minFree ? showFloor(check.minFree) : "none",
    "check.min_free_inodes": check.minFreeInodes
      ? "count" in check.minFreeInodes
        ? check.minFreeInodes.count
        : `${check.minFreeInodes.percent}%`
      : "none",
  }),
});
