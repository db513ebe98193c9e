/**
 * A service's owner: whoever holds its lock (services/NAME.lock) — a pass, the loop's crash watch,
 * blogtunnel, an operator's restart, stop, start, pause, resume or reset — reads, records and saves
 * the service only through this module, and only while it holds it. What a line in the log becomes
 * (the service's last event, a notification, a DOWNTIME record), how a state is saved (whole and
 * durable, as observations, kept off a full disk, refused where nobody else would see it) and what a
 * counted restart owes on the way (saved before its action, its ⚠️ spooled when the action returns)
 * are written here once (SPEC: "One owner is one module"). Compaction takes every lock at once
 * (state/service-state.ts) and writes back only what the journal already says.
 */
import type { Config } from "../config/types.ts";
import type { LogLine } from "../core/events.ts";
import { TendError } from "../core/errors.ts";
import { humanDuration } from "../core/duration.ts";
import { withEvent, type ServiceState } from "../core/state.ts";
import type { Tag } from "../core/time.ts";
import { eventMessage, spoolOwed } from "../notify/alert.ts";
import type { Message } from "../notify/send.ts";
import { holderRecord, holderWords, readHolder, takeLock, waitLock, type Holder, type Lock } from "../os/lock.ts";
import { statePaths } from "../state/dir.ts";
import type { Logger } from "../state/logger.ts";
import { readState, saveObservations, writeState, type StateLoad } from "../state/service-state.ts";
import { spilled } from "../state/spill.ts";
import { tendClock, tendNow } from "../state/clock.ts";
import { lastStep } from "../core/clock.ts";
import { cutByGap } from "../core/outage-ledger.ts";
import { systemClock, type ClockSource } from "../os/clock.ts";

interface OwnerOptions {
  logger: Logger;
  now: () => number;
  /** Each state this owner saved (whole, as observations, or kept off a full disk): the last is its outcome. */
  saved?: (state: ServiceState) => void;
}

/** What a counted restart does outside the state it returns (pass/verify.ts), given by its owner. */
export interface RestartHooks {
  /** Save the state durably: the restart recorded before its action runs, then that the action returned. */
  persist: (state: ServiceState) => void;
  /** Spool the ⚠️ the restart owes, now that its action returned (what was stopped, what was started). */
  announce: (owed: NonNullable<ServiceState["restarting"]>["owed"], detail: string) => Promise<void>;
  /** The verification begins: the service is claimed by it; whoever waits on its judgement may go on. */
  verifying?: () => void;
}

/**
 * One `now` for a command that owns a service: tend's time before it waits for the lock (its log lines
 * while it waits), then the frame of the state it loads (ServiceOwner.loadInFrame). A test's fixed
 * clock (`fixed`) is used as given, and the state loaded as saved.
 */
export class OwnerClock {
  private current: () => number;
  private constructor(
    first: () => number,
    private readonly source: ClockSource | null,
  ) {
    this.current = first;
  }

  static async of(stateDir: string, options: { clock?: ClockSource; fixed?: () => number } = {}): Promise<OwnerClock> {
    if (options.fixed) return new OwnerClock(options.fixed, null);
    const source = options.clock ?? systemClock;
    return new OwnerClock(await tendNow(stateDir, source), source);
  }

  readonly now = () => this.current();

  /** The service's state, this clock from now on in its frame. */
  async load(owner: ServiceOwner): Promise<StateLoad> {
    if (!this.source) return owner.load();
    const framed = await owner.loadInFrame(this.source);
    this.current = framed.now;
    return framed.loaded;
  }
}

export class ServiceOwner {
  /** The notifications its recorded lines asked for, in order: sent (or spooled) by whoever drives it. */
  readonly events: Message[] = [];
  private wasSpilled: boolean;

  private constructor(
    private readonly config: Config,
    readonly name: string,
    private lock: Lock | null,
    readonly logger: Logger,
    private readonly options: OwnerOptions,
  ) {
    this.wasSpilled = spilled(config.watchdog.stateDir, name) !== null;
  }

