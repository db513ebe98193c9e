import { hostname } from "node:os";
import type { Config } from "../config/types.ts";
import { watchedServices } from "../config/watched.ts";
import type { Downtime } from "../core/events.ts";
import { metricsRow, renderMetrics } from "../core/metrics.ts";
import { WORDS } from "../core/verdict.ts";
import { pingHeartbeat, sendEvents } from "../notify/alert.ts";
import type { Message } from "../notify/send.ts";
import { syncAlerts } from "../notify/alertmanager.ts";
import { writeFileAtomic } from "../os/atomic.ts";
import { readHeartbeat } from "../state/heartbeat.ts";
import type { Logger } from "../state/logger.ts";
import { stateReader } from "../state/service-state.ts";

interface PassWideOptions {
  logger: Logger;
  now: () => number;
  /** The period the watchdog runs at (alerts are kept firing three of them ahead); default: the heartbeat's. */
  intervalMs?: number;
  /** What a pass found (null: no gap); "as-found" between passes: the watchdog's gap alert as the last pass left it. */
  gap: Downtime | null | "as-found";
  /** When the last pass ran (tend_last_pass_timestamp_seconds); default: its heartbeat's time. */
  passAt?: number;
  /**
   * The dead-man switch: a pass pings it, with its duration; between passes (`ifChanged`) it is pinged only
   * when its status changed; absent: not now (a pass pings once, at its very end).
   */
  ping?: { pingMs: number } | "if-changed";
  /** Metrics and alerts too (default), or only the ping. */
  views?: boolean;
  /** No network (stopping: a SIGTERM leaves seconds): the metrics file only. */
  offline?: boolean;
}

/**
 * After an owner recorded an outcome (a pass's judgements, a verification's end, the crash watch's start,
 * an operator's command): the pass-wide views — metrics_file, Alertmanager's alerts, the heartbeat's
 * status — brought up to what every watched service's state says now, so no process exits with a view
 * behind what it recorded. Each is read from the states as saved (never from what one party holds in
 * memory): two owners that record at once both leave the views at least as new as their own outcome.
 * The same rows /metrics and status show (config/watched.ts: blogtunnel's service included).
 */
export async function updatePassWideViews(config: Config, options: PassWideOptions): Promise<void> {
  const { logger, now, gap, views = true } = options;
  const { heartbeatUrl, metricsFile, stateDir } = config.watchdog;
  const alerting = !options.offline && config.notify.format === "alertmanager" && !!config.notify.url;
  const pinging = !options.offline && options.ping !== undefined && !!heartbeatUrl;
  if (!(views && (metricsFile || alerting)) && !pinging) return;
  // Each state read once: watchedServices reads blogtunnel's to know whether it is still watched.
  const read = stateReader(stateDir, { once: true });
  const at = now();
  const services = watchedServices(config, read, at).map((service) => ({ service, state: read(service.name) }));
  const rows = services.map(({ service, state }) => metricsRow(service, state));
  const heartbeat = options.passAt === undefined || options.intervalMs === undefined ? readHeartbeat(stateDir) : null;
  const intervalMs = options.intervalMs ?? heartbeat?.intervalMs ?? config.watchdog.intervalMs;
  if (views && metricsFile) {
    const passAt = options.passAt ?? (heartbeat ? Date.parse(heartbeat.at) : 0);
    try {
      writeFileAtomic(metricsFile, renderMetrics(rows, passAt, hostname()), 0o644);
    } catch (error) {
      logger.write("ERROR", `cannot write metrics_file ${metricsFile}: ${(error as Error).message}`);
    }
  }
  if (views && alerting) await syncAlerts(config, services, gap, logger, at, intervalMs);
  if (pinging) {
    // Down is the table's column (tend_service_up 0): never a strike below N (lesson 3).
    const down = rows.filter((row) => WORDS[row.word].up === 0).map((row) => row.name);
    const ping = options.ping!;
    await pingHeartbeat(config, down, logger, fetch, {
      now: at,
      ...(ping === "if-changed" ? { ifChanged: true } : { pingMs: ping.pingMs }),
    });
  }
}

/**
 * The events a chat receiver gets. Alertmanager gets none of them: its alerts are the services'
 * conditions (updatePassWideViews: a failed restart is TendServiceDown, resolved by the recovery); only
 * what an earlier format left in the spool is delivered.
 */
export const publishEvents = (config: Config, events: Message[], logger: Logger, now: () => number) =>
  sendEvents(config, config.notify.format === "alertmanager" ? [] : events, logger, now);
