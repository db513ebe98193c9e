import { utcStamp, type Tag } from "./time.ts";

/** Watchdog events: the emoji their notification starts with, and its ntfy priority. */
export const EVENTS = {
  restart: { emoji: "⚠️", priority: "high" },
  failed: { emoji: "🚨", priority: "urgent" },
  "auto-restart": { emoji: "🔁", priority: "high" },
  "given-up": { emoji: "⛔", priority: "urgent" },
  busy: { emoji: "⏳", priority: "high" },
  memory: { emoji: "📈", priority: "high" },
  recovered: { emoji: "✅", priority: "default" },
  certificate: { emoji: "📅", priority: "high" },
  gap: { emoji: "💤", priority: "urgent" },
  reboot: { emoji: "🔌", priority: "high" },
  slow: { emoji: "🐢", priority: "default" },
  reminder: { emoji: "🔔", priority: "high" },
} as const;
export type NotifyEvent = keyof typeof EVENTS;

/** A span of time a service (or the host, or the watchdog) was unavailable, as recorded. */
export interface Downtime {
  /** A service's name, or "host" / "watchdog" / "device" (asleep) for the gaps a pass finds in the heartbeat. */
  name: string;
  /** failing, crash, hung_restart, busy_timeout, memory; unexpected_shutdown_or_reboot, watchdog_not_running */
  reason: string;
  from: number;
  to: number;
}

/** One line the decision asks the pass to write; DOWNTIME lines carry their record. */
export interface LogLine {
  tag: Tag;
  message: string;
  /** Worth a notification: the event name (dedup key with the service). */
  event?: NotifyEvent;
  /** Goes to downtime.log, rendered from this record. */
  downtime?: Downtime;
  /**
   * The log file's fuller version (a command's whole argv, secrets redacted); stdout and
   * notifications get `message`.
   */
  full?: string;
}

const WHAT: Record<string, string> = {
  watchdog: "watchdog did not run",
  host: "host was unavailable",
  device: "device was asleep",
};

/** `NAME was unavailable for Ns (REASON, from T1 UTC to T2 UTC)` */
export function downtimeMessage({ name, reason, from, to }: Downtime): string {
  const seconds = Math.round((to - from) / 1000);
  const what = WHAT[name] ?? `${name} was unavailable`;
  return `${what} for ${seconds}s (${reason}, from ${utcStamp(new Date(from))} UTC to ${utcStamp(new Date(to))} UTC)`;
}

export const downtimeLine = (downtime: Downtime): LogLine => ({
  tag: "DOWNTIME",
  message: downtimeMessage(downtime),
  downtime,
});
