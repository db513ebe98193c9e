import { statSync } from "node:fs";
import { describeCheck, type ProbeResult } from "../checks/index.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { type Decision, type LogLine, type RestartReason } from "../core/decide.ts";
import type { Downtime } from "../core/events.ts";
import { watchOf } from "../os/pidsource.ts";
import { uptimeMs } from "../os/proc.ts";
import type { Message } from "../notify/send.ts";
import { ownOutputOf } from "../restarts/index.ts";
import { refuseSymlink, statePaths } from "../state/dir.ts";
import { markBeforeAction, markOutput, onlyObservations, type ServiceState } from "../core/state.ts";
import { cutByReboot, finishRestart, restartAndVerify } from "./verify.ts";
import { outOfDescriptors } from "../os/fdlimit.ts";
import { TendError } from "../core/errors.ts";
import { STOPPED } from "./stopping.ts";
import type { ServiceOwner } from "../owner/owner.ts";
import { assess } from "./assess.ts";

/** What a probe's words say when the watchdog itself ran out (EMFILE, ENFILE, ENOMEM in words). */
const OWN_RESOURCE = /too many open files \((?:tend's own|the system's) limit\)|out of memory/;

export interface JudgeOptions {
  config: Config;
  /** Its owner, holding its lock: the only one that records and saves it (lib/owner/). */
  owner: ServiceOwner;
  /** The host's monotonic clock: a restart's verification is timed on it (pass/verify.ts). */
  monotonic?: () => number;
  echo: (line: string) => void;
  /** tend's time, in one frame for the whole judgement and its verification (never one a step moves meanwhile). */
  now: () => number;
  /**
   * The last clock step `now`'s frame has taken, where a step may have been followed since that frame was
   * read (the loop's crash watch): a state loaded having taken another is left for the next look.
   */
  frameStep?: number;
  sleep: (ms: number) => Promise<void>;
  uptime?: () => number;
  env?: Record<string, string | undefined>;
  /** Dependencies of this service that failed in this pass. */
  failingDependencies: string[];
  /** Say as soon as it is decided (or left as recorded): its dependents wait on it or go (DependencyBoard). */
  publish: (decided: ServiceState) => void;
  /** A heartbeat gap this pass found. */
  gap: Downtime | null;
  /** A partial pass judges only these. */
  only?: string[];
  /**
   * A restart's action returned and its verification begins: the service is claimed (its lock held
   * until the outcome is recorded), and the pass may go on without it. Given the outcome so far.
   */
  verifying?: (outcome: ServiceOutcome) => void;
  /** The pass is stopped (SIGTERM/SIGINT): nothing new begins; a probe in flight is dropped (pass/stopping.ts). */
  stop?: AbortSignal;
  /** When the loop last saw this service's process alive (its exit, or its crash watch's last tick). */
  aliveAt?: (name: string) => number | null;
}

export interface ServiceOutcome {
  name: string;
  decision: Decision;
  probe: ProbeResult | null;
  /** Notifications this service's lines asked for */
  events: Message[];
  /** A restart was verified after the service was claimed: its events come after the pass's own. */
  claimed?: boolean;
  /** Of `events`, how many the claimed outcome already held (the pass sent those with its own). */
  eventsAtClaim?: number;
}

