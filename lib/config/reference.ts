import { CHECKS } from "../checks/index.ts";
import { RESTARTS } from "../restarts/index.ts";

/**
 * The configuration reference: every table and key tend reads, its type, its default and what it
 * does. docs/configuration.md is rendered from it (`make docs`), and test/reference.test.ts holds
 * it to the code: the same keys the readers accept (WATCHDOG_KEYS, the kinds' `keys`, ...), and
 * the defaults an empty configuration parses to. A key the code takes and this does not say fails there.
 */
interface KeyDoc {
  key: string;
  type: string;
  /** As it would be written in the file; "" when there is none (required, or off). */
  default: string;
  doc: string;
}

interface SectionDoc {
  /** `[watchdog]`, `[service.check] http`, ... */
  title: string;
  /** The table the keys are in, as a key path begins: "watchdog", "service.check". */
  table: string;
  /** The key that selects a kind (check and restart kinds), else null. */
  kind: string | null;
  intro: string;
  keys: KeyDoc[];
}

const key = (name: string, type: string, value: string, doc: string): KeyDoc => ({
  key: name,
  type,
  default: value,
  doc,
});

const TUNABLES: KeyDoc[] = [
  key("timeout", "duration", "5s", "probe timeout; set it above the p99 of normal answers, not in the middle of them"),
  key("failures", "count", "3", "consecutive failed probes before a restart; one success resets the count"),
  key(
    "failures_within",
    "count",
    "",
    "N of the last M: a strike counts when `failures` of the last M probes failed; unset: M = N, in a row (at most 20)",
  ),
  key("grace", "duration", "30s", "after a start, no probing for this long"),
  key("cooldown", "duration", "10m", "at least this long between two restarts of one service (a crash is not held)"),
  key("backoff", "duration", "10s", "after a restart that did not recover: wait this long, doubling each time ..."),
  key("backoff_max", "duration", "5m", "... up to this"),
  key("max_restarts", "count", "5", "more restarts than this within restart_window: give up ..."),
  key("restart_window", "duration", "1h", "... until the service is healthy again or `watchdog reset NAME`"),
  key("stop_timeout", "duration", "2s", "restart.spawn: TERM, wait this long, then KILL the process group"),
  key("verify_timeout", "duration", "1m", "after a restart, probe every second until healthy or this long"),
  key(
    "retry_interval",
    "duration",
    "",
    "`watchdog run`: after a failed probe, probe again this soon (off: the interval)",
  ),
  key("slow_above", "duration", "", "a healthy answer slower than this is slow: no strike, WARN and 🐢 once a spell"),
  key("remind_every", "duration", "", "still down after its 🚨/⛔: 🔔 again this often, saying for how long"),
  key("given_up_retry", "duration", "", "given up: one verified restart this often instead of waiting for a reset"),
];

const CHECK_KEYS: Record<string, KeyDoc[]> = {
  http: [
    key("http", "URL", "", "GET this URL; healthy when the status is accepted (curl's `%{http_code}` judgement)"),
    key("expect", "list of statuses", "", "the statuses accepted (default: any 2xx or 3xx)"),
    key("any_response", "boolean", "false", "any HTTP answer is healthy (a 500 too): only no answer fails"),
    key("fail_codes", "list of statuses", "", "only these fail (0: no answer); anything else is healthy"),
    key("contains", "string", "", "the body (read up to 1 MiB) must hold this"),
    key("headers", "table", "", 'request headers, `{ "X-Probe" = "tend" }`'),
    key("ca", "path", "", "a CA bundle to verify the server with (curl `--cacert`)"),
    key("insecure", "boolean", "false", "do not verify the certificate (curl `-k`)"),
  ],
  tcp: [
    key("tcp", "HOST:PORT", "", "healthy when a TCP connect succeeds within the timeout"),
    key("send", "string", "", 'written once connected (with `expect`): `"PING\\r\\n"`'),
    key("expect", "string", "", "the answer (first 64 KiB) must hold this: a frozen process's kernel still connects"),
  ],
  command: [key("command", "argv", "", "run without a shell; healthy when it exits 0 within the timeout")],
  process: [key("process", "true", "", "healthy when the service's PID exists, not a zombie, not stopped (T)")],
  log: [
    key("log", "path", "", "healthy when this file was modified within `fresh` (relative: to state_dir)"),
    key("fresh", "duration", "", "how recent the last modification must be (required)"),
  ],
  tls: [
    key("tls", "HOST:PORT", "", "a TLS handshake; healthy when it succeeds and the certificate lasts"),
    key("servername", "string", "", "the SNI name and the name verified (default: the host)"),
    key("warn_days", "count", "14", "fewer days left than this: a WARN and 📅, at most daily (no strike)"),
    key("fail_days", "count", "3", "fewer days left than this: failing"),
    key("insecure", "boolean", "false", "do not verify the chain (the expiry is still read)"),
  ],
  disk: [
    key("disk", "path", "", "the file system holding this path"),
    key("min_free", "size or percent", "", "healthy while this much is free (`1GiB`, `5%`)"),
    key("min_free_inodes", "count or percent", "", "and this many inodes (`10000`, `5%`)"),
  ],
  nagios: [
    key("nagios", "argv", "", "a Nagios / monitoring-plugins plugin: exit 0 healthy, 1 WARNING (🟠), 2 and 3 fail"),
  ],
};

