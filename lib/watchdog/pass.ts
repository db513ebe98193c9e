import { lookup } from "node:dns/promises";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Config, ServiceConfig } from "../config/types.ts";
import { gate, judge, observe, recordRestart, type Decision, type Facts, type LogLine } from "../core/decide.ts";
import { busyEvidence } from "../os/busy.ts";
import { treeRss } from "../core/memory.ts";
import { renderMetrics } from "./metrics.ts";
import { showUnit } from "../os/systemd.ts";
import { humanDuration } from "../core/duration.ts";
import { TendError } from "../core/errors.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { tryLock } from "../os/lock.ts";
import { Logger, utcStamp } from "../state/logger.ts";
import { mainProcess, UNIT_PROPERTIES, type MainProcess, type UnitShown } from "../os/pidsource.ts";
import { describeCheck, probe, type ProbeResult } from "../checks/index.ts";
import { uptimeMs } from "../os/proc.ts";
import { eventMessage, pingHeartbeat, sendEvents } from "../notify/alert.ts";
import type { Message } from "../notify/send.ts";
import { redactUrl } from "../core/redact.ts";
import { describeRestart, restartService, serviceUnit } from "../restarts/index.ts";
import { ensureStateDir, freshState, readState, refuseSymlink, stateFile, writeState, type ServiceState } from "../state/service.ts";

export interface PassOptions {
  config: Config;
  /** Probe and decide, change nothing. */
  dryRun?: boolean;
  /** Where log lines (and dry-run decisions) are echoed: the command's stdout. */
  echo?: (line: string) => void;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  uptime?: () => number;
  env?: Record<string, string | undefined>;
}

export interface ServiceOutcome {
  name: string;
  decision: Decision;
  probe: ProbeResult | null;
  /** Notifications this service's lines asked for */
  events: Message[];
}

export interface PassReport {
  /** false: another pass held the lock (SKIP). */
  ran: boolean;
  services: ServiceOutcome[];
}

export const lockFile = (stateDir: string) => join(stateDir, "watchdog.lock");
export const heartbeatFile = (stateDir: string) => join(stateDir, "heartbeat");
export const downtimeFile = (stateDir: string) => join(stateDir, "downtime.log");

/** One pass over every service: probe concurrently, decide, restart and verify, save state. */
export async function runPass(options: PassOptions): Promise<PassReport> {
  const { config, dryRun = false, echo = () => {}, now = Date.now } = options;
  const { stateDir } = config.watchdog;
  if (!dryRun) ensureStateDir(stateDir);
  const logger = new Logger(dryRun ? null : config.watchdog.log, echo, now);

  const lock = dryRun ? null : await tryLock(lockFile(stateDir)).catch((error) => {
    throw new TendError(`cannot lock ${lockFile(stateDir)}: ${(error as Error).message}`, 1);
  });
  if (!dryRun && !lock) {
    logger.write("SKIP", "another pass is running: this one exits");
    return { ran: false, services: [] };
  }
  try {
    if (!dryRun) recordRebootGap(config, logger, now());
    const services = await judgeAll(config, options, logger);
    if (!dryRun) {
      await sendEvents(config, services.flatMap((service) => service.events), logger);
      const anyDown = services.some((service) => service.decision.kind !== "skip" && service.decision.next.outage !== null);
      await pingHeartbeat(config, anyDown, logger);
      const passAt = now();
      if (config.watchdog.metricsFile) writeMetrics(config.watchdog.metricsFile, services, passAt, logger);
      writeFileAtomic(heartbeatFile(stateDir), new Date(passAt).toISOString() + "\n");
    }
    return { ran: true, services };
  } catch (error) {
    // A full or read-only disk is the operator's to fix: say so plainly, exit 1, never a stack trace.
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof TendError || !code) throw error;
    throw new TendError(`cannot write to the state dir ${stateDir}: ${code === "ENOSPC" ? "no space left on the device" : code} (${(error as Error).message})`, 1);
  } finally {
    lock?.release();
  }
}

function writeMetrics(path: string, services: ServiceOutcome[], passAt: number, logger: Logger) {
  try {
    writeFileAtomic(path, renderMetrics(services.map(({ name, decision }) => ({ name, state: decision.next })), passAt), 0o644);
  } catch (error) {
    logger.write("ERROR", `cannot write metrics_file ${path}: ${(error as Error).message}`);
  }
}

