import { utcStamp, type Tag } from "./time.ts";

/**
 * Watchdog events: the emoji their notification starts with, its ntfy priority, and its title's
 * words (NAME: the service; HOST: the host, for the host's own events), so a receiver's filter
 * can key on what happened to what.
 */
export const EVENTS = {
  restart: { emoji: "⚠️", priority: "high", title: "restarted NAME" },
  failed: { emoji: "🚨", priority: "urgent", title: "NAME is down" },
  held: { emoji: "🚨", priority: "urgent", title: "NAME is down, its restart held" },
  "auto-restart": { emoji: "🔁", priority: "high", title: "NAME was restarted by its supervisor" },
  "given-up": { emoji: "⛔", priority: "urgent", title: "gave up on NAME" },
  busy: { emoji: "⏳", priority: "high", title: "NAME is busy" },
  memory: { emoji: "📈", priority: "high", title: "NAME's memory grows" },
  recovered: { emoji: "✅", priority: "default", title: "NAME recovered" },
  certificate: { emoji: "📅", priority: "high", title: "NAME's certificate expires soon" },
  gap: { emoji: "💤", priority: "urgent", title: "the watchdog did not run on HOST" },
  reboot: { emoji: "🔌", priority: "high", title: "HOST rebooted" },
  slow: { emoji: "🐢", priority: "default", title: "NAME is slow" },
  reminder: { emoji: "🔔", priority: "high", title: "NAME is still down" },
  "plugin-warning": { emoji: "🟠", priority: "high", title: "NAME warns" },
  flapping: { emoji: "🔀", priority: "high", title: "NAME is flapping" },
  configuration: { emoji: "🛠️", priority: "high", title: "tend's configuration on HOST is invalid" },
} as const;
export type NotifyEvent = keyof typeof EVENTS;

/**
 * The notification a heartbeat gap is said with, by whose gap it is (core/health.ts findGap): the
 * watchdog's 💤, the host's (a reboot) 🔌; a device asleep is said by its DOWNTIME line alone.
 */
const GAP_EVENT: Record<"watchdog" | "host" | "device", NotifyEvent | null> = {
  watchdog: "gap",
  host: "reboot",
  device: null,
};

export const gapEventOf = (name: string): NotifyEvent | null => GAP_EVENT[name as keyof typeof GAP_EVENT] ?? null;

/** A notification's title: the event and the service (`⚠️ restarted caddy on phone`), or the host's event. */
export function eventTitle(event: NotifyEvent, service: string, host: string): string {
  const words: string = EVENTS[event].title;
  const said = words.includes("HOST") ? words.replace("HOST", host) : `${words.replace("NAME", service)} on ${host}`;
  return `${EVENTS[event].emoji} ${said}`;
}

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
  const seconds = Math.round(Math.max(0, to - from) / 1000);
  const what = WHAT[name] ?? `${name} was unavailable`;
  return `${what} for ${seconds}s (${reason}, from ${utcStamp(new Date(from))} UTC to ${utcStamp(new Date(to))} UTC)`;
}

export const downtimeLine = (downtime: Downtime): LogLine => ({
  tag: "DOWNTIME",
  message: downtimeMessage(downtime),
  downtime,
});
