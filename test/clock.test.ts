// tend's time (lib/core/clock.ts): a table of wall-clock steps and boots, what tend's time does,
// and what the decision then does with the times a state holds.
import { describe, expect, test } from "bun:test";
import type { ServiceConfig } from "../lib/config/types.ts";
import { applySteps, frameOf, recordOf, type ClockRecord, type ClockReading } from "../lib/core/clock.ts";
import { decide, type Facts } from "../lib/core/decide.ts";
import { recordRestart } from "../lib/core/restart-accounting.ts";
import { humanDuration } from "../lib/core/duration.ts";
import { downtimeMessage } from "../lib/core/events.ts";
import { freshState, type ServiceState } from "../lib/core/state.ts";
import type { ProbeResult } from "../lib/checks/index.ts";
import { SERVICE_FIXTURE } from "./helpers.ts";
import { readFileSync } from "node:fs";
import { uptimeMs } from "../lib/os/proc.ts";
import { libc } from "../lib/os/libc.ts";

const NOW = Date.parse("2026-12-01T12:00:00Z");
const SEC = 1000;
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const EPOCH_1970 = Date.parse("1970-01-01T00:00:10Z");
const BOOT = "d4f9d3fe-6e1d-465c-a807-52782f7d0a0f";

/** The record a pass at NOW left, 2 h into its boot (this boot began at NOW - 2 h; the one before ended at floor). */
const RECORD: ClockRecord = {
  atMs: NOW,
  bootMs: 2 * HOUR,
  bootId: BOOT,
  offsetMs: 0,
  startMs: NOW - 2 * HOUR + 20 * SEC,
  floorMs: NOW - 3 * HOUR,
  steps: [],
};
/** A reading `elapsed` after the record, the wall clock off by `stepMs`. */
const later = (elapsedMs: number, stepMs = 0, extra: Partial<ClockReading> = {}): ClockReading => ({
  wallMs: NOW + elapsedMs + stepMs,
  bootMs: 2 * HOUR + elapsedMs,
  bootId: BOOT,
  ...extra,
});

