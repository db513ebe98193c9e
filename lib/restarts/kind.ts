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

/** A service-level pid source key that names the same backend as a restart kind (`tmux =`, `unit =`, `launchd =`). */
type SourceKey = "tmux" | "unit" | "launchd" | "runit";

/** Where a service's main PID comes from when the service names no source of its own. */
export type ImpliedSource = { tmux: string; socket?: string | null } | { unit: string } | { runit: string };

/** Where a service's own output is, for `watchdog logs`. */
export type OutputSource =
  { file: string } | { pane: string; socket?: string | null; file?: string } | { unit: string } | { launchd: string };

/** What `tend doctor` asks a tool: its exit code and first line (zx, loaded by doctor only). */
export type ToolProbe = (command: string, ...args: string[]) => Promise<{ code: number; said: string }>;

/** A row of `tend doctor` for what a kind needs from the host. */
export interface DoctorRow {
  name: string;
  /** What does not work without it. */
  affects: string;
  check(
    probe: ToolProbe,
    env: Record<string, string | undefined>,
  ): Promise<{ status: "ok" | "missing" | "limited"; detail: string }>;
}

/**
 * One restart kind: the keys it takes in [service.restart], how it reads them, how it restarts,
 * and how it reads in a log line and in `watchdog plan`; and what it owns beside the restart:
 * the pid source it implies, where the service's output is, the programs it runs and its doctor row.
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
  /**
   * Its restart stops the old process itself (not a supervisor): one tend cannot see (another user's)
   * cannot be restarted, or a second copy would run beside it.
   */
  stopsTheProcess?: boolean;
  /**
   * The pid source the action implies when the service names none: restart.tmux alone makes its
   * pane one; restart.systemd's unit is where a pass reads ActiveState and NRestarts.
   */
  pidSource?(action: A): ImpliedSource;
  /** The service-level key of the same backend: a service with it needs this kind's tools too. */
  sourceKey?: SourceKey;
  /** Where the service's own output is (`watchdog logs`). */
  output?(action: A): OutputSource;
  /** The output file tend made for it (spawn's output, a pane's pipe): the pass keeps it under log_max_size. */
  ownOutput?(action: A): string;
  /** Programs it runs (from PATH). A kind that runs any has a doctor row. */
  tools: string[];
  /** The operator's programs the action names (an argv's first word): doctor resolves them on cron's PATH. */
  programs?(action: A): string[];
  doctor?: DoctorRow;
  /** The backend says the service is down on purpose (an inactive unit, `sv down`): why, or null. Skipped. */
  stoppedOnPurpose?(action: A): string | null;
  /** `watchdog stop`: stop the service its backend's way. Without it the kind cannot stop one. */
  stop?(service: ServiceConfig, action: A, context: RestartContext): Promise<RestartResult>;
}

export const defineRestart = <A extends RestartConfig>(kind: RestartKind<A>) => kind;
