import { createHash } from "node:crypto";
import {
  existsSync,
  realpathSync,
  chownSync,
  lstatSync,
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { unifiedDiff } from "../core/diff.ts";
import { refused, TendError, usageError } from "../core/errors.ts";
import { localStamp } from "../core/time.ts";
import { redactUrl } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";
import { runCommand } from "../os/run.ts";
import { copyRegular, fsyncRegular, inWords, readBlocks, readBounded, readRegularFile } from "../os/files.ts";
import { isTimeout, networkReason } from "../os/net.ts";
import { writeAll, writeFileAtomic } from "../os/atomic.ts";
import { executableProblem, HEAD_BYTES, type Host } from "../core/executable.ts";
import { isTermux } from "../core/platform.ts";

/** Backups kept by default (--keep N): each is the size of the binary, and a phone's storage is small. */
const KEEP_BACKUPS = 3;
const RUN_TIMEOUT_MS = 120_000;

export interface UpdateIo {
  say: (line: string) => void;
  /**
   * Asked after the version change and the diff, before the backup and the swap: "yes", "no", or
   * "preview" (no --yes and no terminal to ask on: stop there, exit 2, nothing written).
   */
  confirm: () => Promise<"yes" | "no" | "preview">;
  now?: () => Date;
  fetch?: typeof fetch;
  /** Backups to keep (--keep N). */
  keep?: number;
  /** The x.y.z of the tend at PATH (its --version), or null: installedVersion; a test gives its own. */
  versionOf?: (path: string) => Promise<string | null>;
  /** The package that owns PATH (dpkg -S, Homebrew's Cellar), or null: packageOwner. */
  ownerOf?: (path: string) => Promise<PackageOwner | null>;
}

/** A package manager's claim on a file: which package, and the command that updates it instead. */
interface PackageOwner {
  manager: "dpkg" | "homebrew";
  name: string;
  /** How the user updates it instead ("apt install ./tend_X.Y.Z_amd64.deb"). */
  update: string;
}

/** The x.y.z the tend binary at PATH says it is, or null (none there, or it does not answer as tend). */
export async function installedVersion(path: string): Promise<string | null> {
  if (!existsSync(path)) return null;
  const said = await runCommand([path, "--version"], { timeoutMs: 30_000 });
  const line = said.exitCode === 0 ? said.stdout.split("\n")[0].trim() : "";
  return TEND_VERSION_LINE.test(line) ? line.split(/[\s+]/)[1] : null;
}

/**
 * Who owns PATH, if a package manager does: dpkg (Debian, and Termux, whose pkg is dpkg underneath),
 * Homebrew (a Cellar path). Such a file is updated by its package, never swapped behind its back
 * (dpkg --verify would flag it and the next upgrade would overwrite it silently).
 */
export async function packageOwner(path: string, version = "X.Y.Z"): Promise<PackageOwner | null> {
  const real = resolveTarget(path);
  if (/\/Cellar\/[^/]+\//.test(real)) {
    const name = /\/Cellar\/([^/]+)\//.exec(real)![1];
    return { manager: "homebrew", name, update: `brew upgrade ${name}` };
  }
  const termux = isTermux(process.env);
  for (const candidate of [...new Set([path, real])]) {
    const asked = await runCommand(["dpkg", "-S", candidate], { timeoutMs: 30_000 });
    if (asked.exitCode !== 0) continue;
    const name = asked.stdout.split(":")[0].trim();
    if (!name || name.includes(" ")) continue; // "diversion by …" lines
    const arch = termux ? "aarch64" : process.arch === "arm64" ? "arm64" : "amd64";
    return { manager: "dpkg", name, update: `${termux ? "pkg" : "apt"} install ./${name}_${version}_${arch}.deb` };
  }
  return null;
}

/** Refuse a target a package manager owns (exit 3), naming the package and the command that updates it. */
async function refusePackaged(target: string, io: UpdateIo, version?: string): Promise<void> {
  const owner = await (io.ownerOf ?? packageOwner)(target, version);
  if (owner)
    throw refused(
      `${target} belongs to the ${owner.manager === "dpkg" ? "Debian" : "Homebrew"} package ${owner.name}: ` +
        `self-update does not swap it behind ${owner.manager}'s back; update the package instead ` +
        `(${owner.update}), or give --target another path`,
    );
}

/** A binary proves it is tend: `tend X.Y.Z[+BUILD]` as the first line of --version. */
const TEND_VERSION_LINE = /^tend \d+\.\d+\.\d+(\+[\w.-]+)?$/;

/** `watchdog plan` output: [blocks] of `key = JSON value` lines, a [watchdog] block among them. */
function parsesAsPlan(text: string): boolean {
  const lines = text.split("\n").filter((line) => line.trim());
  if (!lines.includes("[watchdog]")) return false;
  return lines.every((line) => {
    if (/^\[[^\]]+\]$/.test(line)) return true;
    const eq = line.indexOf(" = ");
    if (eq <= 0) return false;
    try {
      JSON.parse(line.slice(eq + 3));
      return true;
    } catch {
      return false;
    }
  });
}

