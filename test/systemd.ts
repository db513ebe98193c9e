// A real systemd 252 as PID 1 of a systemd-nspawn container (test/systemd-container/up.sh: the host's
// /usr on a tmpfs root, booted with --register=no --keep-unit; nothing from outside the repository), for tests.
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, TEND } from "./helpers.ts";

const SCRIPTS = join(ROOT, "test", "systemd-container");
const BASE = "/tmp/tend-systemd-sandbox";
const MACHINE = "tendtest";
const env = { ...process.env, MACHINE, SYSTEMD_SANDBOX_DIR: BASE } as Record<string, string>;

export interface Systemd {
  leader: number;
  /** Run a command inside the container. */
  ct: (...argv: string[]) => { code: number; stdout: string; stderr: string };
  /** tend inside the container (the binary is copied into the shared folder). */
  tend: string;
  /** The folder shared with the container: host path, and its path inside. */
  share: string;
  shareInside: string;
  installUnit: (name: string, text: string) => void;
  show: (unit: string, property: string) => string;
  /** Host PID of a container PID (NSpid). */
  hostPid: (containerPid: number) => number | null;
}

/**
 * Boot the sandbox (idempotent). Fails loudly, with up.sh's output, when it cannot boot:
 * a systemd test that cannot reach systemd must not pass.
 */
export function bootSystemd(): Systemd {
  if (!existsSync(join(SCRIPTS, "up.sh"))) throw new Error(`systemd sandbox scripts not found at ${SCRIPTS}`);
  const up = Bun.spawnSync(["bash", join(SCRIPTS, "up.sh")], { env, stdout: "pipe", stderr: "pipe" });
  if (up.exitCode !== 0) {
    throw new Error(
      `SYSTEMD SANDBOX DID NOT BOOT (up.sh exit ${up.exitCode}); these tests need it:\n${up.stdout}\n${up.stderr}`,
    );
  }
  const leader = Number(readFileSync(join(BASE, `state-${MACHINE}`, "leader.pid"), "utf8").trim());
  const share = join(BASE, "share");
  copyFileSync(TEND, join(share, "tend"));
  Bun.spawnSync(["chmod", "755", join(share, "tend")]);
  const ct = (...argv: string[]) => {
    const result = Bun.spawnSync(["nsenter", "-t", String(leader), "-a", "--", ...argv], {
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", HOME: "/root", TZ: "UTC" },
    });
    return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  };
  return {
    leader,
    ct,
    tend: "/sandbox-share/tend",
    share,
    shareInside: "/sandbox-share",
    installUnit(name, text) {
      writeFileSync(`/proc/${leader}/root/etc/systemd/system/${name}`, text);
      ct("systemctl", "daemon-reload");
    },
    show: (unit, property) => ct("systemctl", "show", "-p", property, "--value", unit).stdout.trim(),
    hostPid(containerPid) {
      const namespace = readlinkSafe(`/proc/${leader}/ns/pid`);
      for (const entry of new Bun.Glob("[0-9]*").scanSync({ cwd: "/proc", onlyFiles: false })) {
        try {
          const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1].split(/\s+/);
          if (
            nspid?.length === 2 &&
            Number(nspid[1]) === containerPid &&
            readlinkSafe(`/proc/${entry}/ns/pid`) === namespace
          )
            return Number(entry);
        } catch {}
      }
      return null;
    },
  };
}

function readlinkSafe(path: string): string | null {
  try {
    return require("node:fs").readlinkSync(path);
  } catch {
    return null;
  }
}

/** Stop the container, and remove what the sandbox kept in /tmp (its shared folder, its state). */
export function shutdownSystemd() {
  Bun.spawnSync(["bash", join(SCRIPTS, "down.sh")], { env, stdout: "ignore", stderr: "ignore" });
  rmSync(BASE, { recursive: true, force: true });
}
