import { homedir } from "node:os";
import { LiveConfig } from "./config/live.ts";
import { Logger } from "./state/logger.ts";
import { localStamp } from "./core/time.ts";
import { durationFlag, paintFor, type Args } from "./cli.ts";
import type { Config } from "./config/types.ts";
import { usageError } from "./core/errors.ts";
import { oneLine } from "./core/sanitize.ts";
import type { Io } from "./io.ts";
import { statePaths } from "./state/dir.ts";
import { inWords } from "./os/files.ts";

/** What a subcommand gets: its arguments, the configuration, and the streams it says things on. */
export interface Context {
  args: Args;
  /** The words after the subcommand: service names (install: a scheduler). */
  names: string[];
  config: Config;
  io: Io;
  /** Fired by SIGTERM/SIGINT during a pass (its reason: the signal's name). */
  stop?: AbortSignal;
}

interface Subcommand {
  /** How many words it takes after its name. */
  takes: "none" | "one" | "some";
  /** The flags it takes (besides --config, --help, --version): any other is a usage error naming who takes it. */
  flags: string[];
  /** Runs it, loading only the code it needs (a pass never loads install or report); the exit code. */
  run: (context: Context) => Promise<number>;
}

const maintenance = (kind: "pause" | "resume" | "reset"): Subcommand => ({
  takes: "one",
  flags: kind === "pause" ? ["for"] : [],
  async run({ args, names: [name], config, io }) {
    const { maintain } = await import("./operator/maintenance.ts");
    const action = kind === "pause" ? { kind, forMs: durationFlag("for", args.for) } : { kind };
    return (io.out(`${name}: ${await maintain(config, name, action)}`), 0);
  },
});

const operation = (kind: "restart" | "stop" | "start"): Subcommand => ({
  takes: "one",
  flags: [],
  async run({ names: [name], config, io }) {
    const { operate } = await import("./operator/operate.ts");
    return operate(config, name, kind, { echo: io.out, env: io.env });
  },
});

/** `watchdog serve` / `run --serve`: listening, and saying where. */
/**
 * `serve`, or `run --serve` (then the loop looks at the configuration file and this server shows what
 * the loop loaded); alone, it looks itself and says an invalid edit once in the watchdog log.
 */
async function serveFor(args: Args, config: Config, io: Io, loop: LiveConfig | null = null) {
  const { startServer } = await import("./views/serve.ts");
  const live = loop ?? new LiveConfig(config, io.env);
  const logger = new Logger(config.watchdog.log, () => {}, Date.now, config.watchdog.rotation);
  const current = loop
    ? () => loop.config
    : () => {
        const { config: latest, broken } = live.refresh();
        if (broken)
          logger.write(
            "ERROR",
            `configuration: ${broken.split("\n").join("; ")} — still serving with the configuration loaded at ` +
              localStamp(new Date(live.loadedAt)),
          );
        return latest;
      };
  const serving = startServer(config, args.listen ?? config.serve.listen, current);
  try {
    io.out(`serving ${serving.url} (${config.serve.token ? "token required" : "loopback only, no token"})`);
  } catch (error) {
    // A stdout that cannot take the line (a full disk, a closed pipe) does not stop the server.
    try {
      io.err(`watchdog: cannot write to stdout: ${inWords(error)} (serving all the same)`);
    } catch {}
  }
  return serving;
}

/** Where install writes: for this binary, this user. */
const where = (io: Io) => ({ binary: process.execPath, home: io.env.HOME || homedir(), uid: process.getuid?.() ?? 0 });

/** What a user's systemd timer depends on: lingering (os/systemd.ts), in words (operator/install.ts). */
async function lingerFor(io: Io): Promise<string> {
  const [{ lingerWords }, { lingering }, { userName }] = await Promise.all([
    import("./operator/install.ts"),
    import("./os/systemd.ts"),
    import("./os/users.ts"),
  ]);
  const user = userName(io.env);
  return lingerWords(user, lingering(user));
}

/** Flags every subcommand takes. */
const COMMON_FLAGS = ["config", "help", "version"];

