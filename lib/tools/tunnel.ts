import type { HttpCheck } from "../checks/http.ts";
import type { Config } from "../config/types.ts";
import { TendError, usageError } from "../core/errors.ts";
import { blocksNow, DependencyBoard } from "../pass/assess.ts";

import { ensureStateDir } from "../state/dir.ts";
import { stateReader } from "../state/service-state.ts";
import { OwnerClock, ServiceOwner } from "../owner/owner.ts";
import { publishEvents, updatePassWideViews } from "../owner/pass-wide.ts";
import { type TunnelRecord } from "../core/state.ts";
import { tunnelService } from "../config/tunnel.ts";
import { judgeService } from "../pass/judge.ts";
import { readCounter, writeCounter } from "./counter.ts";
import { humanDuration } from "../core/duration.ts";
import { Logger } from "../state/logger.ts";
import { probe } from "../checks/index.ts";
import { redactUrl } from "../core/redact.ts";
import { respawnPane } from "../os/tmux.ts";
import { uptimeMs } from "../os/proc.ts";

/** How long blogtunnel waits for a pass that holds the lock: a pass takes minutes at most. */
const LOCK_WAIT_MS = 180_000;

interface TunnelOptions {
  url: string;
  timeoutMs: number;
  strikes: number;
  counter: string;
  /** Status codes that are strikes; no answer (timeout, refused, DNS: "000") is one, listed or not. */
  failCodes: string[];
  pane: TunnelRecord["pane"];
}

interface TunnelResult {
  healthy: boolean;
  strikes: number;
  restarted: boolean;
}

/**
 * The public-URL tunnel check: one GET; a fail code is a strike in the counter file; any other
 * answer writes 0; the Nth strike respawns the tmux pane and writes 0. The same probe, counter
 * and tmux restart the watchdog uses.
 */
export async function checkTunnel(options: TunnelOptions, logger: Logger): Promise<TunnelResult> {
  const check: HttpCheck = {
    kind: "http",
    url: options.url,
    expect: null,
    anyResponse: true,
    failCodes: null,
    contains: null,
    headers: {},
    timeoutMs: options.timeoutMs,
  };
  const result = await probe(check);
  const code = result.status ? String(result.status) : "000";
  const shown = redactUrl(options.url);
  const { value, problem } = readCounter(options.counter);
  if (problem) logger.write("ERROR", problem);
  // No answer always fails, listed as 000 or not, as fail_codes in a configuration (SPEC "Answers"):
  // one verdict for one answer, with or without one.
  if (code !== "000" && !options.failCodes.includes(code)) {
    if (value > 0)
      logger.write(
        "RECOVERED",
        `tunnel ${shown} answers again (HTTP ${code} in ${result.latencyMs}ms) after ${value} failed check(s)`,
      );
    writeCounter(options.counter, 0);
    return { healthy: true, strikes: 0, restarted: false };
  }
  const strikes = value + 1;
  const what = code === "000" ? result.detail : `HTTP ${code}`;
  logger.write(
    "WARN",
    `tunnel ${shown} failed health check (${what}, failure ${Math.min(strikes, options.strikes)}/${options.strikes})`,
  );
  if (strikes < options.strikes) {
    writeCounter(options.counter, strikes);
    return { healthy: false, strikes, restarted: false };
  }
  if (!options.pane) {
    logger.write("HUNG", `tunnel ${shown} failed ${strikes} checks in a row: no --pane given, nothing restarted`);
    writeCounter(options.counter, 0);
    return { healthy: false, strikes, restarted: false };
  }
  logger.write(
    "HUNG",
    `tunnel ${shown} failed ${strikes} checks in a row (timeout ${humanDuration(options.timeoutMs)}): ` +
      `restarting pane ${options.pane.target}`,
  );
  const restart = await respawnPane(options.pane.target, options.pane.command, { socket: options.pane.socket ?? null });
  logger.write(restart.issued ? "RESTART" : "FAILED", `tunnel: ${restart.detail}`);
  // Written 0 after a restart, as watchdog.sh did: the restarted tunnel gets N fresh checks.
  writeCounter(options.counter, restart.issued ? 0 : strikes);
  return { healthy: false, strikes, restarted: restart.issued };
}

