// Where an end-to-end test runs: on this host (a Sandbox: the compiled binary as a user runs it) or in
// the Termux-shaped phone (test/termux.ts: its namespaces, pivot_root, the app's uid under Android's
// seccomp filter, hidepid=2, dash as sh). A test written against a Place runs in both; what tend is
// given (paths, the example service, PIDs it wrote) is said as tend sees it, and mapped back here.
//
// Written against a place (both): the pass (watchdog) and the loop against real processes, restart.tmux and
// restart.runit, blogtunnel (its rules, its place in the watch, a run by hand), the operator's commands and
// the lock they wait behind, the loop's crash watch and retry_interval, the loop between passes (strace here
// attached to the phone's loop), notify (formats, failures, spool and dedup, receivers' rules, gotify and
// pushover, the alert path, heartbeats, spool lines), safe-kill (and its PID-reuse checks), flapping, the
// answers corpus, TLS judgements, tcp send/expect, localhost, check.disk and check.log, a plugin killed by a
// signal, stdout full, closed or broken (a pass, the loop, notify, serve), a live configuration, the
// configuration (the malformed corpus, lookup, plan, its edges), the per-service locks, power cuts
// (idempotency, restart-record), a last boot's pidfile, log rotation, service truth (dependencies, DNS,
// memory, gaps, a stale status), stats/report/metrics/status on a terminal, incident, hostile text, one truth
// in every view, serve, hardening (links, FIFOs, PIDs, bounds, SIGTERM, ulimit, a power cut's leftovers,
// strict inputs, secrets, tend's own files), email, strict modes, chaos, doctor (and --audit with cronie's
// crontab), watchdog import, self-update (the phone takes a build naming bionic's linker; its linker64 is
// glibc's loader here) and a release channel's verification. A disk a test fills is mounted before the phone
// boots (as /data is). full-disk, localhost and cli have a phone test of their own beside this host's;
// termux.test.ts is the phone's alone.
// Here only, and why:
// - a phone has none of it: systemd as PID 1 (systemd.test), cron and systemd installs and Debian's cron
//   for a second user (install, migrating, import-cron, doctor's cron rows and cron's tmux server, audit's
//   and import's `crontab -u`: Termux:Boot and cronie are termux.test's, and audit's and import's own phone
//   tests), launchd's and systemctl's stand-ins (truth, hostile, safe-kill), packaging (release), a second
//   user (hardening, self-update's root over a user's link), /dev/shm (full-disk's spill: the phone's own
//   tests are its absence), Debian's monitoring-plugins (nagios's check_tcp, check_http, check_disk);
// - a release's binary for a phone is linux-arm64-android, and this host's phone is x64: no release has its
//   build, so a channel's install is this host's (the phone's refusal and the install mechanics, self-update's,
//   run in the phone);
// - the instrument needs what the app cannot have: unshare -T per pass (clock-steps), ext4 images made and
//   mounted per test (durability), strace of a pass's fsyncs (watchdog, hardening) and of the page's opens
//   (serve), /proc/net (truth's busy.port: refused on a phone, its degrade is termux.test's);
// - receivers and oracles elsewhere: Prometheus and Alertmanager (fleet, alertmanager), the real curl's
//   verdicts (differential) and servers' own logs (no-trace), whose tend side is the answers corpus's;
// - not through the binary at all: the library's own tests (lock's flock errors and lost waits, the spool's
//   read bound, the page built in slices, clock-steps' injected clocks, decide, stats, ...).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, constants as osConstants } from "node:os";
import { dirname, join } from "node:path";
import { savedState } from "../lib/state/service-state.ts";
import {
  BUN,
  publicCopy,
  removePublicCopy,
  run,
  Sandbox,
  servedAt,
  SERVER,
  TEND,
  tomlConfig,
  waitFor,
  type ConfigSpec,
  type Run,
} from "./helpers.ts";
import { APP_UID, HOME, PREFIX, TermuxBox, TESTS } from "./termux.ts";

export const PLACES = ["host", "phone"] as const;
export type PlaceName = (typeof PLACES)[number];

