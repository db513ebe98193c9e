import { existsSync, lstatSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { oneLine } from "../core/sanitize.ts";
import { inWords, readBounded, readRegularFile } from "../os/files.ts";
import { fileSystemType, sharedStorage } from "../state/dir.ts";
import { tryLock } from "../os/lock.ts";
import { readProc, runningNamed, signalProbe, startedAtMs } from "../os/proc.ts";
import type { ToolProbe } from "../restarts/index.ts";
import type { Capability } from "./doctor.ts";

type Env = Record<string, string | undefined>;

/**
 * What a pass does, done once here, so one `tend doctor` on a phone proves the paths Android's
 * seccomp filter or SELinux might close (nothing of it can run in this project's tests' sandbox
 * the way it runs on a device): spawn and reap a child, take a lock, read our own start time,
 * fetch a local port.
 */
export async function exerciseRows(stateDir: string | null): Promise<Capability[]> {
  const rows: Capability[] = [];
  const row = (name: string, affects: string, ok: boolean, detail: string) =>
    rows.push({ name, affects, status: ok ? "ok" : "missing", detail, used: true });

  try {
    const started = Date.now();
    const child = Bun.spawn(["sh", "-c", "exit 3"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    const code = await Promise.race([child.exited, Bun.sleep(10_000).then(() => null)]);
    row(
      "spawn and reap",
      "restarts, command checks",
      code === 3,
      code === 3 ? `sh -c 'exit 3' exited 3 in ${Date.now() - started}ms` : `exit ${code ?? "never seen"}`,
    );
  } catch (error) {
    row("spawn and reap", "restarts, command checks", false, inWords(error));
  }

  if (stateDir && existsSync(stateDir)) {
    const path = join(stateDir, `.doctor-lock-${process.pid}`);
    try {
      const lock = await tryLock(path);
      row(
        "lock",
        "one pass at a time",
        lock !== null,
        lock ? `flock(2) on ${stateDir}` : "held by another (unexpected)",
      );
      lock?.release();
    } catch (error) {
      row("lock", "one pass at a time", false, oneLine((error as Error).message));
    } finally {
      rmSync(path, { force: true });
    }
  }

  const self = readProc(process.pid);
  const startedAt = self ? startedAtMs(self) : NaN;
  const sane = Number.isFinite(startedAt) && Math.abs(Date.now() - startedAt) < 10 * 60_000;
  row(
    "own start time",
    "grace, pidfile identity (a PID reused is caught by its start time)",
    sane,
    sane
      ? `/proc/self/stat and a boot time from sysinfo: started ${Math.round((Date.now() - startedAt) / 1000)}s ago`
      : "cannot be read",
  );

  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("tend") });
  try {
    const answer = await fetch(`http://127.0.0.1:${server.port}/`, { signal: AbortSignal.timeout(5000) });
    row("local fetch", "http checks, serve", answer.ok, `HTTP ${answer.status} from 127.0.0.1:${server.port}`);
  } catch (error) {
    row("local fetch", "http checks, serve", false, inWords(error));
  } finally {
    server.stop(true);
  }
  return rows;
}

/** The kernel's page size, from our own auxiliary vector (AT_PAGESZ = 6): 4096, or 16384 on Android 15. */
function auxvPageSize(): number | null {
  try {
    const auxv = readBounded("/proc/self/auxv", 4096).bytes;
    for (let at = 0; at + 16 <= auxv.length; at += 16) {
      if (auxv.readBigUInt64LE(at) === 6n) return Number(auxv.readBigUInt64LE(at + 8));
    }
  } catch {}
  return null;
}

/** The rows of the spec's "Android and Termux": what this phone allows, and what to do about what it does not. */
export async function termuxRows(env: Env, probe: ToolProbe, stateDir: string | null): Promise<Capability[]> {
  const rows: Capability[] = [];
  const add = (row: Omit<Capability, "used"> & { used?: boolean }) => rows.push({ used: false, ...row });

  // hidepid: PID 1 is root's (init); invisible to an app, but kill(1, 0) still answers (EPERM).
  const hidden = readProc(1) === null && signalProbe(1) === "hidden";
  add({
    name: "process visibility",
    status: hidden ? "limited" : "ok",
    detail: hidden
      ? "/proc is hidepid=2: other users' processes are not visible (EPERM from kill(pid, 0) = alive, not visible)"
      : "every process visible",
    affects: "services started by another user (su): judged by their probe only, never signalled",
  });

  const readable = (path: string) => {
    try {
      readRegularFile(path, 16 * 1024 * 1024);
      return "ok";
    } catch (error) {
      return inWords(error);
    }
  };
  const files = ["/proc/self/stat", "/proc/self/status", "/proc/net/tcp"].map((path) => `${path} ${readable(path)}`);
  const denied = ["/proc/uptime", "/proc/stat"].filter((path) => readable(path) !== "ok");
  add({
    name: "/proc files",
    status: files.every((file) => file.endsWith(" ok")) ? "ok" : "limited",
    detail: files.join(", ") + (denied.length ? `; ${denied.join(", ")} closed (tend does not read them)` : ""),
    affects: "/proc/net/tcp: busy.port (busy.log still decides); /proc/self/status: memory",
  });

  const pageSize = auxvPageSize();
  add({
    name: "page size",
    status: "ok",
    detail: `${pageSize ? `${pageSize} bytes` : "unknown"} (RSS is VmRSS, right for any page size)`,
    affects: "memory limits",
  });

  const sdk = Number((await probe("getprop", "ro.build.version.sdk")).said) || 0;
  // The Android build links bionic's LIBC_P symbols (getrandom): Android 9 (API 28) or later. An older
  // phone never gets here (the loader refuses the binary); this row says the floor where it runs.
  add({
    name: "Android version",
    status: sdk && sdk < 28 ? "missing" : "ok",
    detail: sdk
      ? `Android API ${sdk}` +
        (sdk < 28
          ? ": the Android build needs Android 9 (API 28) or later"
          : " (tend needs API 28, Android 9, or later)")
      : "not Android (getprop gives no API level)",
    affects: "tend itself: the Android build needs bionic's LIBC_P symbols (Android 9, API 28)",
  });
  add({
    name: "phantom process killer",
    status: sdk >= 31 ? "limited" : "ok",
    detail:
      sdk >= 31
        ? `Android API ${sdk}: it kills long-lived and CPU-heavy Termux children (a watchdog run loop first); ` +
          "the default is the short cron pass. To turn it off (adb, or su -c): " +
          '"device_config set_sync_disabled_for_tests persistent; ' +
          'device_config put activity_manager max_phantom_processes 2147483647"' +
          (sdk >= 32 ? ", or on Android 12L+: settings put global settings_enable_monitor_phantom_procs false" : "")
        : sdk
          ? `Android API ${sdk}: no phantom process killer`
          : "not Android (getprop gives no API level)",
    affects: "watchdog run (install termux-boot --loop)",
  });

  const bootDir = join(env.HOME ?? "", ".termux", "boot");
  let entries: string[] = [];
  try {
    entries = readdirSync(bootDir).sort();
  } catch {}
  // Termux:Boot stops at the first entry that is not a regular file: what comes after it never runs.
  const stop = entries.findIndex((name) => !lstatSync(join(bootDir, name)).isFile());
  add({
    name: "Termux:Boot entries",
    status: !entries.length || stop >= 0 ? "limited" : "ok",
    detail: !entries.length
      ? `none in ${bootDir} (watchdog install termux-boot --write; open the Termux:Boot app once)`
      : stop >= 0
        ? `${entries[stop]} is not a regular file: Termux:Boot stops there ` +
          `(${entries.slice(stop + 1).join(", ") || "nothing after it"} never runs)`
        : `${entries.join(", ")}${entries.includes("tend-watchdog") ? "" : " (no tend-watchdog)"}`,
    affects: "starting at boot: the wake lock, runsvdir and crond",
  });

  const script = entries.includes("tend-watchdog") ? readRegularFile(join(bootDir, "tend-watchdog"), 1024 * 1024) : "";
  add({
    name: "wake lock",
    status: script.includes("termux-wake-lock") ? "ok" : "limited",
    detail: script.includes("termux-wake-lock")
      ? "taken at boot by tend-watchdog (an app cannot read whether it is held now: Termux's notification says)"
      : "not taken at boot: without it the CPU sleeps between passes (gaps are device_suspended, no data)",
    affects: "passes on time while the screen is off",
  });

  const runsvdir = runningNamed(/^runsvdir$/) !== null;
  const crond = runningNamed(/^(crond|cron)$/) !== null;
  add({
    name: "crond and runsvdir",
    status: runsvdir && crond ? "ok" : "limited",
    detail:
      `runsvdir ${runsvdir ? "running" : "not running"}, crond ${crond ? "running" : "not running"}` +
      (runsvdir && crond ? "" : " (pkg install cronie termux-services; sv-enable crond; service-daemon start)"),
    affects: "the cron pass",
  });

  const api = await probe("sh", "-c", "command -v termux-notification");
  add({
    name: "Termux:API",
    status: api.code === 0 ? "ok" : "missing",
    detail:
      api.code === 0
        ? `${api.said} (needs the Termux:API app too: without it termux-notification hangs)`
        : "no termux-notification (pkg install termux-api, and the Termux:API app)",
    affects: 'format = "termux" notifications',
  });

  if (stateDir) {
    // The same rule the state dir is refused by (state/dir.ts), said here before a pass meets it.
    const type = fileSystemType(stateDir);
    const shared = sharedStorage(stateDir);
    add({
      name: "state dir file system",
      status: shared ? "missing" : "ok",
      detail:
        `${stateDir}: statfs type ${type === null ? "unknown" : `0x${type.toString(16)}`}` +
        (shared ? ` (${shared}: refused)` : ""),
      affects: "file modes, symlink checks, locks",
      used: true,
    });
  }
  return rows;
}
