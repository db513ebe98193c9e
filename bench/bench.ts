// make bench: tend against its peers, measured side by side in one run, printed as one table.
// usage: bun bench/bench.ts [--only P1,P3] [--runs N] [--results PATH] [--serve-minutes M (P13, 10)]
//        (needs: build/tend, hyperfine, curl, monit)
// Writes bench/RESULTS.md (bench/results.ts): this run's rows replace the same ids.
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync, existsSync } from "node:fs";
import { cpus, totalmem, release } from "node:os";
import { join, resolve } from "node:path";
import minimist from "minimist";
import { answers, asInstalled, killGroup, waitFor } from "./common.ts";
import { mergeResults, type ResultRow } from "./results.ts";
import { savedState } from "../lib/state/service-state.ts";

const ROOT = resolve(import.meta.dir, "..");
const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
const BUN = process.execPath;
const SERVICE = join(ROOT, "examples", "service.ts");
const PEER = join(ROOT, "bench", "peers", "watchdog.sh");
const WORK = "/tmp/tend-bench";
const args = minimist(process.argv.slice(2), { string: ["only", "runs", "results", "serve-minutes"] });
/** This run's start: its rows in bench/RESULTS.md say it. */
const startedAt = new Date().toISOString().slice(0, 16) + "Z";
const RUNS = Number(args.runs ?? 5);
const only = args.only ? String(args.only).split(",") : null;

/** A row of bench/RESULTS.md, before it is given this run's start. */
type Row = Omit<ResultRow, "run">;
const rows: Row[] = [];
const children: number[] = [];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const fmt = (seconds: number) => (seconds < 1 ? `${(seconds * 1000).toFixed(1)} ms` : `${seconds.toFixed(2)} s`);
const sleep = (ms: number) => Bun.sleep(ms);

function spawnDetached(argv: string[]) {
  const child = Bun.spawn(argv, { detached: true, stdout: "ignore", stderr: "ignore" });
  children.push(child.pid);
  return child;
}
async function startServer(port: number) {
  spawnDetached([BUN, SERVICE, String(port)]);
  await waitFor(() => answers(port), 10_000, `server on ${port}`);
}
/** Accepts connections and never answers. */
function silentListener(ports: number[]) {
  const script = join(WORK, "silent.js");
  writeFileSync(
    script,
    `for (const p of process.argv.slice(2)) require("node:net").createServer(() => {}).listen(Number(p), "127.0.0.1");`,
  );
  return spawnDetached([BUN, script, ...ports.map(String)]);
}
let nextPort = 19100;
const port = () => nextPort++;

/** hyperfine medians (seconds) of each command, in one run. */
function hyperfine(commands: string[], runs = RUNS, warmup = 1): number[] {
  const out = join(WORK, "hyperfine.json");
  const result = Bun.spawnSync(
    ["hyperfine", "-N", "--runs", String(runs), "--warmup", String(warmup), "--export-json", out, ...commands],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (result.exitCode !== 0) throw new Error(`hyperfine: ${result.stderr.toString()}`);
  return JSON.parse(readFileSync(out, "utf8")).results.map((r: { median: number }) => r.median);
}

function configFor(dir: string, services: { name: string; url: string }[], extra = "", serviceExtra = "") {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "tend.toml");
  writeFileSync(
    path,
    `[watchdog]\nstate_dir = "${dir}/state"\n${extra}\n` +
      services
        .map((s) => `[[service]]\nname = "${s.name}"\n${serviceExtra}\n[service.check]\nhttp = "${s.url}"\n`)
        .join("\n"),
  );
  const list = join(dir, "services.txt");
  writeFileSync(list, services.map((s) => `${s.name} ${s.url}`).join("\n") + "\n");
  return { config: path, list, state: join(dir, "peer-state") };
}

