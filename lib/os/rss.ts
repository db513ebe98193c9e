import { readdirSync, readFileSync } from "node:fs";

const PAGE_SIZE = 4096;
/** RSS in bytes of a process and all its descendants (Linux /proc). */
export function treeRss(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {}
  }
  let total = 0;
  const queue = [pid];
  const seen = new Set<number>();
  while (queue.length) {
    const current = queue.shift()!;
    if (seen.has(current)) continue;
    seen.add(current);
    try {
      total += Number(readFileSync(`/proc/${current}/statm`, "utf8").split(" ")[1]) * PAGE_SIZE;
    } catch {}
    queue.push(...(children.get(current) ?? []));
  }
  return total;
}
