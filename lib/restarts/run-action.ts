import type { ServiceConfig } from "../config/types.ts";
import { humanDuration } from "../core/duration.ts";
import { runCommand, saidBy } from "../os/run.ts";
import { stopProcess } from "../os/signal.ts";
import { defineRestart, type RestartContext, type RestartResult } from "./kind.ts";

/**
 * Run a restart's argv (command, systemctl, launchctl): exit 0 means the restart was issued.
 * `full` says it for the log when `what` (stdout, notifications) says less.
 */
export async function runAction(
  argv: string[],
  what: string,
  service: ServiceConfig,
  full = what,
): Promise<RestartResult> {
  const result = await runCommand(argv, { timeoutMs: service.verifyTimeoutMs });
  if (result.exitCode === 0) return { issued: true, detail: what, ...(full !== what ? { full } : {}) };
  const why =
    result.error ??
    (result.timedOut ? `did not finish within ${humanDuration(service.verifyTimeoutMs)}` : `exit ${result.exitCode}`);
  const said = saidBy(result, { stdout: false });
  const failure = `: ${why}${said ? `: ${said}` : ""}`;
  return { issued: false, detail: what + failure, ...(full !== what ? { full: full + failure } : {}) };
}

/**
 * A restart kind that is one name (a unit, a label) handed to its manager's command:
 * `restart.KIND = "NAME"` runs argv(NAME); it reads as that command without the `--`.
 */
export function managerRestart<K extends string, F extends string>(
  kind: K,
  field: F,
  argv: (name: string) => string[],
) {
  type Action = { kind: K } & Record<F, string>;
  const describe = (action: Action) =>
    argv(action[field])
      .filter((arg) => arg !== "--")
      .join(" ");
  return defineRestart<Action>({
    kind,
    keys: [kind],
    read(table) {
      const name = table.string(kind);
      return name ? ({ kind, [field]: name } as Action) : undefined;
    },
    restart: (service, action) => runAction(argv(action[field]), describe(action), service),
    tools: [argv("")[0]],
    describe,
    plan: (action) => ({ [`restart.${kind}`]: action[field] }),
  });
}

/** Stop a verified process (TERM, stop_timeout, KILL; its group when it leads one): spawn and tmux. */
export async function stopCurrent(service: ServiceConfig, { current, sleep }: RestartContext): Promise<RestartResult> {
  if (current?.hidden)
    return { issued: false, detail: `${current.detail}: its identity cannot be checked, not signalled` };
  if (!current?.info || !current.running)
    return { issued: true, detail: `not running (${current?.detail ?? "no process"})` };
  const { forced } = await stopProcess(current.info, service.stopTimeoutMs, sleep);
  return { issued: true, detail: `stopped pid ${current.info.pid}${forced ? " with SIGKILL" : ""}` };
}