describe("tend's time across wall-clock steps: one row per step", () => {
  const rows: {
    name: string;
    record?: ClockRecord | null;
    reading: ClockReading;
    now: number;
    stepped?: number | null;
    moved?: number;
    newBoot?: boolean;
    behind?: number | null;
  }[] = [
    { name: "no step: the wall clock, a minute on", reading: later(MIN), now: NOW + MIN, stepped: null },
    // NTP slews at most 500 ppm: 40 s over a day apart is drift, not a step.
    { name: "slew within 500 ppm over a day is no step", reading: later(DAY, 40 * SEC), now: NOW + DAY + 40 * SEC },
    {
      name: "-1 h (an NTP step back)",
      reading: later(MIN, -HOUR),
      now: NOW + MIN - HOUR,
      stepped: -HOUR,
      moved: -HOUR,
    },
    { name: "+1 d (an NTP step on)", reading: later(MIN, DAY), now: NOW + MIN + DAY, stepped: DAY, moved: DAY },
    {
      name: "back to 1970 within a boot: times after the last boot's are kept (moved only down to its end)",
      reading: later(MIN, EPOCH_1970 - NOW - MIN),
      now: RECORD.floorMs + 1 + 2 * HOUR - 20 * SEC + MIN,
      stepped: EPOCH_1970 - NOW - MIN,
      moved: RECORD.floorMs + 1 - RECORD.startMs, // just above it: the last boot's times end at floorMs
    },
    {
      name: "a new boot (another boot id), the clock right: the wall clock",
      reading: { wallMs: NOW + 10 * MIN, bootMs: 40 * SEC, bootId: "another" },
      now: NOW + 10 * MIN,
      newBoot: true,
    },
    {
      name: "a new boot told by the boot-time clock going back (no boot id, macOS)",
      record: { ...RECORD, bootId: null },
      reading: { wallMs: NOW + 10 * MIN, bootMs: 40 * SEC, bootId: null },
      now: NOW + 10 * MIN,
      newBoot: true,
    },
    {
      name: "a phone booting at 1970: tend's time goes on from the last pass",
      reading: { wallMs: EPOCH_1970, bootMs: 40 * SEC, bootId: "another" },
      now: NOW,
      newBoot: true,
      behind: NOW - EPOCH_1970,
    },
    {
      name: "a new boot whose clock is a second behind the last pass (RTC drift): on from the last pass, no WARN",
      reading: { wallMs: NOW - SEC, bootMs: 40 * SEC, bootId: "another" },
      now: NOW,
      newBoot: true,
    },
    {
      name: "neither boot id nor boot-time clock: the wall clock, as before",
      record: { ...RECORD, bootId: null, bootMs: null },
      reading: { wallMs: NOW + MIN - HOUR, bootMs: null, bootId: null },
      now: NOW + MIN - HOUR,
    },
    { name: "no record (the first pass): the wall clock", record: null, reading: later(0), now: NOW },
  ];
  test.each(rows.map((row) => [row.name, row] as const))("%s", (_name, row) => {
    const frame = frameOf(row.record === undefined ? RECORD : row.record, row.reading);
    expect(frame.nowMs).toBe(row.now);
    expect(frame.steppedMs).toBe(row.stepped ?? null);
    expect(frame.newBoot).toBe(row.newBoot ?? false);
    expect(frame.behindMs).toBe(row.behind ?? null);
    if (row.moved !== undefined) {
      expect(frame.steps.at(-1)).toEqual({ seq: 1, fromMs: RECORD.startMs, byMs: row.moved });
      expect(frame.startMs).toBe(RECORD.startMs + row.moved);
    } else expect(frame.steps).toEqual([]);
  });

  test("a reboot's gap owed while the clock reads 1970: carried by passes and views until a step settles it", () => {
    const owing = { ...RECORD, owedGap: { fromMs: NOW - HOUR, toMs: NOW - HOUR } };
    const pass = frameOf(owing, later(MIN));
    expect({ owed: pass.owedGap, settled: pass.settledGap }).toEqual({ owed: owing.owedGap, settled: null });
    expect(recordOf(pass, pass.nowMs, later(MIN)).owedGap).toEqual(owing.owedGap);
    const view = frameOf(owing, later(MIN, DAY), { follow: false });
    expect({ owed: view.owedGap, settled: view.settledGap }).toEqual({ owed: owing.owedGap, settled: null });
    // The clock right at a boot: nothing owed.
    expect(frameOf(RECORD, { wallMs: NOW + 10 * MIN, bootMs: 40 * SEC, bootId: "another" }).owedGap).toBeNull();
  });

  test("a view (no follow) stays in the records' frame until a pass has followed the step", () => {
    const frame = frameOf(RECORD, later(MIN, DAY), { follow: false });
    expect(frame.nowMs).toBe(NOW + MIN);
    expect(frame.steps).toEqual([]);
  });

  test("1970 at boot, then network time: the step moves this boot's times, never the last boot's", () => {
    const atBoot = frameOf(RECORD, { wallMs: EPOCH_1970, bootMs: 40 * SEC, bootId: "phone" });
    const record = recordOf(atBoot, atBoot.nowMs + 5 * MIN, { wallMs: EPOCH_1970, bootMs: 40 * SEC, bootId: "phone" });
    expect(record).toMatchObject({ atMs: NOW + 5 * MIN, bootMs: 40 * SEC + 5 * MIN, offsetMs: NOW - EPOCH_1970 });
    // Network time arrives 10 minutes after boot: it is really NOW + 3 h (the phone was off 3 h).
    const set = frameOf(record, { wallMs: NOW + 3 * HOUR, bootMs: 40 * SEC + 10 * MIN, bootId: "phone" });
    expect(set.nowMs).toBe(NOW + 3 * HOUR);
    expect(set.offsetMs).toBe(0);
    expect(set.steps).toEqual([{ seq: 1, fromMs: NOW, byMs: 3 * HOUR - 10 * MIN }]);
    // The reboot's gap, owed while the clock read 1970, is settled by the step: from the last pass before
    // the cut to this boot's first pass (40 s after boot, which the step dates 3 h - 10 min after NOW).
    expect(atBoot.owedGap).toEqual({ fromMs: NOW, toMs: NOW });
    expect(record.owedGap).toEqual({ fromMs: NOW, toMs: NOW });
    expect(set.settledGap).toEqual({ fromMs: NOW, toMs: NOW + 3 * HOUR - 10 * MIN });
    expect(recordOf(set, set.nowMs, { wallMs: NOW + 3 * HOUR, bootMs: 0, bootId: "phone" }).owedGap).toBeNull();
    const lastBoot = { ...freshState(), lastHealthyAt: NOW - MIN, startedAt: NOW + MIN };
    const moved = applySteps(lastBoot, set.steps);
    expect(moved.lastHealthyAt).toBe(NOW - MIN); // the boot before: as it was
    expect(moved.startedAt).toBe(NOW + 3 * HOUR - 9 * MIN); // this boot's: 9 min before now, as before
  });
});