/** Stop after the preview, or when not confirmed: nothing was changed. */
async function confirmed(io: UpdateIo): Promise<void> {
  const answer = await io.confirm();
  if (answer === "preview") throw new TendError("no terminal to confirm on and no --yes: nothing changed", 2);
  if (answer === "no") throw new TendError("not confirmed: nothing changed", 1);
}

/** "2026-11-30 04:29:59" -> "20261130-042959" */
const stamp = (at: Date) => localStamp(at).replace(/[-:]/g, "").replace(" ", "-");

/**
 * The order backups were made in, oldest first, recorded beside the target (.TARGET.backups): a
 * name's date is the wall clock's, which a phone booting at 1970 or a DST fall-back puts out of order.
 */
const manifestOf = (target: string) => join(dirname(target), `.${basename(target)}.backups`);

function readManifest(target: string): string[] {
  try {
    return readRegularFile(manifestOf(target), 64 * 1024)
      .split("\n")
      .filter((name) => /^[^/\0]+$/.test(name));
  } catch {
    return [];
  }
}

/**
 * Backups of `target`, newest first: TARGET.bak-YYYYMMDD-HHMMSS[-N], in the order they were made
 * (recorded); backups made before that record existed come after, by their names' dates.
 */
export function listBackups(target: string): string[] {
  const prefix = `${basename(target)}.bak-`;
  let names: string[] = [];
  try {
    names = readdirSync(dirname(target));
  } catch {}
  const present = names.filter(
    (name) => name.startsWith(prefix) && /^\d{8}-\d{6}(-\d+)?$/.test(name.slice(prefix.length)),
  );
  const recorded = readManifest(target).filter((name) => present.includes(name));
  const unrecorded = present
    .filter((name) => !recorded.includes(name))
    .sort((a, b) => backupOrder(b.slice(prefix.length)) - backupOrder(a.slice(prefix.length)) || (b < a ? -1 : 1));
  return [...recorded.reverse(), ...unrecorded].map((name) => join(dirname(target), name));
}

/** Record `made` as the newest backup (the manifest rewritten atomically, only names that exist). */
function recordBackup(target: string, made: string): void {
  const kept = listBackups(target)
    .map((path) => basename(path))
    .reverse()
    .filter((name) => name !== made);
  writeFileAtomic(manifestOf(target), `${[...kept, made].join("\n")}\n`, 0o644);
}
const backupOrder = (suffix: string) =>
  Number(suffix.slice(0, 8) + suffix.slice(9, 15)) * 1000 + Number(suffix.split("-")[2] ?? 0);

