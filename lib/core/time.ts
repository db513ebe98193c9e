export type Tag =
  | "START"
  | "WARN"
  | "BUSY"
  | "WAIT"
  | "HUNG"
  | "RESTART"
  | "RECOVERED"
  | "FAILED"
  | "GIVEN-UP"
  | "AUTO-RESTART"
  | "MEMORY"
  | "NOTIFY"
  | "SKIP"
  | "DOWNTIME"
  | "ERROR";

const pad = (n: number) => String(n).padStart(2, "0");

/** Local wall time "YYYY-MM-DD HH:MM:SS", as `date '+%F %T'` prints it. */
export function localStamp(at: Date): string {
  const date = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
  return `${date} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/** UTC "YYYY-MM-DD HH:MM:SS" for downtime bounds. */
export const utcStamp = (at: Date) => at.toISOString().slice(0, 19).replace("T", " ");

/** One log line: `[YYYY-MM-DD HH:MM:SS] [TAG] message`. */
export const formatLine = (tag: Tag, message: string, at: Date) => `[${localStamp(at)}] [${tag}] ${message}`;
