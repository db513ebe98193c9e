import type { ServiceConfig } from "../config/types.ts";

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