/** `watchdog SUBCOMMAND`: each loaded on demand. */
const SUBCOMMANDS: Record<string, Subcommand> = {
  pass: {
    takes: "none",
    flags: ["dry-run", "interval"],
    async run({ args, config, io, stop }) {
      // --dry-run: its own driver (pass/dry-run.ts), which owns nothing and writes nothing.
      if (args["dry-run"]) return (await (await import("./pass/dry-run.ts")).dryRunPass(config, io.out), 0);
      const { runPass } = await import("./pass/pass.ts");
      // --interval: the period the scheduler runs this pass at (the installed entry says it); the heartbeat keeps it.
      const intervalMs = durationFlag("interval", args.interval) ?? undefined;
      const stdoutIsLog = (await io.stdoutIs?.(statePaths(config.watchdog.stateDir).cronLog)) ?? false;
      return (await runPass({ config, echo: io.out, env: io.env, intervalMs, stdoutIsLog, stop }), 0);
    },
  },
  run: {
    takes: "none",
    flags: ["interval", "serve", "listen"],
    async run({ args, config, io }) {
      const [lean, { runLoop }] = await Promise.all([import("./os/lean.ts"), import("./pass/loop.ts")]);
      const intervalMs = durationFlag("interval", args.interval) ?? config.watchdog.intervalMs;
      await lean.becomeLean(io.env); // re-executes itself (same argv): before any socket is open
      lean.normalJitPolicy();
      const live = new LiveConfig(config, io.env);
      const serving = args.serve || args.listen ? await serveFor(args, config, io, live) : null;
      try {
        return await runLoop({ config, intervalMs, echo: io.out, env: io.env, live });
      } finally {
        serving?.stop();
      }
    },
  },
  serve: {
    takes: "none",
    flags: ["listen"],
    async run({ args, config, io }) {
      const lean = await import("./os/lean.ts");
      await lean.becomeLean(io.env); // long-running: the optimizing JITs' code would grow RSS (as in the loop)
      lean.normalJitPolicy();
      const serving = await serveFor(args, config, io);
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      serving.stop();
      return 0;
    },
  },
  status: {
    takes: "some",
    flags: ["json", "cached", "nagios"],
    async run({ args, names, config, io }) {
      const { allHealthy, collectStatus, renderNagios, renderStatus, statusClock } = await import("./views/status.ts");
      // Collected and said "ago" in one reading of tend's time (a wall-clock step no pass followed yet).
      const collect = async () => {
        const clock = await statusClock(config.watchdog.stateDir);
        return { report: await collectStatus(config, { names, cached: args.cached, ...clock }), now: clock.now };
      };
      if (args.nagios) {
        // A script check: one line and the plugin's exit code; a status that cannot run is UNKNOWN (3).
        const collected = await collect().catch((error: Error) => error);
        if (collected instanceof Error) return (io.out(`TEND UNKNOWN - ${oneLine(collected.message)}`), 3);
        const { line, code } = renderNagios(collected.report, collected.now());
        return (io.out(line), code);
      }
      const { report, now } = await collect();
      const columns = io.tty ? process.stdout.columns : Infinity;
      io.out(args.json ? JSON.stringify(report, null, 2) : renderStatus(report, await paintFor(io), now(), columns));
      return allHealthy(report) ? 0 : 1;
    },
  },
  stats: {
    takes: "some",
    flags: ["json"],
    async run({ args, names, config, io }) {
      const { collectStats, renderStats } = await import("./views/stats.ts");
      const stats = collectStats(config, names);
      const pictures = { paint: await paintFor(io), pictures: io.tty };
      return (io.out(args.json ? JSON.stringify(stats, null, 2) : renderStats(stats, pictures)), 0);
    },
  },
  report: {
    takes: "some",
    flags: ["since", "json"],
    async run({ args, names, config, io }) {
      const { buildReport, renderReport } = await import("./views/report.ts");
      const { tendNow } = await import("./state/clock.ts");
      const now = (await tendNow(config.watchdog.stateDir))();
      const report = buildReport(
        config,
        durationFlag("since", args.since) ?? 7 * 86_400_000,
        now,
        48,
        undefined,
        names,
      );
      const pictures = { paint: await paintFor(io), pictures: io.tty };
      return (io.out(args.json ? JSON.stringify(report, null, 2) : renderReport(report, pictures)), 0);
    },
  },
  install: {
    takes: "one",
    flags: ["write", "interval", "replace", "loop"],
    async run({ args, names: [which], config, io }) {
      const install = await import("./operator/install.ts");
      const scheduler = install.parseScheduler(which);
      const intervalMs = durationFlag("interval", args.interval) ?? config.watchdog.intervalMs;
      const replace: string | null = args.replace ?? null;
      if (replace !== null && scheduler !== "cron") throw usageError("--replace is for install cron");
      if (replace !== null && replace.trim() === "")
        throw usageError("--replace needs a non-empty PATTERN (the one crontab line to comment out)");
      if (args.loop && scheduler !== "termux-boot") throw usageError("--loop is for install termux-boot");
      if (scheduler === "cron") {
        // On Termux, cron is a package and a service: say what is missing before writing a line nobody runs.
        const hasCrontab = Bun.which("crontab", { PATH: io.env.PATH ?? "" }) !== null;
        const needs = install.termuxCronNeeds(io.env, hasCrontab);
        if (needs.length)
          io.err(
            `watchdog install: cron on Termux needs: ${needs.join("; then ")} (and termux-boot to start it at boot)`,
          );
        if (!hasCrontab && args.write) return 1;
      }
      if (scheduler === "termux-boot" && !args.loop) {
        // A fresh Termux has no crond to start at boot: a script that starts nothing is refused, not written.
        const missing = install.termuxBootMissing(io.env);
        if (missing.length) {
          io.err(
            `watchdog install: termux-boot: ${missing.join(", ")} not found: at boot nothing would run tend's ` +
              `passes. Install them: pkg install cronie termux-services; then sv-enable crond; then ` +
              `watchdog install cron --write. Or let tend's loop watch: watchdog install termux-boot --loop --write`,
          );
          if (args.write) return 1;
        }
      }
      // The boot script's crond runs tend's crontab line: without one, the chain would run nothing (#61).
      const hasTendLine = async () => install.tendCronLines(await install.crontabLines().catch(() => [])).length > 0;
      if (scheduler === "termux-boot" && !args.loop && args.write && !(await hasTendLine())) {
        io.err(
          "watchdog install: termux-boot: the crontab has no tend line: at boot crond would run nothing of " +
            "tend's. Write it first: watchdog install cron --write (then this again)",
        );
        return 1;
      }
      const warnings = scheduler === "cron" ? await install.crontabWarnings(replace) : [];
      const rounded = scheduler === "cron" ? install.cronWarning(intervalMs) : null;
      for (const warning of [...(rounded ? [rounded] : []), ...warnings]) io.err(`watchdog install: ${warning}`);
      const files = install.installFiles(scheduler, config, {
        ...where(io),
        intervalMs,
        mail: install.cronCanMail(io.env.PREFIX),
        loop: Boolean(args.loop),
      });
      // A user's timer stops at logout unless lingering is on: said beside what is written (stderr while printing).
      const linger = scheduler === "systemd" && where(io).uid !== 0 ? await lingerFor(io) : null;
      if (!args.write) {
        if (linger) io.err(`watchdog install: ${linger}`);
        return (io.out(install.renderInstall(scheduler, files)), 0);
      }
      // The entry's output goes to the state dir (cron.log, the boot script's log): the shell opens
      // that redirect before tend starts, so the dir must exist from the first tick.
      const { existsSync } = await import("node:fs");
      const { ensureStateDir } = await import("./state/dir.ts");
      const created = !existsSync(config.watchdog.stateDir);
      ensureStateDir(config.watchdog.stateDir);
      if (created) io.out(`${config.watchdog.stateDir}: created (mode 0700)`);
      for (const line of await install.writeInstall(scheduler, files, replace)) io.out(line);
      // --loop: the cron line too, as a keeper — a cron pass exits silently while the loop holds its lock,
      // and watches when Android's phantom process killer took the loop.
      if (scheduler === "termux-boot" && args.loop) {
        if (Bun.which("crontab", { PATH: io.env.PATH ?? "" }) === null)
          io.out("crontab: none here (pkg install cronie termux-services): no cron pass keeps the loop's watch");
        else {
          const keeper = install.installFiles("cron", config, {
            ...where(io),
            intervalMs,
            mail: install.cronCanMail(io.env.PREFIX),
          });
          for (const line of await install.writeInstall("cron", keeper)) io.out(`${line} (the loop's keeper)`);
        }
      }
      if (linger) io.out(linger);
      return 0;
    },
  },
  uninstall: {
    takes: "one",
    flags: ["write"],
    async run({ args, names: [which], config, io }) {
      const { installFiles, parseScheduler, removeInstall } = await import("./operator/install.ts");
      const scheduler = parseScheduler(which);
      const files = installFiles(scheduler, config, { ...where(io), intervalMs: config.watchdog.intervalMs });
      for (const line of await removeInstall(scheduler, files, Boolean(args.write))) io.out(line);
      return 0;
    },
  },
  incident: {
    takes: "some",
    flags: ["last", "at", "markdown", "json"],
    async run({ args, names, config, io }) {
      if (names.length > 1) throw usageError(`watchdog incident takes at most one service name`);
      if (args.last && args.at !== undefined) throw usageError("--last and --at choose one outage each: give one");
      if (args.markdown && args.json) throw usageError("--markdown and --json: give one");
      const [{ collectIncident, parseAt, renderIncident, renderIncidentMarkdown }, { statusClock }, { uptimeMs }] =
        await Promise.all([import("./views/incident.ts"), import("./views/status.ts"), import("./os/proc.ts")]);
      const at = args.at === undefined ? null : parseAt(String(args.at));
      const { now } = await statusClock(config.watchdog.stateDir);
      const incident = await collectIncident(config, names[0] ?? null, { at, now: now(), uptimeMs: uptimeMs() });
      const text = args.json
        ? JSON.stringify(incident, null, 2)
        : args.markdown
          ? renderIncidentMarkdown(incident)
          : renderIncident(incident);
      return (io.out(text), 0);
    },
  },
  import: {
    takes: "one",
    flags: ["out"],
    async run({ args, names: [script], io }) {
      const { importFromFile } = await import("./tools/import-file.ts");
      return importFromFile(script, args.out === undefined ? null : String(args.out), io);
    },
  },
  validate: {
    takes: "none",
    flags: [],
    async run({ config, io }) {
      io.out(`${config.path}: ok (${config.services.length} services)`);
      // Valid, but blind to a frozen service: said, not an error.
      const { blindTcpNotes } = await import("./checks/tcp.ts");
      for (const note of blindTcpNotes(config.services)) io.err(`watchdog validate: note: ${note}`);
      return 0;
    },
  },
  plan: {
    takes: "none",
    flags: ["show-secrets"],
    async run({ args, config, io }) {
      const [{ renderPlan }, { HIDDEN, REVEALED }] = await Promise.all([
        import("./config/plan.ts"),
        import("./core/redact.ts"),
      ]);
      return (io.out(renderPlan(config, args["show-secrets"] ? REVEALED : HIDDEN)), 0);
    },
  },
  restart: operation("restart"),
  stop: operation("stop"),
  start: operation("start"),
  logs: {
    takes: "one",
    flags: ["n", "f"],
    async run({ args, names: [name], config, io }) {
      const { serviceLogs } = await import("./operator/logs.ts");
      const lines = args.n === undefined ? 20 : Number(args.n);
      if (!Number.isInteger(lines) || lines < 1)
        throw usageError(`-n: ${JSON.stringify(args.n)} is not a number of lines`);
      return serviceLogs(config, name, { lines, follow: Boolean(args.f), out: io.out });
    },
  },
  pause: maintenance("pause"),
  resume: maintenance("resume"),
  reset: maintenance("reset"),
};