test("a step back soon after a reboot, then forward: the last boot's outage end and the reboot stay put", () => {
  // Found by the ground-truth harness (seed 119): the step back was held at the last boot's end
  // (floorMs), where the last boot's outage ends and the reboot's gap begins; the step forward then
  // moved those too, and the outage grew by the host's downtime.
  const floor = NOW - 6 * SEC; // the last pass before the power cut
  const record: ClockRecord = { ...RECORD, atMs: NOW, bootMs: 1 * SEC, startMs: NOW, floorMs: floor };
  const back = frameOf(record, { wallMs: NOW + SEC - 1054 * SEC, bootMs: 2 * SEC, bootId: BOOT });
  const afterBack = recordOf(back, back.nowMs, { wallMs: NOW + SEC - 1054 * SEC, bootMs: 2 * SEC, bootId: BOOT });
  const forward = frameOf(afterBack, { wallMs: NOW + 5 * SEC, bootMs: 5 * SEC, bootId: BOOT });
  const lastBoots: ServiceState = {
    ...freshState(),
    outages: [{ from: floor - 5 * SEC, to: floor, reason: "crash" }],
    gaps: [{ from: floor, to: NOW, reason: "unexpected_shutdown_or_reboot" }],
  };
  const moved = applySteps(lastBoots, forward.steps);
  expect(moved.outages[0]).toMatchObject({ from: floor - 5 * SEC, to: floor });
  expect(moved.gaps[0].from).toBe(floor);
  expect(forward.nowMs).toBeGreaterThan(floor);
});

test("a verification that outlived its pass's heartbeat before a reboot: no step of the new boot moves its end", () => {
  // Found by the ground-truth harness (seed 165): a restart's verification ended 20 ms after its pass's
  // heartbeat, then the power went. The new boot's step back was held at that heartbeat, its step
  // forward then moved the verification's outage end too, and the outage swallowed the host's downtime.
  const heartbeat = NOW; // the old boot's last pass
  const verified = NOW + 20; // its verification's end, recorded after the heartbeat
  const oldBoot: ClockRecord = { ...RECORD, atMs: heartbeat, bootId: "old-boot" };
  const boot = (wallMs: number, bootMs: number): ClockReading => ({ wallMs, bootMs, bootId: BOOT });
  const first = frameOf(oldBoot, boot(NOW + 5 * SEC, SEC), { recordedUntil: () => verified });
  expect(first.newBoot).toBe(true);
  expect(first.floorMs).toBe(verified);
  // A clock set a year ahead in some state is not the boot's end: an hour at most.
  expect(frameOf(oldBoot, boot(NOW + 5 * SEC, SEC), { recordedUntil: () => NOW + 365 * DAY }).floorMs).toBe(NOW + HOUR);
  const back = frameOf(
    recordOf(first, first.nowMs, boot(NOW + 5 * SEC, SEC)),
    boot(NOW + 6 * SEC - 1569 * SEC, 2 * SEC),
  );
  const afterBack = recordOf(back, back.nowMs, boot(NOW + 6 * SEC - 1569 * SEC, 2 * SEC));
  const forward = frameOf(afterBack, boot(NOW + 9 * SEC, 5 * SEC));
  const lastBoots: ServiceState = {
    ...freshState(),
    outages: [{ from: NOW - 2 * SEC, to: verified, reason: "crash" }],
    gaps: [{ from: heartbeat, to: first.nowMs, reason: "unexpected_shutdown_or_reboot" }],
  };
  const moved = applySteps(lastBoots, forward.steps);
  expect(moved.outages[0]).toMatchObject({ from: NOW - 2 * SEC, to: verified });
  expect(moved.gaps[0].from).toBe(heartbeat);
  // Without the verification's end, the step forward moves it (the bug this row keeps out).
  const unaware = frameOf(oldBoot, boot(NOW + 5 * SEC, SEC));
  const unawareBack = frameOf(
    recordOf(unaware, unaware.nowMs, boot(NOW + 5 * SEC, SEC)),
    boot(NOW + 6 * SEC - 1569 * SEC, 2 * SEC),
  );
  const unawareForward = frameOf(
    recordOf(unawareBack, unawareBack.nowMs, boot(NOW + 6 * SEC - 1569 * SEC, 2 * SEC)),
    boot(NOW + 9 * SEC, 5 * SEC),
  );
  expect(applySteps(lastBoots, unawareForward.steps).outages[0].to).not.toBe(verified);
});

