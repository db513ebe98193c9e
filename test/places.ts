// Where an end-to-end test runs: on this host (a Sandbox: the compiled binary as a user runs it) or in
// the Termux-shaped phone (test/termux.ts: its namespaces, pivot_root, the app's uid under Android's
// seccomp filter, hidepid=2, dash as sh). A test written against a Place runs in both; what tend is
// given (paths, the example service, PIDs it wrote) is said as tend sees it, and mapped back here.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUN,
  publicCopy,
  removePublicCopy,
  run,
  Sandbox,
  SERVER,
  TEND,
  tomlConfig,
  waitFor,
  type ConfigSpec,
  type Run,
} from "./helpers.ts";
import { HOME, PREFIX, TermuxBox, TESTS } from "./termux.ts";

export const PLACES = ["host", "phone"] as const;
export type PlaceName = (typeof PLACES)[number];

export interface Place {
  name: PlaceName;
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
  writeScratch(name: string, text: string, mode?: number): void;
  /** Write a file of the state dir (a test's edit of what tend recorded). */
  writeState(name: string, text: string): void;
  /** How a shell there names tend. */
  tendPath: string;
  /** Run a shell command line there, as the user, in tend's environment (its config). */
  shell(command: string): Promise<Run>;
  /** A process of the test's own there, with a pidfile (in HOME) written after it started. */
  startTarget(argv: string[], pidfileName: string): Promise<{ pid: number; here: number; pidfile: string }>;
  /** Start `tend ARGS` in the background (logs -f), its stdout piped. */
  spawnTend(args: string[]): Promise<{ stdout: ReadableStream<Uint8Array>; kill: () => void }>;
  writeConfig(text: string): void;
  /** A configuration from a spec (helpers.ts tomlConfig), its state_dir this place's. */
  configure(spec: ConfigSpec): void;
  tend(args: string[], env?: Record<string, string>): Promise<Run>;
  /** tmux as tend runs it there (the host: the sandbox's TMUX_TMPDIR; the phone: Termux's $PREFIX/tmp). */
  tmux(args: string[]): Promise<Run>;
  /** A file of the state dir ("" when absent). */
  read(name: string): string;
  stateOf(name: string): any;
  /** The host's PID of a PID tend wrote (the phone numbers its own). */
  hostPid(pid: number): Promise<number>;
  cleanup(pidfiles?: string[]): Promise<void>;
}

export function openPlace(name: PlaceName): Place {
  return name === "host" ? onHost() : onPhone();
}

/** After a file's tests: the public copy the phone runs (helpers.ts publicCopy). */
export const closePlaces = () => removePublicCopy();

function onHost(): Place {
  const box = new Sandbox();
  return {
    name: "host",
    state: box.state,
    bun: BUN,
    server: SERVER,
    sh: "/bin/sh",
    scratch: (file) => ({ inside: join(box.dir, file), outside: join(box.dir, file) }),
    writeScratch: (file, text, mode = 0o644) => writeFileSync(join(box.dir, file), text, { mode }),
    writeState: (file, text) => box.write(file, text),
    tendPath: TEND,
    shell: (command) => run(["bash", "-c", command], { env: box.env() }),
    startTarget: async (argv, pidfileName) => {
      const child = Bun.spawn(argv, { detached: true, stdout: "ignore", stderr: "ignore" });
      box.track(child.pid);
      const pidfile = join(box.dir, pidfileName);
      writeFileSync(pidfile, `${child.pid}\n`);
      return { pid: child.pid, here: child.pid, pidfile };
    },
    spawnTend: async (args) => {
      const child = Bun.spawn([TEND, ...args], { env: box.env(), stdout: "pipe" });
      box.track(child.pid);
      return { stdout: child.stdout, kill: () => child.kill() };
    },
    writeConfig: (text) => box.writeConfig(text),
    configure: (spec) => void box.configure(spec),
    tend: (args, env = {}) => box.tend(args, { env }),
    tmux: (args) => run(["tmux", ...args], { env: box.env() }),
    read: (file) => box.read(file),
    stateOf: (service) => box.stateOf(service),
    hostPid: async (pid) => pid,
    cleanup: async () => {
      const pidfile = join(box.state, "web.pid");
      box.cleanup(existsSync(pidfile) ? [pidfile] : []);
    },
  };
}

function onPhone(): Place {
  const box = new TermuxBox();
  const read = (file: string) => {
    const path = box.outside(`${box.state}/${file}`);
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  };
  return {
    name: "phone",
    state: box.state,
    bun: `${PREFIX}/bin/bun`,
    sh: `${PREFIX}/bin/sh`,
    server: publicCopy().file("examples/service.ts").replace(publicCopy().dir, TESTS),
    scratch: (file) => ({ inside: `${HOME}/${file}`, outside: box.outside(`${HOME}/${file}`) }),
    writeScratch: (file, text, mode = 0o644) => box.write(`${HOME}/${file}`, text, mode),
    writeState: (file, text) => box.write(`${box.state}/${file}`, text),
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
    spawnTend: async (args) => {
      const child = await box.spawn(["tend", ...args]);
      return { stdout: child.stdout, kill: () => child.kill() };
    },
    writeConfig: (text) => box.writeConfig(text),
    configure: (spec) => box.writeConfig(tomlConfig({ ...spec, watchdog: { state_dir: box.state, ...spec.watchdog } })),
    tend: (args, env = {}) => box.run(["tend", ...args], { env }),
    tmux: (args) => box.run(["tmux", ...args]),
    read,
    stateOf: (service) => JSON.parse(read(`services/${service}.json`)),
    hostPid: async (pid) => {
      const host = await box.hostPid(pid);
      if (host === null) throw new Error(`no process ${pid} in the phone`);
      return host;
    },
    cleanup: () => box.cleanup(),
  };
}