/** Check the words and flags a subcommand was given; the subcommand, or a usage error. */
export function subcommand(name: string, words: string[], usage: string, flags: string[] = []): Subcommand {
  const found = SUBCOMMANDS[name];
  if (!found) throw usageError(`unknown subcommand ${JSON.stringify(name)}\n\n${usage}`);
  for (const flag of flags) {
    if (COMMON_FLAGS.includes(flag) || found.flags.includes(flag)) continue;
    const takers = Object.keys(SUBCOMMANDS).filter((other) => SUBCOMMANDS[other].flags.includes(flag));
    const shown = flag.length === 1 ? `-${flag}` : `--${flag}`;
    throw usageError(
      `watchdog ${name}: ${shown} is not an option of ${name}` +
        (takers.length ? ` (it is for: ${takers.join(", ")})` : "") +
        (found.flags.length
          ? `; ${name} takes ${found.flags.map((f) => (f.length === 1 ? `-${f}` : `--${f}`)).join(", ")}`
          : ""),
    );
  }
  if (found.takes === "none" && words.length) throw usageError(`watchdog ${name}: unexpected ${words.join(" ")}`);
  if (found.takes === "one" && words.length !== 1) throw usageError(`watchdog ${name} takes one name\n\n${usage}`);
  return found;
}