/** Copy the current file to TARGET.bak-..., preserving mode and times; keep the newest `keep`. */
export function backup(target: string, now: Date, keep = KEEP_BACKUPS): string {
  let path = `${target}.bak-${stamp(now)}`;
  for (let n = 1; listBackups(target).includes(path); n++) path = `${target}.bak-${stamp(now)}-${n}`;
  const info = statSync(target);
  // Written completely or not at all: a temp copy, fsynced, its size checked, then renamed into place
  // (a full disk leaves no truncated backup for --rollback to restore).
  const temp = tempBeside(path);
  try {
    copyRegular(target, temp, { follow: true });
    if (!fsyncRegular(temp)) throw new TendError(`backup of ${target}: cannot make the copy durable`, 1);
    if (statSync(temp).size !== info.size)
      throw new TendError(`backup of ${target}: the copy is ${statSync(temp).size} bytes, not ${info.size}`, 1);
    chmodSync(temp, info.mode & 0o7777);
    utimesSync(temp, info.atime, info.mtime);
    renameSync(temp, path);
    recordBackup(target, basename(path));
  } catch (error) {
    rmSync(temp, { force: true });
    if (error instanceof TendError) throw error;
    throw new TendError(`backup of ${target}: ${inWords(error)}: nothing swapped`, 1);
  }
  for (const old of listBackups(target).slice(keep)) rmSync(old, { force: true });
  return path;
}

/** The file a target names: a symlinked ~/bin/tend is replaced where it points, the link kept. */
export function resolveTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // not there yet: installed where asked
  }
}

