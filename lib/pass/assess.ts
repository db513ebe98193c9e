import { probe, type ProbeResult } from "../checks/index.ts";
import type { ServiceConfig } from "../config/types.ts";
import { decide, type Facts, type Step } from "../core/decide.ts";
import type { Downtime } from "../core/events.ts";
import type { ServiceState } from "../core/state.ts";
import { blocksDependents } from "../core/verdict.ts";
import { busyEvidence } from "../os/busy.ts";
import { mainProcess, probeContext, UNIT_PROPERTIES, type MainProcess, type UnitShown } from "../os/pidsource.ts";
import { treeRss } from "../os/rss.ts";
import { showUnit } from "../os/systemd.ts";
import { restartKind, serviceUnit } from "../restarts/index.ts";
import type { Logger } from "../state/logger.ts";
import { STOPPED, untilStopped } from "./stopping.ts";
import { waitReason } from "./wait.ts";

/**
 * One service assessed now, as the pass does it and as `status` does it (the one rule, written once):
 * the facts before a probe, the pure decision, the probe when the decision needs one, the facts a
 * failure adds (busy, a failing dependency, DNS), and the decision again with the answer. It writes
 * nothing: the pass acts on the step and records it; status shows it.
 */
interface Assessment {
  facts: Facts;
  main: MainProcess | null;
  /** A Decision whenever the probe was made; `probe` only when none was needed and none could be made. */
  step: Step;
  result: ProbeResult | null;
}

export interface AssessOptions {
  now: () => number;
  uptimeMs: number;
  bootDelayMs: number;
  /** A heartbeat gap (a reboot) found before this assessment. */
  gap: Downtime | null;
  /** Where a unit that cannot be read is said (null: status, which writes nothing). */
  logger: Logger | null;
  /** Its dependencies that fail now (the dependency board's answer). */
  failingDependencies: string[];
  /** When the loop last saw its process alive (a crash's outage begins there). */
  aliveAt?: number | null;
  /** A probe in flight is dropped when this fires (SIGTERM/SIGINT): STOPPED. */
  stop?: AbortSignal;
}

export async function assess(
  service: ServiceConfig,
  state: ServiceState,
  options: AssessOptions,
): Promise<Assessment | typeof STOPPED> {
  const { facts, main } = await gatherFacts(service, state, options);
  facts.aliveAt = options.aliveAt ?? null;
  const step = decide(service, state, facts, null);
  if (step.kind !== "probe") return { facts, main, step, result: null };
  const answer = await untilStopped(probe(service.check, probeContext(main)), options.stop);
  // Stopped meanwhile: its check was killed, so the answer says nothing of the service.
  if (answer === STOPPED) return STOPPED;
  facts.now = options.now();
  if (!answer.ok) await addFailureFacts(service, facts, options.failingDependencies);
  return { facts, main, step: decide(service, state, facts, answer), result: answer };
}

/** What the pass knows about a service before probing it: its process, its unit, its RSS, a stop on purpose. */
async function gatherFacts(
  service: ServiceConfig,
  state: ServiceState,
  { now, uptimeMs, bootDelayMs, gap, logger }: AssessOptions,
): Promise<{ facts: Facts; main: MainProcess | null }> {
  const unit = await readUnit(service, logger);
  const main = await mainProcess(service, state, unit?.shown);
  const rss = service.memory && main?.info ? treeRss(main.info.pid) : null;
  const facts: Facts = {
    now: now(),
    uptimeMs,
    bootDelayMs,
    process: main && {
      running: main.running,
      startedAt: main.startedAt,
      detail: main.detail,
      supervised: main.supervised,
      unreadable: main.unreadable,
      hidden: main.hidden && service.restart !== null && restartKind(service.restart).stopsTheProcess === true,
    },
    waitReason: null,
    unit: unit && !(unit.shown instanceof Error) ? unitFacts(unit.name, unit.shown) : null,
    rssBytes: rss,
    degraded:
      rss === null && service.memory && main?.info
        ? [`memory: RSS of pid ${main.info.pid} cannot be read (/proc/${main.info.pid}/status): not sampled`]
        : [],
    stopped: service.restart ? (restartKind(service.restart).stoppedOnPurpose?.(service.restart) ?? null) : null,
    gap,
  };
  return { facts, main };
}