  /** Own it now, or null: another owner holds it (it records what happens to the service). */
  static async take(config: Config, name: string, who: Holder, options: OwnerOptions): Promise<ServiceOwner | null> {
    const lock = await takeLock(statePaths(config.watchdog.stateDir).serviceLock(name), holderRecord(who));
    return lock && new ServiceOwner(config, name, lock, options.logger, options);
  }

  /** Own it, waiting up to `waitMs` while its owner judges, restarts or verifies it; null if it stayed held. */
  static async wait(
    config: Config,
    name: string,
    who: Holder,
    options: OwnerOptions & { waitMs: number; sleep?: (ms: number) => Promise<void> },
  ): Promise<ServiceOwner | null> {
    const path = statePaths(config.watchdog.stateDir).serviceLock(name);
    const lock = await waitLock(path, options.waitMs, options.sleep ?? Bun.sleep, who);
    return lock && new ServiceOwner(config, name, lock, options.logger, options);
  }

  /**
   * An operator's hold: waited for up to `waitMs` while its owner judges, restarts or verifies it;
   * then exit 1 naming who holds it. Other services are never waited on.
   */
  static async forOperator(
    config: Config,
    name: string,
    options: OwnerOptions & { waitMs: number; sleep?: (ms: number) => Promise<void> },
  ): Promise<ServiceOwner> {
    const owner = await ServiceOwner.wait(config, name, "operator", options);
    if (owner) return owner;
    const holder = ServiceOwner.heldBy(config, name);
    throw new TendError(
      `${name} is being judged by another (${holder}) for ${humanDuration(options.waitMs)}: try again`,
      1,
    );
  }

  /** Who holds it, in words (its lock's record, read by the one reader). */
  static heldBy(config: Config, name: string): string {
    return holderWords(readHolder(statePaths(config.watchdog.stateDir).serviceLock(name)));
  }

  private get stateDir() {
    return this.config.watchdog.stateDir;
  }

  /**
   * Its state as saved (a spilled copy first), with what was wrong with the file, if anything: a
   * corrupt file is moved aside (NAME.json.corrupt) unless `repair` is false.
   */
  load({ repair = true } = {}): StateLoad {
    return readState(this.stateDir, this.name, { repair });
  }

  /**
   * Its state, and tend's time in the same frame: the clock steps the state has taken are the clock's.
   * A command reads tend's time before it waits for the lock; a pass may follow a wall-clock step
   * meanwhile, and the state it then loads has taken it: an operator's `watchdog stop` during a step
   * recorded its times in the frame before, into a state the step put right moved again (ten minutes
   * ahead, then a reboot's downtime counted from there: ground truth, seed 310). Read again until the two
   * agree (a pass follows a step at most once a run: twice is plenty).
   */
  async loadInFrame(source: ClockSource = systemClock): Promise<{ loaded: StateLoad; now: () => number }> {
    for (let tries = 0; ; tries++) {
      const clock = await tendClock(this.stateDir, source);
      const loaded = this.load();
      if ((loaded.state.clockStep ?? 0) !== lastStep(clock.frame.steps) && tries < 2) continue;
      const service = this.config.services.find((one) => one.name === this.name);
      if (!clock.frame.newBoot || !loaded.state.outage || !service) return { loaded, now: clock.now };
      // The host booted and no pass has run since: an outage open at the power-off ends there, as the
      // pass would end it (measured to its last failed probe, then no data), before a command acts on
      // the service — else a restart's recovery closed it after the boot, the host's downtime counted
      // again in the service's (ground truth, seed 332: a stop did).
      const gap = { name: "host", from: clock.frame.floorMs, to: clock.now(), reason: "unexpected_shutdown_or_reboot" };
      const [cut, line] = cutByGap(service, loaded.state, gap);
      const recorded = this.record(cut, [line], () => false);
      this.save(recorded);
      return { loaded: { state: recorded, problem: loaded.problem, base: null }, now: clock.now };
    }
  }

