import { viewOf, WORDS, type StateWord } from "./verdict.ts";
import type { ServiceState } from "./state.ts";

/** What each metric is: name, type, help. */
const METRICS = [
  [
    "tend_service_up",
    "gauge",
    "0 when the pass judged the service down (at N strikes, restarting, backoff, given-up), else 1; watched only",
  ],
  ["tend_service_state", "gauge", "1 for the service's current state"],
  ["tend_service_slow", "gauge", "1 while healthy answers are slower than slow_above"],
  ["tend_service_strikes", "gauge", "consecutive failed probes"],
  ["tend_service_restarts_total", "counter", "restarts performed by tend"],
  ["tend_service_recoveries_total", "counter", "verified restarts, by result"],
  ["tend_probe_duration_seconds", "gauge", "duration of the last probe"],
  ["tend_service_auto_restarts_total", "counter", "restarts systemd did on its own (NRestarts increases)"],
  ["tend_tls_cert_expiry_timestamp_seconds", "gauge", "unix time the TLS check's peer certificate expires"],
  ["tend_plugin_perfdata", "gauge", "each perfdata item a check.nagios plugin gave in its last answer"],
  ["tend_last_pass_timestamp_seconds", "gauge", "unix time of the last completed watchdog pass"],
] as const;

const label = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/** A service's row of the metrics: its state and the word every view shows for it (disabled included). */
export const metricsRow = (service: { name: string; enabled: boolean }, state: ServiceState) => ({
  name: service.name,
  state,
  word: viewOf(service.enabled, state.verdict).word,
});

/**
 * Prometheus text exposition (node_exporter textfile collector) for every service's state. Each
 * service's series carries `instance`: the host name tend's Alertmanager path gives its alerts too,
 * kept by the shipped scrape config (`honor_labels: true`), so both paths name a host alike.
 */
export function renderMetrics(
  services: { name: string; state: ServiceState; word: StateWord }[],
  passAt: number,
  instance: string,
): string {
  const samples: Record<string, string[]> = Object.fromEntries(METRICS.map(([name]) => [name, []]));
  for (const { name, state, word } of services) {
    const service = `instance="${label(instance)}",service="${label(name)}"`;
    // Not watched (disabled, paused, stopped on purpose) or never judged: no `up` series, so an `up == 0` alert
    // stays quiet. Up or not is what the pass decided (its recorded verdict), never the raw last probe.
    const { up } = WORDS[word]; // the one table: a strike below N is still up (a blip must not page)
    if (up !== null) samples.tend_service_up.push(`tend_service_up{${service}} ${up}`);
    samples.tend_service_state.push(`tend_service_state{${service},state="${word}"} 1`);
    if (up !== null) samples.tend_service_slow.push(`tend_service_slow{${service}} ${word === "slow" ? 1 : 0}`);
    samples.tend_service_strikes.push(`tend_service_strikes{${service}} ${state.strikes}`);
    samples.tend_service_restarts_total.push(`tend_service_restarts_total{${service}} ${state.restartsTotal}`);
    samples.tend_service_recoveries_total.push(
      `tend_service_recoveries_total{${service},result="ok"} ${state.recoveriesOk}`,
      `tend_service_recoveries_total{${service},result="failed"} ${state.recoveriesFailed}`,
    );
    if (state.lastProbe)
      samples.tend_probe_duration_seconds.push(
        `tend_probe_duration_seconds{${service}} ${state.lastProbe.latencyMs / 1000}`,
      );
    samples.tend_service_auto_restarts_total.push(`tend_service_auto_restarts_total{${service}} ${state.autoRestarts}`);
    for (const item of state.lastProbe?.perfdata ?? [])
      samples.tend_plugin_perfdata.push(
        `tend_plugin_perfdata{${service},label="${label(item.label)}",uom="${label(item.uom)}"} ${item.value}`,
      );
    if (typeof state.certExpiresAt === "number")
      samples.tend_tls_cert_expiry_timestamp_seconds.push(
        `tend_tls_cert_expiry_timestamp_seconds{${service}} ${Math.floor(state.certExpiresAt / 1000)}`,
      );
  }
  samples.tend_last_pass_timestamp_seconds.push(`tend_last_pass_timestamp_seconds ${Math.floor(passAt / 1000)}`);
  return (
    METRICS.map(([name, type, help]) =>
      [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples[name]].join("\n"),
    ).join("\n") + "\n"
  );
}
