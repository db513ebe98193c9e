// The Termux-shaped sandbox: tend run the way Android runs an app, on this Linux machine.
//
// Each command runs in a private mount namespace (unshare -m), as an unprivileged user (nobody), with:
// - /proc mounted hidepid=2,subset=pid: other users' processes are invisible, and /proc/uptime,
//   /proc/stat, /proc/loadavg, /proc/version, /proc/vmstat and /proc/net are not there (Android 8+
//   denies them to an app with EACCES; here they are absent, ENOENT: tend must read none of them);
// - no writable /tmp (a tmpfs of mode 711 over it; the checkout bound back in if it lives there);
// - /bin/sh a stub that fails (Android's /bin/sh is mksh, not Termux's shell): bound over dash;
// - TMUX_TMPDIR=$PREFIX/tmp (Termux's tmux is built so), HOME=/data/data/com.termux/files/home,
//   PREFIX=/data/data/com.termux/files/usr with its bin/ the only PATH, TMPDIR=$PREFIX/tmp,
//   TERMUX_VERSION set. /data/data/com.termux/files is a host
//   directory of the test's own, bound in, so state survives from one command to the next.
// What it cannot emulate: Android's seccomp filter, SELinux, the phantom process killer, Doze.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killAll, publicCopy, run, type Run } from "./helpers.ts";

export const FILES = "/data/data/com.termux/files";
export const HOME = `${FILES}/home`;
export const PREFIX = `${FILES}/usr`;
const NOBODY = 65534;

/** Host programs linked into $PREFIX/bin: what Termux's bootstrap (coreutils, grep, sed) and its packages give. */
const PROGRAMS = [
  "tmux",
  "sv",
  "runsv",
  "runsvdir",
  "sleep",
  "cat",
  "env",
  "true",
  "false",
  "ls",
  "kill",
  "touch",
  "mv",
  "rm",
  "mkdir",
  "cp",
  "chmod",
  "ln",
  "grep",
  "sed",
  "date",
  "id",
];

const ENTER = `
set -e
files="$1"; shift
keep="$1"; shift
mount --make-rprivate /
mount -t tmpfs -o mode=755 tmpfs /data
mkdir -p ${FILES}
mount --bind "$files" ${FILES}
mount --bind ${FILES}/.sandbox/sh-stub /bin/sh
mount -t proc -o hidepid=2,subset=pid proc /proc
# No writable /tmp: a tmpfs nobody may list or write. The checkout and the binaries the tests run stay
# reachable at their paths even when they live under /tmp (a CI clone may), bound back in.
mkdir -p /data/.keep
n=0; for dir in $keep; do mkdir -p /data/.keep/$n; mount --bind "$dir" /data/.keep/$n; n=$((n+1)); done
mount -t tmpfs -o mode=711 tmpfs /tmp
n=0; for dir in $keep; do
  case "$dir" in /tmp/*) mkdir -p "$dir"; mount --bind /data/.keep/$n "$dir" ;; esac
  umount /data/.keep/$n; n=$((n+1))
done
rmdir /data/.keep/* /data/.keep
exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups -- /usr/bin/env -i \\
  HOME=${HOME} PREFIX=${PREFIX} TMPDIR=${PREFIX}/tmp TERMUX_VERSION=0.118.0 PATH=${PREFIX}/bin \\
  SHELL=${PREFIX}/bin/sh TMUX_TMPDIR=${PREFIX}/tmp TZ=UTC LANG=en_US.UTF-8 "$@"
`;

/** A phone's Termux, for the tests that matter there: files under `host` appear at FILES inside. */
export class TermuxBox {
  readonly host = mkdtempSync(join(tmpdir(), "tend-termux-"));
  /** Inside paths. */
  readonly home = HOME;
  readonly state = `${HOME}/.local/state/tend`;
  readonly config = `${HOME}/.config/tend/tend.toml`;
  readonly tend = `${PREFIX}/bin/tend`;
  private readonly children: number[] = [];

  constructor() {
    // /data is an empty mount point on the host; the namespace mounts a tmpfs over it.
    if (!existsSync("/data")) mkdirSync("/data");
    for (const dir of ["home/.config/tend", "usr/bin", "usr/tmp", ".sandbox"])
      mkdirSync(join(this.host, dir), { recursive: true });
    writeFileSync(
      join(this.host, ".sandbox/sh-stub"),
      "#!/usr/bin/bash\necho \"/bin/sh: this is Android's mksh, not Termux's shell: run sh from PATH\" >&2\nexit 127\n",
    );
    chmodSync(join(this.host, ".sandbox/sh-stub"), 0o755);
    const bin = join(this.host, "usr/bin");
    symlinkSync("/usr/bin/bash", join(bin, "sh"));
    symlinkSync("/usr/bin/bash", join(bin, "bash"));
    for (const program of PROGRAMS)
      if (existsSync(`/usr/bin/${program}`)) symlinkSync(`/usr/bin/${program}`, join(bin, program));
    // Copies anyone may run (the app's uid cannot enter a checkout in /root: helpers.ts publicCopy).
    symlinkSync(publicCopy().tend(), join(bin, "tend"));
    symlinkSync(publicCopy().bun(), join(bin, "bun"));
    this.chownAll();
  }

  /** The host path of an inside path under FILES. */
  outside(inside: string): string {
    if (!inside.startsWith(FILES)) throw new Error(`${inside} is not under ${FILES}`);
    return join(this.host, inside.slice(FILES.length));
  }

  /** Write a file at an inside path, owned by the sandbox's user. */
  write(inside: string, text: string, mode = 0o644) {
    const path = this.outside(inside);
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, text, { mode });
    chownSync(path, NOBODY, NOBODY);
  }

  writeConfig(text: string) {
    this.write(this.config, text);
  }

  /** Everything under the host dir belongs to the sandbox's user (it writes its state there). */
  chownAll() {
    Bun.spawnSync(["chown", "-R", `${NOBODY}:${NOBODY}`, this.host]);
    chmodSync(this.host, 0o755);
  }

  /** Run argv inside (argv[0] looked up on $PREFIX/bin). */
  run(argv: string[], { timeoutMs = 60_000 }: { timeoutMs?: number } = {}): Promise<Run> {
    return run(this.enter(argv), { timeoutMs, cwd: this.host });
  }

  /** The argv that runs `argv` inside: the host dir, and the host dir to keep reachable (what it runs, copied). */
  private enter(argv: string[]): string[] {
    const keep = [publicCopy().dir];
    return ["unshare", "-m", "/usr/bin/bash", "-c", ENTER, "enter", this.host, keep.join(" "), ...argv];
  }

  /** `tend ARGS...` inside, with the sandbox's config. */
  tendRun(args: string[], options?: { timeoutMs?: number }): Promise<Run> {
    return this.run(["tend", ...args], options);
  }

  /** Start argv inside in the background (a loop, a server); killed by cleanup(). */
  spawn(argv: string[]) {
    const child = Bun.spawn(this.enter(argv), {
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    this.children.push(child.pid);
    return child;
  }

  track(pid: number) {
    this.children.push(pid);
  }

  /** Kill what this test started: its children's groups, the processes its pidfiles name, its tmux server. */
  async cleanup(pidfiles: string[] = []) {
    for (const inside of pidfiles) {
      const path = this.outside(inside);
      const pid = existsSync(path) ? Number(readFileSync(path, "utf8").trim()) || 0 : 0;
      if (pid > 1) this.children.push(pid);
    }
    killAll(this.children);
    await this.run(["tmux", "kill-server"]).catch(() => null);
    rmSync(this.host, { recursive: true, force: true });
  }
}
