// The one scheduler of per-service due times (core/schedule.ts), as a table: what a tick judges, what
// is due between ticks in the loop (a watched process gone, a failed probe's retry), and how long the
// loop may sleep. Pure: the states and the look at a process are given. (sleepFor's own table, found on
// a loaded machine, is in test/clock-steps.test.ts.)
import { expect, test } from "bun:test";
import type { ServiceConfig } from "../lib/config/types.ts";
import { dueInPass, dueNow, rescheduled, scheduleOf, untilRetry, TICK_MS } from "../lib/core/schedule.ts";
import { freshState, type ServiceState } from "../lib/core/state.ts";
import { SERVICE_FIXTURE } from "./helpers.ts";

const NOW = Date.parse("2026-12-06T03:00:00Z");
const INTERVAL = 60_000;
const service = (name: string, more: Partial<ServiceConfig> = {}): ServiceConfig => ({
  ...SERVICE_FIXTURE,
  name,
  retryIntervalMs: 10_000,
  ...more,
});
const failedAt = (at: number): Partial<ServiceState> => ({
  lastProbe: { ok: false, at, detail: "HTTP 502", latencyMs: 3 } as ServiceState["lastProbe"],
});
const watching = (pid: number): Partial<ServiceState> => ({ watch: { pid, ticks: `${pid}00` } });

const rows: {
  what: string;
  service: ServiceConfig;
  state: Partial<ServiceState>;
  watched: number[];
  retryAt: number | null;
  /** The last tick left it to the owner that held it (a verification). */
  left?: boolean;
}[] = [
  { what: "healthy, nothing watched: only the ticks", service: service("a"), state: {}, watched: [], retryAt: null },
  {
    what: "a failed probe: probed again retry_interval after it",
    service: service("b"),
    state: failedAt(NOW - 3000),
    watched: [],
    retryAt: NOW + 7000,
  },
  {
    what: "a retry_interval as long as the period: the next tick is as soon",
    service: service("c", { retryIntervalMs: INTERVAL }),
    state: failedAt(NOW),
    watched: [],
    retryAt: null,
  },
  {
    what: "left by the last tick to its owner, its probe failed since: due a period after it (a tick may be late)",
    service: service("c2", { retryIntervalMs: INTERVAL }),
    state: failedAt(NOW - 5000),
    watched: [],
    retryAt: NOW + INTERVAL - 5000,
    left: true,
  },
  {
    what: "left by the last tick, retry_interval shorter: retry_interval after it, as for any",
    service: service("c3"),
    state: failedAt(NOW - 5000),
    watched: [],
    retryAt: NOW + 5000,
    left: true,
  },
  {
    what: "left by the last tick, healthy since: only the ticks",
    service: service("c4", { retryIntervalMs: INTERVAL }),
    state: { lastProbe: { ok: true, at: NOW, detail: "HTTP 200", latencyMs: 3 } as ServiceState["lastProbe"] },
    watched: [],
    retryAt: null,
    left: true,
  },
  {
    what: "a process tend verified: due when it is gone",
    service: service("d"),
    state: watching(4242),
    watched: [4242],
    retryAt: null,
  },
  {
    what: "paused: nothing between ticks (the tick skips it, saying so)",
    service: service("e"),
    state: { ...failedAt(NOW), ...watching(7), paused: true },
    watched: [],
    retryAt: null,
  },
  {
    what: "disabled: nothing",
    service: service("f", { enabled: false }),
    state: { ...failedAt(NOW), ...watching(7) },
    watched: [],
    retryAt: null,
  },
];

for (const row of rows)
  test(`schedule: ${row.what}`, () => {
    const state = { ...freshState(), ...row.state };
    const left = new Set(row.left ? [row.service.name] : []);
    const schedule = scheduleOf([row.service], () => state, INTERVAL, undefined, left);
    expect(schedule.watched.map((entry) => entry.pid)).toEqual(row.watched);
    expect(schedule.retries.map((retry) => retry.at)).toEqual(row.retryAt === null ? [] : [row.retryAt]);
    // A tick judges every service, whatever is due between ticks.
    expect(dueInPass([row.service])).toEqual([row.service]);
  });

test("schedule: due now — a watched process gone, a retry come; none before its time", () => {
  const states: Record<string, Partial<ServiceState>> = {
    web: watching(100),
    api: failedAt(NOW - 10_000),
    db: failedAt(NOW - 2000),
    cache: watching(200),
  };
  const services = Object.keys(states).map((name) => service(name));
  const schedule = scheduleOf(services, (name) => ({ ...freshState(), ...states[name] }), INTERVAL);
  const gone = ({ pid }: { pid: number }) => pid === 100;
  expect(dueNow(schedule, NOW, gone).sort()).toEqual(["api", "web"]);
  expect(dueNow(schedule, NOW + 8000, () => false).sort()).toEqual(["api", "db"]);
  // Read again for db only (it was judged): its retry moves, the others stay as they were.
  const judged = scheduleOf(services, () => freshState(), INTERVAL, new Set(["db"]));
  const next = rescheduled(schedule, judged, new Set(["db"]));
  expect(next.retries.map((retry) => retry.name)).toEqual(["api"]);
  expect(next.watched.map((entry) => entry.name).sort()).toEqual(["cache", "web"]);
});

test("schedule: the wait for a retry — until it, at most retry_interval, a second after one found due", () => {
  const schedule = scheduleOf([service("api")], () => ({ ...freshState(), ...failedAt(NOW) }), INTERVAL);
  // Due in 10 s (tend's time); the monotonic clock reads 500 and nothing was found due before.
  expect(untilRetry(schedule, NOW, 500, -Infinity)).toBe(10_000);
  // The wall clock stepped back an hour: still at most retry_interval.
  expect(untilRetry(schedule, NOW - 3_600_000, 500, -Infinity)).toBe(10_000);
  // Found due at 500 and still not done (its lock held): looked at again a second later, not at once.
  expect(untilRetry(schedule, NOW + 20_000, 500, 500)).toBe(TICK_MS);
  // Nothing to retry: no timer for it.
  expect(
    untilRetry(
      scheduleOf([service("a")], () => freshState(), INTERVAL),
      NOW,
      0,
      -Infinity,
    ),
  ).toBe(Infinity);
});