  /** Say a line of what tend does with it (not the service's event: no last event, no notification). */
  say(tag: Tag, message: string): void {
    this.logger.write(tag, `${this.name}: ${message}`);
  }

  /**
   * Say these lines and record them: each written to the log (a DOWNTIME line to downtime.log too), the
   * last one the service's last event (a DOWNTIME line is not: its RECOVERED says more), and the
   * notification each asks for collected in `events` unless `notify` says it is owed elsewhere.
   */
  record(state: ServiceState, lines: LogLine[], notify: (line: LogLine) => boolean = () => true): ServiceState {
    let next = state;
    const downtime = statePaths(this.stateDir).downtime;
    for (const line of lines) {
      this.logger.write(line.tag, line.message, { downtime: line.downtime ? downtime : undefined, full: line.full });
      // As the log has it: one line, its controls escaped (outside text is hostile).
      const { at, message: said } = this.logger.entries.at(-1)!;
      if (!line.downtime) next = withEvent(next, { at: at.getTime(), tag: line.tag, message: said, event: line.event });
      const message = notify(line) ? eventMessage(this.name, line, at) : null;
      if (message) this.events.push(message);
    }
    return next;
  }

  /**
   * Save it whole (durable unless told: an fsync is what a decision deserves). A full disk never stops
   * a judgement: the state is kept off it (state/spill.ts), said once, and saved again when it can be.
   */
  save(state: ServiceState, durable = true): void {
    this.holding();
    const saved = writeState(this.stateDir, this.name, state, { durable });
    this.options.saved?.(state);
    if (saved.spilledTo && !this.wasSpilled) {
      this.wasSpilled = true;
      this.logger.write(
        "ERROR",
        `${this.name}: cannot save its state (no space left on the device): kept ${saved.spilledTo} ` +
          "until it can be written; it is judged and restarted all the same",
      );
    }
    if (saved.unspilled) {
      const room = saved.inPlace ? "in the blocks its file had: the disk is still full" : "the disk has room again";
      this.logger.write("WARN", `${this.name}: its state is saved again (${room})`);
    }
  }

  /**
   * A pass that only saw it answer as before records no decision: its observations are appended to
   * the journal (state/observed.ts), or the state written without an fsync.
   */
  saveObserved(loaded: StateLoad, state: ServiceState): void {
    this.holding();
    if (this.wasSpilled) return this.save(state, false); // its write takes the copy kept off the full disk back
    saveObservations(this.stateDir, this.name, loaded, state, this.config.services.length);
    this.options.saved?.(state);
  }

  /**
   * Save what an operator did, or refuse it: kept in the operator's own process only (a full disk where
   * there is no /dev/shm, as on Android), a loop would never see it and undo it — a pause said done
   * that is not. Exit 1, nothing changed that anyone else sees.
   */
  saveShared(state: ServiceState, doing: string): void {
    this.holding();
    const saved = writeState(this.stateDir, this.name, state);
    if (saved.shared) return;
    throw new TendError(
      `cannot ${doing}: its state cannot be saved (no space left on the device) and would be kept ` +
        `${saved.spilledTo}, which the watchdog never sees: nothing done; ` +
        `free space in ${this.stateDir}, then try again`,
      1,
    );
  }

  /** What a counted restart it makes owes on the way: saved before its action, its ⚠️ spooled after. */
  restartHooks(verifying?: () => void): RestartHooks {
    return {
      persist: (next) => this.save(next),
      announce: async (owed, detail) => {
        const { config, name, logger, options } = this;
        this.events.push(...(await spoolOwed(config, name, owed, detail, logger, options.now)));
      },
      verifying,
    };
  }

  /** Let it go: the next owner (a pass, the loop, an operator) may take it. */
  release(): void {
    this.lock?.release();
    this.lock = null;
  }

  /** Only an owner saves: one that let it go is no longer one (a mistake in tend, said loudly). */
  private holding(): void {
    if (!this.lock) throw new Error(`${this.name}: saved by an owner that let it go`);
  }
}
