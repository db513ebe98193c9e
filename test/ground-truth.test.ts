// The ground-truth harness's short seed (make truth runs the long ones): real services, a stopwatch
// probing them ten times as often as tend, a seeded schedule of kills, freezes, 502 spells, a hang
// from the start, a leak, a flapping upstream, a receiver answering 500, passes killed by SIGTERM or
// SIGKILL, a reboot-like stop of everything and a full state disk (seed 12 has both, in both modes;
// the wall-clock step is make truth's alone: it would move the deadlines of the files beside this
// one), and an operator's restart, stop/start and pause/resume among them; then downtime.log,
// report, status, --nagios, /metrics, /api/status, the metrics file, the heartbeat's {status}, the
// alerts Alertmanager's API got (seed 12 notifies it: every third seed does), the state's counts
// and what the commands said are held to what happened (bench/truth.ts). A disagreement
// prints the schedule to replay; its files are kept in build/truth-kept (nothing is left in /tmp).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { describeFault, runSeed } from "../bench/truth.ts";
import { ROOT } from "./helpers.ts";

for (const mode of ["cron", "loop"] as const) {
  const watch = mode === "cron" ? "cron-like passes" : "the loop";
  test(`ground truth, seed 12 under ${watch}: every view agrees with the stopwatch`, async () => {
    const result = await runSeed({
      seed: 12,
      mode,
      faultSeconds: 30,
      keep: join(ROOT, "build", "truth-kept"),
      say: console.log,
    });
    if (result.disagreements.length) {
      console.log(`replay: make truth SEED=12 MODE=${mode}`);
      for (const fault of result.faults) console.log(`  ${describeFault(fault)}`);
    }
    expect(result.disagreements).toEqual([]);
    // It saw something worth comparing: outages on both sides, restarts, messages.
    expect(result.counts.truthOutages).toBeGreaterThan(3);
    expect(result.counts.restarts).toBeGreaterThan(2);
  }, 180_000);
}
