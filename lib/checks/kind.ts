import type { ReadContext, ServiceConfig } from "../config/types.ts";
import type { Reader } from "../config/reader.ts";
import type { Shown } from "../core/redact.ts";
import type { ProcInfo } from "../os/proc.ts";
import type { DoctorRow } from "../restarts/kind.ts";

/** What a check's config holds at the least; each kind adds its own fields. */
export interface CheckConfig {
  kind: string;
  timeoutMs: number;
  [field: string]: unknown;
}

export interface ProbeResult {
  ok: boolean;
  /** What was seen, in words: "HTTP 200", "no answer within 2s", "pid 42 is stopped (T)". */
  detail: string;
  latencyMs: number;
  timedOut: boolean;
  /** The HTTP status of the answer (http checks); null: no answer. */
  status?: number | null;
  /** A plugin's perfdata (check.nagios), every item as it gave it. */
  perfdata?: Perfdata[];
  /** Healthy, but worth a warning without a strike (a certificate that expires soon). */
  warning?: string | null;
  /** A TLS check's peer certificate: when it expires (epoch ms), for tend_tls_cert_expiry_timestamp_seconds. */
  certExpiresAt?: number;
  /** Which notification the warning is (default 📅 certificate; a plugin's WARNING is 🟠). */
  warningEvent?: "certificate" | "plugin-warning";
}

export interface ProbeContext {
  /** The service's main process, for check.process (null: none found). */
  process?: ProcInfo | null;
  /** It runs, but as another user: /proc does not show it (kill(pid, 0) answered EPERM). */
  hiddenProcess?: string | null;
  /** The HTTP GET an http check makes (lib/os/http1.ts; a test may pass another). */
  httpGet?: typeof import("../os/http1.ts").httpGet;
  now?: () => number;
  /** Verifying a restart that began at this time: evidence from before it (a log's old lines) does not count. */
  since?: number;
}

/**
 * One check kind: the keys it takes in [service.check], how it reads and validates them, how it
 * probes, and how it reads in a log line and in `watchdog plan`.
 */
export interface CheckKind<C extends CheckConfig = CheckConfig> {
  /** The key that selects the kind: `http = "..."`. */
  kind: C["kind"];
  /** Every key it takes, its own first; `timeout` is common to all. */
  keys: string[];
  read(table: Reader, context: ReadContext): C | undefined;
  probe(check: C, context: ProbeContext): Promise<ProbeResult>;
  /** For `[START] watching NAME (...)`: "http http://host/…, timeout 2.0s". */
  describe(check: C, service: ServiceConfig): string;
  /** Its `check.*` lines of `watchdog plan`. */
  plan(check: C, shown: Shown): Record<string, unknown>;
  /** Programs it runs itself (from PATH; not the operator's argv). A kind that runs any has a doctor row. */
  tools?: string[];
  /** The operator's programs the check names (an argv's first word): doctor resolves them on cron's PATH. */
  programs?(check: C): string[];
  doctor?: DoctorRow;
}

/** A kind typed for its own config, stored in the registry under the common type. */
export const defineCheck = <C extends CheckConfig>(kind: CheckKind<C>) => kind;

/** Measures one probe: `finish(ok, detail)` stamps the latency. */
export function stopwatch() {
  const started = performance.now();
  return (ok: boolean, detail: string, extra: Partial<ProbeResult> = {}): ProbeResult => ({
    ok,
    detail,
    timedOut: false,
    ...extra,
    latencyMs: Math.round(performance.now() - started),
  });
}

/** One perfdata item of a plugin's answer: `label=value[uom];warn;crit;min;max` (the thresholds as given). */
export interface Perfdata {
  label: string;
  value: number;
  uom: string;
  warn: string;
  crit: string;
  min: string;
  max: string;
}
