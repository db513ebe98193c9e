import { closeSync } from "node:fs";
import { inWords, openAppend } from "../os/files.ts";
import { readPidfile } from "../os/pidsource.ts";
import { syncFile, writeFileAtomic } from "../os/atomic.ts";
import { readProc } from "../os/proc.ts";
import { stopProcess } from "../os/signal.ts";
import { childEnv } from "../os/run.ts";
import { startedHere } from "../os/children.ts";
import { redactArgv, shortArgv } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";
import { defineRestart } from "./kind.ts";
import { stopCurrent } from "./run-action.ts";

type SpawnRestart = {
  kind: "spawn";
  argv: string[];
  cwd: string | null;
  env: Record<string, string>;
  output: string;
};

/**
 * sh -c RECORD_SELF PIDFILE SUFFIX ARGV...: write $$ to PIDFILE through a temp file with an
 * unpredictable name created exclusively (noclobber), rename it into place, then exec ARGV.
 */
const RECORD_SELF = 'umask 022; set -C; t="$0.$1.tmp"; shift; echo $$ > "$t" && mv -f "$t" "$0" && exec "$@"';

/**
 * Stop the old process (TERM, stop_timeout, KILL, its whole group), then start the argv detached
 * in a new session, stdin from /dev/null, output appended to a file; the pidfile names it.
 */
export const spawn = defineRestart<SpawnRestart>({
  kind: "spawn",
  keys: ["spawn", "cwd", "env", "output"],
  needsPidfile: true,
  stopsTheProcess: true,
  read(table, { inState, name, paths }) {
    const argv = table.argv("spawn");
    const cwd = table.string("cwd");
    const env = table.stringMap("env") ?? {};
    const output = table.string("output");
    if (!argv) return undefined;
    return {
      kind: "spawn",
      argv,
      cwd: cwd ? inState(cwd) : null,
      env,
      output: output ? inState(output) : paths.serviceOutput(name),
    };
  },
  async restart(service, action, { current, sleep, env }) {
    // An old process tend cannot see (another user's) cannot be stopped: starting one beside it is a second copy.
    if (current?.hidden)
      return { issued: false, detail: `${current.detail}: tend cannot stop it, so it starts no second copy` };
    try {
      let stopped = "";
      if (current?.info && current.running) {
        const { forced } = await stopProcess(current.info, service.stopTimeoutMs, sleep);
        stopped = `stopped pid ${current.info.pid}${forced ? " with SIGKILL" : ""}; `;
      }
      const pidfile = service.pidfile!;
      // Output goes to a file, never to the watchdog's stdout (cron would mail it, a closed pipe would kill it).
      const output = openAppend(action.output);
      let child;
      try {
        // The child records its own PID (atomically) before it becomes the service: if the watchdog
        // is killed right after the spawn, the pidfile still names the process, never an orphan.
        const suffix = Buffer.from(crypto.getRandomValues(new Uint8Array(9))).toString("base64url");
        child = Bun.spawn(["sh", "-c", RECORD_SELF, pidfile, suffix, ...action.argv], {
          cwd: action.cwd ?? undefined,
          env: { ...childEnv(env), ...action.env } as Record<string, string>,
          stdin: "ignore",
          stdout: output,
          stderr: output,
          detached: true, // new session: survives the watchdog and its process group
        });
      } finally {
        closeSync(output);
      }
      child.unref();
      startedHere(child.pid, child.exited); // `watchdog run` is woken by its end (pass/loop.ts)
      const info = readProc(child.pid);
      const deadline = performance.now() + 5000;
      while (readPid(pidfile) !== child.pid && child.exitCode === null && performance.now() < deadline) await sleep(5);
      // Made durable by tend (the file, then its directory): the shell's own write is not fsynced,
      // and on ext4 without auto_da_alloc (Android's /data) a rename committed before its data is an
      // empty pidfile after a power cut. Its own fsync first: rewriting it instead left that window
      // open (the new file's fsync commits the shell's rename, not the shell's data). Written by tend
      // when the shell did not get to it (it exited at once, or the wait ran out).
      if (!(readPid(pidfile) === child.pid && syncFile(pidfile))) writeFileAtomic(pidfile, `${child.pid}\n`, 0o644);
      return {
        issued: true,
        detail: `${stopped}started pid ${child.pid}`,
        pid: child.pid,
        pidStartTicks: info?.startTicks,
      };
    } catch (error) {
      const why = oneLine(inWords(error));
      return {
        issued: false,
        detail: `spawn ${shortArgv(action.argv)}: ${why}`,
        full: `spawn ${redactArgv(action.argv).join(" ")}: ${why}`,
      };
    }
  },
  stop: (service, _action, context) => stopCurrent(service, context),
  describe: (action) => `spawn ${shortArgv(action.argv)}`,
  output: (action) => ({ file: action.output }),
  ownOutput: (action) => action.output,
  programs: (action) => [action.argv[0]],
  // sh from PATH (Termux: $PREFIX/bin/sh; Android's /bin/sh is mksh): it records the PID, then execs the argv.
  tools: ["sh"],
  doctor: {
    name: "sh (restart.spawn)",
    affects: "restart.spawn: the shell that writes the pidfile and execs the service",
    async check(probe, env) {
      const found = await probe("sh", "-c", "command -v sh");
      return found.code === 0
        ? { status: "ok", detail: found.said }
        : { status: "missing", detail: `no sh on PATH (${oneLine(env.PATH ?? "no PATH", 80)})` };
    },
  },
  plan: (action, shown) => ({
    "restart.spawn": shown.argv(action.argv),
    "restart.cwd": action.cwd,
    "restart.env": Object.fromEntries(Object.entries(action.env).map(([name, value]) => [name, shown.value(value)])),
    "restart.output": action.output,
  }),
});

const readPid = (path: string) => {
  const read = readPidfile(path);
  return "pid" in read ? read.pid : null;
};
