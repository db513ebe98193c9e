import { hostname } from "node:os";
import { WORDS } from "../core/verdict.ts";
import { judgeMemory } from "../core/memory.ts";
import type { Config, ServiceConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import type { Downtime } from "../core/events.ts";
import { redactUrl } from "../core/redact.ts";
import type { Logger } from "../state/logger.ts";
import type { ServiceState } from "../core/state.ts";
import { buildRequest, send, type AlertPayload } from "./send.ts";
import { readNotifyState, withSpool, writeNotifyState, type FiringAlert } from "./spool.ts";

interface Condition {
  alertname: string;
  severity: "critical" | "warning";
  summary: string;
  description: string;
}

/**
 * The conditions a service is in now, from its state: down (failing at N strikes, its restart
 * failed, given up), busy, memory growing toward its limit, a silent systemd auto-restart, a
 * certificate that expires soon. One alert each, with stable labels.
 */
function conditionsOf(service: ServiceConfig, state: ServiceState, now: number, intervalMs: number): Condition[] {
  const name = service.name;
  const found: Condition[] = [];
  const last = state.lastProbe?.detail ?? "no probe yet";
  // Firing is the one table's word (core/verdict.ts), as tend_service_up and --nagios say it.
  const word = state.verdict?.word;
  if (word && WORDS[word].firing) {
    const why =
      word === "given-up"
        ? "given up after max_restarts"
        : word === "backoff"
          ? "its restart did not recover it"
          : word === "restarting"
            ? "being restarted"
            : `${state.strikes} failed checks in a row`;
    const since = state.outage?.since ?? state.verdict!.at;
    found.push({
      alertname: "TendServiceDown",
      severity: "critical",
      summary: `${name} is down: ${last}`,
      description:
        `${name} has been failing since ${new Date(since).toISOString()} (${why}); ` + `last probe: ${last}.`,
    });
  }
  if (state.busySince !== null) {
    found.push({
      alertname: "TendServiceBusy",
      severity: "warning",
      summary: `${name} does not answer but is busy (for ${humanDuration(now - state.busySince)})`,
      description:
        `${name} fails its check but shows it is working; it is restarted only after busy.max. ` +
        `Last probe: ${last}.`,
    });
  }
  // While its samples say so now (the judgement that sends the 📈): a restart that dropped its memory
  // resolves it, never hours after the warning (ground truth, seed 3).
  const growing = service.memory ? judgeMemory(name, service.memory, state.rss).warn : null;
  if (growing)
    found.push({ alertname: "TendMemoryGrowth", severity: "warning", summary: growing, description: growing });
  const auto = state.history.filter((entry) => entry.what === "auto-restart" && now - entry.at < 3 * intervalMs);
  if (auto.length) {
    const count = auto.reduce((sum, entry) => sum + (entry.count ?? 1), 0);
    found.push({
      alertname: "TendAutoRestart",
      severity: "warning",
      summary: `systemd restarted ${name} on its own (${count} time${count === 1 ? "" : "s"})`,
      description:
        `NRestarts of ${name}'s unit went up without tend: ` + `it crashed and systemd's Restart= brought it back.`,
    });
  }
  if (state.checkWarning) {
    found.push({
      alertname: "TendCertificateExpiring",
      severity: "warning",
      summary: `${name}: ${state.checkWarning}`,
      description: `${name}: ${state.checkWarning}. Renew it before fail_days, when the check starts to fail.`,
    });
  }
  return found;
}

const keyOf = (labels: Record<string, string>) => `${labels.alertname}/${labels.service}`;

/**
 * Alertmanager: every pass posts each condition that holds with endsAt three intervals ahead (so
 * it never expires while it holds), and each that no longer holds with the same labels and
 * endsAt = now, which resolves it. The firing set is kept in notify's state. `gap` is what a pass
 * found; "as-found" (an outcome recorded between passes): the watchdog's gap alert stays as the last
 * pass left it.
 */
export async function syncAlerts(
  config: Config,
  services: { service: ServiceConfig; state: ServiceState }[],
  gap: Downtime | null | "as-found",
  logger: Logger,
  now = Date.now(),
  intervalMs = config.watchdog.intervalMs,
): Promise<void> {
  const { url, timeoutMs, retries } = config.notify;
  if (!url) return;
  const instance = hostname();
  const current = new Map<string, FiringAlert>();
  const add = (service: string, condition: Condition) => {
    const labels = { alertname: condition.alertname, service, instance, severity: condition.severity };
    const annotations = { summary: condition.summary, description: condition.description };
    current.set(keyOf(labels), { labels, annotations, startsAt: new Date(now).toISOString() });
  };
  for (const { service, state } of services) {
    for (const condition of conditionsOf(service, state, now, intervalMs)) add(service.name, condition);
  }
  if (gap !== "as-found" && gap?.name === "watchdog") {
    const summary = `the watchdog on ${instance} did not run for ${humanDuration(gap.to - gap.from)}`;
    add("watchdog", {
      alertname: "TendWatchdogGap",
      severity: "critical",
      summary,
      description: `${summary} (cron stopped, or the loop died).`,
    });
  }
  await withSpool({ stateDir: config.watchdog.stateDir }, async () => {
    const notifyState = readNotifyState(config.watchdog.stateDir);
    const firing = notifyState.firing;
    if (gap === "as-found")
      for (const [key, alert] of Object.entries(firing))
        if (alert.labels.alertname === "TendWatchdogGap") current.set(key, alert);
    const ahead = new Date(now + 3 * intervalMs).toISOString();
    const alerts: AlertPayload[] = [];
    // Alertmanager refuses an alert whose start is after its end: a start recorded before a clock
    // step back (or by another frame) is never later than now.
    const notAfterNow = (startsAt: string) => (Date.parse(startsAt) > now ? new Date(now).toISOString() : startsAt);
    for (const [key, alert] of current) {
      alert.startsAt = notAfterNow(firing[key]?.startsAt ?? alert.startsAt);
      alerts.push({ ...alert, endsAt: ahead });
    }
    for (const [key, alert] of Object.entries(firing)) {
      if (!current.has(key))
        alerts.push({ ...alert, startsAt: notAfterNow(alert.startsAt), endsAt: new Date(now).toISOString() });
    }
    if (!alerts.length) return;
    const channel = { url, format: "alertmanager" as const, timeoutMs, retries };
    const message = {
      message: "",
      title: null,
      priority: null,
      tags: [],
      event: null,
      service: null,
      time: new Date(now).toISOString(),
      alerts,
    };
    const result = await send(buildRequest(message, channel), channel);
    if (!result.ok) {
      // Not spooled: the next pass posts the conditions again, and a lost resolve ends at endsAt.
      logger.write("NOTIFY", `could not post ${alerts.length} alert(s) to ${redactUrl(url)}: ${result.detail}`);
      return;
    }
    writeNotifyState(config.watchdog.stateDir, { ...notifyState, firing: Object.fromEntries(current) });
  });
}
