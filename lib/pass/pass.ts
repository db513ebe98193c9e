import type { Config, ServiceConfig } from "../config/types.ts";
import type { ServiceState } from "../core/state.ts";
import { downtimeLine, gapEventOf, type Downtime, type LogLine } from "../core/events.ts";
import { humanDuration } from "../core/duration.ts";
import { isTendError, TendError } from "../core/errors.ts";
import { oneLine } from "../core/sanitize.ts";
import { blocksDependents, notJudged } from "../core/verdict.ts";
import { eventMessage, sendEvents, spoolEvents } from "../notify/alert.ts";
import { messageKey, type Message } from "../notify/send.ts";
import { inWords } from "../os/files.ts";
import { holderRecord, loopRuns, takeLock, type Holder } from "../os/lock.ts";
import { clocks } from "../os/libc.ts";
import { nowSource, systemClock, type ClockSource } from "../os/clock.ts";
import { recordOf, stepWords, type Frame } from "../core/clock.ts";
import { utcStamp } from "../core/time.ts";
import { tendClock } from "../state/clock.ts";
import { isFullDisk } from "../state/spill.ts";
import { uptimeClock } from "../os/proc.ts";
import { fittingConcurrency } from "../os/fdlimit.ts";
import { removeNulRuns, removeStaleTemps } from "../state/repair.ts";
import { rotateInPlace } from "../os/rotate.ts";
import { ownOutputOf } from "../restarts/index.ts";
import { ensureStateDir, moveLegacyFiles, statePaths } from "../state/dir.ts";
import { Logger } from "../state/logger.ts";
import { compactObservations, latestRecordedIn, stateReader } from "../state/service-state.ts";
import { findGap, markGapSaid, readHeartbeat, writeHeartbeat } from "../state/heartbeat.ts";
import { limiter } from "../core/limiter.ts";
import { dueInPass } from "../core/schedule.ts";
import { judgeService, leftAsRecorded, type JudgeOptions, type ServiceOutcome } from "./judge.ts";
import { DependencyBoard } from "./assess.ts";
import { ServiceOwner } from "../owner/owner.ts";
import { publishEvents, updatePassWideViews } from "../owner/pass-wide.ts";

export type { ServiceOutcome } from "./judge.ts";

interface PassOptions {
  config: Config;
  /** Where log lines are echoed: the command's stdout. */
  echo?: (line: string) => void;
  /** tend's time, set by a caller (tests): one frame, no clock steps. Else read from `clock`. */
  now?: () => number;
  /** The host's clocks (default): tend's time follows a wall-clock step once (core/clock.ts). */
  clock?: ClockSource;
  sleep?: (ms: number) => Promise<void>;
  uptime?: () => number;
  env?: Record<string, string | undefined>;
  /** The period this pass runs at (`run --interval`); default [watchdog] interval. Recorded in the heartbeat. */
  intervalMs?: number;
  /** Run by `watchdog run`, which holds the loop lock (a pass from elsewhere yields to it). */
  inLoop?: boolean;
  /** stdout is the installed line's cron.log: echo only what could not reach the log (never every event twice). */
  stdoutIsLog?: boolean;
  /** The pass lock is free again (every service judged or claimed by its verification): the next pass may run. */
  released?: () => void;
  /**
   * A service's judgement ended (its restart's verification with it), its state written: the loop reads
   * it again. Given the state it saved last, when it saved one (the loop then need not read it back).
   */
  settled?: (name: string, saved?: ServiceState) => void;
  /** A service this pass left to the owner that held it (the loop looks at it again: core/schedule.ts). */
  leftToOwner?: (name: string) => void;
  /** In the loop: when it last saw each service's process alive (a crash's outage begins there). */
  aliveAt?: (name: string) => number | null;
  /**
   * Fired by SIGTERM/SIGINT (its reason: the signal's name): nothing new begins, what was done is
   * recorded, its notifications spooled for the next pass (none sent now), a verification left to the next pass.
   */
  stop?: AbortSignal;
}

interface PassReport {
  /** false: another pass held the lock (SKIP). */
  ran: boolean;
  services: ServiceOutcome[];
}

