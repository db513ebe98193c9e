import { readdirSync } from "node:fs";
import type { Config, ServiceConfig } from "./types.ts";
import { statePaths } from "../state/dir.ts";
import { stateReader, type StateReader } from "../state/service-state.ts";
import { tunnelService } from "./tunnel.ts";
import { externalIsWatched } from "../core/health.ts";

/** A service judged outside the configuration, and when it was last judged. */
interface External {
  service: ServiceConfig;
  judgedAt: number | null;
  watched: boolean;
}

function externals(config: Config, read: StateReader, now: number): External[] {
  const configured = new Set(config.services.map((service) => service.name));
  let names: string[] = [];
  try {
    names = readdirSync(statePaths(config.watchdog.stateDir).services);
  } catch {}
  return names
    .filter((file) => file.endsWith(".json") && !configured.has(file.slice(0, -5)))
    .flatMap((file) => {
      const name = file.slice(0, -5);
      const state = read(name);
      if (!state.tunnel) return [];
      const judgedAt = state.verdict?.at ?? state.lastProbe?.at ?? null;
      const watched = externalIsWatched(judgedAt, state.tunnel.everyMs, config.watchdog.intervalMs, now);
      return [{ service: tunnelService(name, state.tunnel, config.defaults), judgedAt, watched }];
    });
}

/**
 * The configured services, then those judged outside the configuration (blogtunnel, from the
 * state it keeps in services/). With `now` (the live views: status, the page, metrics), only those
 * still being judged (core/health.ts externalIsWatched); without it (report, stats: history), all.
 */
export function watchedServices(
  config: Config,
  read: StateReader = stateReader(config.watchdog.stateDir),
  now: number | null = null,
): ServiceConfig[] {
  return servicesAt(config, read, now).watched;
}

/**
 * What status shows at `now`: the watched services, those judged outside the configuration that
 * nothing judges any more (said, not shown as rows), and every service (for one asked for by name).
 */
export function servicesAt(config: Config, read: StateReader, now: number | null) {
  const external = externals(config, read, now ?? 0);
  const live = external.filter((one) => now === null || one.watched);
  return {
    watched: [...config.services, ...live.map((one) => one.service)],
    unwatched: external
      .filter((one) => !live.includes(one))
      .map((one) => ({ name: one.service.name, judgedAt: one.judgedAt })),
    all: [...config.services, ...external.map((one) => one.service)],
  };
}
