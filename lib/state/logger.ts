import { appendFileSync } from "node:fs";

export type Tag =
  | "START" | "WARN" | "BUSY" | "WAIT" | "HUNG" | "RESTART" | "RECOVERED" | "FAILED" | "GIVEN-UP"
  | "AUTO-RESTART" | "MEMORY" | "NOTIFY" | "SKIP" | "DOWNTIME" | "ERROR";

const pad = (n: number) => String(n).padStart(2, "0");

/** Local wall time "YYYY-MM-DD HH:MM:SS", as `date '+%F %T'` prints it. */
export function localStamp(at: Date): string {
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/** UTC "YYYY-MM-DD HH:MM:SS" for downtime bounds. */
export const utcStamp = (at: Date) => at.toISOString().slice(0, 19).replace("T", " ");

export const formatLine = (tag: Tag, message: string, at: Date) => `[${localStamp(at)}] [${tag}] ${message}`;

export interface LogEntry {
  tag: Tag;
  message: string;
  at: Date;
}

/** Appends `[time] [TAG] message` lines to a file and hands each to `echo` (the command prints it). */
export class Logger {
  readonly entries: LogEntry[] = [];
  constructor(
    private readonly file: string | null,
    private readonly echo: (line: string) => void = () => {},
    private readonly clock: () => number = Date.now,
  ) {}

  write(tag: Tag, message: string, file = this.file): string {
    const at = new Date(this.clock());
    const line = formatLine(tag, message, at);
    this.entries.push({ tag, message, at });
    if (file) appendFileSync(file, line + "\n", { mode: 0o600 });
    this.echo(line);
    return line;
  }
}
