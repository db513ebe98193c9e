// make battery: what watching 20 services costs a phone's battery, per hour, side by side in one run:
// tend's cron pass every 5 min, `watchdog run --interval 5m`, and monit 5.33 with a 5-minute cycle.
// usage: bun bench/battery.ts [--seconds 120]       (needs: build/tend, monit)
//
// CPU seconds per hour from /proc/PID/stat (utime + stime) and peak Pss from /proc/PID/smaps_rollup,
// sampled every 50 ms (every 2 ms for a pass). An hour is not waited out: each mode's parts are measured and scaled.
// - cron: 12 passes an hour; one pass's CPU is the median of 12 real passes (whole process, start-up in).
// - loop: two loops side by side for the window, one at --interval 1h (1 pass + a tick a second),
//   one at --interval 10s (window/10 passes + the same ticks): their difference is the pass, the rest the
//   ticks; an hour at 5m is 12 passes + 3600 ticks.
// - monit: `set daemon 10` for the window (window/10 cycles): a cycle's CPU, times 12 an hour at 300 s.
import { mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { join, resolve } from "node:path";
import minimist from "minimist";
import { killGroup, waitFor, answers } from "./common.ts";

const ROOT = resolve(import.meta.dir, "..");
const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
const WORK = "/tmp/tend-battery";
const args = minimist(process.argv.slice(2), { string: ["seconds"] });
const WINDOW_S = Number(args.seconds ?? 120);
const SERVICES = 20;
const TICK = 100; // USER_HZ

const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICK; // utime, stime
};
const pssKiB = (pid: number) => {
  try {
    return Number(/^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

/** Sample a process's Pss every `everyMs` until stopped; the peak in KiB. */
function peakPss(pid: number, everyMs = 50): { stop: () => number } {
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, pssKiB(pid))), everyMs);
  peak = Math.max(peak, pssKiB(pid));
  return { stop: () => (clearInterval(timer), peak) };
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const basePort = 20000 + Math.floor(Math.random() * 20000);
const ports = Array.from({ length: SERVICES }, (_, index) => basePort + index);
// The 20 services: one process answering on 20 ports (their cost is not what is measured).
const serverScript = join(WORK, "services.ts");
writeFileSync(
  serverScript,
  `for (const port of ${JSON.stringify(ports)})\n` +
    `  Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response("ok") });\n`,
);
const server = Bun.spawn([process.execPath, serverScript], { stdout: "ignore", stderr: "inherit", detached: true });
await waitFor(async () => (await Promise.all(ports.map(answers))).every(Boolean), 20_000, "the 20 services");

const config = (dir: string) => {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "tend.toml");
  const services = ports.map(
    (port, index) => `[[service]]\nname = "s${index}"\n[service.check]\nhttp = "http://127.0.0.1:${port}/"\n`,
  );
  writeFileSync(path, `[watchdog]\nstate_dir = "${dir}/state"\ninterval = "5m"\n\n${services.join("\n")}`);
  return path;
};

try {
  // cron: 12 real passes, each a whole process.
  const cronConfig = config(join(WORK, "cron"));
  const passCpu: number[] = [];
  let cronPeak = 0;
  for (let pass = 0; pass < 13; pass++) {
    const child = Bun.spawn([TEND, "watchdog", "pass", "--config", cronConfig], {
      stdout: "ignore",
      stderr: "inherit",
    });
    const pss = peakPss(child.pid, 2); // a pass lives tens of milliseconds
    await child.exited;
    cronPeak = Math.max(cronPeak, pss.stop());
    const usage = child.resourceUsage();
    // The first pass creates the state files: not a pass like the hour's others.
    if (pass > 0 && usage) passCpu.push((Number(usage.cpuTime.user) + Number(usage.cpuTime.system)) / 1e6);
  }
  const cronPass = passCpu.sort((a, b) => a - b)[Math.floor(passCpu.length / 2)];

  // loop: two loops for the window; monit: a 10 s cycle for the window. All side by side.
  const loopSlow = Bun.spawn([TEND, "watchdog", "run", "--interval", "1h", "--config", config(join(WORK, "loop-1h"))], {
    stdout: "ignore",
    stderr: "inherit",
    detached: true,
  });
  const loopFast = Bun.spawn(
    [TEND, "watchdog", "run", "--interval", "10s", "--config", config(join(WORK, "loop-10s"))],
    {
      stdout: "ignore",
      stderr: "inherit",
      detached: true,
    },
  );
  const monitDir = join(WORK, "monit");
  mkdirSync(monitDir, { recursive: true });
  const rc = join(monitDir, "monitrc");
  writeFileSync(
    rc,
    [
      "set daemon 10",
      `set pidfile ${monitDir}/monit.pid`,
      `set idfile ${monitDir}/monit.id`,
      `set statefile ${monitDir}/monit.state`,
      `set logfile ${monitDir}/monit.log`,
      ...ports.map(
        (port, index) =>
          `check host s${index} with address 127.0.0.1\n` +
          `  if failed port ${port} protocol http request "/" with timeout 5 seconds then alert`,
      ),
      "",
    ].join("\n"),
  );
  chmodSync(rc, 0o600);
  const monit = Bun.spawn(["monit", "-c", rc, "-I"], { stdout: "ignore", stderr: "ignore", detached: true });
  const peaks = [loopSlow, loopFast, monit].map((child) => peakPss(child.pid));
  await Bun.sleep(WINDOW_S * 1000);
  const [slowCpu, fastCpu, monitCpu] = [loopSlow, loopFast, monit].map((child) => cpuSeconds(child.pid));
  const [slowPeak, fastPeak, monitPeak] = peaks.map((peak) => peak.stop());
  for (const child of [loopSlow, loopFast, monit]) killGroup(child.pid);

  const fastPasses = WINDOW_S / 10;
  const loopPass = Math.max(0, (fastCpu - slowCpu) / (fastPasses - 1));
  const loopTick = Math.max(0, (slowCpu - loopPass) / WINDOW_S);
  const perHour = {
    cron: cronPass * 12,
    loop: loopPass * 12 + loopTick * 3600,
    monit: (monitCpu / (WINDOW_S / 10)) * 12,
  };
  const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
  const rows = [
    [
      "tend cron pass every 5 min",
      `${perHour.cron.toFixed(3)} s`,
      mib(cronPeak),
      `${(cronPass * 1000).toFixed(1)} ms a pass × 12`,
    ],
    [
      "tend watchdog run --interval 5m",
      `${perHour.loop.toFixed(3)} s`,
      mib(Math.max(slowPeak, fastPeak)),
      `${(loopPass * 1000).toFixed(1)} ms a pass × 12 + ${(loopTick * 1000).toFixed(2)} ms a tick × 3600`,
    ],
    [
      "monit 5.33, cycle 5 min",
      `${perHour.monit.toFixed(3)} s`,
      mib(monitPeak),
      `${((monitCpu / (WINDOW_S / 10)) * 1000).toFixed(1)} ms a cycle × 12`,
    ],
  ];
  console.log(`battery: 20 healthy HTTP services, measured over ${WINDOW_S} s and scaled to an hour\n`);
  console.log("| mode | CPU per hour | peak Pss | how |");
  console.log("| --- | --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
  const met = perHour.cron <= perHour.monit;
  console.log(
    `\ngoal: tend's cron mode ≤ monit's CPU per hour: ${met ? "met" : "not met"} ` +
      `(${(perHour.cron / perHour.monit).toFixed(2)}×)`,
  );
} finally {
  killGroup(server.pid);
}