/** A heartbeat older than 2 x interval means the host (or tend) was down in between. */
function recordRebootGap(config: Config, logger: Logger, now: number) {
  let last: number;
  try {
    last = statSync(heartbeatFile(config.watchdog.stateDir)).mtimeMs;
  } catch {
    return;
  }
  if (now - last <= 2 * config.watchdog.intervalMs) return;
  const seconds = Math.round((now - last) / 1000);
  const message = `host was unavailable for ${seconds}s (unexpected_shutdown_or_reboot, from ${utcStamp(new Date(last))} UTC to ${utcStamp(new Date(now))} UTC)`;
  logger.write("DOWNTIME", message, downtimeFile(config.watchdog.stateDir));
}

/** Semaphore: at most `limit` services probe (and restart) at once. */
function limiter(limit: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

async function judgeAll(config: Config, options: PassOptions, logger: Logger): Promise<ServiceOutcome[]> {
  const limit = limiter(config.watchdog.concurrency);
  // Each service publishes whether it is failing as soon as it is judged, so dependents can wait on it.
  const failing = new Map<string, Promise<boolean>>();
  const publish = new Map<string, (value: boolean) => void>();
  for (const service of config.services) failing.set(service.name, new Promise((resolve) => publish.set(service.name, resolve)));

  return Promise.all(
    config.services.map(async (service) => {
      const failingDependencies: string[] = [];
      for (const dependency of service.dependsOn) if (await failing.get(dependency)) failingDependencies.push(dependency);
      try {
        return await limit(() => judgeService(service, config, options, logger, failingDependencies, (value) => publish.get(service.name)!(value)));
      } catch (error) {
        publish.get(service.name)!(true);
        logger.write("ERROR", `${service.name}: ${(error as Error).message}`);
        return { name: service.name, decision: { kind: "skip", reason: "error", next: freshState(), log: [] }, probe: null, events: [] } as ServiceOutcome;
      }
    }),
  );
}

async function judgeService(
  service: ServiceConfig,
  config: Config,
  options: PassOptions,
  logger: Logger,
  failingDependencies: string[],
  publish: (failing: boolean) => void,
): Promise<ServiceOutcome> {
  const { dryRun = false, echo = () => {}, now = Date.now, uptime = uptimeMs } = options;
  const { stateDir } = config.watchdog;
  refuseSymlink(stateFile(stateDir, service.name));
  const loaded = readState(stateDir, service.name);
  let state = loaded.state;
  if (!dryRun && loaded.problem === "missing") logger.write("START", `watching ${service.name} (${describeCheck(service)})`);
  else if (!dryRun && loaded.problem) logger.write("ERROR", `${service.name}: corrupt state file reset (${loaded.problem})`);

  const unit = await readUnit(service, logger);
  const main = await mainProcess(service, state, unit?.shown);
  const facts: Facts = {
    now: now(),
    uptimeMs: uptime(),
    bootDelayMs: config.watchdog.bootDelayMs,
    process: main && { running: main.running, startedAt: main.startedAt, detail: main.detail, supervised: main.supervised },
    waitReason: null,
    unit: unit && !(unit.shown instanceof Error) ? unitFacts(unit.name, unit.shown) : null,
    rssBytes: service.memory && main?.info ? treeRss(main.info.pid) : null,
  };
  const observed = observe(service, state, facts);
  let decision = gate(service, observed.next, facts);
  let result: ProbeResult | null = null;
  if (!decision) {
    result = await probe(service.check, { process: main?.info });
    facts.now = now();
    if (!result.ok) {
      facts.busy = service.busy ? busyEvidence(service.busy, facts.now) : null;
      facts.waitReason = await waitReason(service, failingDependencies);
    }
    decision = judge(service, observed.next, result, facts);
  }
  decision = { ...decision, log: [...observed.log, ...decision.log] };
  publish(decision.kind === "skip" ? state.lastProbe?.ok === false : decision.kind !== "ok");

  if (dryRun) {
    const would = decision.kind === "restart" || decision.kind === "crash" ? ` -> would ${describeRestart(service.restart!)}` : "";
    echo(`${service.name}: ${decision.kind} (${result ? `${result.detail} in ${result.latencyMs}ms; ` : ""}${decision.reason})${would}`);
    return { name: service.name, decision, probe: result, events: [] };
  }

  const events: Message[] = [];
  state = emit(logger, stateDir, service.name, decision.next, decision.log, events);
  writeState(stateDir, service.name, state);
  if (decision.kind === "restart" || decision.kind === "crash") {
    const restarted = await restartAndVerify(service, state, main, options, logger);
    state = emit(logger, stateDir, service.name, restarted.next, restarted.log, events);
    writeState(stateDir, service.name, state);
    decision = { ...decision, next: state };
  }
  return { name: service.name, decision, probe: result, events };
}

/** Log lines (DOWNTIME lines to downtime.log); the last watchdog.log line becomes the service's last event; notifications are collected. */
function emit(logger: Logger, stateDir: string, name: string, state: ServiceState, lines: LogLine[], events: Message[]): ServiceState {
  let next = state;
  for (const line of lines) {
    if (line.downtime) logger.write(line.tag, line.message, downtimeFile(stateDir));
    else logger.write(line.tag, line.message);
    const at = logger.entries.at(-1)!.at;
    if (!line.downtime) next = { ...next, lastEvent: { at: at.getTime(), tag: line.tag, message: line.message } }; // RECOVERED says more than its DOWNTIME line
    const message = eventMessage(name, line, at);
    if (message) events.push(message);
  }
  return next;
}

async function restartAndVerify(service: ServiceConfig, state: ServiceState, main: MainProcess | null, options: PassOptions, logger: Logger): Promise<Decision> {
  const { now = Date.now, sleep = Bun.sleep } = options;
  const startedAt = now();
  const restart = await restartService(service, main, { sleep, env: options.env });
  let next = state;
  if (restart.pid) next = { ...next, pid: restart.pid, pidStartTicks: restart.pidStartTicks ?? null };
  if (!restart.issued) {
    return recordRestart(service, next, { issued: false, recovered: false, elapsedMs: 0, detail: restart.detail, lastProbe: null }, startedAt, now());
  }
  logger.write("RESTART", `${service.name}: ${restart.detail}`);

  // Verify: probe every second until healthy or verify_timeout; a process that exits meanwhile has failed.
  const deadline = startedAt + service.verifyTimeoutMs;
  let last: ProbeResult | null = null;
  let detail = "";
  while (true) {
    const current = await mainProcess(service, next);
    if (current && !current.running && last) {
      detail = `exited during start: ${current.detail}`;
      break;
    }
    const attemptAt = now();
    last = await probe(service.check, { process: current?.info });
    if (last.ok) {
      return recordRestart(service, next, { issued: true, recovered: true, elapsedMs: now() - startedAt, detail: last.detail, lastProbe: last }, startedAt, now());
    }
    detail = `last probe: ${last.detail}`;
    if (now() >= deadline) break;
    await sleep(Math.max(0, Math.min(1000 - (now() - attemptAt), deadline - now())));
  }
  return recordRestart(service, next, { issued: true, recovered: false, elapsedMs: now() - startedAt, detail, lastProbe: last }, startedAt, now());
}

/** One `systemctl show` per pass for the service's unit (`unit` or `restart.systemd`): pid source and facts. */
async function readUnit(service: ServiceConfig, logger: Logger): Promise<{ name: string; shown: UnitShown } | null> {
  const name = serviceUnit(service);
  if (!name) return null;
  const shown = await showUnit(name, UNIT_PROPERTIES).catch((error: Error) => error);
  if (shown instanceof Error) logger.write("ERROR", `${service.name}: cannot read ${name} from systemd: ${shown.message}`);
  return { name, shown };
}

const unitFacts = (name: string, { ActiveState, NRestarts }: Record<string, string>): Facts["unit"] => ({
  name,
  activeState: ActiveState ?? "unknown",
  nRestarts: NRestarts === undefined || NRestarts === "" ? null : Number(NRestarts),
});

/** A failing dependency or an unresolvable required name: a restart cannot help. */
async function waitReason(service: ServiceConfig, failingDependencies: string[]): Promise<string | null> {
  if (failingDependencies.length) return `dependency ${failingDependencies.join(", ")} is failing`;
  if (service.requiresDns) {
    const resolved = await Promise.race([
      lookup(service.requiresDns).then(() => true, () => false),
      Bun.sleep(service.timeoutMs).then(() => false),
    ]);
    if (!resolved) return `${service.requiresDns} does not resolve (network down?)`;
  }
  return null;
}

export function readHeartbeat(stateDir: string): string | null {
  try {
    return readFileSync(heartbeatFile(stateDir), "utf8").trim() || null;
  } catch {
    return null;
  }
}
