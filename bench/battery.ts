// make battery: what watching 20 services costs a phone's battery, per hour, side by side in one run:
// tend's cron pass every 5 min, `watchdog run --interval 5m`, and monit 5.33 with a 5-minute cycle.
// usage: bun bench/battery.ts [--seconds 120]       (needs: build/tend, monit)
//
// CPU seconds per hour from /proc/PID/stat (utime + stime) and peak Pss from /proc/PID/smaps_rollup,
// sampled every 50 ms (every 2 ms for a pass). An hour is not waited out: each mode's parts are measured and scaled.
// - cron: 12 passes an hour; one pass's CPU is the median of 12 real passes (whole process, start-up in).
// - loop: two loops side by side for the window (from 5 s in), one at --interval 1h (a tick a second),
//   one at --interval 10s (window/10 passes + the same ticks): their difference is the pass, the first
//   the ticks; an hour at 5m is 12 passes + 3600 ticks.
// - monit: `set daemon 10` for the window (window/10 cycles): a cycle's CPU, times 12 an hour at 300 s.
// - the runtime's floor, measured like a pass: a binary compiled with the Makefile's flags that does
//   nothing, one that only GETs the 20 services with the http check's own client (lib/os/http1.ts;
//   no state, no config, no log), and one that GETs them with Bun's `fetch`. No tend pass can cost
//   less than the cheaper of the last two. A fourth also takes flock(2) through bun:ffi, as every pass
//   must (SPEC: locks are flock(2); Bun has no flock but bun:ffi's): what a pass cannot go below.
// - the cron passes again without JSC's MarkedBlock warm-up thread (BUN_JSC_useWarmUpMarkedBlocks=0, which
//   only the environment sets): what of a pass is that helper's, which the floors never start.
// - a phone's /data: the cron passes again with the state dir on ext4 mounted noauto_da_alloc (a loop
//   mount: root), where every whole state write is fsynced; with the KiB a pass writes to the device.
// - wake-ups a second: the context switches of all the process's threads (voluntary and not, from
//   /proc/PID/task/*/status) over the window, divided by it: each is a sleep ended (a timer, a
//   thread woken) or a preemption. Between passes, the 1 h loop's (and from 30 s in: the steady state,
//   once the pass's worker threads have ended); monit's over its 10 s cycles.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { join, resolve } from "node:path";
import minimist from "minimist";
import { asInstalled, killGroup, waitFor, answers } from "./common.ts";

const ROOT = resolve(import.meta.dir, "..");
const TEND = process.env.TEND_BIN ?? join(ROOT, "build", "tend");
const WORK = "/tmp/tend-battery";
const args = minimist(process.argv.slice(2), { string: ["seconds"] });
const WINDOW_S = Number(args.seconds ?? 120);
// A whole number of 10 s passes and monit cycles in the window.
if (!Number.isInteger(WINDOW_S / 10) || WINDOW_S < 30)
  throw new Error(`--seconds ${args.seconds}: a multiple of 10, ≥ 30`);
const WARMUP_S = 5;
const SETTLE_S = 25;
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

/** Context switches of each thread of a process so far (each ends in a wake-up), by thread id. */
const switches = (pid: number) => {
  const byThread = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, "utf8");
      let total = 0;
      for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) total += Number(match[1]);
      byThread.set(task, total);
    } catch {
      // the thread ended between the listing and the read: its switches are gone with it
    }
  }
  return byThread;
};
/** The switches between two looks: each thread's since the first (all of a thread born since). */
const switchesBetween = (before: Map<string, number>, after: Map<string, number>) =>
  [...after].reduce((sum, [task, count]) => sum + count - (before.get(task) ?? 0), 0);

/** Sample a process's Pss every `everyMs` until stopped; the peak in KiB. */
function peakPss(pid: number, everyMs = 50): { stop: () => number } {
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, pssKiB(pid))), everyMs);
  peak = Math.max(peak, pssKiB(pid));
  return { stop: () => (clearInterval(timer), peak) };
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
asInstalled(TEND);
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

interface OneShot {
  argv: string[];
  env?: Record<string, string>;
}

/**
 * Short-lived commands run 13 times each, taking turns (one run of each, then the next round): the median
 * CPU seconds of each one's last 12, and its peak Pss. Taking turns puts whatever the machine does
 * meanwhile on all of them alike: measured one after another, the first block (tend's passes, while the
 * 20 services' process had just started) read 72 ms a pass where the same binary read 56 a minute later.
 */