/**
 * With a configuration, blogtunnel is part of the watch: judged like a watchdog service (cooldown,
 * backoff, max_restarts, requires.dns), its lines in the watchdog log under its name, its restart
 * notified (⚠️, then ✅ or 🚨), its state in the state dir (status and report show it). The counter
 * file stays the plain integer old scripts share: it is the strike count (`echo 0 > FILE` resets it).
 */
export async function watchTunnel(
  config: Config,
  name: string,
  record: TunnelRecord,
  counter: string,
  echo: (line: string) => void,
  { lockWaitMs = LOCK_WAIT_MS, stdoutIsLog = false } = {},
): Promise<{ healthy: boolean }> {
  const service = tunnelService(name, record, config.defaults);
  const { stateDir } = config.watchdog;
  ensureStateDir(stateDir);
  // Its service's own lock (services/NAME.lock), held through the probe, a restart and its
  // verification, as any owner holds it: a pass never waits for it (it leaves this service to it), and
  // an operator, or a second blogtunnel, waits up to 30s.
  // tend's time (core/clock.ts), as a pass measures; read again with the state once the lock is held.
  const clock = await OwnerClock.of(stateDir);
  const { now } = clock;
  const logger = new Logger(config.watchdog.log, echo, now, config.watchdog.rotation, stdoutIsLog);
  // Its dependencies first, assessed as a pass assesses them first (no lock: an assessment writes nothing).
  const read = stateReader(stateDir);
  const assessing = { now, uptimeMs: uptimeMs(), bootDelayMs: config.watchdog.bootDelayMs, gap: null };
  const board = new DependencyBoard([], (dependency) =>
    blocksNow(
      config.services.find((other) => other.name === dependency)!,
      read(dependency),
      assessing,
    ),
  );
  const failingDependencies = await board.failingFor(service);
  // A run lost all the same is said in the log (cron may not mail).
  const judging = { ...config, services: [service] };
  const owner = await ServiceOwner.wait(judging, name, "blogtunnel", { logger, now, waitMs: lockWaitMs });
  if (!owner) {
    const holder = ServiceOwner.heldBy(config, name);
    const said = `${name} was being judged by another for ${humanDuration(lockWaitMs)} (${holder})`;
    logger.write("ERROR", `${name}: ${said}: this check did not run; the counter is unchanged`);
    throw new TendError(`${said}: try again`, 1);
  }
  try {
    const { value, problem } = readCounter(counter);
    if (problem) logger.write("ERROR", `${name}: ${problem}`);
    const { state } = await clock.load(owner);
    // Its period as seen (the time since the run before): how long status shows it unjudged (core/health.ts).
    const before = state.verdict?.at ?? state.lastProbe?.at ?? null;
    const everyMs = before !== null && before < now() ? Math.round(now() - before) : (state.tunnel?.everyMs ?? null);
    const tunnel = { ...record, everyMs };
    owner.save({ ...state, strikes: Math.min(value, service.failures), tunnel });
    const outcome = await judgeService(service, {
      config: judging,
      owner,
      echo,
      now,
      sleep: Bun.sleep,
      failingDependencies,
      publish: () => {},
      gap: null,
    });
    // tend's strike count, always: 0 after a restart that recovered, N after one that did not
    // (the next failed check restarts again once the backoff allows), as for any service.
    writeCounter(counter, outcome.decision.next.strikes);
    owner.release(); // notifications have their own lock (notify.lock): a pass need not wait for them
    await publishEvents(config, outcome.events, logger, now);
    await updatePassWideViews(config, { logger, now, gap: "as-found", ping: "if-changed" });
    // Skipped (grace, paused) is not failing: cron's exit status stays 0 unless it struck or restarted.
    return { healthy: ["ok", "skip", "busy"].includes(outcome.decision.kind) };
  } finally {
    owner.release();
  }
}

/** --depends-on NAME[,NAME] (or repeated): configured services, each once. */
export function tunnelDependencies(given: string | string[] | undefined, config: Config): string[] {
  const names = [given ?? []].flat().flatMap((value) => value.split(",").map((name) => name.trim()));
  const unknown = names.filter((name) => !config.services.some((service) => service.name === name));
  if (unknown.length)
    throw usageError(
      `--depends-on: no service named ${unknown.join(", ")} in ${config.path} ` +
        `(configured: ${config.services.map((service) => service.name).join(", ") || "none"})`,
    );
  return [...new Set(names)];
}
