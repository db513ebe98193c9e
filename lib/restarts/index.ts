import type { ServiceConfig } from "../config/types.ts";
import type { MainProcess } from "../os/pidsource.ts";
import type { RestartConfig, RestartKind, RestartResult } from "./kind.ts";
import { command } from "./command.ts";
import { launchd } from "./launchd.ts";
import { spawn } from "./spawn.ts";
import { systemd } from "./systemd.ts";
import { tmux } from "./tmux.ts";

export type { RestartConfig, RestartResult } from "./kind.ts";

/** Every restart kind, by the key that selects it in [service.restart]. */
export const RESTARTS: Record<string, RestartKind> = Object.fromEntries(
  ([spawn, tmux, systemd, launchd, command] as unknown as RestartKind[]).map((kind) => [kind.kind, kind]),
);

export const restartKind = (action: RestartConfig): RestartKind => RESTARTS[action.kind];

export const describeRestart = (action: RestartConfig) => restartKind(action).describe(action);

/** The systemd unit whose facts a pass reads: `unit`, or the one restart.systemd restarts. */
export function serviceUnit(service: ServiceConfig): string | null {
  if (service.unit) return service.unit;
  return service.restart ? (restartKind(service.restart).unit?.(service.restart) ?? null) : null;
}

export interface RestartOptions {
  sleep?: (ms: number) => Promise<void>;
  env?: Record<string, string | undefined>;
}

/** Run the service's restart action. Never throws: a failure is a result with issued = false. */
export async function restartService(
  service: ServiceConfig,
  current: MainProcess | null,
  { sleep = Bun.sleep, env = process.env }: RestartOptions = {},
): Promise<RestartResult> {
  const action = service.restart;
  if (!action) return { issued: false, detail: "no restart action configured" };
  return restartKind(action).restart(service, action, { current, sleep, env });
}
