import { readRegularFile } from "./files.ts";

/**
 * One line of /etc/passwd or /etc/group, by its numeric id (its third field), as its fields; null
 * when the file or the entry is not there (Termux has neither). Read here, not by os.userInfo():
 * Bun's answers $USER, or "unknown" without it (cron, setpriv, systemd give no $USER).
 */
export function idEntry(file: "/etc/passwd" | "/etc/group", id: number): string[] | null {
  try {
    return (
      readRegularFile(file, 4 * 1024 * 1024, { follow: true })
        .split("\n")
        .map((line) => line.split(":"))
        .find((fields) => fields.length > 2 && Number(fields[2]) === id) ?? null
    );
  } catch {
    return null;
  }
}

/** This process's user's name: its passwd entry's, else $USER or $LOGNAME, else its uid. */
export function userName(env: Record<string, string | undefined> = process.env): string {
  const uid = process.getuid?.() ?? 0;
  return idEntry("/etc/passwd", uid)?.[0] || env.USER || env.LOGNAME || String(uid);
}