/** One pass over every service: probe concurrently, decide, restart and verify, save state. */
export async function runPass(options: PassOptions): Promise<PassReport> {
  const { config, echo = () => {} } = options;
  const passStarted = performance.now(); // {ping}: the pass's duration, on a clock that does not jump
  const { stateDir } = config.watchdog;
  const paths = statePaths(stateDir);
  const source = options.clock ?? (options.now ? nowSource(options.now) : systemClock);
  // Read-only until the lock is held: only a full pass follows a clock step.
  let clock = await tendClock(stateDir, source);
  const now = () => clock.now();
  ensureStateDir(stateDir);
  moveLegacyFiles(
    stateDir,
    config.services.map((service) => service.name),
  );
  const logger = new Logger(config.watchdog.log, echo, now, config.watchdog.rotation, options.stdoutIsLog === true);

  const lockFailed = (error: unknown) => {
    if (error instanceof TendError) throw error;
    throw new TendError(`cannot lock ${paths.lock}: ${inWords(error)}`, 1, "lock-failed");
  };
  // One watcher per state dir: a pass from cron while a loop runs exits at once, silently (the loop watches).
  if (!options.inLoop && (await loopRuns(paths.loopLock).catch(lockFailed))) {
    return { ran: false, services: [] };
  }
  // One pass at a time: another one skips (SKIP). It is held only until every service is judged or
  // claimed by its owner, plus the gap, the heartbeat, metrics and the alerts: a restart's
  // verification holds only its own service's lock (services/NAME.lock), so the next tick judges the others.
  const lock = await takeLock(paths.lock, holderRecord("pass")).catch(lockFailed);
  if (!lock) {
    logger.write("SKIP", "another pass is running: this one exits");
    return { ran: false, services: [] };
  }
  let verifications: Promise<ServiceOutcome[]> | null = null;
  const intervalMs = options.intervalMs ?? config.watchdog.intervalMs;
  let gap: Downtime | null = null;
  try {
    {
      clock = clock.follow(() => latestRecordedIn(stateDir));
      sayClock(clock.frame, logger);
      const settled = clock.frame.settledGap;
      if (settled) {
        const reboot = {
          name: "host",
          reason: "unexpected_shutdown_or_reboot",
          from: settled.fromMs,
          to: settled.toMs,
        };
        logger.write("DOWNTIME", downtimeLine(reboot).message, { downtime: paths.downtime });
      }
    }
    // The boot-time and awake clocks, recorded in the heartbeat: a gap spent asleep is not a missed pass.
    const clocksNow = await clocks();
    gap = findGap(stateDir, intervalMs, now(), clocksNow, clock.frame);
    repairAfterCut(config, gap !== null, logger);
    // The journal of observations, grown past its size: each state it holds written whole, then emptied.
    await compactObservations(
      stateDir,
      config.services.map((service) => service.name),
      "pass",
    );
    const gapEvents: Message[] = [];
    // Said already by a pass that found the same gap and did not finish: its services are judged
    // after it all the same, but its DOWNTIME line and 💤 are not said twice.
    // A reboot found while the clock reads 1970 (a phone before network time): how long the host was
    // down is not known until the clock is set. The 🔌 goes now; the DOWNTIME line when the clock steps.
    const owed = gap?.name === "host" && clock.frame.behindMs !== null && clock.frame.owedGap !== null;
    if (gap && readHeartbeat(stateDir)?.gapSaidFrom !== Math.round(gap.from)) {
      // The host was down, or the watchdog did not run (💤: the failure nobody sees).
      const line: LogLine = {
        ...downtimeLine(gap),
        ...(gapEventOf(gap.name) === "gap" ? { event: "gap" as const } : {}),
      };
      if (owed)
        logger.write(
          "WARN",
          `host rebooted, down since ${utcStamp(new Date(gap.from))} UTC: how long is said when the clock is set`,
        );
      else logger.write(line.tag, line.message, { downtime: paths.downtime });
      markGapSaid(stateDir, gap.from);
      const message = eventMessage("watchdog", line, new Date(now()));
      if (message) gapEvents.push({ ...message, key: gapKey(gap) });
    }
    const uptime = options.uptime ?? uptimeClock(now);
    const monotonic = () => source.monotonic();
    const context = { ...options, echo, now, uptime, gap, logger, monotonic, sendsAtClaim: true };
    // Every service is due at a tick (the one scheduler: core/schedule.ts); the loop's between ticks.
    const judging = judgeServices(config, dueInPass(config.services), context);
    const services = await judging.judged;
    verifications = judging.done;
    const stopped = options.stop?.aborted === true;
    if (gap && gapEventOf(gap.name) === "reboot")
      gapEvents.push({ ...rebootMessage(gap, services, new Date(now()), owed), key: gapKey(gap, "reboot") });
    if (stopped) {
      // What it did is said by the next pass: spooled now, delivered then (a receiver may take seconds).
      // What cannot be spooled (a full disk) is sent now, in the seconds it has left.
      const events = [...gapEvents, ...services.flatMap((service) => service.events)];
      const unspooled = await spoolEvents(config, events, logger, now);
      if (unspooled.length) await sendEvents(config, unspooled, logger, now);
    } else {
      const events = [...gapEvents, ...services.flatMap((service) => service.events)];
      await publishEvents(config, events, logger, now);
      // Every pass keeps the output files tend made under log_max_size (copy, then truncate in place).
      for (const service of config.services) {
        const output = ownOutputOf(service);
        try {
          if (output) rotateInPlace(output, config.watchdog.rotation);
        } catch (error) {
          if (!isFullDisk(error)) throw error;
          logger.write("ERROR", `cannot rotate ${output}: ${inWords(error)}`);
        }
      }
    }
    {
      const passAt = now();
      // Alertmanager's alerts and the metrics file (only the file when stopped: no time for a receiver).
      await updatePassWideViews(config, { logger, now, intervalMs, gap, passAt, offline: stopped });
      try {
        writeHeartbeat(stateDir, passAt, intervalMs, clocksNow, recordOf(clock.frame, passAt, clock.reading));
      } catch (error) {
        // The disk is full: the pass judged and restarted all the same (states kept: state/spill.ts).
        if (!isFullDisk(error)) throw error;
        logger.write("ERROR", `cannot write the heartbeat in ${stateDir}: ${inWords(error)} (the pass ran)`);
      }
    }
  } catch (error) {
    // A full or read-only disk is the operator's to fix: say so plainly, exit 1, never a stack trace.
    const { code, path } = error as NodeJS.ErrnoException;
    if (error instanceof TendError || !code) throw error;
    const where = path ? `${path}: ` : "";
    throw new TendError(`cannot write to the state dir ${stateDir}: ${where}${inWords(error)}`, 1, "state-dir");
  } finally {
    lock?.release();
    options.released?.();
  }
  // The restarts this pass made are verified holding only their services' locks: their outcomes
  // (RECOVERED, FAILED) and notifications come after the pass lock is free for the next tick.
  const finished = await verifications!;
  const verified = finished.filter((outcome) => outcome.claimed);
  // What the pass sent with its own already (the decision's lines) is not sent again.
  const verifiedEvents = verified.flatMap((outcome) => outcome.events.slice(outcome.eventsAtClaim ?? 0));
  if (options.stop?.aborted) {
    const unspooled = await spoolEvents(config, verifiedEvents, logger, now);
    if (unspooled.length) await sendEvents(config, unspooled, logger, now);
    const left = finished.filter((outcome) => outcome.decision.next.restarting).map((outcome) => outcome.name);
    const leaving = left.length ? `; left to the next pass: ${left.join(", ")}` : "";
    logger.write("WARN", `the pass was stopped by ${String(options.stop.reason)}: what it did is recorded${leaving}`);
  } else {
    // A verification's end is an outcome too: the pass-wide views (Alertmanager, metrics_file) are brought
    // up to date before this process exits, never left one pass behind; the heartbeat is pinged once, last,
    // with what every service ended at.
    if (verified.length) await publishEvents(config, verifiedEvents, logger, now);
    const pingMs = performance.now() - passStarted;
    await updatePassWideViews(config, { logger, now, intervalMs, gap, ping: { pingMs }, views: verified.length > 0 });
  }
  return { ran: true, services: finished };
}