/** After a failed probe: is the service busy, and can a restart help (dependencies, DNS)? */
async function addFailureFacts(service: ServiceConfig, facts: Facts, failingDependencies: string[]) {
  facts.busy = service.busy ? busyEvidence(service.busy, facts.now) : null;
  if (facts.busy?.degraded) facts.degraded = [...(facts.degraded ?? []), facts.busy.degraded];
  facts.waitReason = await waitReason(service, failingDependencies);
}

/** One `systemctl show` per pass for the service's unit (`unit` or `restart.systemd`): pid source and facts. */
async function readUnit(
  service: ServiceConfig,
  logger: Logger | null,
): Promise<{ name: string; shown: UnitShown } | null> {
  const name = serviceUnit(service);
  if (!name) return null;
  const shown = await showUnit(name, UNIT_PROPERTIES).catch((error: Error) => error);
  if (shown instanceof Error)
    logger?.write("ERROR", `${service.name}: cannot read ${name} from systemd: ${shown.message}`);
  return { name, shown };
}

const unitFacts = (
  name: string,
  { ActiveState, NRestarts, Result, Restart }: Record<string, string>,
): Facts["unit"] => ({
  name,
  activeState: ActiveState ?? "unknown",
  result: Result || null,
  restart: Restart || null,
  nRestarts: NRestarts === undefined || NRestarts === "" ? null : Number(NRestarts),
});

/**
 * Dependencies first: each service assessed in a round says whether its dependents wait on it as soon
 * as it is decided (the table's column, core/verdict.ts); a dependent asks before it is assessed. A
 * dependency outside the round is answered by `outside` (the pass: as recorded; status and blogtunnel:
 * assessed now). The pass and status both use it: the dependency rule is written here once.
 */
export class DependencyBoard {
  private readonly said = new Map<string, PromiseWithResolvers<boolean>>();

  constructor(
    round: string[],
    private readonly outside: (name: string) => Promise<boolean> | boolean,
  ) {
    for (const name of round) this.said.set(name, Promise.withResolvers<boolean>());
  }

  /** This one of the round was decided: its dependents wait on it, or go. Said once; later calls are ignored. */
  say(name: string, blocks: boolean): void {
    this.said.get(name)?.resolve(blocks);
  }

  /** Say it from what was decided (or recorded): the step's next state, or the state as it stands. */
  sayFrom(name: string, state: ServiceState): void {
    this.say(name, blocksDependents(state.verdict, state.lastProbe));
  }

  /** The dependencies of this service that its failures are attributed to now, in its depends_on order. */
  async failingFor(service: ServiceConfig): Promise<string[]> {
    const failing: string[] = [];
    for (const dependency of service.dependsOn) {
      const said = this.said.get(dependency);
      if (await (said ? said.promise : this.outside(dependency))) failing.push(dependency);
    }
    return failing;
  }
}

/**
 * Do its dependents wait on this service now: assessed as a pass would (its own dependencies not
 * asked: only whether it is decided failing matters here). For what a round does not assess itself
 * (status of one service, blogtunnel --depends-on). Writes nothing.
 */
export async function blocksNow(
  service: ServiceConfig,
  state: ServiceState,
  options: Omit<AssessOptions, "failingDependencies" | "logger">,
): Promise<boolean> {
  const assessed = await assess(service, state, { ...options, failingDependencies: [], logger: null });
  if (assessed === STOPPED || assessed.step.kind === "probe") return blocksDependents(state.verdict, state.lastProbe);
  return blocksDependents(assessed.step.next.verdict, assessed.step.next.lastProbe);
}