/** `watchdog serve` over 20 healthy services (one pass made their states): its URL and its RSS in MiB. */
async function serveTwenty(name: string) {
  const ports = Array.from({ length: 20 }, port);
  const { config } = configFor(
    join(WORK, name),
    ports.map((p, i) => ({ name: `s${i}`, url: `http://127.0.0.1:${p}/` })),
  );
  for (const p of ports) await startServer(p);
  Bun.spawnSync([TEND, "watchdog", "pass", "--config", config]);
  const servePort = port();
  const server = spawnDetached([TEND, "watchdog", "serve", "--listen", `127.0.0.1:${servePort}`, "--config", config]);
  const base = `http://127.0.0.1:${servePort}`;
  await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => null)) !== null, 10_000, "serve");
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) / 1024;
  return { server, base, rss };
}

const bench: Record<string, () => Promise<void>> = {
  async P1() {
    const ports = Array.from({ length: 10 }, port);
    for (const p of ports) await startServer(p);
    const { config, list, state } = configFor(
      join(WORK, "p1"),
      ports.map((p, i) => ({ name: `s${i}`, url: `http://127.0.0.1:${p}/` })),
    );
    const [tend, peer] = hyperfine(
      [`${TEND} watchdog pass --config ${config}`, `bash ${PEER} ${list} ${state}`],
      Math.max(RUNS, 10),
      2,
    );
    rows.push({
      id: "P1",
      what: "one pass, 10 healthy HTTP services",
      tend: fmt(tend),
      peer: `${fmt(peer)} (bash+curl)`,
      ratio: `${(tend / peer).toFixed(2)}×`,
      goal: "≤ 0.18× peer",
      met: tend / peer <= 0.18 ? "yes" : "NO",
    });
    // The same pass once the histories are full, as after ~8 h at 30 s (the latency history keeps 1,000).
    const stateDir = join(WORK, "p1", "state", "services");
    for (let i = 0; i < ports.length; i++) {
      const file = join(stateDir, `s${i}.json`);
      const state = savedState(join(WORK, "p1", "state"), `s${i}`); // its file and the observations since
      const last = state.lastProbe!.at;
      const samples = Array.from({ length: 1000 }, (_, k) => [last - (1000 - k) * 30_000, 2 + (k % 7), 1].join(","));
      Object.assign(state, { latencyLog: samples.join(" "), latencyCount: 1000 });
      writeFileSync(file, JSON.stringify(state) + "\n");
    }
    const [full] = hyperfine([`${TEND} watchdog pass --config ${config}`], Math.max(RUNS, 10), 2);
    rows.push({
      id: "P1b",
      what: "P1 with full histories (1,000 latency samples per service, as after ~8 h at 30 s)",
      tend: fmt(full),
      peer: `${fmt(peer)} (bash+curl, P1's)`,
      ratio: `${(full / peer).toFixed(2)}×`,
      goal: "measured",
      met: "-",
    });
  },
  async P2() {
    const ports = [port(), port(), port()];
    silentListener(ports);
    await sleep(300);
    const { config, list, state } = configFor(
      join(WORK, "p2"),
      ports.map((p, i) => ({ name: `hung${i}`, url: `http://127.0.0.1:${p}/` })),
      "",
      'timeout = "20s"\nfailures = 1000',
    );
    const [tend] = hyperfine([`${TEND} watchdog pass --config ${config}`], RUNS, 0);
    const [peer] = hyperfine([`bash ${PEER} ${list} ${state} 20`], 1, 0);
    rows.push({
      id: "P2",
      what: "one pass, 3 services that never answer, timeout 20 s",
      tend: fmt(tend),
      peer: `${fmt(peer)} (bash+curl, 1 run)`,
      ratio: `${(tend / 20).toFixed(3)}× 20 s`,
      goal: "≤ 1.1 × 20 s",
      met: tend <= 22 ? "yes" : "NO",
    });
  },
  async P3() {
    const tendTimes: number[] = [];
    const monitTimes: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      tendTimes.push(await recoveryTend(run));
      monitTimes.push(await recoveryMonit(run));
    }
    const tend = median(tendTimes);
    const monit = median(monitTimes);
    rows.push({
      id: "P3",
      what: "SIGSTOP freeze → answering again (loop 10 s, 3 failures, timeout 2 s)",
      tend: `${tend.toFixed(1)} s (${tendTimes.map((t) => t.toFixed(1)).join(", ")})`,
      peer: `${monit.toFixed(1)} s monit 5.33 (${monitTimes.map((t) => t.toFixed(1)).join(", ")})`,
      ratio: `${(tend / monit).toFixed(2)}×`,
      goal: "measured",
      met: "-",
    });
  },
  async P3b() {
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) times.push(await recoveryTend(run, 'retry_interval = "2s"'));
    const tend = median(times);
    rows.push({
      id: "P3b",
      what: 'the same with retry_interval = "2s" (failed probes retried every 2 s, still 3 strikes)',
      tend: `${tend.toFixed(1)} s (${times.map((t) => t.toFixed(1)).join(", ")})`,
      peer: "-",
      ratio: "-",
      goal: "≤ 15 s",
      met: tend <= 15 ? "yes" : "no",
    });
  },
  async P8() {
    // kill -9 the service, interval 1 h: only the loop's watch between passes can start it again.
    // P8: the loop started it (a spawn restart): its end wakes the loop. P8b: it was started by
    // hand (the pidfile names it): the loop looks at it once a second.
    for (const byHand of [false, true]) {
      const times: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const dir = join(WORK, `p8-${byHand}-${run}`);
        const p = port();
        mkdirSync(join(dir, "state"), { recursive: true });
        const config = join(dir, "tend.toml");
        writeFileSync(
          config,
          `[watchdog]\nstate_dir = "${dir}/state"\n[[service]]\nname = "web"\npidfile = "web.pid"\n` +
            `[service.check]\nhttp = "http://127.0.0.1:${p}/"\n` +
            `[service.restart]\nspawn = ["${BUN}", "${SERVICE}", "${p}"]\n`,
        );
        if (byHand) {
          const service = spawnDetached([BUN, SERVICE, String(p)]);
          writeFileSync(join(dir, "state", "web.pid"), `${service.pid}\n`);
        }
        const loop = spawnDetached([TEND, "watchdog", "run", "--interval", "1h", "--config", config]);
        await waitFor(() => answers(p), 30_000, "the service up");
        await sleep(1500 + Math.random() * 1000); // the loop watches it from its first pass on
        const pid = Number(readFileSync(join(dir, "state", "web.pid"), "utf8"));
        const killed = Date.now();
        process.kill(pid, "SIGKILL");
        await waitFor(
          async () => (await answers(p)) && readFileSync(join(dir, "state", "web.pid"), "utf8").trim() !== String(pid),
          30_000,
          "started again",
        );
        times.push((Date.now() - killed) / 1000);
        loop.kill("SIGTERM");
        await loop.exited;
        killGroup(Number(readFileSync(join(dir, "state", "web.pid"), "utf8")));
      }
      const median_ = median(times);
      rows.push({
        id: byHand ? "P8b" : "P8",
        what: byHand
          ? "kill -9 → answering again, loop mode (interval 1 h), a service started by hand: the look a second"
          : "kill -9 → answering again, loop mode (interval 1 h), a service the loop started: its end wakes it",
        tend: `${median_.toFixed(2)} s (${times.map((t) => t.toFixed(2)).join(", ")})`,
        peer: "-",
        ratio: "-",
        goal: "≤ 2 s + start-up",
        met: median_ <= 3 ? "yes" : "no",
      });
    }
  },
  async P9() {
    // The loop's idle cost between passes with 20 watched processes, no probes due. P9: the loop
    // started them (their ends wake it: no timer). P9b: started by hand, looked at once a second.
    for (const byHand of [false, true]) {
      const dir = join(WORK, `p9-${byHand}`);
      mkdirSync(join(dir, "state"), { recursive: true });
      const config = join(dir, "tend.toml");
      const services = Array.from(
        { length: 20 },
        (_, i) =>
          `[[service]]\nname = "s${i}"\npidfile = "s${i}.pid"\n[service.check]\nprocess = true\n` +
          `[service.restart]\nspawn = ["sleep", "3600"]\n`,
      );
      writeFileSync(config, `[watchdog]\nstate_dir = "${dir}/state"\n${services.join("")}`);
      if (byHand)
        for (let i = 0; i < 20; i++)
          writeFileSync(join(dir, "state", `s${i}.pid`), `${spawnDetached(["sleep", "3600"]).pid}\n`);
      const loop = spawnDetached([TEND, "watchdog", "run", "--interval", "1h", "--config", config]);
      await waitFor(() => existsSync(join(dir, "state", "heartbeat")), 60_000, "the first pass");
      const cpu = () => {
        const fields = readFileSync(`/proc/${loop.pid}/stat`, "utf8").split(") ")[1].split(" ");
        return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, ticks of 10 ms
      };
      await sleep(3000);
      const before = cpu();
      const started = Date.now();
      await sleep(30_000);
      const share = (cpu() - before) / (Date.now() - started);
      loop.kill("SIGTERM");
      await loop.exited;
      for (let i = 0; i < 20; i++) killGroup(Number(readFileSync(join(dir, "state", `s${i}.pid`), "utf8")));
      rows.push({
        id: byHand ? "P9b" : "P9",
        what: byHand
          ? "loop idle CPU, 20 watched processes started by hand (looked at once a second; 30 s between passes)"
          : "loop idle CPU, 20 watched processes the loop started (woken by their end; 30 s between passes)",
        tend: `${(share * 100).toFixed(2)} % of a core`,
        peer: "-",
        ratio: "-",
        goal: "< 1 % of a core",
        met: share < 0.01 ? "yes" : "no",
      });
    }
  },
  async P10() {
    // watchdog serve must not leak, and must answer quickly: 20 services, 10 clients at once.
    const { server, base, rss } = await serveTwenty("p10");
    const paths = ["/api/status", "/healthz", "/metrics", "/api/stats", "/api/report?since=1d"];
    const latencies: number[] = [];
    let sent = 0;
    const hammer = async (total: number, measure: boolean) => {
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (sent < total) {
            const path = measure ? "/api/status" : paths[sent % paths.length];
            sent++;
            const started = performance.now();
            await (await fetch(base + path)).arrayBuffer();
            if (measure) latencies.push(performance.now() - started);
          }
        }),
      );
    };
    // RSS at 1k answers, then after warm-up: the heap reaches its working size by ~50k answers
    // (measured to 300k: flat from there), so a leak shows as growth from 50k to 150k.
    await hammer(1000, false);
    const after1k = rss();
    await hammer(50_000, false);
    const warm = rss();
    await hammer(150_000, false);
    const after = rss();
    sent = 0;
    await hammer(2000, true);
    server.kill("SIGTERM");
    await server.exited;
    rows.push({
      id: "P10",
      what: "watchdog serve RSS after 50,000 → 150,000 requests (5 endpoints, 10 clients; at 1,000 in brackets)",
      tend: `${warm.toFixed(1)} → ${after.toFixed(1)} MiB (${after1k.toFixed(1)})`,
      peer: "-",
      ratio: `${after - warm >= 0 ? "+" : ""}${(after - warm).toFixed(2)} MiB`,
      goal: "growth ≤ 2 MiB",
      met: after - warm <= 2 ? "yes" : "no",
    });
    const sorted = [...latencies].sort((a, b) => a - b);
    const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    rows.push({
      id: "P11",
      what: "/api/status latency, 20 services, 10 concurrent clients (2,000 requests)",
      tend: `p50 ${p(0.5).toFixed(1)} ms, p99 ${p(0.99).toFixed(1)} ms`,
      peer: "-",
      ratio: "-",
      goal: "measured",
      met: "-",
    });
  },
  async P12() {
    // The page of a big host (bench/render.ts: 100 services, each with a day of probes, 1,000 outages
    // and events): its weight and how long it takes to build, in the serve process itself.
    // Warm: serve runs for hours; its first requests (the JIT's warm-up, every state read) are its start-up.
    const ran = Bun.spawnSync([BUN, join(ROOT, "bench", "render.ts"), "100", "20", "--typical", "--warmup", "10"], {
      env: { ...process.env, JSON: "1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    if (ran.exitCode !== 0) throw new Error(`bench/render.ts: ${ran.stderr.toString()}`);
    const { bytes, render, first } = JSON.parse(ran.stdout.toString().trim().split("\n").at(-1)!);
    const kb = bytes / 1000;
    rows.push({
      id: "P12",
      what:
        "page / with 100 services (a day of 5-min probes, 10 outages each): size, render (median of 20 " +
        "after 10 warm-up renders; the first, which reads every state, in brackets)",
      tend: `${kb.toFixed(0)} KB, ${render.toFixed(1)} ms (${first.toFixed(0)} ms)`,
      peer: "-",
      ratio: "-",
      goal: "≤ 250 KB and ≤ 10 ms (issue #42)",
      met: kb <= 250 && render <= 10 ? "yes" : "no",
    });
  },
  async P13() {
    // serve as a phone's browser tab keeps it: the page, 20 times a second, for --serve-minutes
    // (default 10), 20 services. RSS after the first minute (its working size) and its range after.
    const minutes = Number(args["serve-minutes"] ?? 10);
    const { server, base, rss } = await serveTwenty("p13");
    const started = performance.now();
    const samples: number[] = [];
    for (let sent = 0; performance.now() - started < minutes * 60_000; sent++) {
      const due = started + sent * 50;
      if (performance.now() < due) await sleep(due - performance.now());
      await (await fetch(`${base}/`)).arrayBuffer();
      if (performance.now() - started >= 60_000 && sent % 200 === 0) samples.push(rss());
    }
    server.kill("SIGTERM");
    await server.exited;
    const [low, high] = [Math.min(...samples), Math.max(...samples)];
    rows.push({
      id: "P13",
      what: `serve at 20 req/s on / for ${minutes} min (20 services): RSS from minute 1, low–high (first → last)`,
      tend: `${low.toFixed(1)}–${high.toFixed(1)} MiB (${samples[0].toFixed(1)} → ${samples.at(-1)!.toFixed(1)})`,
      peer: "-",
      ratio: `range ${(high - low).toFixed(1)} MiB`,
      goal: "flat: within ±5 MiB (issue #42)",
      met: high - low <= 10 && Math.abs(samples.at(-1)! - samples[0]) <= 5 ? "yes" : "no",
    });
  },
  async P4() {
    // The floor: a hello world compiled by the same Bun with the same flags.
    const hello = join(WORK, "hello");
    writeFileSync(`${hello}.ts`, 'console.log("hello");\n');
    const flags = ["--compile", "--minify", "--bytecode", "--format=esm", "--splitting", "--compile-jit-policy=64"];
    const build = (...extra: string[]) =>
      Bun.spawnSync([BUN, "build", ...flags, "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig", ...extra]);
    // Built like tend (Makefile): once, run to record its bytecode order, built again with it.
    build(`${hello}.ts`, "--outfile", hello);
    Bun.spawnSync([hello], { env: { ...process.env, BUN_BYTECODE_ORDER_OUT: `${hello}.order` } });
    build(`--bytecode-order=${hello}.order`, `${hello}.ts`, "--outfile", hello);
    asInstalled(hello);
    // 3 ms each: 200 runs, so the median of a ratio of two small numbers is not the machine's noise.
    const [version, dry, bash, floor] = hyperfine(
      [`${TEND} --version`, `${TEND} notify --dry-run --url http://127.0.0.1:9/x hello`, "bash -c true", hello],
      200,
      10,
    );
    rows.push({
      id: "P4c",
      what: "start-up vs the Bun floor (hello world, same Bun, same flags, same bytecode-order build)",
      tend: fmt(version),
      peer: `${fmt(floor)} (hello world)`,
      ratio: `${(version / floor).toFixed(2)}×`,
      goal: "≤ 1.25× floor",
      met: version / floor <= 1.25 ? "yes" : "no",
    });
    rows.push({
      id: "P4a",
      what: "start-up: tend --version",
      tend: fmt(version),
      peer: `${fmt(bash)} (bash -c true)`,
      ratio: `${(version / bash).toFixed(1)}×`,
      goal: "measured",
      met: "-",
    });
    rows.push({
      id: "P4b",
      what: "start-up: notify --dry-run",
      tend: fmt(dry),
      peer: `${fmt(bash)} (bash -c true)`,
      ratio: `${(dry / bash).toFixed(1)}×`,
      goal: "measured",
      met: "-",
    });
  },
  async P5() {
    let hits = 0;
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => (hits++, new Response("ok")) });
    const { config } = configFor(join(WORK, "p5"), [{ name: "web", url: `http://127.0.0.1:${server.port}/` }]);
    const loop = spawnDetached([TEND, "watchdog", "run", "--interval", "1ms", "--config", config]);
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${loop.pid}/status`, "utf8"))![1]) * 1024;
    await waitFor(() => hits >= 200, 120_000, "200 passes");
    const start = rss();
    const started = Date.now();
    await waitFor(() => hits >= 10_000, 900_000, "10,000 passes");
    const end = rss();
    const seconds = (Date.now() - started) / 1000;
    await waitFor(() => hits >= 20_000, 900_000, "20,000 passes");
    const later = rss();
    loop.kill("SIGTERM");
    await loop.exited;
    server.stop(true);
    const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)}`;
    const signed = (bytes: number) => `${bytes >= 0 ? "+" : ""}${(bytes / 1048576).toFixed(2)} MiB`;
    rows.push({
      id: "P5a",
      what: `loop mode at 1 ms, 10,000 passes (${(9800 / seconds).toFixed(0)} passes/s): RSS at pass 200 → 10,000`,
      tend: `${mib(start)} → ${mib(end)} MiB`,
      peer: "-",
      ratio: signed(end - start),
      goal: "growth ≤ 1 MB",
      met: end - start <= 1_000_000 ? "yes" : "NO",
    });
    rows.push({
      id: "P5b",
      what: "the same loop, RSS at pass 10,000 → 20,000 (after warm-up)",
      tend: `${mib(end)} → ${mib(later)} MiB`,
      peer: "-",
      ratio: signed(later - end),
      goal: "growth ≤ 1 MB",
      met: later - end <= 1_000_000 ? "yes" : "NO",
    });
  },
  async P6() {
    const sizes = [
      TEND,
      ...["linux-x64", "linux-arm64", "linux-arm64-android", "darwin-arm64"].map((t) =>
        join(ROOT, "build", "dist", `tend-${t}`),
      ),
    ]
      .filter((path) => existsSync(path))
      .map((path) => `${path.split("/").pop()} ${(statSync(path).size / 1048576).toFixed(1)} MiB`);
    const bash = statSync("/bin/bash").size + statSync(Bun.which("curl") ?? "/usr/bin/curl").size;
    rows.push({
      id: "P6",
      what: "binary size (Bun runtime included)",
      tend: sizes.join("; "),
      peer: `${(bash / 1048576).toFixed(1)} MiB (bash + curl, without libraries)`,
      ratio: "-",
      goal: "measured",
      met: "-",
    });
  },
  async P7() {
    const p = port();
    await startServer(p);
    const services = Array.from({ length: 500 }, (_, i) => ({ name: `svc${i}`, url: `http://127.0.0.1:${p}/s${i}` }));
    const { config, list, state } = configFor(join(WORK, "p7"), services, "concurrency = 32");
    const [tend, peer] = hyperfine(
      [`${TEND} watchdog pass --config ${config}`, `bash ${PEER} ${list} ${state}`],
      RUNS,
      1,
    );
    rows.push({
      id: "P7",
      what: "one pass, 500 services, concurrency 32",
      tend: fmt(tend),
      peer: `${fmt(peer)} (bash+curl)`,
      ratio: `${(tend / peer).toFixed(2)}×`,
      goal: "measured",
      met: "-",
    });
  },
};