export interface Place {
  name: PlaceName;
  /** The host name tend reports there (a phone's is `localhost`). */
  hostname: string;
  /** The state dir, as tend sees it (for `state_dir = ...`). */
  state: string;
  /** bun and examples/service.ts, as tend sees them (for `spawn = [...]`). */
  bun: string;
  server: string;
  /** The shell a script's #! names there (Termux's scripts name $PREFIX/bin/sh: termux-fix-shebang). */
  sh: string;
  /** A file in HOME: its path as tend sees it, and where this test reads it. */
  scratch(name: string): { inside: string; outside: string };
  /** Write a file in HOME, the user's own (on the phone: the app's). */
  writeScratch(name: string, text: string | Uint8Array, mode?: number): void;
  /** Write a file of the state dir (a test's edit of what tend recorded, or what it finds there). */
  writeState(name: string, text: string, mode?: number): void;
  /** How a shell there names tend. */
  tendPath: string;
  /** Run a shell command line there, as the user, in tend's environment (its config). */
  shell(command: string): Promise<Run>;
  /** A process of the test's own there, with a pidfile (in HOME) written after it started. */
  startTarget(argv: string[], pidfileName: string): Promise<{ pid: number; here: number; pidfile: string }>;
  /** Start a program of the test's own there in the background, as the user (killed by cleanup). */
  background(argv: string[]): Promise<void>;
  /**
   * Start `tend ARGS` in the background (logs -f, the loop), its stdout piped; a signal reaches tend. Under
   * `wrapper` (strace): on this host only (the phone has no strace).
   */
  spawnTend(args: string[], wrapper?: string[]): Promise<Background>;
  /** A shell command line there in the background, in a process group of its own (Background.killGroup). */
  spawnShell(command: string): Promise<Background>;
  /** `watchdog serve` on a port the kernel picks (killed by cleanup); its URL once it says where it listens. */
  serve(): Promise<string>;
  writeConfig(text: string): void;
  /** The configuration file: its path as tend sees it, and where this test finds it. */
  configFile: { inside: string; outside: string };
  /** The uid tend runs as there (this host's tests run as root; the phone's app is 10123). */
  uid: number;
  /** Change the configuration file (an operator's edit). */
  editConfig(edit: (text: string) => string): void;
  /** A configuration from a spec (helpers.ts tomlConfig), its state_dir this place's. */
  configure(spec: ConfigSpec): void;
  tend(args: string[], env?: Record<string, string>): Promise<Run>;
  /** tmux as tend runs it there (the host: the sandbox's TMUX_TMPDIR; the phone: Termux's $PREFIX/tmp). */
  tmux(args: string[]): Promise<Run>;
  /** Where this test finds a file of the state dir (a lock the test holds with flock(1), an mtime it sets). */
  stateFile(name: string): string;
  /** A file of the state dir ("" when absent). */
  read(name: string): string;
  stateOf(name: string): any;
  /** The host's PID of a PID tend wrote (the phone numbers its own). */
  hostPid(pid: number): Promise<number>;
  /** Kill what the test started there (on this host: and the PIDs these pidfiles name, as this test finds them). */
  cleanup(pidfiles?: string[]): Promise<void>;
}

export interface Background {
  stdout: ReadableStream<Uint8Array>;
  stderr: ReadableStream<Uint8Array>;
  kill: (signal?: NodeJS.Signals) => void;
  /** tend's exit code (128 + the signal's number when a signal ended it). */
  exited: Promise<number>;
  running: () => boolean;
  /** This host's PID of the tend process itself (on the phone: the child of the helper that entered it). */
  tendPid: () => number;
  /** SIGKILL to its whole process group (on the phone: the helper that entered it, and the app's processes). */
  killGroup: () => void;
}

/** On the phone, `termuxServices`: what `pkg install cronie termux-services` gives (runit's programs, crond). */
export function openPlace(name: PlaceName, { termuxServices = false } = {}): Place {
  return name === "host" ? onHost() : onPhone(termuxServices);
}

/**
 * The place's state dir a tmpfs of `size` (a disk the test can fill), the user's, 0700: mounted before the
 * phone boots (its files are bound in with what is mounted under them). Where this test finds it, and
 * what unmounts it (lazily: gone from here at once; the phone's copy goes with the phone) — before cleanup.
 */