describe("a step moves every time this boot recorded, once", () => {
  const step = { seq: 1, fromMs: NOW - HOUR, byMs: DAY };
  const at = NOW - 10 * MIN;
  // Every time field set to `at`: after the step none of them may still hold it (a new field that
  // applySteps forgets fails here).
  const everyTime = (when: number): ServiceState => ({
    ...freshState(),
    startedAt: when,
    restartTimes: [when],
    lastRestartAt: when,
    backoffUntil: when,
    pausedUntil: when,
    outage: { since: when, reason: "failing" },
    owedRecovery: { since: when, to: when, noDataMs: 5 },
    outages: [{ from: when, to: when, reason: "failing" }],
    gaps: [{ from: when, to: when, reason: "watchdog_not_running" }],
    lastProbe: { at: when, ok: true, detail: "HTTP 200", latencyMs: 5 },
    latencyLog: `${when},5,1 ${when},7,0,1`,
    latencyCount: 2,
    history: [{ at: when, what: "restart" }],
    firstSeenAt: when,
    lastEvent: { at: when, tag: "WARN", message: "x" },
    busySince: when,
    busyLoggedAt: when,
    slowSince: when,
    slowLoggedAt: when,
    remindedAt: when,
    givenUpAt: when,
    rss: [[when, 1024]],
    memoryWarnedAt: when,
    warnedAt: when,
    lastHealthyAt: when,
    firstHealthyAt: when,
    verdict: { kind: "ok", word: "healthy", reason: "healthy", until: when, at: when },
    degradedSaidAt: { "busy.port": when },
    certExpiresAt: NOW + 30 * DAY,
  });

  test("every time field of this boot moves; none is left behind; a certificate's expiry is the world's", () => {
    const moved = applySteps(everyTime(at), [step]);
    const text = JSON.stringify(moved);
    expect(text).not.toContain(String(at));
    expect(text.split(String(at + DAY)).length - 1).toBeGreaterThanOrEqual(30);
    expect(moved.certExpiresAt).toBe(NOW + 30 * DAY);
    expect(moved.clockStep).toBe(1);
    // Each field of freshState() that can hold a time is in everyTime (so it is covered above).
    const fields = Object.keys(everyTime(at)).filter((key) =>
      JSON.stringify(everyTime(at)[key as never]).includes(String(at)),
    );
    expect(fields.length).toBe(27);
  });

  test("taken once: a state that recorded the step is not moved again; times before the step's boot are kept", () => {
    const once = applySteps(everyTime(at), [step]);
    expect(applySteps(once, [step])).toEqual(once);
    const older = applySteps(everyTime(NOW - 2 * HOUR), [step]);
    expect(older.startedAt).toBe(NOW - 2 * HOUR);
    expect(older.clockStep).toBe(1);
  });
});

