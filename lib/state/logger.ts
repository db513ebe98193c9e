import { appendNoFollow } from "../os/files.ts";
import { escapeControls } from "../core/sanitize.ts";
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
    // One line whatever the message holds: outside text cannot start a line of its own.
    const safe = escapeControls(message);
    const line = formatLine(tag, safe, at);
    this.entries.push({ tag, message: safe, at });
    if (file) appendNoFollow(file, line + "\n");
    this.echo(line);
    return line;
  }
}
