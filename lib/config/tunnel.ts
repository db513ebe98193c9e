import type { HttpCheck } from "../checks/http.ts";
import type { TunnelRecord } from "../core/state.ts";
import type { ServiceConfig, Tunables } from "./types.ts";

/** blogtunnel as a service of the watch: the same check, rules and restart as any configured service. */
export function tunnelService(name: string, record: TunnelRecord, defaults: Tunables): ServiceConfig {
  const check: HttpCheck = {
    kind: "http",
    url: record.url,
    expect: null,
    anyResponse: false,
    failCodes: record.failCodes, // no answer (000) always fails
    contains: null,
    headers: {},
    timeoutMs: record.timeoutMs,
  };
  return {
    ...defaults,
    name,
    enabled: true,
    pidfile: null,
    tmux: record.pane?.target ?? null,
    unit: null,
    launchd: null,
    runit: null,
    check,
    tmuxSocket: record.pane?.socket ?? null,
    restart: record.pane
      ? { kind: "tmux", target: record.pane.target, run: record.pane.command, socket: record.pane.socket ?? null }
      : null,
    dependsOn: record.dependsOn ?? [],
    requiresDns: record.requiresDns,
    busy: null,
    memory: null,
    trackRestarts: false,
    failures: record.strikes,
    timeoutMs: record.timeoutMs,
  };
}
