import { existsSync } from "node:fs";
import { join } from "node:path";
import { runCommand, saidBy } from "./run.ts";

/** `systemctl show -p A,B UNIT` as a record; throws when systemctl cannot answer. */
export async function showUnit(unit: string, properties: string[]): Promise<Record<string, string>> {
  const result = await runCommand(["systemctl", "show", "-p", properties.join(","), "--", unit], { timeoutMs: 15_000 });
  if (result.error || result.exitCode !== 0) {
    throw new Error(`systemctl show ${unit}: ${result.error ?? (saidBy(result) || `exit ${result.exitCode}`)}`);
  }
  const values: Record<string, string> = {};
  for (const line of result.stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) values[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return values;
}

/** Looks like a unit name (blog.service, app@1.service, x.scope), not a tend service name. */
export const isUnitName = (name: string) => /\.(service|scope|socket|timer|target|mount|path|slice)$/.test(name);

/**
 * Is lingering on for `user` (logind starts their manager at boot and keeps it after they log
 * out, so their timers run)? logind keeps it as one file per user. null: no logind state here.
 */
export function lingering(user: string, logindState = "/var/lib/systemd"): boolean | null {
  if (!existsSync(logindState)) return null;
  return existsSync(join(logindState, "linger", user));
}