// The decision with a state a step left as it was (a write across the step, an older tend): never
// a grace, backoff or cooldown longer than configured, never a restart counted from the future.
const SERVICE: ServiceConfig = SERVICE_FIXTURE;
const FAIL: ProbeResult = { ok: false, detail: "HTTP 502", latencyMs: 40, timedOut: false };
const OK: ProbeResult = { ok: true, detail: "HTTP 200", latencyMs: 40, timedOut: false };
const facts = (extra: Partial<Facts> = {}): Facts => ({
  now: NOW,
  uptimeMs: DAY,
  bootDelayMs: 0,
  process: { running: true, startedAt: NOW - DAY, detail: "pid 42" },
  waitReason: null,
  ...extra,
});

describe("decide with times ahead of now (a state a step did not move)", () => {
  const service = { ...SERVICE, graceMs: 2 * MIN, failures: 1, backoffMs: 30 * SEC, backoffMaxMs: 5 * MIN };
  test("grace: a start recorded an hour ahead ends grace_ms from now, not an hour and grace_ms", () => {
    const state = { ...freshState(), startedAt: NOW + HOUR };
    const decision = decide(service, state, facts(), FAIL);
    expect(decision).toMatchObject({ kind: "skip", reason: "grace", until: NOW + 2 * MIN });
  });
  test("backoff: never longer than backoff_max from now", () => {
    const state = { ...freshState(), strikes: 1, backoffUntil: NOW + HOUR, lastRestartAt: NOW - HOUR };
    const decision = decide(service, state, facts(), FAIL);
    expect(decision).toMatchObject({ kind: "held", word: "backoff", until: NOW + 5 * MIN });
  });
  test("restart_window: restarts recorded ahead of now are no evidence: no false GIVEN-UP", () => {
    const ahead = [NOW + 10 * MIN, NOW + 20 * MIN, NOW + 30 * MIN];
    const state = { ...freshState(), strikes: 1, restartTimes: ahead, lastRestartAt: NOW - HOUR };
    const decision = decide({ ...service, maxRestarts: 3 }, state, facts(), FAIL);
    expect(decision.kind).toBe("restart");
  });
  test("cooldown: a restart recorded ahead holds for cooldown from now at most", () => {
    const state = { ...freshState(), strikes: 1, lastRestartAt: NOW + HOUR };
    const decision = decide({ ...service, cooldownMs: MIN }, state, facts(), FAIL);
    expect(decision).toMatchObject({ kind: "held", until: NOW + MIN });
  });
  test("no negative duration: a recovery and an outage measured from a time ahead of now say 0", () => {
    const state = { ...freshState(), outage: { since: NOW + HOUR, reason: "failing", notified: true } };
    const healed = decide(service, state, facts(), OK);
    const said = healed.log.map((line) => line.message).join("\n");
    expect(said).not.toMatch(/-\d+(\.\d+)?s\b/);
    expect(said).toContain("from 2026-12-01 12:00:00 UTC to 2026-12-01 12:00:00 UTC"); // never ending before it began
    expect(humanDuration(-3592_800)).toBe("0.0s");
    expect(downtimeMessage({ name: "a", reason: "failing", from: NOW, to: NOW - HOUR })).toMatch(/ for 0s /);
    const outcome = { issued: true, recovered: true, elapsedMs: -HOUR, detail: "HTTP 200", lastProbe: OK };
    const verified = recordRestart(service, freshState(), outcome, NOW, NOW);
    expect(verified.log[0].message).toBe("blog recovered 0.0s after restart (HTTP 200)");
  });
});

test("the host's uptime to the millisecond once libc is loaded, not sysinfo's whole seconds (seed 310)", async () => {
  expect(await libc()).not.toBeNull();
  // /proc/uptime (readable here, not on a phone) is the oracle, to its hundredth of a second.
  const before = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
  const read = uptimeMs();
  const after = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
  expect(read).toBeGreaterThanOrEqual(before);
  expect(read).toBeLessThanOrEqual(after + 10);
});