type PassContext = Omit<JudgeOptions, "failingDependencies" | "publish" | "sleep" | "verifying" | "owner"> & {
  sleep?: JudgeOptions["sleep"];
  /** Where the pass's lines go: each service's owner writes its own through it. */
  logger: Logger;
  /** Who judges: recorded in each service's lock it holds (the words of whoever finds it held). */
  holder?: Holder;
  settled?: (name: string, saved?: ServiceState) => void;
  leftToOwner?: (name: string) => void;
  /** The caller sends what a verified service's outcome held when it was claimed (the pass): not spooled here. */
  sendsAtClaim?: boolean;
};

/**
 * Judge these services, at most `concurrency` at once, each holding its own lock (services/NAME.lock)
 * through its judgement, restart and verification; one whose lock another owner holds is left to
 * it this time (no SKIP: the owner records the outcome). A dependency is judged before its
 * dependents. `judged`: every service judged, or claimed by its restart's verification (its
 * outcome so far); `done`: the verifications ended too.
 */
export function judgeServices(
  config: Config,
  chosen: ServiceConfig[],
  context: PassContext,
): { judged: Promise<ServiceOutcome[]>; done: Promise<ServiceOutcome[]> } {
  // Bounded by the descriptors this process has left (`ulimit -n 64` with concurrency 100: EMFILE
  // would otherwise fail healthy services by the dozen).
  const limit = limiter(fittingConcurrency(config.watchdog.concurrency));
  const { stateDir } = config.watchdog;
  const read = stateReader(stateDir);
  // Each service says whether its dependents wait on it as soon as it is decided; one not judged
  // here (a partial pass) as it was recorded.
  const board = new DependencyBoard(
    chosen.map((service) => service.name),
    (name) => {
      const state = read(name);
      return blocksDependents(state.verdict, state.lastProbe);
    },
  );
  const recorded = (name: string) => board.sayFrom(name, read(name));
  const claims: Promise<ServiceOutcome>[] = [];
  const outcomes = chosen.map((service) => {
    let claim!: (outcome: ServiceOutcome) => void;
    claims.push(new Promise((resolve) => (claim = resolve)));
    const outcome = (async (): Promise<ServiceOutcome> => {
      const failingDependencies = await board.failingFor(service);
      const say = (decided: ServiceState) => board.sayFrom(service.name, decided);
      return limit(async () => {
        // Stopped (SIGTERM/SIGINT): nothing new begins.
        if (context.stop?.aborted) return (recorded(service.name), leftAsRecorded(service.name, read(service.name)));
        let saved: ServiceState | undefined;
        const owning = { logger: context.logger, now: context.now, saved: (state: ServiceState) => (saved = state) };
        const owner = await ServiceOwner.take(config, service.name, context.holder ?? "pass", owning);
        // Its owner (a verification, an operator, the crash watch) records what happens to it.
        if (!owner) {
          context.leftToOwner?.(service.name);
          return (recorded(service.name), leftAsRecorded(service.name, read(service.name)));
        }
        try {
          const outcome = await judgeService(service, {
            ...context,
            owner,
            sleep: context.sleep ?? Bun.sleep,
            failingDependencies,
            publish: say,
            verifying: claim,
          });
          return await spooledBeforeRelease(config, outcome, context);
        } catch (error) {
          board.say(service.name, true); // not judged: its dependents are not restarted on its account
          saved = undefined; // the state is what notJudgedOutcome writes, or the one before: read it back
          return notJudgedOutcome(owner, error, context);
        } finally {
          owner.release();
          context.settled?.(service.name, saved);
        }
      });
    })();
    return outcome;
  });
  // Judged when claimed by a verification or ended (a judgement that failed outright fails the pass).
  const judged = Promise.all(outcomes.map((outcome, index) => Promise.race([claims[index], outcome])));
  const done = Promise.all(outcomes);
  done.catch(() => {}); // said through `judged` when it fails before any claim
  return { judged, done };
}

