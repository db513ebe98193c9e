// The page of a big host, rendered in the process whose loop runs the crash watch (`run --serve`):
// how long one render takes, and how late a timer due during it fires (the crash watch's tick).
// 100 services, each with the most its state keeps: 1000 outages, 1000 history entries, 1000
// latency samples. `bun bench/render.ts [services] [renders]`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../lib/config/load.ts";
import { freshState, EVENT_HISTORY, OUTAGE_HISTORY } from "../lib/core/state.ts";
import { stateReader, writeState } from "../lib/state/service-state.ts";
import { ensureStateDir } from "../lib/state/dir.ts";
import { startServer } from "../lib/views/serve.ts";
import { buildReport } from "../lib/views/report.ts";
import { collectStats } from "../lib/views/stats.ts";

const serviceCount = Number(process.argv[2] ?? 100);
const renders = Number(process.argv[3] ?? 10);
// `--warmup N`: N renders first, not counted (a serve that runs for hours: its JIT warm, as after its
// first requests); the first of all, which reads and parses every state, is reported on its own.
const warmupAt = process.argv.indexOf("--warmup");
const warmup = warmupAt === -1 ? 0 : Number(process.argv[warmupAt + 1]);
// `--typical`: a host as it usually is, not at its state's limits: a probe every 5 min for a day
// (288 samples), 10 outages and 20 history entries per service.
const typical = process.argv.includes("--typical");
const outages = typical ? 10 : OUTAGE_HISTORY;
const entries = typical ? 20 : EVENT_HISTORY;
const sampleCount = typical ? 288 : 1000;
const dir = mkdtempSync(join(tmpdir(), "tend-render-"));
const stateDir = join(dir, "state");
const lines = [`[watchdog]`, `state_dir = "${stateDir}"`];
for (let index = 0; index < serviceCount; index++)
  lines.push(`[[service]]`, `name = "s${index}"`, `check.http = "http://127.0.0.1:9/"`, `restart.command = ["true"]`);
writeFileSync(join(dir, "tend.toml"), lines.join("\n"));
const config = parseConfig(lines.join("\n"), join(dir, "tend.toml"));
ensureStateDir(stateDir);
const now = Date.now();
for (let index = 0; index < serviceCount; index++) {
  const state = freshState();
  state.firstSeenAt = now - 30 * 86_400_000;
  state.firstHealthyAt = state.firstSeenAt;
  for (let outage = 0; outage < outages; outage++) {
    const from = now - 7 * 86_400_000 + outage * 600_000;
    state.outages.push({ from, to: from + 60_000, reason: "failing", incident: outage % 3 === 0 });
  }
  for (let entry = 0; entry < entries; entry++)
    state.history.push({ at: now - 7 * 86_400_000 + entry * 600_000, what: entry % 2 ? "restart" : "recovered" });
  const samples = Array.from(
    { length: sampleCount },
    (_, sample) => `${now - 86_400_000 + Math.round((sample * 86_400_000) / sampleCount)},${20 + (sample % 50)},1`,
  );
  state.latencyLog = samples.join(" ");
  state.latencyCount = samples.length;
  writeState(stateDir, `s${index}`, state, { durable: false });
}

const serving = startServer(config, "127.0.0.1:0");
const times: number[] = [];
let bytes = 0;
const lags: number[] = [];
let worstLag = 0;
// A 10 ms timer, as the crash watch's 1 s tick but finer: how late it fires is what a render costs it.
let expected = performance.now() + 10;
const sampler = setInterval(() => {
  const at = performance.now();
  worstLag = Math.max(worstLag, at - expected);
  expected = at + 10;
}, 10);
let first = 0;
for (let render = 0; render < warmup + renders; render++) {
  worstLag = 0;
  const started = performance.now();
  const response = await fetch(serving.url);
  const body = await response.text();
  if (response.status !== 200 || !body.includes(`s${serviceCount - 1}`))
    throw new Error(`render failed: HTTP ${response.status}`);
  if (render === 0) first = performance.now() - started;
  if (render < warmup) continue;
  times.push(performance.now() - started);
  bytes = Buffer.byteLength(body);
  lags.push(worstLag);
}
clearInterval(sampler);
serving.stop();
// The baseline in the same run: the same views built in one go, as the page did before slicing; a
// timer due meanwhile waits all of it.
const whole: number[] = [];
for (let render = 0; render < renders; render++) {
  const started = performance.now();
  const read = stateReader(stateDir, { once: true });
  collectStats(config, [], read);
  buildReport(config, 86_400_000, Date.now(), 48, read);
  whole.push(performance.now() - started);
}
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(dir);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const worst = (values: number[]) => Math.max(...values);
if (process.env.JSON) {
  console.log(JSON.stringify({ bytes, render: median(times), first, lateness: median(lags) }));
  process.exit(0);
}
console.log(`page of ${serviceCount} services × ${outages} outages, ${renders} renders: ${bytes} bytes`);
console.log(
  `first render (every state read and parsed): ${first.toFixed(1)} ms; ${warmup} warm-up renders not counted`,
);
console.log(`| measure                             | median   | worst    |`);
console.log(`|-------------------------------------|----------|----------|`);
const row = (name: string, values: number[]) =>
  console.log(
    `| ${name.padEnd(35)} | ${median(values).toFixed(1).padStart(5)} ms | ${worst(values).toFixed(1).padStart(5)} ms |`,
  );
row("render (request to last byte)", times);
row("timer lateness during a render", lags);
row("same views in one go (the lateness)", whole);
