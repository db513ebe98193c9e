import type { Config, ServiceConfig } from "./types.ts";
import { formatDuration } from "../core/duration.ts";
import { HIDDEN, type Shown } from "../core/redact.ts";
import { checkKind } from "../checks/index.ts";
import { restartKind } from "../restarts/index.ts";

type Flat = Record<string, unknown>;

/**
 * The effective configuration, every default filled in, one block per service with sorted keys:
 * a stable text that `self-update` can diff.
 */
export function renderPlan(config: Config, shown: Shown = HIDDEN): string {
  const { watchdog } = config;
  const blocks: [string, Flat][] = [
    [
      "notify",
      {
        url: config.notify.url ? shown.url(config.notify.url) : "",
        format: config.notify.format,
        timeout: formatDuration(config.notify.timeoutMs),
        retries: config.notify.retries,
        min_interval: formatDuration(config.notify.minIntervalMs),
        spool_max_age: formatDuration(config.notify.spoolMaxAgeMs),
        spool_max_attempts: config.notify.spoolMaxAttempts,
      },
    ],
    [
      "serve",
      {
        listen: config.serve.listen,
        token: config.serve.token ? shown.value(config.serve.token) : "",
        // A list, shown as one: `peers = []`, never `peers = ""`.
        peers: config.serve.peers.map((peer) => shown.url(peer.url) + (peer.token ? " (token …)" : "")),
      },
    ],
    ["self_update", { keys: config.selfUpdate.keys }],
    [
      "watchdog",
      {
        state_dir: watchdog.stateDir,
        log: watchdog.log,
        interval: formatDuration(watchdog.intervalMs),
        boot_delay: formatDuration(watchdog.bootDelayMs),
        concurrency: watchdog.concurrency,
        heartbeat_url: watchdog.heartbeatUrl ? shown.url(watchdog.heartbeatUrl) : "",
        metrics_file: watchdog.metricsFile ?? "",
        log_max_size: sizeSetting(watchdog.rotation.maxBytes),
        log_keep: watchdog.rotation.keep,
      },
    ],
    ...[...config.services]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((service) => [`service "${service.name}"`, flattenService(service, shown)] as [string, Flat]),
  ];
  return (
    blocks
      .map(([title, values]) =>
        [
          `[${title}]`,
          ...Object.keys(values)
            .sort()
            .map((key) => `${key} = ${JSON.stringify(values[key])}`),
        ].join("\n"),
      )
      .join("\n\n") + "\n"
  );
}

function flattenService(service: ServiceConfig, shown: Shown): Flat {
  const flat: Flat = {
    enabled: service.enabled,
    failures: service.failures,
    failures_within: service.failuresWithin || service.failures,
    timeout: formatDuration(service.timeoutMs),
    grace: formatDuration(service.graceMs),
    cooldown: formatDuration(service.cooldownMs),
    backoff: formatDuration(service.backoffMs),
    backoff_max: formatDuration(service.backoffMaxMs),
    max_restarts: service.maxRestarts,
    restart_window: formatDuration(service.restartWindowMs),
    stop_timeout: formatDuration(service.stopTimeoutMs),
    verify_timeout: formatDuration(service.verifyTimeoutMs),
    retry_interval: service.retryIntervalMs ? formatDuration(service.retryIntervalMs) : "interval",
    slow_above: service.slowAboveMs ? formatDuration(service.slowAboveMs) : "off",
    remind_every: service.remindEveryMs ? formatDuration(service.remindEveryMs) : "off",
    given_up_retry: service.givenUpRetryMs ? formatDuration(service.givenUpRetryMs) : "off",
    depends_on: service.dependsOn,
  };
  if (service.pidfile) flat.pidfile = service.pidfile;
  if (service.tmux) flat.tmux = service.tmux;
  if (service.unit) flat.unit = service.unit;
  if (service.launchd) flat.launchd = service.launchd;
  if (service.requiresDns) flat["requires.dns"] = service.requiresDns;
  if (service.unit) flat.track_restarts = service.trackRestarts;
  if (service.busy) {
    Object.assign(flat, {
      "busy.port": service.busy.port ?? "none",
      "busy.log": service.busy.log ?? "none",
      "busy.fresh": formatDuration(service.busy.freshMs),
      "busy.max": formatDuration(service.busy.maxMs),
    });
  }
  if (service.memory) {
    Object.assign(flat, {
      "memory.limit": service.memory.limitBytes ?? "none",
      "memory.warn_within": formatDuration(service.memory.warnWithinMs),
      "memory.restart_above": service.memory.restartAboveBytes ?? "none",
    });
  }
  Object.assign(flat, checkKind(service.check).plan(service.check, shown));
  if (service.restart) Object.assign(flat, restartKind(service.restart).plan(service.restart, shown));
  else flat.restart = "none";
  return flat;
}

/** A size as it can be written back in the configuration: "10MiB", "64KiB", else bytes. */
function sizeSetting(bytes: number): string | number {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}MiB`;
  return bytes % 1024 === 0 ? `${bytes / 1024}KiB` : bytes;
}