/**
 * A verification's outcome (✅, 🚨) is spooled before its service's lock is let go: the next owner's
 * messages then queue behind it. Sent after every verification of the pass had ended, an operator's
 * restart in between (its ⚠️ and ✅ sent at once) overtook it: a ✅ with no ⚠️ before it (ground truth,
 * seed 391). Returned without what was spooled; the caller's delivery sends the spool first. (Stopped:
 * the caller spools it all.)
 */
async function spooledBeforeRelease(
  config: Config,
  outcome: ServiceOutcome,
  context: PassContext,
): Promise<ServiceOutcome> {
  if (!outcome.claimed || context.stop?.aborted) return outcome;
  const from = context.sendsAtClaim ? (outcome.eventsAtClaim ?? 0) : 0;
  const unspooled = await spoolEvents(config, outcome.events.slice(from), context.logger, context.now);
  return { ...outcome, events: [...outcome.events.slice(0, from), ...unspooled] };
}

/** The service could not be judged this time: it keeps its last state, and says why (status, the page, metrics). */
function notJudgedOutcome(owner: ServiceOwner, error: unknown, context: PassContext): ServiceOutcome {
  const { name } = owner;
  const message = (error as Error).message;
  context.logger.write("ERROR", `${name}: ${message}`);
  const last = owner.load({ repair: false }).state; // as judgeService left it: never a symlink moved
  const next = { ...last, verdict: notJudged(last.verdict, oneLine(message), context.now()) };
  if (!isTendError(error, "symlink")) {
    try {
      owner.save(next);
    } catch {} // the ERROR line is what can be said
  }
  return { name, decision: { kind: "skip", reason: "error", until: null, next, log: [] }, probe: null, events: [] };
}

