// An operator's command as an event of a service's life (core/operator-action.ts): one pure decision,
// a table of what each command does to a state and says. Its owner records it (test/operator.test.ts
// runs the commands themselves).
import { expect, test } from "bun:test";
import { operatorDecision, type OperatorAction } from "../lib/core/operator-action.ts";
import { freshState, type ServiceState } from "../lib/core/state.ts";

const NOW = Date.parse("2026-12-06T03:00:00Z");
const failing: ServiceState = {
  ...freshState(),
  strikes: 2,
  busySince: NOW - 5_000,
  outage: { since: NOW - 60_000, reason: "http_502", notified: true },
  lastProbe: { at: NOW - 5000, ok: false, detail: "HTTP 502", latencyMs: 3 },
};
const restarted: ServiceState = {
  ...freshState(),
  strikes: 3,
  givenUp: true,
  failedInRow: 4,
  backoffUntil: NOW + 60_000,
  restartTimes: [NOW - 1000],
  lastRestartAt: NOW - 1000,
  paused: true,
};

const rows: {
  what: string;
  state: ServiceState;
  action: OperatorAction;
  expect: Partial<ServiceState>;
  outages: number;
  lines: string[];
}[] = [
  {
    what: "a pause with no outage open",
    state: freshState(),
    action: { kind: "pause", forMs: null },
    expect: { paused: true, pausedUntil: null, outage: null },
    outages: 0,
    lines: ["SKIP web: paused until `watchdog resume`"],
  },
  {
    what: "a pause for an hour ends the open outage at its last failed probe (no data after it, never downtime)",
    state: failing,
    action: { kind: "pause", forMs: 3_600_000 },
    expect: { paused: true, pausedUntil: NOW + 3_600_000, outage: null, strikes: 2 },
    outages: 1,
    lines: [
      "DOWNTIME web was unavailable for 55s (http_502, from 2026-12-06 02:59:00 UTC to 2026-12-06 02:59:55 UTC)",
      "SKIP web: paused for 1h",
    ],
  },
  {
    what: "a stop keeps the outage before it, and forgets its process's strikes and busy spell",
    state: failing,
    action: { kind: "stop", detail: "killed pid 42" },
    expect: { paused: true, pausedUntil: null, outage: null, strikes: 0, busySince: null },
    outages: 1,
    lines: [
      "DOWNTIME web was unavailable for 55s (http_502, from 2026-12-06 02:59:00 UTC to 2026-12-06 02:59:55 UTC)",
      "SKIP web: stopped by the operator (killed pid 42); paused until `watchdog start web`",
    ],
  },
  {
    what: "resume: watched again, new until the next pass judges it",
    state: { ...restarted, pausedUntil: NOW + 5 },
    action: { kind: "resume" },
    expect: { paused: false, pausedUntil: null, verdict: null, givenUp: true },
    outages: 0,
    lines: ["START web: resumed"],
  },
  {
    what: "start of a service found running: resumed only",
    state: restarted,
    action: { kind: "resume-running", detail: "pid 7 runs" },
    expect: { paused: false, verdict: null },
    outages: 0,
    lines: ["START web: resumed (already running: pid 7 runs)"],
  },
  {
    what: "reset: strikes, backoff, restart history and given-up cleared; still paused",
    state: restarted,
    action: { kind: "reset" },
    expect: {
      strikes: 0,
      givenUp: false,
      failedInRow: 0,
      backoffUntil: null,
      restartTimes: [],
      lastRestartAt: null,
      verdict: null,
      paused: true,
    },
    outages: 0,
    lines: ["WARN web: reset by the operator: strikes, backoff, restart history and given-up cleared"],
  },
];

for (const row of rows)
  test(`operator: ${row.what}`, () => {
    const { next, log, said } = operatorDecision("web", row.state, row.action, NOW);
    expect(next).toMatchObject(row.expect);
    expect(log.map((line) => `${line.tag} ${line.message}`)).toEqual(row.lines);
    expect(log.at(-1)!.message).toBe(`web: ${said}`);
    expect(next.outages.length - row.state.outages.length).toBe(row.outages);
    // As measured: to its last failed probe (tend saw no more of it), not to the command's time.
    if (row.outages)
      expect(next.outages.at(-1)).toEqual({ from: NOW - 60_000, to: NOW - 5000, reason: "http_502", incident: true });
    // Paused by a pause or a stop: the word every view shows.
    if (row.action.kind === "pause" || row.action.kind === "stop") expect(next.verdict?.word).toBe("paused");
    // Never a notification: the operator knows what they did.
    expect(log.filter((line) => line.event)).toEqual([]);
    // Pure: the state given is not changed.
    expect(row.state.outages).toEqual([]);
  });

test("operator: a restart of a process found gone: a crash outage since last seen alive, not before the boot", () => {
  const healthy: ServiceState = { ...freshState(), lastHealthyAt: NOW - 4000 };
  const gone = operatorDecision("web", healthy, { kind: "restart-gone", bootAt: NOW - 3_600_000 }, NOW);
  expect(gone.next.outage).toEqual({ since: NOW - 4000, reason: "crash" });
  expect(gone.log).toEqual([]); // its RESTART line ("manual restart") says it
  // Last healthy before the host booted: down from the boot (the power-off is the host's downtime).
  expect(operatorDecision("web", healthy, { kind: "restart-gone", bootAt: NOW - 1000 }, NOW).next.outage).toEqual({
    since: NOW - 1000,
    reason: "crash",
  });
  // Down already (failing): that outage goes on, its reason kept.
  const failingGone = operatorDecision("web", failing, { kind: "restart-gone", bootAt: 0 }, NOW);
  expect(failingGone.next.outage).toEqual(failing.outage);
  // Stopped or paused by the operator: not a crash.
  expect(operatorDecision("web", restarted, { kind: "restart-gone", bootAt: 0 }, NOW).next).toBe(restarted);
});
