// The Termux-shaped sandbox: tend run the way Android runs an app, on this Linux machine (SPEC "Android
// and Termux", "Termux-shaped sandbox"). A box is a phone: its own pid, mount, time and UTS namespaces
// (host name `localhost`, as a phone's; and, for a reboot test, its own network), whose PID 1 is
// build/tools/android's init. Inside:
// - a root built with pivot_root: Termux's files (/data/data/com.termux/files, a host dir of the test's
//   own, bound in), /system/bin (Android's mksh as a stub that fails loudly: /bin/sh is not Termux's
//   shell; getprop answering from /system/build.prop the API level each test chooses, 29 to 35), /system/etc
//   (hosts, and the passwd entry bionic synthesizes
//   for the app: glibc's programs read it from a file), /dev, /proc. The host's /usr, /tmp, /etc, /var
//   are not there. glibc's loader and libraries are, at /lib64 and /lib/<arch>-linux-gnu: the phone's are
//   bionic's in /system/lib64, and these programs (tend's linux build, Debian's tmux, dash, runit) need
//   glibc's; /system/bin/linker64 is glibc's loader under bionic's linker's name (an ELF that names it, as
//   the Android build does, runs: self-update.test's android-shaped build). $PREFIX/bin holds copies of
//   Debian's programs as Termux's packages give them: dash as sh (Termux's sh is dash), coreutils, grep,
//   sed, tmux (behind a wrapper that gives it Termux's built-in socket dir, $PREFIX/tmp: TMUX_TMPDIR itself
//   stays unset, as on Termux);
// - /proc mounted hidepid=2 (root's processes invisible to the app); /dev as Android's: its devices and
//   ptys, no /dev/shm (Android has none: Termux's programs that want it fail, termux-packages#8938);
// - every app process runs as uid 10123 (u0_a123) with no_new_privs under a seccomp filter
//   (build/tools/android run): ENOSYS for the syscalls an Android 8-10 phone's kernel or filter lacks
//   (statx, rseq, pidfd_open, clone3, close_range, openat2, fchmodat2: all from 424 on), EACCES for
//   /proc/uptime, /proc/stat, /proc/loadavg, /proc/version, /proc/vmstat and /proc/net, /proc/self/net,
//   /proc/PID/net (judged by a supervisor outside the filter, as SELinux judges them on the phone);
// - the environment Termux gives: HOME, PREFIX, TMPDIR=$PREFIX/tmp, PATH=$PREFIX/bin only, SHELL,
//   TERMUX_VERSION, ANDROID_ROOT, ANDROID_DATA; no TMUX_TMPDIR; a preloaded library (Termux preloads its
//   termux-exec): here Debian's libfaketime, the phone's wall clock (setClock);
// - Termux's openssh's ssh-agent, which makes itself undebuggable: hidepid hides it from its own user.
// With `termuxServices`, what `pkg install cronie termux-services` gives: runit's runsvdir, runsv, sv
// (Debian's), start-stop-daemon (Debian's dpkg's), a crond (named crond, as cronie's) that is Debian's
// busybox crond run as the app user (setgroups a no-op for it alone: Termux's crond never changes groups;
// the spool shown to it through an idmapped mount as root's, the only crontabs busybox's crond loads),
// crond enabled as a runit service; service-daemon, sv-enable and crontab are STAND-INs (scripts that do
// what termux-services' and cronie's do for the app user: runsvdir on $SVDIR, the user's crontab file in
// the spool).
// A reboot (powerCut, then powerOn) kills every process of the phone at once and boots a new one: new pid,
// mount and time namespaces (uptime from ~1 s), a new boot id, a new network when it has its own, the wall
// clock at 1970 until the test steps it (setClock: the network answered); the files stay as a power cut
// leaves them (a stale tmux socket, pidfiles). termuxBoot() is a STAND-IN for the Termux:Boot app: after
// the first unlock (a delay after the power-on), each entry of ~/.termux/boot in order, stopping at the
// first that is not a regular file. The phantom process killer's effect (a SIGKILL to the loop) is what a
// test sends.
// What it cannot emulate: bionic and the android build of tend (no bionic here: `make cross` builds it,
// tend doctor checks it on the phone), SELinux itself (its effect on /proc only), the phantom process
// killer's choice of victim (only its SIGKILL), Doze, Termux:API, the real Termux:Boot app, a phone's
// kernel (this host's is newer: only the filter makes its missing syscalls missing), the times the kernel
// stamps on files while the clock reads 1970 (the host's clock stamps them), and a static program's
// clock (busybox's crond reads the host's: libfaketime reaches dynamically linked programs only).
import {
  renameSync,
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from "node:fs";
import { lstatSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir, uptime } from "node:os";
import { join } from "node:path";
import { killAll, publicCopy, ROOT, run, waitFor, type Run } from "./helpers.ts";

export const FILES = "/data/data/com.termux/files";
export const HOME = `${FILES}/home`;
export const PREFIX = `${FILES}/usr`;
/** An app's uid, as Android gives them (u0_a123): no user of the host. */
export const APP_UID = 10123;
/** Where the tests' public copy (helpers.ts publicCopy: tend, bun, the example service) shows inside. */
export const TESTS = `${PREFIX}/opt/tend-tests`;
export const ANDROID = join(ROOT, "build", "tools", "android");
export const BUSYBOX = join(ROOT, "build", "tools", "busybox");
const MULTIARCH = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";

/** Debian's programs copied into $PREFIX/bin, as Termux's bootstrap and packages give them. */
const PROGRAMS = [
  "bash",
  "cmp",
  "readlink",
  "cat",
  "chmod",
  "cp",
  "cut",
  "date",
  "env",
  "false",
  "grep",
  "head",
  "id",
  "kill",
  "ln",
  "ls",
  "mkdir",
  "mkfifo",
  "mv",
  "rm",
  "sed",
  "sleep",
  "tail",
  "touch",
  "tr",
  "true",
  "uname",
  "wc",
  "yes",
];
const SERVICE_PROGRAMS = ["runsvdir", "runsv", "sv", "svlogd", "chpst"];

/** Boot a phone: run by unshare as PID 1 of new namespaces, root; builds the root and pivots into it. */
const BOOT = `
set -e
release_of() {
  case "$1" in 28) echo 9 ;; 29) echo 10 ;; 30) echo 11 ;; 31|32) echo 12 ;; 33) echo 13 ;;
    34) echo 14 ;; *) echo 15 ;; esac
}
host="$1" android="$2" public="$3" bootid="$4" multiarch="$5" net="$6" api="$7"
R="$host/root"
# A phone's host name is localhost (its own UTS namespace: the host's name is not the phone's).
hostname localhost # sethostname(2): /proc/sys is read-only in a container (nspawn), the syscall is not
mkdir -p "$R"
mount -t tmpfs -o mode=755 tmpfs "$R"
cd "$R"
mkdir -p data/data/com.termux/files proc dev system/bin system/etc "lib/$multiarch" lib64 .oldroot
mount --rbind "$host/files" data/data/com.termux/files
mount --bind "$public" data/data/com.termux/files/usr/opt/tend-tests
# Android's /dev: the devices a program opens, the ptys tmux needs; no /dev/shm (Android has none).
mount -t tmpfs -o mode=755,nosuid tmpfs dev
for node in null zero full random urandom tty; do touch "dev/$node"; mount --bind "/dev/$node" "dev/$node"; done
mkdir dev/pts
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts dev/pts
ln -s pts/ptmx dev/ptmx
ln -s /proc/self/fd dev/fd
ln -s /proc/self/fd/0 dev/stdin
ln -s /proc/self/fd/1 dev/stdout
ln -s /proc/self/fd/2 dev/stderr
mount --bind "/usr/lib/$multiarch" "lib/$multiarch"
if [ -e /lib64/ld-linux-x86-64.so.2 ]; then ln -s "/lib/$multiarch/ld-linux-x86-64.so.2" lib64/; fi
if [ -e /lib/ld-linux-aarch64.so.1 ]; then ln -s "/lib/$multiarch/ld-linux-aarch64.so.1" lib/; fi
# bionic's linker's name with glibc's loader behind it: an ELF made for the phone (this host's build with
# /system/bin/linker64 in its header: self-update.test's android build) runs as the Android build runs.
for loader in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
  if [ -e "$loader" ]; then ln -s "/lib/$multiarch/\${loader##*/}" system/bin/linker64; fi
done
cp "$android" system/bin/android
ln -s android system/bin/sh
ln -s android system/bin/getprop
ln -s /system/bin bin
ln -s ${PREFIX}/bin tx
ln -s /system/etc etc
printf '127.0.0.1 localhost\\n::1 localhost ip6-localhost\\n' > system/etc/hosts
# The build's properties (getprop reads them): the API level the test chose, its Android release.
{ printf 'ro.build.version.sdk=%s\\nro.build.version.release=%s\\n' "$api" "$(release_of "$api")"
  printf 'ro.product.cpu.abi=arm64-v8a\\nro.product.model=tend sandbox\\n'; } > system/build.prop
# The wall clock as the phone reads it (libfaketime's file, which the test steps: setClock).
mkdir -p system/etc/clock
mount --bind "$host/clock" system/etc/clock
printf 'root:x:0:0:root:/:/system/bin/sh\\n' > system/etc/passwd
printf 'u0_a123:x:${APP_UID}:${APP_UID}::${HOME}:${PREFIX}/bin/sh\\n' >> system/etc/passwd
printf 'root:x:0:\\nu0_a123:x:${APP_UID}:\\n' > system/etc/group
mount -t proc -o hidepid=2 proc proc
echo "$bootid" > "$host/boot_id"
mount --bind "$host/boot_id" proc/sys/kernel/random/boot_id
spool=data/data/com.termux/files/usr/var/spool/cron
if [ -d "$spool/crond-view" ]; then "$android" idmap "$spool/crontabs" "$spool/crond-view" ${APP_UID} "$R/proc"; fi
if [ "$net" = own ]; then ip link set lo up; fi
pivot_root . .oldroot
exec /system/bin/android init
`;

export interface TermuxBoxOptions {
  /** cronie and termux-services installed (runsvdir, sv, crond, crontab, service-daemon, sv-enable). */
  termuxServices?: boolean;
  /** Its own network namespace, joined to the host by a veth pair (the host is 10.X.Y.1, the phone .2). */
  ownNetwork?: boolean;
  /** The Android API level getprop answers (ro.build.version.sdk): each test chooses one, 29 to 35. */
  apiLevel: number;
}

let boxes = 0;

/** A phone's Termux, for the tests that matter there: files under `host`/files appear at FILES inside. */
export class TermuxBox {
  readonly host = mkdtempSync(join(tmpdir(), "tend-termux-"));
  /** Inside paths. */
  readonly home = HOME;
  readonly state = `${HOME}/.local/state/tend`;
  readonly config = `${HOME}/.config/tend/tend.toml`;
  readonly tend = `${PREFIX}/bin/tend`;
  readonly options: TermuxBoxOptions;
  /** The host's side of the phone's network (ownNetwork): the address a receiver outside listens on. */
  readonly hostAddress: string | null;
  private readonly veth: string;
  private phone: Promise<{ unshare: number; init: number; exited: Promise<number> }> | null = null;
  /** When (the host's clock) the phone last powered on: Termux:Boot runs a while after. */
  private poweredOnAt = Date.now();
  private readonly children: number[] = [];

  constructor(options: TermuxBoxOptions) {
    this.options = options;
    const n = ++boxes;
    const subnet = `10.${200 + (process.pid % 50)}.${n % 250}`;
    this.hostAddress = options.ownNetwork ? `${subnet}.1` : null;
    this.veth = `tt${process.pid % 100000}x${n}`;
    // A phone that cannot be built (a full /tmp) leaves nothing behind: its directory goes with the error.
    try {
      this.populate(options);
    } catch (error) {
      rmSync(this.host, { recursive: true, force: true });
      throw error;
    }
  }

  /** The phone's files: Termux's prefix, its programs, tend. */
  private populate(options: TermuxBoxOptions) {
    chmodSync(this.host, 0o755);
    for (const dir of ["home/.config/tend", "usr/bin", "usr/libexec", "usr/tmp", "usr/opt/tend-tests", "usr/var/run"])
      mkdirSync(join(this.host, "files", dir), { recursive: true });
    mkdirSync(join(this.host, "clock"));
    this.setClock();
    const bin = join(this.host, "files", "usr", "bin");
    const copy = (from: string, to: string) => {
      copyFileSync(from, to);
      chmodSync(to, 0o755);
    };
    copy("/usr/bin/dash", join(bin, "sh"));
    copy("/usr/bin/dash", join(bin, "dash"));
    for (const program of PROGRAMS) copy(hostProgram(program), join(bin, program));
    // Termux's tmux is built with $PREFIX/tmp as its socket dir (Debian's says /tmp, absent here), and
    // bionic is always UTF-8 (glibc needs its C.UTF-8 locale, which lives under /usr: given to tmux alone).
    copy("/usr/bin/tmux", join(this.host, "files", "usr", "libexec", "tmux"));
    // Termux builds tmux with $PREFIX/bin/sh as the shell of its jobs (pipe-pane, run-shell, if-shell: Termux
    // patches bionic's _PATH_BSHELL); Debian's runs /bin/sh, Android's on a phone. The copy is patched to
    // /tx/sh, a path as short as /bin/sh, which the phone's root links to $PREFIX/bin (a STAND-IN for the build).
    patchShell(join(this.host, "files", "usr", "libexec", "tmux"));
    Bun.spawnSync(["cp", "-r", "/usr/lib/locale/C.utf8", join(this.host, "files", "usr", "libexec", "C.utf8")]);
    this.write(
      `${PREFIX}/bin/tmux`,
      `#!${PREFIX}/bin/sh\n# Termux's tmux: its socket dir $PREFIX/tmp unless TMUX_TMPDIR says otherwise; UTF-8.\n` +
        `TMUX_TMPDIR="\${TMUX_TMPDIR:-${PREFIX}/tmp}" LOCPATH=${PREFIX}/libexec LC_ALL=C.UTF-8 ` +
        `exec ${PREFIX}/libexec/tmux "$@"\n`,
      0o755,
    );
    // STAND-IN: termux-tools' termux-wake-lock asks the Termux app for a wake lock; here it notes that it was asked.
    this.write(
      `${PREFIX}/bin/termux-wake-lock`,
      `#!${PREFIX}/bin/sh\n# STAND-IN for termux-tools' termux-wake-lock (the app holds the lock)\n` +
        `date > ${PREFIX}/var/run/wake-lock\n`,
      0o755,
    );
    // termux-tools' getprop: Android's, from /system/bin.
    this.write(`${PREFIX}/bin/getprop`, `#!${PREFIX}/bin/sh\nexec /system/bin/getprop "$@"\n`, 0o755);
    // Anyone may run the public copy (a checkout in /root is 0700): bound in at TESTS.
    publicCopy().tend();
    publicCopy().bun();
    symlinkSync(`${TESTS}/tend`, join(bin, "tend"));
    symlinkSync(`${TESTS}/bun`, join(bin, "bun"));
    // Termux's openssh: ssh-agent makes itself undebuggable (prctl PR_SET_DUMPABLE 0), so hidepid hides
    // it from its own user too.
    copy(hostProgram("ssh-agent"), join(bin, "ssh-agent"));
    if (options.termuxServices) this.installTermuxServices();
    this.chownAll();
  }

  /** What `pkg install cronie termux-services` gives, crond enabled (sv-enable crond). */
  private installTermuxServices() {
    const bin = join(this.host, "files", "usr", "bin");
    for (const program of SERVICE_PROGRAMS) copyFileSync(hostProgram(program), join(bin, program));
    copyFileSync(hostProgram("start-stop-daemon"), join(bin, "start-stop-daemon"));
    copyFileSync(BUSYBOX, join(this.host, "files", "usr", "libexec", "busybox"));
    // Named crond, as cronie's is (busybox runs the applet its name says): doctor finds crond by name.
    symlinkSync("busybox", join(this.host, "files", "usr", "libexec", "crond"));
    for (const program of [...SERVICE_PROGRAMS, "start-stop-daemon"]) chmodSync(join(bin, program), 0o755);
    chmodSync(join(this.host, "files", "usr", "libexec", "busybox"), 0o755);
    const sh = `#!${PREFIX}/bin/sh`;
    const spool = `${PREFIX}/var/spool/cron/crontabs`;
    // STAND-IN: termux-services' service-daemon: runsvdir on $SVDIR through start-stop-daemon.
    this.write(
      `${PREFIX}/bin/service-daemon`,
      `${sh}\n# STAND-IN for termux-services' service-daemon (the same start-stop-daemon call)\nset -e\n` +
        `PIDFILE=${PREFIX}/var/run/service-daemon.pid\n` +
        `case "$1" in\n` +
        `  start) mkdir -p ${PREFIX}/var/run; start-stop-daemon -S -b -m -p "$PIDFILE" -x ${PREFIX}/bin/runsvdir ` +
        `-d ${PREFIX} -- "$SVDIR" ;;\n` +
        `  stop) start-stop-daemon -K -s 1 -o -p "$PIDFILE" ;;\n` +
        `  *) echo "Usage: service-daemon {start|stop}"; exit 1 ;;\nesac\n`,
      0o755,
    );
    this.write(
      `${PREFIX}/bin/sv-enable`,
      `${sh}\n# STAND-IN for termux-services' sv-enable\nrm -f "$SVDIR/$1/down"\nsv up "$1"\n`,
      0o755,
    );
    // STAND-IN: cronie's crontab as the app user: the user's file in the spool, replaced whole.
    this.write(
      `${PREFIX}/bin/crontab`,
      `${sh}\n# STAND-IN for cronie's crontab (the app user's own file in the spool)\n` +
        `spool=${spool}; user=$(id -un); mkdir -p "$spool"\n` +
        `case "$1" in\n` +
        `  -l) if [ -f "$spool/$user" ]; then cat "$spool/$user"\n` +
        `      else echo "no crontab for $user" >&2; exit 1; fi ;;\n` +
        `  -r) rm -f "$spool/$user" ;;\n` +
        `  -) cat > "$spool/.new" && mv "$spool/.new" "$spool/$user" ;;\n` +
        `  *) echo "usage: crontab [-l|-r|-]" >&2; exit 1 ;;\nesac\n`,
      0o755,
    );
    // Debian's busybox crond, as the app user: Termux's crond runs jobs as that user without changing groups
    // (setgroups a no-op for crond alone), and reads the app's own crontab, which busybox's loads only when
    // root owns it: crond reads the spool through an idmapped view that shows the app's files as root's.
    this.write(
      `${PREFIX}/bin/crond`,
      `${sh}\nexec /system/bin/android nosetgroups -- ${PREFIX}/libexec/crond -f -l 8 ` +
        `-L ${PREFIX}/var/log/crond.log -c ${PREFIX}/var/spool/cron/crond-view\n`,
      0o755,
    );
    this.write(`${PREFIX}/var/service/crond/run`, `${sh}\nexec crond -n -s 2>&1\n`, 0o755);
    mkdirSync(join(this.host, "files", "usr", "var", "log"), { recursive: true });
    mkdirSync(join(this.host, "files", "usr", "var", "spool", "cron", "crontabs"), { recursive: true });
    mkdirSync(join(this.host, "files", "usr", "var", "spool", "cron", "crond-view"), { recursive: true });
  }

  /** The host path of an inside path under FILES. */
  outside(inside: string): string {
    if (!inside.startsWith(FILES)) throw new Error(`${inside} is not under ${FILES}`);
    return join(this.host, "files", inside.slice(FILES.length));
  }

  /** Write a file at an inside path, owned by the app. */
  write(inside: string, text: string | Uint8Array, mode = 0o644) {
    const path = this.outside(inside);
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    Bun.spawnSync(["chown", `${APP_UID}:${APP_UID}`, path]);
  }

  writeConfig(text: string) {
    this.write(this.config, text);
  }

  /** Everything under the files dir belongs to the app (it writes its state there). */
  chownAll() {
    Bun.spawnSync(["chown", "-R", `${APP_UID}:${APP_UID}`, join(this.host, "files")]);
  }

  /** The phone, booted on first use. */
  private started() {
    this.phone ??= this.boot();
    return this.phone;
  }

  /**
   * Boot the phone: PID 1 of new pid, mount and time namespaces (and network, ownNetwork). `fresh`:
   * the boot after a power cut: the boot-time and monotonic clocks start again from ~1 s.
   */
  private async boot({ fresh = false } = {}) {
    const seconds = Math.floor(uptime());
    const clocks = fresh ? [`--boottime=${1 - seconds}`, `--monotonic=${1 - seconds}`] : [];
    const net = this.options.ownNetwork ? "own" : "host";
    const argv = [
      "unshare",
      "--pid",
      "--fork",
      "--mount",
      "--propagation",
      "private",
      "--kill-child",
      "--time",
      "--uts",
      ...clocks,
      ...(net === "own" ? ["--net"] : []),
      "/usr/bin/bash",
      "-c",
      BOOT,
      "boot",
      this.host,
      ANDROID,
      publicCopy().dir,
      crypto.randomUUID(),
      MULTIARCH,
      net,
      String(this.options.apiLevel),
    ];
    const child = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe", detached: true });
    this.children.push(child.pid);
    let init = 0;
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`the phone did not boot: exit ${child.exitCode}`);
        const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim();
        init = Number(children.split(" ")[0]) || 0;
        return init > 0 && existsSync(`/proc/${init}/root/system/bin/getprop`);
      },
      20_000,
      "the phone's boot",
    ).catch(async (error) => {
      throw new Error(`${error}: ${await new Response(child.stderr).text()}`);
    });
    if (net === "own") {
      const subnet = this.hostAddress!.slice(0, -2);
      const ip = (args: string[]) => {
        const done = Bun.spawnSync(args, { stderr: "pipe" });
        if (done.exitCode !== 0) throw new Error(`${args.join(" ")}: ${done.stderr}`);
      };
      ip(["ip", "link", "add", this.veth, "type", "veth", "peer", "name", "phone0", "netns", String(init)]);
      ip(["ip", "addr", "add", `${subnet}.1/30`, "dev", this.veth]);
      ip(["ip", "link", "set", this.veth, "up"]);
      const inside = ["nsenter", "-t", String(init), "-n", "ip"];
      ip([...inside, "addr", "add", `${subnet}.2/30`, "dev", "phone0"]);
      ip([...inside, "link", "set", "phone0", "up"]);
    }
    return { unshare: child.pid, init, exited: child.exited };
  }

  /** The power goes: every process of the phone dies at once; its files stay as they were. */
  async powerCut() {
    const phone = await this.started();
    // Its init killed, the kernel kills every process of its pid namespace; unshare reaps it and ends.
    process.kill(phone.init, "SIGKILL");
    await Promise.race([
      phone.exited,
      Bun.sleep(10_000).then(() => Promise.reject(new Error("the phone did not die"))),
    ]);
    this.phone = null;
  }

  /**
   * Power on again after a cut: a new boot (new namespaces, clocks from ~1 s, a new boot id), and the
   * wall clock at 1970, as a phone reads it until the network sets it (setClock).
   */
  async powerOn() {
    this.setClock(new Date(5_000));
    this.phone = this.boot({ fresh: true });
    await this.phone;
    this.poweredOnAt = Date.now();
  }

  /**
   * The phone's wall clock: libfaketime (Debian's, preloaded in every app process: Termux preloads its own
   * termux-exec the same way) reads an offset from the phone's clock file, so every process of the phone
   * reads the same clock and sees it step (within a second: FAKETIME_CACHE_DURATION). `at` is what the
   * clock reads now (it runs on from there); none: the right time, as the network sets it. The boot-time
   * and monotonic clocks are the kernel's (DONT_FAKE_MONOTONIC). What it cannot fake: the times the
   * kernel stamps on files (a file written at "1970" is stamped with the host's clock; a test that needs
   * a 1970 stamp writes it with the phone's `date`, as `touch -d` does).
   */
  setClock(at?: Date) {
    const offset = at ? Math.round((at.getTime() - Date.now()) / 1000) : 0;
    const file = join(this.host, "clock", "faketime");
    writeFileSync(`${file}.new`, `${offset >= 0 ? "+" : ""}${offset}\n`);
    chmodSync(`${file}.new`, 0o644);
    renameSync(`${file}.new`, file);
  }

  /** The environment Termux gives an app's shell. */
  private environment(extra: Record<string, string>): string[] {
    const env: Record<string, string> = {
      HOME,
      PREFIX,
      TMPDIR: `${PREFIX}/tmp`,
      PATH: `${PREFIX}/bin`,
      SHELL: `${PREFIX}/bin/sh`,
      TERMUX_VERSION: "0.118.0",
      ANDROID_ROOT: "/system",
      ANDROID_DATA: "/data",
      TZ: "UTC",
      LANG: "en_US.UTF-8",
      LD_PRELOAD: `/lib/${MULTIARCH}/faketime/libfaketimeMT.so.1`,
      FAKETIME_TIMESTAMP_FILE: "/system/etc/clock/faketime",
      FAKETIME_CACHE_DURATION: "1",
      DONT_FAKE_MONOTONIC: "1",
      ...extra,
    };
    return Object.entries(env).flatMap(([key, value]) => ["--env", `${key}=${value}`]);
  }

  /** The argv that runs `argv` inside, as the app (or as root: `su`). */
  private async enter(argv: string[], { root = false, env = {} }: { root?: boolean; env?: Record<string, string> }) {
    const { init } = await this.started();
    const namespaces = ["-p", "-m", "-T", "-u", ...(this.options.ownNetwork ? ["-n"] : [])];
    const user = root ? ["--uid", "0", "--gid", "0"] : ["--uid", String(APP_UID), "--gid", String(APP_UID)];
    // --no-fork: the helper itself forwards signals to the app's process (its child, in the phone's pid namespace).
    return [
      "nsenter",
      "-t",
      String(init),
      ...namespaces,
      "--no-fork",
      "--",
      "/system/bin/android",
      "run",
      ...user,
      "--cwd",
      HOME,
      ...this.environment(env),
      "--",
      ...argv,
    ];
  }

  /** Run argv inside as the app (argv[0] looked up on $PREFIX/bin). */
  async run(
    argv: string[],
    { timeoutMs = 60_000, env = {} }: { timeoutMs?: number; env?: Record<string, string> } = {},
  ): Promise<Run> {
    return run(await this.enter(argv, { env }), { timeoutMs, cwd: this.host });
  }

  /** Run argv inside as root (what `su` runs: no app restrictions, invisible to the app under hidepid). */
  async runAsRoot(argv: string[], { timeoutMs = 60_000 }: { timeoutMs?: number } = {}): Promise<Run> {
    return run(await this.enter(argv, { root: true }), { timeoutMs, cwd: this.host });
  }

  /** `tend ARGS...` inside, with the sandbox's config. */
  tendRun(args: string[], options?: { timeoutMs?: number }): Promise<Run> {
    return this.run(["tend", ...args], options);
  }

  /** Start argv inside in the background (a loop, a server); a signal to it reaches the app's process. */
  async spawn(argv: string[], { root = false }: { root?: boolean } = {}) {
    const child = Bun.spawn(await this.enter(argv, { root }), { stdout: "pipe", stderr: "pipe", detached: true });
    this.children.push(child.pid);
    return child;
  }

  /** The host's PID of a process of the phone known by its PID inside (null: no such process). */
  async hostPid(pid: number): Promise<number | null> {
    const { init } = await this.started();
    const phone = readlinkSync(`/proc/${init}/ns/pid`);
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (readlinkSync(`/proc/${name}/ns/pid`) !== phone) continue;
        const ids = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${name}/status`, "utf8"))?.[1].split(/\s+/);
        if (ids && Number(ids.at(-1)) === pid) return Number(name);
      } catch {}
    }
    return null;
  }

  /** A signal to a process of the phone, by its PID inside. */
  async signal(pid: number, signal: NodeJS.Signals) {
    const host = await this.hostPid(pid);
    if (host === null) throw new Error(`no process ${pid} in the phone`);
    process.kill(host, signal);
  }

  /** Whether a process of the phone runs, by its PID inside (a zombie is not running). */
  async alive(pid: number) {
    const host = await this.hostPid(pid);
    if (host === null) return false;
    try {
      return !/^State:\s+Z/m.test(readFileSync(`/proc/${host}/status`, "utf8"));
    } catch {
      return false;
    }
  }

  /**
   * STAND-IN for the Termux:Boot app after the first unlock: each entry of ~/.termux/boot in sorted
   * order, run in the background as the app, stopping at the first entry that is not a regular file.
   * The unlock comes `unlockAfterMs` after the power-on (a phone waits for its user; the wait is the
   * thing emulated, not a wait for a condition).
   */
  async termuxBoot({ unlockAfterMs = 3000 }: { unlockAfterMs?: number } = {}): Promise<string[]> {
    const unlock = this.poweredOnAt + unlockAfterMs - Date.now();
    if (unlock > 0) await Bun.sleep(unlock);
    const dir = this.outside(`${HOME}/.termux/boot`);
    const ran: string[] = [];
    for (const name of existsSync(dir) ? readdirSync(dir).sort() : []) {
      if (!lstatSync(join(dir, name)).isFile()) break;
      await this.spawn([`${HOME}/.termux/boot/${name}`]);
      ran.push(name);
    }
    return ran;
  }

  /** Kill what this test started: the phone (every process in it), then its files. */
  async cleanup() {
    const phone = this.phone && (await this.phone.catch(() => null));
    if (phone) {
      try {
        process.kill(phone.init, "SIGKILL");
      } catch {}
      // Every process of the phone is gone once its init has no child left; the kernel's teardown of
      // its namespaces (its mounts: ~1.5 s here) goes on without the test waiting for it.
      const orphans = `/proc/${phone.init}/task/${phone.init}/children`;
      const childless = () => !existsSync(orphans) || readFileSync(orphans, "utf8").trim() === "";
      await waitFor(childless, 10_000, "the phone's processes gone").catch(() => {});
    }
    killAll(this.children);
    rmSync(this.host, { recursive: true, force: true });
  }
}

/** A program's `/bin/sh` (its _PATH_BSHELL) made `/tx/sh`: the phone's root links /tx to $PREFIX/bin. */
function patchShell(path: string) {
  const bytes = readFileSync(path);
  const [from, to] = [Buffer.from("\0/bin/sh\0"), Buffer.from("\0/tx/sh\0\0")];
  let found = 0;
  for (let at = bytes.indexOf(from); at !== -1; at = bytes.indexOf(from, at + 1), found++) to.copy(bytes, at);
  if (!found) throw new Error(`${path}: no /bin/sh in it to make Termux's $PREFIX/bin/sh`);
  writeFileSync(path, bytes);
}

/** A program of the host's Debian, by name: where its package puts it. */
function hostProgram(name: string): string {
  for (const dir of ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]) if (existsSync(join(dir, name))) return join(dir, name);
  throw new Error(`${name}: not on this host (make test installs what the sandbox copies)`);
}