async function oneShots(commands: OneShot[]): Promise<{ cpu: number; peak: number }[]> {
  const cpu: number[][] = commands.map(() => []);
  const peak = commands.map(() => 0);
  for (let run = 0; run < 13; run++) {
    for (const [index, { argv, env = {} }] of commands.entries()) {
      const child = Bun.spawn(argv, { stdout: "ignore", stderr: "inherit", env: { ...process.env, ...env } });
      const pss = peakPss(child.pid, 2); // a pass lives tens of milliseconds
      await child.exited;
      peak[index] = Math.max(peak[index], pss.stop());
      const usage = child.resourceUsage();
      // The first pass creates the state files: not a pass like the hour's others.
      if (run > 0 && usage) cpu[index].push((Number(usage.cpuTime.user) + Number(usage.cpuTime.system)) / 1e6);
    }
  }
  return commands.map((_, index) => ({
    cpu: cpu[index].sort((a, b) => a - b)[Math.floor(cpu[index].length / 2)],
    peak: peak[index],
  }));
}

/** The runtime's floor: `source` compiled with the binary's own flags (Makefile FLAGS, less the ordering). */
function floorBinary(name: string, source: string): string {
  const script = join(WORK, `${name}.ts`);
  const binary = join(WORK, name);
  writeFileSync(script, source);
  const flags = ["--compile", "--minify", "--bytecode", "--format=esm", "--no-compile-autoload-dotenv"];
  flags.push("--no-compile-autoload-bunfig", "--compile-jit-policy=64");
  const built = Bun.spawnSync([process.execPath, "build", ...flags, script, "--outfile", binary], { stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`bun build ${name}: ${built.stderr.toString()}`);
  asInstalled(binary); // as tend is: a build's cached pages fall on neither
  return binary;
}

type PhoneData = { measured: true; cpu: number; peak: number; kibPerPass: number } | { measured: false; why: string };

/** 13 cron passes (the first creates the states) with the state dir on a loop-mounted ext4 noauto_da_alloc. */
async function phoneDataPasses(config: (dir: string) => string): Promise<PhoneData> {
  const image = join(WORK, "phone-data.img");
  const mount = join(WORK, "phone-data");
  mkdirSync(mount, { recursive: true });
  const run = (argv: string[]) => Bun.spawnSync(argv, { stderr: "pipe" });
  if (process.getuid?.() !== 0) return { measured: false, why: "a loop mount needs root" };
  writeFileSync(image, "");
  const made = run(["sh", "-c", `truncate -s 128M '${image}' && mkfs.ext4 -q '${image}'`]);
  if (made.exitCode !== 0) return { measured: false, why: `mkfs.ext4: ${made.stderr.toString().trim()}` };
  const mounted = run(["mount", "-o", "loop,noauto_da_alloc", image, mount]);
  if (mounted.exitCode !== 0) return { measured: false, why: `mount -o loop: ${mounted.stderr.toString().trim()}` };
  try {
    const device = run(["findmnt", "-n", "-o", "SOURCE", mount]).stdout.toString().trim().split("/").at(-1);
    /** Sectors written to the loop device so far, after a sync of its file system. */
    const written = () => {
      run(["sync", "-f", mount]);
      return Number(readFileSync(`/sys/block/${device}/stat`, "utf8").trim().split(/\s+/)[6]);
    };
    const argv = [TEND, "watchdog", "pass", "--config", config(join(mount, "tend"))];
    Bun.spawnSync(argv, { stdout: "ignore" });
    const before = written();
    const [{ cpu, peak }] = await oneShots([{ argv }]);
    const kibPerPass = ((written() - before) * 512) / 1024 / 13;
    return { measured: true, cpu, peak, kibPerPass };
  } finally {
    run(["umount", mount]);
  }
}

try {
  // cron: 12 real passes, each a whole process, taking turns with the floors' runs.
  const cronConfig = config(join(WORK, "cron"));
  const urls = JSON.stringify(ports.map((port) => `http://127.0.0.1:${port}/`));
  const fetchSource =
    `const get = async (url) => (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();\n` +
    `await Promise.all(${urls}.map(get));\n`;
  const [cron, warmUpOff, nothing, probeOnly, fetchOnly, fetchLocked] = await oneShots([
    { argv: [TEND, "watchdog", "pass", "--config", cronConfig] },
    // The same passes without JSC's MarkedBlock warm-up: once a process has allocated 64 of the GC's 16 KiB
    // blocks (a pass allocates ~190; the floors, a few), a helper thread keeps 32 more pre-faulted ahead of
    // it. Only the environment turns it off (an unknown BUN_JSC_ variable stops Bun from starting): measured
    // here to say what of a pass is the runtime's, not changed in the binary.
    {
      argv: [TEND, "watchdog", "pass", "--config", config(join(WORK, "cron-no-warm-up"))],
      env: { BUN_JSC_useWarmUpMarkedBlocks: "0" },
    },
    { argv: [floorBinary("nothing", "export {};\n")] },
    {
      argv: [
        floorBinary(
          "probe-only",
          `import { httpGet } from ${JSON.stringify(join(ROOT, "lib", "os", "http1.ts"))};\n` +
            `await Promise.all(${urls}.map((url) => httpGet(url, { headers: {}, timeoutMs: 5000 })));\n`,
        ),
      ],
    },
    { argv: [floorBinary("fetch-only", fetchSource)] },
    // What a pass cannot do without: the fetch floor plus the lock the SPEC requires, flock(2), which
    // Bun reaches only through bun:ffi (its TinyCC compiles the call: megabytes of the binary touched).
    {
      argv: [
        floorBinary(
          "fetch-and-flock",
          `import { dlopen, FFIType } from "bun:ffi";\nimport { openSync } from "node:fs";\n` +
            `const flock = dlopen("libc.so.6", ` +
            `{ flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });\n` +
            `if (flock.symbols.flock(openSync(${JSON.stringify(join(WORK, "floor.lock"))}, "a"), 6) !== 0) ` +
            `throw new Error("flock");\n` +
            fetchSource,
        ),
      ],
    },
  ]);
  const { cpu: cronPass, peak: cronPeak } = cron;

  // The same passes with the state dir as a phone's /data: ext4 mounted noauto_da_alloc, where a rename
  // does not order its data (every whole state write is fsynced): CPU, and what reaches the device.
  const phone = await phoneDataPasses(config);

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
  // Counted from 5 s in: the start-ups (the loop re-executes itself lean) and first passes are over, so
  // the window holds the 1 h loop's ticks only, and window/10 passes or cycles of the others.
  const watched = [loopSlow, loopFast, monit];
  await Bun.sleep(WARMUP_S * 1000);
  const before = watched.map((child) => cpuSeconds(child.pid));
  const switchesBefore = watched.map((child) => switches(child.pid));
  // After a pass Bun's idle worker threads (JIT, GC helpers) end within ~20 s, a switch or two each:
  // the wake-ups from then on are the steady state between passes.
  await Bun.sleep(SETTLE_S * 1000);
  const switchesSettled = switches(loopSlow.pid);
  await Bun.sleep((WINDOW_S - SETTLE_S) * 1000);
  const steadyWakes = switchesBetween(switchesSettled, switches(loopSlow.pid)) / (WINDOW_S - SETTLE_S);
  const [slowCpu, fastCpu, monitCpu] = watched.map((child, index) => cpuSeconds(child.pid) - before[index]);
  const [slowWakes, , monitWakes] = watched.map(
    (child, index) => switchesBetween(switchesBefore[index], switches(child.pid)) / WINDOW_S,
  );
  const [slowPeak, fastPeak, monitPeak] = peaks.map((peak) => peak.stop());
  for (const child of [loopSlow, loopFast, monit]) killGroup(child.pid);

  const fastPasses = WINDOW_S / 10;
  const loopPass = Math.max(0, (fastCpu - slowCpu) / fastPasses);
  const loopTick = slowCpu / WINDOW_S;
  const perHour = {
    cron: cronPass * 12,
    loop: loopPass * 12 + loopTick * 3600,
    monit: (monitCpu / (WINDOW_S / 10)) * 12,
  };
  const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
  const ms = (seconds: number) => `${(seconds * 1000).toFixed(1)} ms`;
  const wakes = (perSecond: number) => `${perSecond.toFixed(2)}`;
  const rows = [
    [
      "floor: a Bun binary that does nothing",
      `${(nothing.cpu * 12).toFixed(3)} s`,
      mib(nothing.peak),
      "-",
      `${ms(nothing.cpu)} × 12`,
    ],
    [
      "floor: a Bun binary that only probes the 20 (tend's client)",
      `${(probeOnly.cpu * 12).toFixed(3)} s`,
      mib(probeOnly.peak),
      "-",
      `${ms(probeOnly.cpu)} × 12`,
    ],
    [
      "floor: a Bun binary that only fetches the 20 (`fetch`)",
      `${(fetchOnly.cpu * 12).toFixed(3)} s`,
      mib(fetchOnly.peak),
      "-",
      `${ms(fetchOnly.cpu)} × 12`,
    ],
    [
      "floor: fetches the 20 and takes flock(2) through `bun:ffi` (the lock a pass must hold)",
      `${(fetchLocked.cpu * 12).toFixed(3)} s`,
      mib(fetchLocked.peak),
      "-",
      `${ms(fetchLocked.cpu)} × 12`,
    ],
    [
      "tend cron pass every 5 min",
      `${perHour.cron.toFixed(3)} s`,
      mib(cronPeak),
      "0 (no process)",
      `${(cronPass * 1000).toFixed(1)} ms a pass × 12`,
    ],
    [
      "tend cron pass, JSC's MarkedBlock warm-up thread off (`BUN_JSC_useWarmUpMarkedBlocks=0`, environment only)",
      `${(warmUpOff.cpu * 12).toFixed(3)} s`,
      mib(warmUpOff.peak),
      "0 (no process)",
      `${ms(warmUpOff.cpu)} a pass × 12`,
    ],
    phone.measured
      ? [
          "tend cron pass every 5 min, state dir as a phone's /data (ext4 `noauto_da_alloc`)",
          `${(phone.cpu * 12).toFixed(3)} s`,
          mib(phone.peak),
          "0 (no process)",
          `${ms(phone.cpu)} a pass × 12; ${phone.kibPerPass.toFixed(0)} KiB written to the device a pass`,
        ]
      : ["tend cron pass, state dir as a phone's /data", "-", "-", "-", `not measured: ${phone.why}`],
    [
      "tend watchdog run --interval 5m",
      `${perHour.loop.toFixed(3)} s`,
      mib(Math.max(slowPeak, fastPeak)),
      `${wakes(slowWakes)} (${wakes(steadyWakes)} from ${WARMUP_S + SETTLE_S} s after its pass)`,
      `${(loopPass * 1000).toFixed(1)} ms a pass × 12 + ${(loopTick * 1000).toFixed(3)} ms a second × 3600`,
    ],
    [
      "monit 5.33, cycle 5 min",
      `${perHour.monit.toFixed(3)} s`,
      mib(monitPeak),
      wakes(monitWakes),
      `${((monitCpu / (WINDOW_S / 10)) * 1000).toFixed(1)} ms a cycle × 12`,
    ],
  ];
  console.log(`battery: 20 healthy HTTP services, measured over ${WINDOW_S} s and scaled to an hour\n`);
  console.log("| mode | CPU per hour | peak Pss | wake-ups a second (between passes) | how |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
  const floor = Math.min(probeOnly.cpu, fetchOnly.cpu);
  const goals: [string, boolean, string][] = [
    [
      "cron mode CPU per hour ≤ monit's",
      perHour.cron <= perHour.monit,
      `${(perHour.cron / perHour.monit).toFixed(2)}×`,
    ],
    [
      "loop CPU per hour ≤ 3× monit's",
      perHour.loop <= 3 * perHour.monit,
      `${(perHour.loop / perHour.monit).toFixed(2)}×`,
    ],
    ["a cron pass's CPU ≤ 2× the cheaper probing floor", cronPass <= 2 * floor, `${(cronPass / floor).toFixed(2)}×`],
    ["a loop pass's CPU ≤ a cron pass's less start-up", loopPass <= cronPass - nothing.cpu, ms(loopPass)],
    ["0 wake-ups a second between passes (no pid source)", steadyWakes < 0.01, wakes(steadyWakes)],
    [
      "a cron pass's CPU ≤ 2× the fetch+flock floor (#60)",
      cronPass <= 2 * fetchLocked.cpu,
      `${(cronPass / fetchLocked.cpu).toFixed(2)}× ` +
        `(warm-up thread off: ${(warmUpOff.cpu / fetchLocked.cpu).toFixed(2)}×)`,
    ],
    [
      "a cron pass's peak Pss ≤ the fetch+flock floor + 6 MiB (#60)",
      cronPeak <= fetchLocked.peak + 6 * 1024,
      `+${mib(cronPeak - fetchLocked.peak)} (warm-up thread off: +${mib(warmUpOff.peak - fetchLocked.peak)})`,
    ],
    [
      "a cron pass's peak Pss ≤ 16 MiB",
      cronPeak <= 16 * 1024,
      `${mib(cronPeak)} (fetch and flock alone: ${mib(fetchLocked.peak)})`,
    ],
  ];
  console.log("\n| goal (issues #42, #60) | met | measured |\n| --- | --- | --- |");
  for (const [goal, met, measured] of goals) console.log(`| ${goal} | ${met ? "yes" : "no"} | ${measured} |`);
} finally {
  killGroup(server.pid);
}