export async function smallStateDisk(place: Place, size: string): Promise<{ dir: string; unmount: () => void }> {
  const dir = place.stateFile("");
  mkdirSync(dir, { recursive: true }); // its parents open to the user (0755), the tmpfs itself 0700
  const options = `size=${size},mode=0700,uid=${place.uid},gid=${place.uid}`;
  const mounted = await run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", dir]);
  if (mounted.code !== 0) throw new Error(`mount ${dir}: ${mounted.stderr}`);
  return { dir, unmount: () => void Bun.spawnSync(["umount", "-l", dir]) };
}

/** After a file's tests: the public copy the phone runs (helpers.ts publicCopy). */
export const closePlaces = () => removePublicCopy();

function onHost(): Place {
  const box = new Sandbox();
  /** In the background, in a process group of its own, its output piped. */
  const spawnHere = (argv: string[]) => {
    const child = Bun.spawn(argv, { env: box.env(), stdout: "pipe", stderr: "pipe", detached: true });
    box.track(child.pid);
    return background(child);
  };
  return {
    name: "host",
    hostname: hostname(),
    state: box.state,
    bun: BUN,
    server: SERVER,
    sh: "/bin/sh",
    scratch: (file) => ({ inside: join(box.dir, file), outside: join(box.dir, file) }),
    writeScratch: (file, text, mode = 0o644) => {
      mkdirSync(dirname(join(box.dir, file)), { recursive: true });
      writeFileSync(join(box.dir, file), text, { mode });
    },
    writeState: (file, text, mode = 0o644) => {
      mkdirSync(dirname(join(box.state, file)), { recursive: true, mode: 0o700 });
      writeFileSync(join(box.state, file), text, { mode });
    },
    tendPath: TEND,
    shell: (command) => run(["bash", "-c", command], { env: box.env() }),
    startTarget: async (argv, pidfileName) => {
      const child = Bun.spawn(argv, { detached: true, stdout: "ignore", stderr: "ignore" });
      box.track(child.pid);
      const pidfile = join(box.dir, pidfileName);
      writeFileSync(pidfile, `${child.pid}\n`);
      return { pid: child.pid, here: child.pid, pidfile };
    },
    background: async (argv) => {
      // Its own process group (cleanup kills it whole): what it starts goes with it.
      const child = Bun.spawn(argv, { env: box.env(), detached: true, stdout: "ignore", stderr: "ignore" });
      box.track(child.pid);
    },
    // Its own process group: cleanup kills it whole (under strace, tend is strace's child).
    spawnTend: async (args, wrapper = []) => spawnHere([...wrapper, TEND, ...args]),
    spawnShell: async (command) => spawnHere(["sh", "-c", command]),
    serve: () => box.serve(),
    writeConfig: (text) => box.writeConfig(text),
    configFile: { inside: box.config, outside: box.config },
    uid: process.getuid?.() ?? 0,
    editConfig: (edit) => box.writeConfig(edit(readFileSync(box.config, "utf8"))),
    configure: (spec) => void box.configure(spec),
    tend: (args, env = {}) => box.tend(args, { env }),
    tmux: (args) => run(["tmux", ...args], { env: box.env() }),
    stateFile: (file) => join(box.state, file),
    read: (file) => box.read(file),
    stateOf: (service) => box.stateOf(service),
    hostPid: async (pid) => pid,
    cleanup: async (pidfiles = []) => {
      const pidfile = join(box.state, "web.pid");
      box.cleanup([...(existsSync(pidfile) ? [pidfile] : []), ...pidfiles.filter((file) => existsSync(file))]);
    },
  };
}

