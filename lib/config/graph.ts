import type { ServiceConfig } from "./types.ts";

/**
 * Duplicate names, unknown or self dependencies, and cycles. `slots` holds one entry per
 * [[service]] block (undefined where the block is invalid), so errors name the block's index.
 */
export function checkServiceGraph(slots: (ServiceConfig | undefined)[], errors: string[]) {
  const services = slots as ServiceConfig[]; // indexed like the blocks; undefined slots are skipped below
  const byName = new Map<string, number>();
  const byKey = new Map<string, number>(); // unique ignoring case: Web and web would share files on macOS
  slots.forEach((service, index) => {
    if (!service) return;
    const first = byKey.get(service.name.toLowerCase());
    if (first === undefined) byKey.set(service.name.toLowerCase(), index);
    else {
      const other = services[first].name;
      const how = other === service.name ? "" : ` (as "${other}": names are compared ignoring case)`;
      errors.push(`service[${index}].name: "${service.name}" is already used by service[${first}]${how}`);
    }
    byName.set(service.name, index);
  });
  slots.forEach((service, index) => {
    if (!service) return;
    for (const dependency of service.dependsOn) {
      if (dependency === service.name)
        errors.push(`service[${index}].depends_on: "${dependency}" is the service itself`);
      else if (!byName.has(dependency)) {
        errors.push(`service[${index}].depends_on: "${dependency}" is not a configured service`);
      }
    }
  });
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (name: string, trail: string[]): void => {
    if (done.has(name)) return;
    if (visiting.has(name)) {
      errors.push(`depends_on: cycle ${[...trail.slice(trail.indexOf(name)), name].join(" -> ")}`);
      return;
    }
    visiting.add(name);
    const service = services[byName.get(name)!];
    for (const dependency of service?.dependsOn ?? []) {
      if (byName.has(dependency) && dependency !== name) visit(dependency, [...trail, name]);
    }
    visiting.delete(name);
    done.add(name);
  };
  for (const service of slots) if (service) visit(service.name, []);
}