const RESTART_KEYS: Record<string, KeyDoc[]> = {
  tmux: [
    key("tmux", "SESSION:WINDOW[.PANE]", "", "`tmux respawn-pane -k`; the session or window created if missing"),
    key("run", "shell command", "", "what the pane runs (required)"),
    key("socket", "name or path", "", "the tmux server: a name (`-L`) or a socket path (`-S`); default tmux's own"),
  ],
  spawn: [
    key("spawn", "argv", "", "stop the old process group, start this detached; needs the service's `pidfile`"),
    key("cwd", "path", "", "its working directory"),
    key("env", "table", "", "environment variables added to cron's"),
    key("output", "path", "services/NAME.out", "where its stdout and stderr go (kept under log_max_size)"),
  ],
  systemd: [
    key(
      "systemd",
      "unit",
      "",
      "`systemctl restart UNIT`; the unit is the pid source. A failed unit is reset (`reset-failed`) and " +
        "restarted — one without `Restart=` has nobody else — unless systemd gave up on it (start-limit-hit)",
    ),
  ],
  launchd: [key("launchd", "label", "", "`launchctl kickstart -k DOMAIN/LABEL`")],
  runit: [
    key("runit", "service", "", "`sv restart SV_DIR/SERVICE` (runit, termux-services)"),
    key("sv_dir", "path", "", "default `$SVDIR`, then `$PREFIX/var/service` on Termux, then `/etc/service`"),
  ],
  command: [key("command", "argv", "", "run without a shell; exit 0 means the restart was issued")],
};