/** A temp file beside the target (same filesystem: the rename is atomic). */
const tempBeside = (target: string) =>
  join(dirname(target), `.${basename(target)}.new-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);

/** This host, as a binary must match it: Termux runs only the Android build (bionic's linker). */
export const thisHost = (): Host => ({
  platform: process.platform,
  arch: process.arch,
  android: (process.platform as string) === "android" || isTermux(process.env),
});

/**
 * Refuse, without running it, a file that is no executable for this host: a script, an error
 * page, a truncated download, the build for another platform (the check that needs no execution).
 */
function checkExecutable(path: string, what: string, host = thisHost()): void {
  let head: Uint8Array;
  try {
    head = readBounded(path, HEAD_BYTES).bytes;
  } catch (error) {
    throw new TendError(`${what}: ${inWords(error)}`, 1);
  }
  checkHead(head, what, host);
}

/** The same check on the first bytes as they were written (the temp file is never read back by path). */
function checkHead(head: Uint8Array, what: string, host = thisHost()): void {
  const problem = executableProblem(head, host);
  if (problem) throw new TendError(`${what} is not an executable for this host: ${problem} (not run)`, 1);
}

async function run(binary: string, args: string[], what: string): Promise<string> {
  const result = await runCommand([binary, ...args], { timeoutMs: RUN_TIMEOUT_MS });
  if (result.error) throw new TendError(`${what}: cannot run it: ${result.error}`, 1);
  if (result.timedOut) throw new TendError(`${what}: did not finish within ${RUN_TIMEOUT_MS / 1000}s`, 1);
  if (result.exitCode !== 0)
    throw new TendError(
      `${what}: exit ${result.exitCode}` +
        (result.stderr.trim() ? `: ${oneLine(result.stderr.trim().split("\n").slice(0, 5).join(" / "))}` : ""),
      1,
    );
  return result.stdout;
}

const MAX_REDIRECTS = 5;

/** A download without a size stated for it (release.json's) stops here: a binary is ~120 MB. */
export const DOWNLOAD_LIMIT = 512 * 1024 * 1024;

/** What was written into the temp file: its sha256 and first bytes, taken as the bytes went in. */
interface Written {
  sha256: string;
  head: Uint8Array;
}

/**
 * The temp file beside the target: created exclusively (never through a symlink), mode 0700 owned by
 * tend's user whatever the source's mode, and hashed as it is written — never reopened by path before
 * it runs, so the bytes verified are the bytes that run and are installed (#62 F1: a 0777 copy was
 * rewritten by another user after its check, and root ran it).
 */
function tempWriter(temp: string, limit: number, what: string) {
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o700);
  fchmodSync(fd, 0o700); // whatever the umask left
  const hash = createHash("sha256");
  const head = Buffer.alloc(HEAD_BYTES);
  let size = 0;
  return {
    write(chunk: Uint8Array) {
      if (size + chunk.length > limit)
        throw new TendError(`${what}: more than ${limit} bytes (the size stated for it): stopped, nothing run`, 1);
      if (size < HEAD_BYTES) Buffer.from(chunk.subarray(0, HEAD_BYTES - size)).copy(head, size);
      hash.update(chunk);
      writeAll(fd, chunk);
      size += chunk.length;
    },
    finish(): Written {
      fsyncSync(fd);
      return { sha256: hash.digest("hex"), head: head.subarray(0, Math.min(size, HEAD_BYTES)) };
    },
    close: () => closeSync(fd),
  };
}

/**
 * Fetch SOURCE into `temp` (a path through the one reader, or a download streamed, never held whole in
 * memory), at most `limit` bytes. Redirects are followed by hand, as curl --proto-redir does: never to
 * a weaker scheme (https to http), and only with --sha256 (a redirect moves trust to another place;
 * the hash is what keeps it).
 */
async function fetchSource(
  source: string,
  temp: string,
  fetchImpl: typeof fetch,
  pinned: boolean,
  limit: number,
): Promise<Written> {
  if (!/^https?:\/\//.test(source)) {
    const out = tempWriter(temp, limit, source);
    try {
      readBlocks(source, Number.MAX_SAFE_INTEGER, (block) => out.write(block), { follow: true });
      return out.finish();
    } catch (error) {
      if (error instanceof TendError) throw error;
      // A FIFO, a device, a directory: refused in words, never waited on (a channel's binary planted so).
      if ((error as NodeJS.ErrnoException).code === "EFTYPE") throw refused(`${source}: ${inWords(error)}: refused`);
      throw new TendError(`${source}: ${inWords(error)}`, 1);
    } finally {
      out.close();
    }
  }
  let url = source;
  for (let hop = 0; ; hop++) {
    let response: Response;
    try {
      response = await fetchImpl(url, { signal: AbortSignal.timeout(300_000), redirect: "manual" });
    } catch (error) {
      throw new TendError(`download ${redactUrl(url)}: ${downloadReason(error)}`, 1);
    }
    if (response.status >= 300 && response.status < 400 && response.headers.get("location")) {
      await response.body?.cancel().catch(() => {});
      const next = new URL(response.headers.get("location")!, url).toString();
      if (new URL(url).protocol === "https:" && new URL(next).protocol !== "https:")
        throw refused(`download ${redactUrl(url)}: redirected to ${redactUrl(next)}, a weaker scheme: refused`);
      if (!pinned)
        throw refused(
          `download ${redactUrl(url)}: redirected to ${redactUrl(next)}; without --sha256 a redirect is ` +
            `not followed (give the final URL, or pin the binary with --sha256)`,
        );
      if (hop >= MAX_REDIRECTS) throw new TendError(`download ${redactUrl(source)}: more than 5 redirects`, 1);
      url = next;
      continue;
    }
    if (response.status < 200 || response.status > 299)
      throw new TendError(`download ${redactUrl(url)}: HTTP ${response.status}`, 1);
    const out = tempWriter(temp, limit, `download ${redactUrl(url)}`);
    const reader = response.body?.getReader();
    try {
      while (reader) {
        const { done, value } = await reader.read();
        if (done) break;
        out.write(value);
      }
      return out.finish();
    } catch (error) {
      await reader?.cancel().catch(() => {});
      if (error instanceof TendError) throw error;
      throw new TendError(`download ${redactUrl(url)}: ${downloadReason(error)}`, 1);
    } finally {
      out.close();
    }
  }
}

/** A failed download in words: a timeout says its limit, never an internal error. */
const downloadReason = (error: unknown) =>
  isTimeout(error)
    ? "no answer within 300s"
    : (error as NodeJS.ErrnoException)?.code
      ? inWords(error)
      : networkReason(error);

interface BinaryUpdate {
  source: string;
  target: string;
  sha256: string | null;
  config: string;
  /** From a signed release (--channel): its version; the hash is the signed one, a mismatch is refused. */
  signed?: string;
  /** The most bytes the binary may have: the size the release states, else DOWNLOAD_LIMIT. */
  limit?: number;
}

/**
 * Replace the tend binary: fetch beside the target, check, prove the new binary works on the
 * live config, back up, show the version change and the plan diff, swap atomically, verify, and
 * restore the backup if the installed binary does not run. Any failure before the swap changes nothing.
 */
export async function updateBinary(
  { source, target, sha256, config, signed, limit = DOWNLOAD_LIMIT }: BinaryUpdate,
  io: UpdateIo,
): Promise<void> {
  if (sha256 !== null && !/^[0-9a-f]{64}$/i.test(sha256))
    throw usageError(`--sha256: ${JSON.stringify(sha256)} is not 64 hex digits`);
  // It will run as root from cron: over plain HTTP anyone on the path could hand over anything.
  if (/^http:\/\//i.test(source) && !sha256) {
    throw refused(`${redactUrl(source)}: an http:// SOURCE needs --sha256 (the new binary runs, often as root)`);
  }
  await refusePackaged(target, io, signed);
  const temp = tempBeside(target);
  try {
    const written = await fetchSource(source, temp, io.fetch ?? fetch, sha256 !== null, limit);
    const actual = written.sha256;
    if (sha256 && actual !== sha256.toLowerCase()) {
      if (signed)
        throw refused(`sha256 mismatch: the signed release says ${sha256}, the file is ${actual}: tampered? not run`);
      throw new TendError(`sha256 mismatch: expected ${sha256.toLowerCase()}, got ${actual}`, 1);
    }
    if (existsSync(target) && sha256File(target) === actual) {
      io.say(
        `already installed: ${target} is that binary (sha256 ${actual.slice(0, 12)}…): nothing swapped, no backup`,
      );
      return;
    }
    checkHead(written.head, "the new binary");
    const newVersion = (await run(temp, ["--version"], "the new binary's --version")).split("\n")[0].trim();
    if (!TEND_VERSION_LINE.test(newVersion)) {
      throw new TendError(
        `the new binary is not tend: its --version says ${JSON.stringify(newVersion.slice(0, 60))}`,
        1,
      );
    }
    if (signed && newVersion.split(/[\s+]/)[1] !== signed)
      throw refused(`the new binary says ${JSON.stringify(newVersion)}, the signed release says tend ${signed}`);
    await run(temp, ["watchdog", "validate", "--config", config], "the new binary's watchdog validate");
    await run(temp, ["watchdog", "pass", "--dry-run", "--config", config], "the new binary's watchdog pass --dry-run");
    const oldVersion = (
      await run(target, ["--version"], "the current binary's --version").catch(() => "(current binary does not answer)")
    ).trim();
    const oldPlan = await run(
      target,
      ["watchdog", "plan", "--config", config],
      "the current binary's watchdog plan",
    ).catch((error: Error) => `# ${error.message}\n`);
    const newPlan = await run(temp, ["watchdog", "plan", "--config", config], "the new binary's watchdog plan");
    if (!parsesAsPlan(newPlan)) throw new TendError("the new binary is not tend: its `watchdog plan` is not a plan", 1);
    io.say(`version: ${oldVersion} -> ${newVersion}`);
    const diff = unifiedDiff(oldPlan, newPlan, `plan (${oldVersion})`, `plan (${newVersion})`);
    io.say(diff ? diff.trimEnd() : "plan: no change in behaviour");
    await confirmed(io);
    const saved = backup(target, (io.now ?? (() => new Date()))(), io.keep);
    io.say(`backup: ${saved}`);
    // The new binary keeps the installed one's owner and group (root updating a user's tend must not
    // make it root's).
    // and its mode (0755 for a new one): the temp file was 0700 while it was checked and run.
    if (existsSync(target)) {
      const owner = statSync(target);
      if (process.getuid?.() === 0) chownSync(temp, owner.uid, owner.gid);
      chmodSync(temp, owner.mode & 0o7777);
    } else chmodSync(temp, 0o755);
    try {
      renameSync(temp, target);
    } catch (error) {
      throw new TendError(`cannot install ${target}: ${inWords(error)} (nothing swapped; backup ${saved})`, 1);
    }
    try {
      await run(target, ["--version"], "the installed binary's --version");
    } catch (error) {
      restore(saved, target);
      throw new TendError(`${(error as Error).message}: restored ${saved}`, 1);
    }
    io.say(`installed ${target} (${newVersion})`);
  } finally {
    rmSync(temp, { force: true });
  }
}

