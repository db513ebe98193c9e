import type { ServiceConfig } from "../config/types.ts";
import { probe } from "../checks/index.ts";
import { mainProcess, probeContext } from "../os/pidsource.ts";
import type { ServiceState } from "../core/state.ts";

/**
 * Which of these services fail their check now (probed with their pid source, concurrently): the
 * dependencies of a service judged outside a pass (blogtunnel --depends-on), probed first as a pass
 * probes a service's dependencies first.
 */
export async function failingNow(services: ServiceConfig[], read: (name: string) => ServiceState): Promise<string[]> {
  const failing = await Promise.all(
    services.map(async (service) => {
      if (!service.enabled) return null;
      const main = await mainProcess(service, read(service.name));
      return (await probe(service.check, probeContext(main))).ok ? null : service.name;
    }),
  );
  return failing.filter((name): name is string => name !== null);
}

/** A failing dependency or an unresolvable required name: a restart cannot help. */
export async function waitReason(service: ServiceConfig, failingDependencies: string[]): Promise<string | null> {
  if (failingDependencies.length) return `dependency ${failingDependencies.join(", ")} is failing`;
  if (service.requiresDns) {
    const { lookup } = await import("node:dns/promises"); // not at start-up: most passes never resolve a name
    const resolved = await Promise.race([
      lookup(service.requiresDns).then(
        () => true,
        () => false,
      ),
      Bun.sleep(service.timeoutMs).then(() => false),
    ]);
    if (!resolved) return `${service.requiresDns} does not resolve (network down?)`;
  }
  return null;
}