/** tend in loop mode: freeze the service, time until it answers again. */
async function recoveryTend(run: number, serviceExtra = ""): Promise<number> {
  const dir = join(WORK, `p3-tend-${run}${serviceExtra ? "-retry" : ""}`);
  const p = port();
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "tend.toml");
  writeFileSync(
    config,
    `[watchdog]
state_dir = "${dir}/state"
interval = "10s"
[[service]]
name = "web"
pidfile = "web.pid"
failures = 3
cooldown = "0s"
${serviceExtra}
[service.check]
http = "http://127.0.0.1:${p}/"
timeout = "2s"
[service.restart]
spawn = ["${BUN}", "${SERVICE}", "${p}"]
`,
  );
  const loop = spawnDetached([TEND, "watchdog", "run", "--config", config]);
  await waitFor(() => answers(p), 30_000, "tend to start the service");
  await sleep(31_000 + Math.random() * 10_000); // past grace, at a random phase of the interval
  const pid = Number(readFileSync(join(dir, "state", "web.pid"), "utf8"));
  children.push(pid);
  const frozen = Date.now();
  process.kill(pid, "SIGSTOP");
  await waitFor(() => answers(p), 120_000, "tend to recover the service");
  const seconds = (Date.now() - frozen) / 1000;
  loop.kill("SIGTERM");
  await loop.exited;
  killGroup(Number(readFileSync(join(dir, "state", "web.pid"), "utf8")));
  killGroup(pid);
  return seconds;
}