function onPhone(termuxServices: boolean): Place {
  const box = new TermuxBox({ termuxServices, apiLevel: 34 });
  const read = (file: string) => {
    const path = box.outside(`${box.state}/${file}`);
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  };
  return {
    name: "phone",
    hostname: "localhost",
    state: box.state,
    bun: `${PREFIX}/bin/bun`,
    sh: `${PREFIX}/bin/sh`,
    server: publicCopy().file("examples/service.ts").replace(publicCopy().dir, TESTS),
    scratch: (file) => ({ inside: `${HOME}/${file}`, outside: box.outside(`${HOME}/${file}`) }),
    writeScratch: (file, text, mode = 0o644) => {
      box.write(`${HOME}/${file}`, text, mode);
      box.chownAll(); // the dirs it made, the app's
    },
    writeState: (file, text, mode = 0o644) => {
      box.write(`${box.state}/${file}`, text, mode);
      box.chownAll(); // the dirs it made, the app's as tend's own would be
    },
    tendPath: "tend",
    shell: (command) => box.run(["sh", "-c", command]),
    startTarget: async (argv, pidfileName) => {
      // The process writes its own PID (the phone numbers its own), then becomes the target.
      const pidfile = `${HOME}/${pidfileName}`;
      const quoted = argv.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(" ");
      await box.spawn(["sh", "-c", `echo $$ > '${pidfile}'; exec ${quoted}`]);
      const written = () => (existsSync(box.outside(pidfile)) ? readFileSync(box.outside(pidfile), "utf8") : "");
      await waitFor(() => /^\d+\n$/.test(written()), 10_000, `${pidfile} written`);
      const pid = Number(written());
      const host = await box.hostPid(pid);
      if (host === null) throw new Error(`no process ${pid} in the phone`);
      return { pid, here: host, pidfile };
    },
    background: async (argv) => void (await box.spawn(argv)),
    spawnTend: async (args, wrapper = []) => {
      if (wrapper.length) throw new Error(`${wrapper[0]} is not a program of the phone`);
      const child = await box.spawn(["tend", ...args]);
      return background(child, { entered: true });
    },
    spawnShell: async (command) => background(await box.spawn(["sh", "-c", command]), { entered: true }),
    serve: async () => servedAt((await box.spawn(["tend", "watchdog", "serve", "--listen", "127.0.0.1:0"])).stdout),
    writeConfig: (text) => box.writeConfig(text),
    configFile: { inside: box.config, outside: box.outside(box.config) },
    uid: APP_UID,
    editConfig: (edit) => box.writeConfig(edit(readFileSync(box.outside(box.config), "utf8"))),
    configure: (spec) => box.writeConfig(tomlConfig({ ...spec, watchdog: { state_dir: box.state, ...spec.watchdog } })),
    tend: (args, env = {}) => box.run(["tend", ...args], { env }),
    tmux: (args) => box.run(["tmux", ...args]),
    stateFile: (file) => box.outside(`${box.state}/${file}`),
    read,
    stateOf: (service) => savedState(box.outside(box.state), service),
    hostPid: async (pid) => {
      const host = await box.hostPid(pid);
      if (host === null) throw new Error(`no process ${pid} in the phone`);
      return host;
    },
    cleanup: () => box.cleanup(),
  };
}

/** A child in the background; its exit code as a shell gives it: 128 + the signal's number when a signal ended it. */
function background(
  child: {
    stdout: ReadableStream<Uint8Array>;
    stderr: ReadableStream<Uint8Array>;
    exited: Promise<number>;
    exitCode: number | null;
    signalCode: number | NodeJS.Signals | null;
    kill: (signal?: NodeJS.Signals) => void;
    pid: number;
  },
  { entered = false } = {},
): Background {
  const tendPid = () => {
    if (!entered) return child.pid;
    // The helper's children: the app (tend) and, beside it, the seccomp supervisor it forked.
    const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(" ");
    const tend = children.find((pid) => pid && readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "tend");
    if (!tend) throw new Error(`tend not started yet under ${child.pid}`);
    return Number(tend);
  };
  const exited = child.exited.then((code) => {
    const signal = child.signalCode;
    return signal === null ? code : 128 + (typeof signal === "number" ? signal : osConstants.signals[signal]);
  });
  return {
    stdout: child.stdout,
    stderr: child.stderr,
    // On the phone, to tend itself: the helper forwards a signal it can catch, never SIGKILL.
    kill: (signal = "SIGTERM") => {
      if (child.exitCode !== null || child.signalCode !== null) return; // gone already: nothing to signal
      if (entered) process.kill(tendPid(), signal);
      else child.kill(signal);
    },
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    tendPid,
    killGroup: () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {} // gone already
    },
  };
}