/** Copy a backup back over the target, atomically. */
function restore(saved: string, target: string): void {
  const temp = tempBeside(target);
  try {
    copyRegular(saved, temp, { mode: 0o700 });
    chmodSync(temp, statSync(saved).mode & 0o7777);
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new TendError(`cannot restore ${saved} over ${target}: ${inWords(error)}`, 1);
  }
}

/** Restore the newest backup: asked like an update, and the version it restored said. */
export async function rollback(target: string, io: UpdateIo): Promise<void> {
  await refusePackaged(target, io);
  const [newest] = listBackups(target);
  if (!newest) throw new TendError(`no backup of ${target} to roll back to`, 1);
  // Only a regular file that proves it is tend (its --version) goes over the binary: never a symlink
  // planted as a backup (it would put /etc/hostname there), never a truncated or foreign file.
  const kind = lstatSync(newest);
  if (!kind.isFile()) throw refused(`${newest} is not a regular file (a symlink?): not restored`);
  try {
    checkExecutable(newest, newest);
  } catch (error) {
    throw refused(`${(error as Error).message}: not restored`);
  }
  const said = await run(newest, ["--version"], `${newest} --version`).catch(() => "");
  if (!TEND_VERSION_LINE.test(said.split("\n")[0].trim()))
    throw refused(`${newest} does not answer --version as tend does: not restored (truncated or not tend)`);
  const version = async (binary: string) =>
    (await run(binary, ["--version"], `${binary} --version`).catch(() => "(does not answer)")).split("\n")[0].trim();
  const [current, restored] = [await version(target), await version(newest)];
  io.say(`version: ${current} -> ${restored} (${newest})`);
  await confirmed(io);
  restore(newest, target);
  io.say(`restored ${newest} over ${target}: ${restored}`);
}