/** monit, configured the way its manual says, on the same service. */
async function recoveryMonit(run: number): Promise<number> {
  const dir = join(WORK, `p3-monit-${run}`);
  const p = port();
  mkdirSync(dir, { recursive: true });
  const pidfile = join(dir, "web.pid");
  const rc = join(dir, "monitrc");
  writeFileSync(
    rc,
    `set daemon 10
set pidfile ${dir}/monit.pid
set idfile ${dir}/monit.id
set statefile ${dir}/monit.state
set logfile ${dir}/monit.log
check process web with pidfile ${pidfile}
  start program = "/bin/sh -c 'setsid ${BUN} ${SERVICE} ${p} >/dev/null 2>&1 & echo $! > ${pidfile}'"
  stop program = "/bin/sh -c 'kill -9 $(cat ${pidfile})'"
  if failed port ${p} protocol http request "/" with timeout 2 seconds for 3 cycles then restart
`,
  );
  chmodSync(rc, 0o600);
  const monit = spawnDetached(["monit", "-c", rc, "-I"]);
  await waitFor(() => answers(p), 60_000, "monit to start the service");
  await sleep(1000 + Math.random() * 10_000);
  const pid = Number(readFileSync(pidfile, "utf8"));
  children.push(pid);
  const frozen = Date.now();
  process.kill(pid, "SIGSTOP");
  await waitFor(() => answers(p), 180_000, "monit to recover the service");
  const seconds = (Date.now() - frozen) / 1000;
  monit.kill("SIGTERM");
  await monit.exited;
  killGroup(Number(readFileSync(pidfile, "utf8")));
  killGroup(pid);
  return seconds;
}

