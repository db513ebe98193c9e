import type { CheckConfig } from "../checks/kind.ts";
import type { RestartConfig } from "../restarts/kind.ts";
import type { StatePaths } from "../state/dir.ts";

export type Env = Record<string, string | undefined>;

/** busy: the check fails, but a process listens on `port` and `log` changed within `fresh`. */
export interface BusyConfig {
  port: number | null;
  log: string | null;
  freshMs: number;
  maxMs: number;
}

export interface MemoryConfig {
  limitBytes: number | null;
  warnWithinMs: number;
  restartAboveBytes: number | null;
}

export interface Tunables {
  failures: number;
  /** monit's "N times within M cycles": a strike is counted when `failures` of the last M probes failed. 0: M = N. */
  failuresWithin: number;
  timeoutMs: number;
  graceMs: number;
  cooldownMs: number;
  backoffMs: number;
  backoffMaxMs: number;
  maxRestarts: number;
  restartWindowMs: number;
  stopTimeoutMs: number;
  verifyTimeoutMs: number;
  /** Loop mode: after a failed probe, probe again after this (0: at the next pass, `interval`). */
  retryIntervalMs: number;
  /** A healthy answer slower than this is slow (no strike; 🐢 once per slow spell). 0: off. */
  slowAboveMs: number;
  /** While down after its 🚨/⛔, notify again this often (🔔). 0: off. */
  remindEveryMs: number;
  /** A given-up service is tried again (one verified restart) this often. 0: off (wait for reset). */
  givenUpRetryMs: number;
}

export interface ServiceConfig extends Tunables {
  name: string;
  enabled: boolean;
  /**
   * PID sources (at most one): a pidfile or tmux pane tend restarts; a systemd unit or launchd
   * job that their manager supervises.
   */
  pidfile: string | null;
  tmux: string | null;
  /** The tmux server of the pane (restart.tmux `socket`): null = tmux's default. */
  tmuxSocket?: string | null;
  unit: string | null;
  launchd: string | null;
  /** A runit service directory whose supervise/pid names the main process (implied by restart.runit). */
  runit: string | null;
  check: CheckConfig;
  /** null: watch only (strikes, alerts, status, report; never restarted). */
  restart: RestartConfig | null;
  dependsOn: string[];
  requiresDns: string | null;
  busy: BusyConfig | null;
  memory: MemoryConfig | null;
  /** Read systemd's NRestarts each pass (default: true with `unit`). */
  trackRestarts: boolean;
}

export interface WatchdogConfig {
  stateDir: string;
  log: string;
  intervalMs: number;
  bootDelayMs: number;
  concurrency: number;
  /** Pinged after each pass (dead-man switch); "/fail" appended while a service is down. */
  heartbeatUrl: string | null;
  /** Prometheus textfile-collector output, written atomically each pass; null = off. */
  metricsFile: string | null;
  /** watchdog.log, downtime.log and every .out rotate at this size, keeping this many (log_max_size, log_keep). */
  rotation: { maxBytes: number; keep: number };
}

export const NOTIFY_FORMATS = [
  "text",
  "json",
  "slack",
  "discord",
  "telegram",
  "gotify",
  "pushover",
  "email",
  "alertmanager",
  "termux",
] as const;

/** format = "termux" sends through termux-notification, not HTTP: its destination in the spool and in words. */
export const TERMUX_DESTINATION = "termux:notification";
export type NotifyFormat = (typeof NOTIFY_FORMATS)[number];

export const TELEGRAM_NEEDS_CHAT = "format telegram needs chat_id in the URL (…/bot<TOKEN>/sendMessage?chat_id=<ID>)";

export interface NotifyConfig {
  /** null: no channel configured (notifications are then spooled until one is) */
  url: string | null;
  format: NotifyFormat;
  timeoutMs: number;
  retries: number;
  minIntervalMs: number;
  /** A spooled message older than this, or failed this many times, becomes a dead letter. */
  spoolMaxAgeMs: number;
  spoolMaxAttempts: number;
}

/** `watchdog serve`: read-only HTTP over the state dir. */
export interface ServeConfig {
  /** ADDR:PORT; anything but loopback needs a token. */
  listen: string;
  /** Every request must carry `Authorization: Bearer TOKEN` when set. */
  token: string | null;
  /** Other hosts' `watchdog serve`: the page shows their services too. */
  peers: { url: string; token: string | null }[];
}

/** [self_update]: what `self-update --channel` trusts. */
export interface SelfUpdateConfig {
  /** `ed25519:BASE64` public keys; a release signed by one of them (or the built-in key) is trusted. */
  keys: string[];
}

export interface Config {
  path: string;
  watchdog: WatchdogConfig;
  notify: NotifyConfig;
  serve: ServeConfig;
  selfUpdate: SelfUpdateConfig;
  services: ServiceConfig[];
  /** [defaults] over the built-in tunables: what a service outside the file (blogtunnel) is judged by. */
  defaults: Tunables;
}

/** What a check or restart kind's reader may need beside its own table. */
export interface ReadContext {
  /** Resolve a path setting: "~/x" against HOME, relative against the state dir. */
  inState: (path: string) => string;
  /** The service has a pidfile, tmux, unit or launchd source. */
  hasPidSource: boolean;
  /** The service's timeout ([defaults], then the service); a check's own `timeout` wins. */
  timeoutMs: number;
  /** The service's name. */
  name: string;
  /** Where tend keeps its files (default file names come from here). */
  paths: StatePaths;
  /** The environment the configuration is read in ($SVDIR, $PREFIX for defaults). */
  env: Env;
}