export const REFERENCE: SectionDoc[] = [
  {
    title: "[watchdog]",
    table: "watchdog",
    kind: null,
    intro: "Where tend keeps its state and how often it passes.",
    keys: [
      key("state_dir", "path", "~/.local/state/tend", "default `$TEND_STATE_DIR`, then `$XDG_STATE_HOME/tend`; 0700"),
      key("log", "path", "watchdog.log", "relative to state_dir"),
      key("interval", "duration", "5m", "the cron period, or the loop's (`watchdog run`); at least 1s"),
      key("boot_delay", "duration", "0s", "skip passes while the system has been up for less than this"),
      key("concurrency", "count", "16", "probes in parallel, at most (and no more than the free descriptors allow)"),
      key("heartbeat_url", "URL", "", "pinged after each pass (dead-man switch); `{status}`, `{msg}`, `{ping}`"),
      key("metrics_file", "path", "", "Prometheus textfile-collector output, written each pass"),
      key("log_max_size", "size", "10MiB", "watchdog.log, downtime.log and every .out tend made rotate at this size"),
      key("log_keep", "count", "3", "rotated files kept: NAME.1 ... NAME.3"),
    ],
  },
  {
    title: "[notify]",
    table: "notify",
    kind: null,
    intro: "Where notifications go.",
    keys: [
      key("url", "URL", "", "the receiver (default `$TEND_NOTIFY_URL`); for email, `smtp://` or `smtps://`"),
      key(
        "format",
        "name",
        "text",
        "text (ntfy), json, slack, discord, telegram, gotify, pushover, email, termux, alertmanager",
      ),
      key("timeout", "duration", "10s", "per attempt"),
      key("retries", "count", "2", "extra attempts for network errors, 5xx, 408, 424, 429"),
      key("min_interval", "duration", "15m", "the same service and event is not sent again within this"),
      key("spool_max_age", "duration", "24h", "a spooled message older than this is a dead letter"),
      key("spool_max_attempts", "count", "100", "... and one that failed this many times"),
      key("to", "address or list", "", 'format = "email": the recipients'),
      key("from", "address", "", 'format = "email": the sender'),
    ],
  },
  {
    title: "[serve]",
    table: "serve",
    kind: null,
    intro: "`watchdog serve` (and `watchdog run --serve`): the status page, its API and /metrics.",
    keys: [
      key("listen", "ADDR:PORT", "127.0.0.1:9841", "where it listens"),
      key("token", "string", "", "required off loopback: at least 16 characters"),
      key("peers", "list", "", "other hosts' serve URLs (or `{ url, token }`): one page for the fleet"),
    ],
  },
  {
    title: "[self_update]",
    table: "self_update",
    kind: null,
    intro: "What `self-update --channel` trusts: a release whose release.json one of these keys signed.",
    keys: [
      key(
        "keys",
        "list",
        "",
        '`["ed25519:BASE64"]`: the base64 of each raw 32-byte Ed25519 public key; a release binary also trusts its own',
      ),
    ],
  },
  {
    title: "[defaults]",
    table: "defaults",
    kind: null,
    intro: "Every service's tunables, unless it sets its own (the check's `timeout` wins over both).",
    keys: TUNABLES,
  },
  {
    title: "[[service]]",
    table: "service",
    kind: null,
    intro:
      "One per service; `service[i]` in errors counts them from 0. The tunables of [defaults] may be set here too.",
    keys: [
      key("name", "string", "", "1-64 of `A-Z a-z 0-9 _ . @ -`, not starting with `-` or `.`, unique ignoring case"),
      key("enabled", "boolean", "true", "false: skipped, shown as disabled"),
      key("pidfile", "path", "", "PID source: a file holding its PID (relative: to state_dir)"),
      key("tmux", "SESSION:WINDOW[.PANE]", "", "PID source: the pane's process"),
      key("unit", "systemd unit", "", "PID source: the unit's MainPID; ActiveState and NRestarts are read each pass"),
      key("launchd", "label", "", "PID source: the launchd job's PID"),
      key("depends_on", "list of names", "", "while one of these fails: WAIT, no strike, no restart"),
      key("requires", "table", "", '`{ dns = "example.org" }`: while the name does not resolve, WAIT'),
      key("track_restarts", "boolean", "false", "count systemd's own restarts of its unit (🔁)"),
      key("check", "table", "", "how it is probed: exactly one kind below (required)"),
      key("restart", "table", "", "how it is restarted: one kind below; none: watch only"),
      key("busy", "table", "", "failing but working: no strike, up to `max` (below)"),
      key("memory", "table", "", "RSS growth: warn, and restart above a size (below)"),
      ...TUNABLES.map((tunable) => ({ ...tunable, default: "", doc: "as in [defaults]" })),
    ],
  },
  ...Object.entries(CHECK_KEYS).map(([kind, keys]) => ({
    title: `[service.check] ${kind}`,
    table: "service.check",
    kind,
    intro: `\`check.${kind}\` (lib/checks/${kind}.ts). Every check also takes \`timeout\`.`,
    keys: [...keys, key("timeout", "duration", "", "wins over the service's and [defaults]' timeout")],
  })),
  {
    title: "[service.busy]",
    table: "service.busy",
    kind: null,
    intro: "A failed probe while the service shows it is working is not a strike, for up to `max`.",
    keys: [
      key("port", "port", "", "working while its process listens here (needs a PID source)"),
      key("log", "path", "", "working while this file is written to"),
      key("fresh", "duration", "3m", "how recent a write to `log` must be"),
      key("max", "duration", "30m", "busy longer than this: restarted (busy_timeout)"),
    ],
  },
  {
    title: "[service.memory]",
    table: "service.memory",
    kind: null,
    intro: "The RSS of the service's process tree, sampled each pass (needs a PID source).",
    keys: [
      key("limit", "size", "", "warn (📈) when the growth would reach this within `warn_within`"),
      key("warn_within", "duration", "24h", "how far ahead the growth is projected"),
      key("restart_above", "size", "", "restart (memory) above this"),
    ],
  },
  ...Object.entries(RESTART_KEYS).map(([kind, keys]) => ({
    title: `[service.restart] ${kind}`,
    table: "service.restart",
    kind,
    intro: `\`restart.${kind}\` (lib/restarts/${kind}.ts).`,
    keys,
  })),
];

/** The kinds the reference covers: every registered one (the test says which is missing). */
export const referenceKinds = () => ({
  checks: Object.keys(CHECK_KEYS),
  restarts: Object.keys(RESTART_KEYS),
  registered: { checks: Object.keys(CHECKS), restarts: Object.keys(RESTARTS) },
});

const cell = (text: string) => text.replace(/\|/g, "\\|");

/** docs/configuration.md. */
export function renderReference(): string {
  const lines = [
    "# Configuration reference",
    "",
    "<!-- Rendered from lib/config/reference.ts by `make docs`; test/reference.test.ts fails when out of date. -->",
    "",
    "One TOML file (JSON accepted too). Lookup: `--config` > `$TEND_CONFIG` > `$XDG_CONFIG_HOME/tend/tend.toml`",
    "(default `~/.config/tend/tend.toml`) > `/etc/tend/tend.toml`. Every error names the key path, the bad value",
    "and what is allowed, exits 2 and acts on nothing. Durations: `250ms`, `20s`, `5m`, `1h`, `1d` or a number of",
    "seconds, up to 365d; sizes: `64KiB`, `10MiB`, `1GiB`. The annotated example is",
    "[`examples/tend.toml`](../examples/tend.toml).",
  ];
  for (const section of REFERENCE) {
    lines.push("", `## ${section.title}`, "", section.intro, "", "| key | type | default | |", "|---|---|---|---|");
    for (const entry of section.keys) {
      const value = entry.default === "" ? "" : `\`${entry.default}\``;
      lines.push(`| \`${entry.key}\` | ${cell(entry.type)} | ${cell(value)} | ${cell(entry.doc)} |`);
    }
  }
  return lines.join("\n") + "\n";
}