interface ConfigUpdate {
  /** The live configuration file. */
  config: string;
  next: string;
  /** The current binary, to validate and plan with. */
  binary: string;
}

/**
 * Replace the live configuration: NEW is copied beside the live one first, so its relative paths
 * resolve where it will live; validated and planned there, backed up, diffed, swapped atomically.
 */
export async function applyConfig({ config, next, binary }: ConfigUpdate, io: UpdateIo): Promise<void> {
  const temp = `${tempBeside(config)}${extname(config)}`;
  try {
    copyRegular(next, temp, { follow: true });
    chmodSync(temp, statSync(config).mode & 0o7777);
    const check = await runCommand([binary, "watchdog", "validate", "--config", temp], { timeoutMs: RUN_TIMEOUT_MS });
    if (check.exitCode !== 0) {
      const said = check.stderr.trim().split(temp).join(next);
      throw new TendError(`${next} is not a valid configuration (where it would live), nothing changed:\n${said}`, 2);
    }
    const oldPlan = await run(binary, ["watchdog", "plan", "--config", config], "plan of the live configuration").catch(
      (error: Error) => `# ${error.message}\n`,
    );
    const newPlan = await run(binary, ["watchdog", "plan", "--config", temp], "plan of the new configuration");
    const diff = unifiedDiff(oldPlan, newPlan.split(temp).join(config), config, next);
    io.say(diff ? diff.trimEnd() : "plan: no change in behaviour");
    await confirmed(io);
    io.say(`backup: ${backup(config, (io.now ?? (() => new Date()))(), io.keep)}`);
    renameSync(temp, config);
  } finally {
    rmSync(temp, { force: true });
  }
  io.say(`installed ${next} as ${config}`);
}

/** A file's sha256, read through the one reader in blocks (never held whole). */
function sha256File(path: string): string {
  const hash = createHash("sha256");
  readBlocks(path, Number.MAX_SAFE_INTEGER, (block) => hash.update(block), { follow: true });
  return hash.digest("hex");
}
