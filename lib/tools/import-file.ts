// `watchdog import SCRIPT [--out FILE]`, its edge: the script read (bounded), the crontab line that
// runs it, the draft checked as `validate` checks a configuration, written once (0600, never over a file).
import { closeSync, openSync, writeSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { basename, resolve } from "node:path";
import { oneLine } from "../core/sanitize.ts";
import { parseConfig } from "../config/load.ts";
import { errorMessage, refused, TendError, usageError } from "../core/errors.ts";
import type { Io } from "../io.ts";
import { inWords, readRegularFile } from "../os/files.ts";
import { crontabLines } from "../operator/install.ts";
import { importScript } from "./import.ts";

const SCRIPT_LIMIT = 1024 * 1024;

/** The sender mail(1) uses: this user at this host. */
function mailSender(): string {
  const user = (() => {
    try {
      return userInfo().username;
    } catch {
      return "tend";
    }
  })();
  const host = hostname();
  return /^[\w.+-]+$/.test(user) && /^[\w.-]+$/.test(host) ? `${user}@${host}` : "tend@localhost";
}

export async function importFromFile(script: string, out: string | null, io: Io): Promise<number> {
  if (out === "") throw usageError("--out needs a file name");
  const path = resolve(script);
  let text: string;
  try {
    text = readRegularFile(path, SCRIPT_LIMIT, { follow: true });
  } catch (error) {
    throw usageError(`${path}: ${inWords(error)}`);
  }
  // The crontab line that runs it gives the period (none: the draft keeps tend's default, 5m).
  const cron = (await crontabLines().catch(() => [])).find(
    (line) => !line.trimStart().startsWith("#") && (line.includes(path) || line.includes(`/${basename(path)}`)),
  );
  const { draft, services, missing } = importScript(path, text, {
    cronLine: cron ?? null,
    mailFrom: mailSender(),
    prefix: io.env.PREFIX,
  });
  try {
    parseConfig(draft, "the draft", io.env);
  } catch (error) {
    throw new TendError(
      `the draft from ${path} does not validate (a bug: please report it): ${errorMessage(error)}`,
      1,
    );
  }
  if (out === null) io.out(draft.trimEnd());
  else {
    let fd: number;
    try {
      fd = openSync(resolve(out), "wx", 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST")
        throw refused(`${resolve(out)} exists: the draft is never written over a file (choose another --out)`);
      throw new TendError(`${resolve(out)}: ${inWords(error)}`, 1);
    }
    try {
      writeSync(fd, draft);
    } finally {
      closeSync(fd);
    }
    io.out(`${resolve(out)}: written (${services} services; check it, then tend watchdog validate --config ${out})`);
  }
  if (!services) io.err(`watchdog import: nothing in ${path} could be mapped to a service`);
  for (const line of missing) io.err(`watchdog import: not carried over: ${oneLine(line)}`);
  if (missing.length)
    io.err(
      `watchdog import: ${missing.length} restart(s) the script makes are not in the draft: carry them over by hand`,
    );
  return services && !missing.length ? 0 : 1;
}
