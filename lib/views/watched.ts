import { readdirSync } from "node:fs";
import type { Config, ServiceConfig } from "../config/types.ts";
import { statePaths } from "../state/dir.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import { tunnelService } from "../config/tunnel.ts";

/**
 * The configured services, then those judged outside the configuration (blogtunnel, from the
 * state it keeps in services/): status, stats and report show both.
 */
export function watchedServices(
  config: Config,
  read: StateReader = stateReader(config.watchdog.stateDir),
): ServiceConfig[] {
  const configured = new Set(config.services.map((service) => service.name));
  let names: string[] = [];
  try {
    names = readdirSync(statePaths(config.watchdog.stateDir).services);
  } catch {}
  const external = names
    .filter((file) => file.endsWith(".json") && !configured.has(file.slice(0, -5)))
    .flatMap((file) => {
      const name = file.slice(0, -5);
      const state = read(name);
      return state.tunnel ? [tunnelService(name, state.tunnel, config.defaults)] : [];
    });
  return [...config.services, ...external];
}
