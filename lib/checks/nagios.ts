import { humanDuration } from "../core/duration.ts";
import { runCommand } from "../os/run.ts";
import { oneLine } from "../core/sanitize.ts";
import { defineCheck, stopwatch, type Perfdata } from "./kind.ts";

type NagiosCheck = {
  kind: "nagios";
  argv: string[];
  timeoutMs: number;
};

/** The plugin's first line, its status word and perfdata aside: "TCP OK - 0.000 second response time". */
const firstLine = (stdout: string) => oneLine(stdout.split("\n")[0].split("|")[0].trim(), 200);

/**
 * Perfdata `time=0.12s` (check_http, check_tcp: the response time, in s or ms) as the probe's
 * latency; without it, the plugin's own run time.
 */
function perfdataLatencyMs(stdout: string): number | null {
  const perfdata = stdout.split("\n")[0].split("|")[1] ?? "";
  const match = /(?:^|\s)'?time'?=([\d.]+)(us|ms|s)?(?:;|\s|$)/.exec(perfdata);
  if (!match) return null;
  const value = Number(match[1]);
  const unit = match[2] ?? "s";
  return Math.round(unit === "s" ? value * 1000 : unit === "ms" ? value : value / 1000);
}

const STATES = ["OK", "WARNING", "CRITICAL", "UNKNOWN"];

/** At most this many perfdata items are kept from one answer (a plugin's output is outside text). */
const PERFDATA_LIMIT = 32;

/**
 * Every perfdata item of the plugin's first line (the Nagios plugin guidelines: `'label'=value[UOM];
 * [warn];[crit];[min];[max]`, space-separated, a label quoted when it holds spaces): kept as given.
 */
function parsePerfdata(stdout: string): Perfdata[] {
  const text = stdout.split("\n")[0].split("|").slice(1).join("|");
  const items: Perfdata[] = [];
  for (const match of text.matchAll(
    /('(?:[^']|'')+'|[^\s=']+)=(-?[\d.]+(?:[eE][-+]?\d+)?)([a-zA-Z%]*)((?:;[^;\s]*){0,4})/g,
  )) {
    const label = oneLine(match[1].replace(/^'|'$/g, "").replaceAll("''", "'"), 64);
    const value = Number(match[2]);
    if (!Number.isFinite(value) || !label) continue;
    const [warn = "", crit = "", min = "", max = ""] = match[4].split(";").slice(1);
    items.push({ label, value, uom: oneLine(match[3], 8), warn, crit, min, max });
    if (items.length >= PERFDATA_LIMIT) break;
  }
  return items;
}

/**
 * A monitoring-plugins / Nagios plugin, run without a shell: exit 0 healthy, 1 WARNING (healthy,
 * with a warning: a WARN line and 🟠 at most daily, no strike), 2 CRITICAL and 3 UNKNOWN fail. The
 * first line of its output is the probe's detail.
 */
export const nagios = defineCheck<NagiosCheck>({
  kind: "nagios",
  keys: ["nagios", "timeout"],
  read(table, { timeoutMs }) {
    const argv = table.argv("nagios");
    return argv && { kind: "nagios", argv, timeoutMs };
  },
  async probe(check) {
    const finish = stopwatch();
    const result = await runCommand(check.argv, { timeoutMs: check.timeoutMs, check: true });
    if (result.error) return finish(false, `cannot run ${check.argv[0]}: ${result.error}`);
    if (result.timedOut)
      return finish(false, `plugin did not finish within ${humanDuration(check.timeoutMs)}`, { timedOut: true });
    // Killed by a signal (no exit status): UNKNOWN, said as what happened, never "exit null".
    if (result.exitCode === null)
      return finish(
        false,
        `plugin killed by ${result.signal ?? "a signal"}` +
          (firstLine(result.stdout) ? `: ${firstLine(result.stdout)}` : ""),
      );
    const said = firstLine(result.stdout) || `exit ${result.exitCode}`;
    const code = result.exitCode;
    const seen = finish(code === 0 || code === 1, code in STATES ? said : `exit ${code} (not a plugin's 0-3): ${said}`);
    const latency = perfdataLatencyMs(result.stdout);
    const perfdata = parsePerfdata(result.stdout);
    return {
      ...seen,
      ...(perfdata.length ? { perfdata } : {}),
      ...(latency !== null ? { latencyMs: latency } : {}),
      ...(code === 1 ? { warning: said, warningEvent: "plugin-warning" as const } : {}),
    };
  },
  programs: (check) => [check.argv[0]],
  describe: (check) => `nagios plugin ${check.argv[0]}, timeout ${humanDuration(check.timeoutMs)}`,
  plan: (check, shown) => ({ "check.nagios": shown.argv(check.argv) }),
});
