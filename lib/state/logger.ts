import { appendRotating, DEFAULT_ROTATION, type Rotation } from "../os/rotate.ts";
import { escapeControls } from "../core/sanitize.ts";
import { formatLine, type Tag } from "../core/time.ts";
import { isFullDisk } from "./spill.ts";
import { inWords } from "../os/files.ts";

interface LogEntry {
  tag: Tag;
  message: string;
  at: Date;
}

/**
 * Appends `[time] [TAG] message` lines to a file and hands each to `echo` (the command prints it).
 * `echoUnloggedOnly`: echo only what could not be written to the file (stdout is cron.log, which
 * would otherwise hold every event twice).
 */
export class Logger {
  readonly entries: LogEntry[] = [];
  /** Lines that could not be written because the disk is full (echoed instead): how many. */
  unwritten = 0;
  /** stdout could not be written (a broken pipe, a full disk, a closed descriptor): said once, then left alone. */
  private echoFailed = false;
  constructor(
    private readonly file: string | null,
    private readonly echo: (line: string) => void = () => {},
    private readonly clock: () => number = Date.now,
    private readonly rotation: Rotation = DEFAULT_ROTATION,
    private readonly echoUnloggedOnly = false,
  ) {}

  /**
   * `full`: the log file's version of the message when it says more than stdout may (a
   * command's whole argv, secrets redacted, where stdout shows its program and argument count).
   * `downtime`: downtime.log, which a DOWNTIME line also goes to (`grep DOWNTIME watchdog.log` still finds it).
   */
  write(tag: Tag, message: string, { downtime, full }: { downtime?: string; full?: string } = {}): string {
    const at = new Date(this.clock());
    // One line whatever the message holds: outside text cannot start a line of its own.
    const safe = escapeControls(message);
    const line = formatLine(tag, safe, at);
    this.entries.push({ tag, message: safe, at });
    const logged = (full === undefined ? line : formatLine(tag, escapeControls(full), at)) + "\n";
    try {
      if (this.file) appendRotating(this.file, logged, this.rotation);
      if (downtime) appendRotating(downtime, logged, this.rotation);
    } catch (error) {
      this.say(line); // it reaches stdout at least (cron mails it, or cron.log keeps it)
      // A full disk must not stop a pass from judging and restarting: the line went to stdout.
      if (isFullDisk(error)) {
        this.unwritten++;
        return line;
      }
      throw error;
    }
    if (!this.echoUnloggedOnly || !this.file) this.say(line);
    return line;
  }

  /**
   * tend's stdout is the least reliable thing it writes to: a broken pipe (`| head -1`, a dead
   * `| logger`), a full disk or a closed descriptor there is one line in the log, never an error of
   * the pass, never the end of `watchdog run`; nothing more is printed after it.
   */
  private say(line: string): void {
    if (this.echoFailed) return;
    try {
      this.echo(line);
    } catch (error) {
      this.echoFailed = true;
      const said = formatLine(
        "WARN",
        `stdout: ${inWords(error)} (what tend prints is in this log)`,
        new Date(this.clock()),
      );
      try {
        if (this.file) appendRotating(this.file, said + "\n", this.rotation);
      } catch {} // the log cannot take it either: nothing more can be said
    }
  }
}
