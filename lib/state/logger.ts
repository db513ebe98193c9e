import { appendFileSync } from "node:fs";
import { formatLine, type Tag } from "../core/time.ts";

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
