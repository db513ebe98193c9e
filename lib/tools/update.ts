import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { unifiedDiff } from "../core/diff.ts";
import { TendError, usageError } from "../core/errors.ts";
import { localStamp } from "../core/time.ts";
import { redactUrl } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";
import { runCommand } from "../os/run.ts";

export const KEEP_BACKUPS = 5;
const RUN_TIMEOUT_MS = 120_000;

export interface UpdateIo {
  say: (line: string) => void;
  /** Asked after the diff, before the swap; false stops with nothing changed. */
  confirm: () => Promise<boolean>;
  now?: () => Date;
  fetch?: typeof fetch;
}

/** "2026-11-30 04:29:59" -> "20261130-042959" */
const stamp = (at: Date) => localStamp(at).replace(/[-:]/g, "").replace(" ", "-");

/** Backups of `target`, newest first: TARGET.bak-YYYYMMDD-HHMMSS[-N]. */
export function listBackups(target: string): string[] {
  const prefix = `${basename(target)}.bak-`;
  let names: string[] = [];
  try {
    names = readdirSync(dirname(target));
  } catch {}
  return names
    .filter((name) => name.startsWith(prefix) && /^\d{8}-\d{6}(-\d+)?$/.test(name.slice(prefix.length)))
    .sort((a, b) => backupOrder(b.slice(prefix.length)) - backupOrder(a.slice(prefix.length)) || (b < a ? -1 : 1))
    .map((name) => join(dirname(target), name));
}
const backupOrder = (suffix: string) =>
  Number(suffix.slice(0, 8) + suffix.slice(9, 15)) * 1000 + Number(suffix.split("-")[2] ?? 0);

/** Copy the current file to TARGET.bak-..., preserving mode and times; keep the newest 5. */
export function backup(target: string, now: Date): string {
  let path = `${target}.bak-${stamp(now)}`;
  for (let n = 1; listBackups(target).includes(path); n++) path = `${target}.bak-${stamp(now)}-${n}`;
  const info = statSync(target);
  copyFileSync(target, path);
  chmodSync(path, info.mode & 0o7777);
  utimesSync(path, info.atime, info.mtime);
  for (const old of listBackups(target).slice(KEEP_BACKUPS)) rmSync(old, { force: true });
  return path;
}

/** A temp file beside the target (same filesystem: the rename is atomic). */
const tempBeside = (target: string) =>
  join(dirname(target), `.${basename(target)}.new-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);

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

async function fetchSource(source: string, temp: string, fetchImpl: typeof fetch): Promise<void> {
  if (/^https?:\/\//.test(source)) {
    let response: Response;
    try {
      response = await fetchImpl(source, { signal: AbortSignal.timeout(300_000) });
    } catch (error) {
      throw new TendError(`download ${redactUrl(source)}: ${oneLine((error as Error).message)}`, 1);
    }
    if (response.status < 200 || response.status > 299)
      throw new TendError(`download ${redactUrl(source)}: HTTP ${response.status}`, 1);
    writeFileSync(temp, new Uint8Array(await response.arrayBuffer()), { mode: 0o700 });
  } else {
    try {
      copyFileSync(source, temp);
    } catch (error) {
      throw new TendError(`${source}: ${(error as NodeJS.ErrnoException).code ?? error}`, 1);
    }
  }
}

export interface BinaryUpdate {
  source: string;
  target: string;
  sha256: string | null;
  config: string;
}

/**
 * Replace the tend binary: fetch beside the target, check, prove the new binary works on the
 * live config, back up, show the version change and the plan diff, swap atomically, verify, and
 * restore the backup if the installed binary does not run. Any failure before the swap changes nothing.
 */
export async function updateBinary({ source, target, sha256, config }: BinaryUpdate, io: UpdateIo): Promise<void> {
  if (sha256 !== null && !/^[0-9a-f]{64}$/i.test(sha256))
    throw usageError(`--sha256: ${JSON.stringify(sha256)} is not 64 hex digits`);
  const temp = tempBeside(target);
  try {
    await fetchSource(source, temp, io.fetch ?? fetch);
    if (sha256) {
      const actual = createHash("sha256").update(readFileSync(temp)).digest("hex");
      if (actual !== sha256.toLowerCase())
        throw new TendError(`sha256 mismatch: expected ${sha256.toLowerCase()}, got ${actual}`, 1);
    }
    chmodSync(temp, 0o755);
    const newVersion = (await run(temp, ["--version"], "the new binary's --version")).trim();
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
    io.say(`version: ${oldVersion} -> ${newVersion}`);
    const diff = unifiedDiff(oldPlan, newPlan, `plan (${oldVersion})`, `plan (${newVersion})`);
    io.say(diff ? diff.trimEnd() : "plan: no change in behaviour");
    if (!(await io.confirm())) throw new TendError("not confirmed: nothing changed", 1);
    const saved = backup(target, (io.now ?? (() => new Date()))());
    io.say(`backup: ${saved}`);
    renameSync(temp, target);
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
  copyFileSync(saved, temp);
  chmodSync(temp, statSync(saved).mode & 0o7777);
  renameSync(temp, target);
}

export function rollback(target: string, io: UpdateIo): void {
  const [newest] = listBackups(target);
  if (!newest) throw new TendError(`no backup of ${target} to roll back to`, 1);
  restore(newest, target);
  io.say(`restored ${newest} over ${target}`);
}

export interface ConfigUpdate {
  /** The live configuration file. */
  config: string;
  next: string;
  /** The current binary, to validate and plan with. */
  binary: string;
}

/** Replace the live configuration: validate the new one, back up, diff the plans, swap atomically. */
export async function applyConfig({ config, next, binary }: ConfigUpdate, io: UpdateIo): Promise<void> {
  const check = await runCommand([binary, "watchdog", "validate", "--config", next], { timeoutMs: RUN_TIMEOUT_MS });
  if (check.exitCode !== 0)
    throw new TendError(`${next} is not a valid configuration, nothing changed:\n${check.stderr.trim()}`, 2);
  const oldPlan = await run(binary, ["watchdog", "plan", "--config", config], "plan of the live configuration").catch(
    (error: Error) => `# ${error.message}\n`,
  );
  const newPlan = await run(binary, ["watchdog", "plan", "--config", next], "plan of the new configuration");
  const diff = unifiedDiff(oldPlan, newPlan, config, next);
  io.say(diff ? diff.trimEnd() : "plan: no change in behaviour");
  if (!(await io.confirm())) throw new TendError("not confirmed: nothing changed", 1);
  io.say(`backup: ${backup(config, (io.now ?? (() => new Date()))())}`);
  const temp = tempBeside(config);
  try {
    copyFileSync(next, temp);
    chmodSync(temp, statSync(config).mode & 0o7777);
    renameSync(temp, config);
  } finally {
    rmSync(temp, { force: true });
  }
  io.say(`installed ${next} as ${config}`);
}
