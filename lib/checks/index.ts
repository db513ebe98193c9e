import type { ServiceConfig } from "../config/types.ts";
import type { CheckConfig, CheckKind, ProbeContext, ProbeResult } from "./kind.ts";
import { command } from "./command.ts";
import { disk } from "./disk.ts";
import { http } from "./http.ts";
import { log } from "./log.ts";
import { processCheck } from "./process.ts";
import { tcp } from "./tcp.ts";
import { tls } from "./tls.ts";
import { nagios } from "./nagios.ts";

export type { CheckConfig, ProbeContext, ProbeResult } from "./kind.ts";

/** Every check kind, by the key that selects it in [service.check]. */
export const CHECKS: Record<string, CheckKind> = Object.fromEntries(
  ([http, tcp, command, processCheck, log, tls, disk, nagios] as unknown as CheckKind[]).map((kind) => [
    kind.kind,
    kind,
  ]),
);

export const checkKind = (check: CheckConfig): CheckKind => CHECKS[check.kind];

/** Ask the service to do its job, once, within the check's timeout. */
export const probe = (check: CheckConfig, context: ProbeContext = {}): Promise<ProbeResult> =>
  checkKind(check).probe(check, context);

/** The service's check in words, for `[START] watching NAME (...)`. */
export const describeCheck = (service: ServiceConfig) => checkKind(service.check).describe(service.check, service);
