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

  /**
   * `full`: the log file's version of the message when it says more than stdout may (a
   * command's whole argv, secrets redacted, where stdout shows its program and argument count).
   */
  write(tag: Tag, message: string, { file = this.file, full }: { file?: string | null; full?: string } = {}): string {
    const at = new Date(this.clock());
    // One line whatever the message holds: outside text cannot start a line of its own.
    const safe = escapeControls(message);
    const line = formatLine(tag, safe, at);
    this.entries.push({ tag, message: safe, at });
    if (file) appendNoFollow(file, (full === undefined ? line : formatLine(tag, escapeControls(full), at)) + "\n");
    this.echo(line);
    return line;
  }
}
