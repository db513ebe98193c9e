// stats' advice, followed, never climbs (#37): a probe cut by a timeout is "more than" that timeout, never
// a latency of the timeout in force now, and advice rests only on what the current timeout would have seen.
import { expect, test } from "bun:test";
import { parseSamples, encodeSamples } from "../lib/core/latency.ts";
import type { LatencySample } from "../lib/core/state.ts";
import { serviceStats } from "../lib/views/stats.ts";
import { SERVICE_FIXTURE } from "./helpers.ts";

const withTimeout = (timeoutMs: number) => ({ ...SERVICE_FIXTURE, check: { ...SERVICE_FIXTURE.check, timeoutMs } });
/** 200 answers of 6 to 9 s under a timeout: those slower than it cut there, keeping it. */
const probes = (timeoutMs: number, from: number): LatencySample[] =>
  Array.from({ length: 200 }, (_, index) => {
    const ms = 6000 + (index % 31) * 100;
    return ms >= timeoutMs ? [from + index, timeoutMs, 0, 1, timeoutMs] : [from + index, ms, 1];
  });

test("the seed's 6-9 s answers: advice followed twice reaches a timeout above them, then stops", () => {
  const under5 = probes(5000, 0);
  const first = serviceStats(withTimeout(5000), under5);
  expect(first.suggested_timeout_ms).toBe(8000);
  // Followed: 8 s. The 5 s cuts say only "more than 5 s": no advice rests on them.
  const followed = serviceStats(withTimeout(8000), under5);
  expect(followed.suggested_timeout_ms).toBeNull();
  expect(followed.warning).toMatch(
    /not enough samples under the current timeout 8\.0s \(0; 200 probes cut by a shorter/,
  );
  expect(followed.p99_ms).toBe(5000); // shown as cut, never as 8 s
  // Under 8 s the answers above it are cut at 8 s: the advice moves on, once.
  const under8 = [...under5, ...probes(8000, 1000)];
  expect(serviceStats(withTimeout(8000), under8).suggested_timeout_ms).toBe(12_000);
  // Followed again: every answer now arrives; the shorter timeouts' cuts are not the tail. No advice.
  const under12 = [...under8, ...probes(12_000, 2000)];
  const settled = serviceStats(withTimeout(12_000), under12);
  expect(settled.warning).toBeNull();
  expect(settled.suggested_timeout_ms).toBeNull();
});

test("the history keeps each cut's timeout; samples of earlier versions (no cut) still read", () => {
  const log = encodeSamples([
    [1, 5000, 0, 1, 5000],
    [2, 40, 1],
    [3, 5000, 0, 1],
  ]);
  expect(log).toBe("1,5000,0,1,5000 2,40,1 3,5000,0,1");
  expect(parseSamples(log)).toEqual([
    [1, 5000, 0, 1, 5000],
    [2, 40, 1],
    [3, 5000, 0, 1],
  ]);
});

test("parseSamples reads what split, map and Number read: 20,000 logs, tend's and garbled", () => {
  // The oracle: the plain reading the scanner replaced (each entry split on commas, each field Number).
  const plain = (log: string) =>
    log
      .split(" ")
      .map((entry) => entry.split(",").map(Number))
      .filter((fields) => fields.length >= 3 && fields.length <= 5 && fields.every(Number.isFinite)) as LatencySample[];
  const pieces = ["1764000000000", "12", "0", "1", "007", "3.5", "-4", "1e3", "", "x", "Infinity", "0x1f", " ", ","];
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 20_000; round++) {
    const parts = Array.from({ length: Math.floor(next() * 12) }, () => pieces[Math.floor(next() * pieces.length)]);
    const joiners = parts.map(() => (next() < 0.6 ? "," : " "));
    const log = parts.map((part, index) => part + (index < parts.length - 1 ? joiners[index] : "")).join("");
    expect({ log, samples: parseSamples(log) }).toEqual({ log, samples: plain(log) });
  }
  expect(parseSamples("1764000000000,23,1 1764000300000,5000,0,1,5000")).toEqual([
    [1764000000000, 23, 1],
    [1764000300000, 5000, 0, 1, 5000],
  ]);
});