function machine(): string {
  const version = Bun.spawnSync([TEND, "--version"]).stdout.toString().trim();
  const tools = ["hyperfine --version", "curl --version", "monit -V", "bash --version"]
    .map(
      (cmd) =>
        `${cmd.split(" ")[0]} ${/\d+\.\d+(\.\d+)?/.exec(Bun.spawnSync(cmd.split(" ")).stdout.toString())?.[0] ?? "?"}`,
    )
    .join(", ");
  const cores = `${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB`;
  return `${cores}, Linux ${release()}, ${version} (Bun ${Bun.version}); ${tools}`;
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
asInstalled(TEND); // as its floor is (P4): a build's cached pages fall on neither
try {
  for (const [id, run] of Object.entries(bench)) {
    if (only && !only.includes(id)) continue;
    process.stderr.write(`running ${id} ...\n`);
    await run();
  }
} finally {
  for (const pid of children) killGroup(pid);
}
const table = [
  `machine: ${startedAt}, ${machine()}`,
  "",
  "| | what | tend | peer | ratio | goal | met |",
  "| --- | --- | --- | --- | --- | --- | --- |",
  ...rows.map((r) => `| ${r.id} | ${r.what} | ${r.tend} | ${r.peer} | ${r.ratio} | ${r.goal} | ${r.met} |`),
].join("\n");
console.log(table);
// bench/RESULTS.md: this run's rows in place of the same ids, the rest kept with their own runs.
const results = args.results ? resolve(String(args.results)) : join(ROOT, "bench", "RESULTS.md");
const previous = existsSync(results) ? readFileSync(results, "utf8") : "";
writeFileSync(results, mergeResults(previous, rows, startedAt, machine()));
console.log(`\n${results}: ${rows.length} row(s) from this run`);
