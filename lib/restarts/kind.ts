import type { Reader } from "../config/reader.ts";
import type { ReadContext, ServiceConfig } from "../config/types.ts";
import type { Shown } from "../core/redact.ts";
import type { MainProcess } from "../os/pidsource.ts";

/** What a restart's config holds at the least; each kind adds its own fields. */
export interface RestartConfig {
  kind: string;
  [field: string]: unknown;
}

export interface RestartResult {
  issued: boolean;
  /** For stdout and notifications: a command as its program and argument count. */
  detail: string;
  /** For the log: the whole argv, secrets redacted (when it differs from `detail`). */
  full?: string;
  /** For spawn: the identity of the new process, kept in state. */
  pid?: number;
  pidStartTicks?: string;
}

export interface RestartContext {
  /** The service's verified main process now, or null. */
  current: MainProcess | null;
  sleep: (ms: number) => Promise<void>;
  env: Record<string, string | undefined>;
}

/**
 * One restart kind: the keys it takes in [service.restart], how it reads them, how it restarts,
 * and how it reads in a log line and in `watchdog plan`.
 */
export interface RestartKind<A extends RestartConfig = RestartConfig> {
  kind: A["kind"];
  /** Every key it takes, its own first. */
  keys: string[];
  read(table: Reader, context: ReadContext): A | undefined;
  /** Never throws: a failure is a result with issued = false. */
  restart(service: ServiceConfig, action: A, context: RestartContext): Promise<RestartResult>;
  /** In words, for logs and dry runs: "systemctl restart blog.service". */
  describe(action: A): string;
  plan(action: A, shown: Shown): Record<string, unknown>;
  /** tend writes the service's pidfile, so the service must name one. */
  needsPidfile?: boolean;
  /** The systemd unit whose state (inactive, failed) a pass reads before restarting. */
  unit?(action: A): string;
  /** `watchdog stop`: stop the service its backend's way. Without it the kind cannot stop one. */
  stop?(service: ServiceConfig, action: A, context: RestartContext): Promise<RestartResult>;
}

export const defineRestart = <A extends RestartConfig>(kind: RestartKind<A>) => kind;
