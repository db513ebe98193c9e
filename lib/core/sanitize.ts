/**
 * The one sanitiser for text from outside (answers, command output, cmdlines, file contents,
 * other programs' errors): control characters (C0 with CR, LF, TAB and NUL, DEL, C1, ESC), the
 * Unicode line separators and the bidirectional controls become visible escapes, so no outside
 * text can start a log line, move the cursor or recolour a terminal.
 */
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
// Also the bidirectional controls (U+200E/F, U+202A-E, U+2066-9): a U+202E turns "exe.txt" around.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

const hex = (code: number, width: number) => code.toString(16).padStart(width, "0");

export function escapeControls(text: string): string {
  return text.replace(CONTROL, (char) => {
    const code = char.charCodeAt(0);
    return NAMED[char] ?? (code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`);
  });
}

/**
 * Outside text in a log line, status or a line of stdout/stderr: one escaped line, its first
 * `max` characters (and "…" when there was more).
 */
export function oneLine(text: string, max = 200): string {
  const escaped = escapeControls(text.trim());
  const chars = [...escaped]; // code points: a cut never splits a character in two
  return chars.length > max ? chars.slice(0, max).join("") + "…" : escaped;
}

/** A multi-line text whose lines are each escaped (configuration errors, `watchdog logs`). */
export const escapeLines = (text: string) => text.split("\n").map(escapeControls).join("\n");
