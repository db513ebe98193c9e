import type { ServiceConfig } from "../config/types.ts";
import type { MainProcess } from "../os/pidsource.ts";
import type { ImpliedSource, OutputSource, RestartConfig, RestartKind, RestartResult } from "./kind.ts";
import { command } from "./command.ts";
import { launchd } from "./launchd.ts";
import { runit } from "./runit.ts";
import { spawn } from "./spawn.ts";
import { systemd } from "./systemd.ts";
import { tmux } from "./tmux.ts";

export type { DoctorRow, OutputSource, RestartConfig, RestartResult, ToolProbe } from "./kind.ts";

/** Every restart kind, by the key that selects it in [service.restart]. */
export const RESTARTS: Record<string, RestartKind> = Object.fromEntries(
  ([spawn, tmux, systemd, launchd, runit, command] as unknown as RestartKind[]).map((kind) => [kind.kind, kind]),
);

export const restartKind = (action: RestartConfig): RestartKind => RESTARTS[action.kind];

export const describeRestart = (action: RestartConfig) => restartKind(action).describe(action);

/** The pid source the service's restart action implies (restart.tmux's pane, restart.systemd's unit), if any. */
export const impliedSource = (action: RestartConfig | null): ImpliedSource | null =>
  action ? (restartKind(action).pidSource?.(action) ?? null) : null;

/** The systemd unit whose facts a pass reads: `unit`, or the one restart.systemd restarts. */
export function serviceUnit(service: ServiceConfig): string | null {
  if (service.unit) return service.unit;
  const implied = impliedSource(service.restart);
  return implied && "unit" in implied ? implied.unit : null;
}

/** Where the service's own output is: its restart kind's, else its pid source's; null when tend knows none. */
export function outputOf(service: ServiceConfig): OutputSource | null {
  const fromKind = service.restart ? restartKind(service.restart).output?.(service.restart) : undefined;
  if (fromKind) return fromKind;
  if (service.tmux) return { pane: service.tmux, socket: service.tmuxSocket ?? null };
  if (service.unit) return { unit: service.unit };
  if (service.launchd) return { launchd: service.launchd };
  return null;
}

/** The output file tend made for the service (spawn output, a tmux pane's pipe), which it rotates; else null. */
export const ownOutputOf = (service: ServiceConfig): string | null =>
  service.restart ? (restartKind(service.restart).ownOutput?.(service.restart) ?? null) : null;

/** The restart kinds a service relies on: its own, and the backend its pid source names. */
export const kindsUsedBy = (service: ServiceConfig): RestartKind[] =>
  Object.values(RESTARTS).filter(
    (kind) => service.restart?.kind === kind.kind || (kind.sourceKey !== undefined && service[kind.sourceKey] !== null),
  );

interface RestartOptions {
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