/** Gather the facts, decide (probing when the decision needs it), act, and save the state. */
export async function judgeService(service: ServiceConfig, options: JudgeOptions): Promise<ServiceOutcome> {
  const { config, owner, now, uptime = uptimeMs } = options;
  const { logger, events } = owner;
  const loaded = owner.load();
  // A full pass followed a clock step between this frame's reading and the load: the state's times are in
  // the step's frame, this judgement's in the one before. Looked at again (in the new frame) next second.
  if (options.frameStep !== undefined && loaded.problem === null && (loaded.state.clockStep ?? 0) !== options.frameStep)
    return leftAsRecorded(service.name, loaded.state, options);
  // A symlink is refused (never read: O_NOFOLLOW), not reset: the service is not judged.
  if (loaded.problem !== null && loaded.problem !== "missing")
    refuseSymlink(statePaths(config.watchdog.stateDir).service(service.name));
  let state = loaded.state;
  if (loaded.problem === "missing") logger.write("START", `watching ${service.name} (${describeCheck(service)})`);
  else if (loaded.problem) logger.write("ERROR", `${service.name}: corrupt state file reset (${loaded.problem})`);

  // Claimed by its verification from the moment the action returned: the pass goes on without it.
  let claimed: ServiceOutcome | null = null;
  const hooks = owner.restartHooks(() => claimed && options.verifying?.(claimed));
  // A restart recorded but unfinished when the host went down: the reboot ended its story (counted,
  // its ⚠️ sent); the service is judged as after any reboot (a boot start if it is not running).
  if (state.restarting && options.gap?.name === "host") state = await cutByReboot(service, state, owner, hooks);
  // A restart recorded but unfinished (the pass that made it was killed): this pass finishes its story.
  if (state.restarting) {
    const pending = state.restarting;
    const decision: Decision = { kind: "restart", reason: pending.reason as RestartReason, next: state, log: [] };
    claimed = { name: service.name, decision, probe: null, events: [], claimed: true };
    options.publish(state); // a restart being verified: its dependents wait (its word is restarting)
    const verified = await finishRestart(service, state, owner, options, hooks);
    state = owner.record(verified.next, verified.log);
    owner.save(state);
    return { name: service.name, decision: { ...decision, next: state }, probe: null, events, claimed: true };
  }

  const assessed = await assess(service, state, {
    now,
    uptimeMs: uptime(),
    bootDelayMs: config.watchdog.bootDelayMs,
    gap: options.gap,
    logger,
    failingDependencies: options.failingDependencies,
    aliveAt: options.aliveAt?.(service.name) ?? null,
    stop: options.stop,
  });
  if (assessed === STOPPED) return leftAsRecorded(service.name, loaded.state, options);
  const { main, result } = assessed;
  // The watchdog's own resource failure (out of descriptors or memory) says nothing of the
  // service: not a strike, never a restart; the service keeps its state, not judged this time.
  if (result && !result.ok && (OWN_RESOURCE.test(result.detail) || outOfDescriptors())) {
    throw new TendError(
      `cannot probe: ${OWN_RESOURCE.exec(result.detail)?.[0] ?? "too many open files (tend's own limit)"}: ` +
        "the watchdog's failure, not a strike",
      1,
      "own-resource",
    );
  }
  if (result && options.stop?.aborted) return leftAsRecorded(service.name, loaded.state, options);
  let decision = assessed.step as Decision;
  options.publish(decision.next);

  // A counted restart's ⚠️ is owed by the restart itself: spooled the moment its action returns.
  const owed = (line: LogLine) => decision.kind === "restart" && line.event === "restart";
  const decided = {
    ...decision.next,
    watch: watchOf(main),
    outputMarks: markOutput(decision.next.outputMarks, outputBytes(service), now()),
  };
  state = owner.record(decided, decision.log, (line) => !owed(line));
  // A pass that only saw it answer as before records no decision: its observations are appended to the
  // journal (state/observed.ts), or the state written without an fsync (see writeState).
  if (!onlyObservations(loaded.state, state)) owner.save(state);
  else owner.saveObserved(loaded, state);
  if (decision.kind === "restart") {
    // The output file's size just before the action and after its verification: what the new process says
    // while it starts is placed between the two (watchdog incident).
    if (ownOutputOf(service))
      state = { ...state, outputMarks: markBeforeAction(state.outputMarks, outputBytes(service), now()) };
    const [written, reason] = [state, decision.reason];
    const lines = decision.log.filter(owed);
    claimed = { name: service.name, decision, probe: result, events: [...events], claimed: true };
    const verified = await restartAndVerify(service, written, main, owner, options, reason, hooks, lines);
    const looked = {
      ...verified.next,
      outputMarks: markOutput(verified.next.outputMarks, outputBytes(service), now()),
    };
    state = owner.record(looked, verified.log);
    owner.save(state);
    decision = { ...decision, next: state };
    return { name: service.name, decision, probe: result, events, claimed: true, eventsAtClaim: claimed.events.length };
  }
  return { name: service.name, decision, probe: result, events };
}

/** The size of the output file tend made for the service (null: none, or none yet): a stat. */
function outputBytes(service: ServiceConfig): number | null {
  const path = ownOutputOf(service);
  return path ? (statSync(path, { throwIfNoEntry: false })?.size ?? null) : null;
}

/**
 * Not judged this time — another owner holds its lock, or the pass was stopped before its answer
 * was recorded: what was recorded stands, nothing is decided here.
 */
export function leftAsRecorded(
  name: string,
  state: ServiceState,
  options: Pick<JudgeOptions, "publish"> | null = null,
): ServiceOutcome {
  options?.publish(state);
  return {
    name,
    decision: { kind: "skip", reason: "owned", until: null, next: state, log: [] },
    probe: null,
    events: [],
  };
}