/**
 * A wall-clock step, said once (the pass that followed it): never a reboot, an outage or a stale
 * watchdog. A new boot whose clock reads before the last pass: tend's time goes on from there.
 */
function sayClock(frame: Frame, logger: Logger): void {
  if (frame.steppedMs !== null) {
    const moved = frame.steps.at(-1)!.byMs;
    const held =
      Math.abs(moved - frame.steppedMs) > 1000 ? ` (times kept after the last boot's: moved ${stepWords(moved)})` : "";
    logger.write(
      "WARN",
      `the clock stepped ${stepWords(frame.steppedMs)}: tend's intervals and durations are unaffected${held}`,
    );
  }
  if (frame.behindMs !== null) {
    logger.write(
      "WARN",
      `the clock reads ${utcStamp(new Date(frame.nowMs - frame.behindMs))} UTC, before the last pass ` +
        `(${utcStamp(new Date(frame.nowMs))} UTC): times go on from the last pass until the clock is set`,
    );
  }
}

/**
 * What an interrupted run or a power cut left: temp files of cut-off writes (every pass: cheap, a
 * readdir), and NUL runs at the end of the logs (after a gap: a cut leaves one). Said once.
 */
function repairAfterCut(config: Config, afterGap: boolean, logger: Logger): void {
  const { stateDir } = config.watchdog;
  const said: string[] = [];
  const temps = removeStaleTemps(stateDir);
  if (temps) said.push(`removed ${temps} temp file(s) an interrupted write left`);
  if (afterGap) {
    for (const log of [config.watchdog.log, statePaths(stateDir).downtime]) {
      try {
        const nuls = removeNulRuns(log);
        if (nuls) said.push(`removed ${nuls} NUL byte(s) a power cut left at the end of ${log}`);
      } catch (error) {
        said.push(`could not repair ${log}: ${inWords(error)}`);
      }
    }
  }
  if (said.length) logger.write("WARN", `repaired: ${said.join("; ")}`);
}

/** A gap's messages keyed by the gap (its start): a pass that finds it again sends the same message, kept once. */
const gapKey = (gap: Downtime, what = "gap") => messageKey(what, Math.round(gap.from));

/**
 * After a reboot, one 🔌 for the whole pass (not a ⚠️ per service): how long the host was down, as the
 * DOWNTIME line says, and what was started. A service whose start then fails says so on its own (🚨).
 */
function rebootMessage(gap: Downtime, services: ServiceOutcome[], at: Date, clockUnset: boolean): Message {
  const started = services
    .filter(({ decision }) => decision.kind === "restart" && decision.reason === "boot")
    .map(({ name }) => name);
  const down = clockUnset
    ? `host rebooted, down since ${utcStamp(new Date(gap.from))} UTC (how long: said when the clock is set)`
    : `host was down ${humanDuration(gap.to - gap.from)} (reboot)`;
  const message = started.length ? `${down}; started ${started.join(", ")}` : `${down}; every service was running`;
  return eventMessage("host", { tag: "START", event: "reboot", message }, at)!;
}
