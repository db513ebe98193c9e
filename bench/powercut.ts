// make powercut: power cuts replayed block by block, as the file systems the phone and the VM use
// would leave tend's state dir. A VM (QEMU, Debian's kernel, a busybox initramfs) runs a workload
// — a pass that restarts a killed service (its pidfile, its state), a notification spooled to a
// receiver that is down, every third round a flush to one that answers — on a disk whose every
// write QEMU logs (blklogwrites: dm-log-writes' format). Each crash point is the disk as the first
// N logged writes left it (bench/powercut/replay.c), mounted by the same kernel (its journal
// replayed, f2fs's roll-forward run), and read as tend's next pass would. What the workload was
// promised when (a pass done, a message spooled, a flush done; the receiver's deliveries) is
// marked in the disk's last MiBs, flushed, so each crash image says what it must still hold.
//   bun bench/powercut.ts [--rounds N] [--points N] [--before PATH [--before-fs LIST]]
//                         [--fs ext4,ext4-noauto_da_alloc,f2fs] [--only before|after]
//   bun bench/powercut.ts --judge run-ext4-before,run-f2fs-after   (the check.out of earlier runs, judged again)
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dir, "..");
const WORK = join(ROOT, "build", "powercut");
const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "18" },
    points: { type: "string", default: "250" },
    before: { type: "string" },
    fs: { type: "string", default: "ext4,ext4-noauto_da_alloc,f2fs" },
    /** The file systems to run --before on (default: all of --fs). */
    "before-fs": { type: "string" },
    /** Run only one of the two binaries: "before" or "after" (the tables can be measured in two sittings). */
    only: { type: "string" },
    /** Judge the check.out of earlier runs again (build/powercut/run-FS-WHICH), without a VM. */
    judge: { type: "string" },
    /** A run whose check was cut short: check the points its check.out lacks, then judge it whole. */
    resume: { type: "string" },
  },
});

function sh(argv: string[], { cwd = WORK, input }: { cwd?: string; input?: string } = {}): string {
  const run = Bun.spawnSync(argv, {
    cwd,
    stdin: input ? Buffer.from(input) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  if (run.exitCode !== 0)
    throw new Error(`${argv.join(" ")}: exit ${run.exitCode}: ${run.stderr.toString().slice(-400)}`);
  return run.stdout.toString();
}

const MODULES = [
  "drivers/virtio/virtio_ring",
  "drivers/virtio/virtio",
  "drivers/virtio/virtio_pci_legacy_dev",
  "drivers/virtio/virtio_pci_modern_dev",
  "drivers/virtio/virtio_pci",
  "drivers/block/virtio_blk",
  "drivers/block/loop",
  "lib/crc16",
  "fs/mbcache",
  "fs/jbd2/jbd2",
  "crypto/crc32c_generic",
  "crypto/crc32_generic",
  "fs/ext4/ext4",
  "lib/lz4/lz4_compress",
  "lib/lz4/lz4hc_compress",
  "lib/zstd/zstd_compress",
  "fs/f2fs/f2fs",
];

/** Debian's kernel, unpacked; qemu, busybox and f2fs-tools from apt when missing. */
function prepare(): { kernel: string; initrd: string } {
  mkdirSync(WORK, { recursive: true });
  const need = [
    ["qemu-system-x86_64", "qemu-system-x86"],
    ["mkfs.f2fs", "f2fs-tools"],
    ["gcc", "gcc"],
  ].filter(([tool]) => Bun.spawnSync(["sh", "-c", `command -v ${tool}`]).exitCode !== 0);
  if (!existsSync("/bin/busybox") || need.length) {
    const packages = ["busybox-static", ...need.map(([, pkg]) => pkg)];
    sh(["apt-get", "install", "-y", "-qq", "--no-install-recommends", ...packages]);
  }
  const kernelDir = join(WORK, "kernel");
  if (!existsSync(join(kernelDir, "x"))) {
    mkdirSync(kernelDir, { recursive: true });
    const meta = sh(["apt-cache", "depends", "linux-image-amd64"]);
    const name = /Depends: (linux-image-[\d.]+-\d+-amd64)\b/.exec(meta)?.[1];
    if (!name) throw new Error("no linux-image-*-amd64 in apt");
    sh(["apt-get", "download", name], { cwd: kernelDir });
    const deb = readdirSync(kernelDir).find((file) => file.endsWith(".deb"))!;
    sh(["dpkg", "-x", deb, "x"], { cwd: kernelDir });
  }
  const release = readdirSync(join(kernelDir, "x", "lib", "modules"))[0];
  const kernel = join(kernelDir, "x", "boot", `vmlinuz-${release}`);
  // The initramfs: busybox, the modules, the init and receiver scripts, the replayer (static).
  const root = join(WORK, "root");
  rmSync(root, { recursive: true, force: true });
  for (const dir of ["bin", "lib/modules", "dev", "proc", "sys", "mnt", "tmp"])
    mkdirSync(join(root, dir), { recursive: true });
  copyFileSync("/bin/busybox", join(root, "bin", "busybox"));
  for (const module of MODULES) {
    const name = module.split("/").at(-1)!;
    copyFileSync(
      join(kernelDir, "x", "lib", "modules", release, "kernel", `${module}.ko`),
      join(root, "lib", "modules", `${name}.ko`),
    );
  }
  copyFileSync(join(ROOT, "bench", "powercut", "init.sh"), join(root, "init"));
  copyFileSync(join(ROOT, "bench", "powercut", "receiver.sh"), join(root, "bin", "receiver.sh"));
  chmodSync(join(root, "init"), 0o755);
  chmodSync(join(root, "bin", "receiver.sh"), 0o755);
  sh(["gcc", "-O2", "-static", "-o", join(root, "bin", "replay"), join(ROOT, "bench", "powercut", "replay.c")]);
  const initrd = join(WORK, "initrd.gz");
  sh(["sh", "-c", `cd ${root} && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > ${initrd}`]);
  return { kernel, initrd };
}

/** An ext4 image holding the tend binary under test and the libraries it links. */
function toolsImage(binary: string, name: string): string {
  const dir = join(WORK, `tools-${name}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "lib", "x86_64-linux-gnu"), { recursive: true });
  mkdirSync(join(dir, "lib64"), { recursive: true });
  copyFileSync(binary, join(dir, "tend"));
  chmodSync(join(dir, "tend"), 0o755);
  for (const lib of ["libc.so.6", "libpthread.so.0", "libdl.so.2", "libm.so.6"])
    copyFileSync(join("/lib/x86_64-linux-gnu", lib), join(dir, "lib", "x86_64-linux-gnu", lib));
  copyFileSync("/lib64/ld-linux-x86-64.so.2", join(dir, "lib64", "ld-linux-x86-64.so.2"));
  const image = join(WORK, `tools-${name}.img`);
  rmSync(image, { force: true });
  sh(["truncate", "-s", "300M", image]);
  sh(["mkfs.ext4", "-q", "-F", "-d", dir, image]);
  return image;
}

const FILE_SYSTEMS: Record<string, { type: string; opts: string; mkfs: (image: string) => string[] }> = {
  ext4: { type: "ext4", opts: "rw", mkfs: (image) => ["mkfs.ext4", "-q", "-F", "-b", "4096", image, "15360"] },
  "ext4-noauto_da_alloc": {
    type: "ext4",
    opts: "rw,noauto_da_alloc",
    mkfs: (image) => ["mkfs.ext4", "-q", "-F", "-b", "4096", image, "15360"],
  },
  f2fs: { type: "f2fs", opts: "rw", mkfs: (image) => ["mkfs.f2fs", "-q", "-f", image, "122880"] },
};

async function qemu(boot: { kernel: string; initrd: string }, append: string, drives: string[], timeoutMs: number) {
  const argv = [
    "qemu-system-x86_64",
    ...(process.env.POWERCUT_KVM ? ["-enable-kvm"] : ["-accel", "tcg", "-cpu", "max"]),
    "-m",
    "1024",
    "-nographic",
    "-no-reboot",
    "-nic",
    "none",
    "-kernel",
    boot.kernel,
    "-initrd",
    boot.initrd,
    "-append",
    `console=ttyS0 panic=-1 loglevel=3 ${append}`,
    ...drives,
  ];
  const child = Bun.spawn(argv, { cwd: WORK, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const out = await new Response(child.stdout).text();
  await child.exited;
  clearTimeout(timer);
  return out;
}

interface Point {
  point: number;
  pidfile: string;
  state: string;
  stateHead: string;
  spool: string[];
  marks: string[];
  unmountable: boolean;
  /** The first pass after the cut left the service running (null: no state dir yet). */
  up: boolean | null;
}

function parseCheck(out: string): Point[] {
  const points: Point[] = [];
  let current: Point | null = null;
  for (const raw of out.split("\n")) {
    const line = raw.replace(/\r$/, "");
    let match: RegExpExecArray | null;
    // The first point's line may follow the firmware's screen-clearing escapes on the same line.
    if ((match = /(?:^|\x1b\[2J)POINT (\d+)$/.exec(line))) {
      current = {
        point: Number(match[1]),
        pidfile: "",
        state: "",
        stateHead: "",
        spool: [],
        marks: [],
        unmountable: false,
        up: null,
      };
    } else if (!current) continue;
    else if (line.startsWith("PIDFILE ")) current.pidfile = line.slice(8);
    else if (line.startsWith("STATE ")) current.state = line.slice(6);
    else if (line.startsWith("STATEHEAD ")) current.stateHead = line.slice(10);
    else if (line.startsWith("SPOOL ")) current.spool.push(line.slice(6));
    else if (line.startsWith("MARK ")) current.marks.push(line.slice(5));
    else if (line === "UNMOUNTABLE") current.unmountable = true;
    else if (line.startsWith("UP ")) current.up = line === "UP yes";
    else if (line.startsWith("END ")) {
      points.push(current);
      current = null;
    }
  }
  return points;
}

interface Tally {
  points: number;
  emptyPidfile: number;
  noPidAfterPass: number;
  downAfterCut: number;
  emptyState: number;
  lost: number;
  resentAfterFlush: number;
  resentInFlight: number;
  unmountable: number;
}

/** What each crash image holds against what the workload had been promised by then. */
function judge(points: Point[]): Tally {
  const tally: Tally = {
    points: points.length,
    emptyPidfile: 0,
    noPidAfterPass: 0,
    downAfterCut: 0,
    emptyState: 0,
    lost: 0,
    resentAfterFlush: 0,
    resentInFlight: 0,
    unmountable: 0,
  };
  // Every crash point is a prefix of one run's writes: a message whose spool entry recorded "no
  // answer" at any of them was a delivery tend never saw acknowledged (a later failure, the
  // receiver down again, overwrites that error).
  const unanswered = new Set(
    points.flatMap((point) =>
      point.spool.flatMap((line) => {
        try {
          const entry = JSON.parse(line) as { message: string; lastError?: string };
          return /^no answer/.test(entry.lastError ?? "") ? [entry.message] : [];
        } catch {
          return [];
        }
      }),
    ),
  );
  for (const point of points) {
    if (point.unmountable) {
      tally.unmountable++;
      continue;
    }
    const passes = point.marks.filter((mark) => /^\d+ pass /.test(mark));
    const [digits] = point.pidfile.split(" ");
    if (point.pidfile !== "missing" && (digits === "" || digits === undefined)) tally.emptyPidfile++;
    if (passes.length && (point.pidfile === "missing" || !digits)) tally.noPidAfterPass++;
    if (passes.length && point.up === false) tally.downAfterCut++;
    if (point.state !== "missing" && (point.state === "0" || !point.stateHead.startsWith("{"))) tally.emptyState++;
    const spooled = point.marks.flatMap((mark) => /^\d+ spooled (m\d+)$/.exec(mark)?.[1] ?? []);
    const flushed = new Set(point.marks.flatMap((mark) => /^\d+ flushed (\d+)$/.exec(mark)?.[1] ?? []));
    const delivered = new Map<string, string>();
    for (const mark of point.marks) {
      const match = /^R\d+ delivered (m\d+) round (\d+)/.exec(mark);
      if (match) delivered.set(match[1], match[2]);
    }
    const inSpool = new Set(
      point.spool.flatMap((line) => {
        try {
          return [(JSON.parse(line) as { message: string }).message];
        } catch {
          return [];
        }
      }),
    );
    for (const message of spooled) if (!inSpool.has(message) && !delivered.has(message)) tally.lost++;
    for (const [message, round] of delivered) {
      if (!inSpool.has(message)) continue;
      // The receiver got it, but its answer did not reach tend in time (TCG on a loaded machine):
      // never acknowledged, so kept and sent again with its key, as a delivery cut in flight is.
      if (flushed.has(round) && !unanswered.has(message)) tally.resentAfterFlush++;
      else tally.resentInFlight++;
    }
  }
  return tally;
}

async function measure(boot: { kernel: string; initrd: string }, tools: string, fsName: string) {
  const fs = FILE_SYSTEMS[fsName];
  const dir = join(WORK, `run-${fsName}-${tools.includes("before") ? "before" : "after"}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const base = join(dir, "base.img");
  sh(["truncate", "-s", "64M", base]);
  sh(fs.mkfs(base));
  copyFileSync(base, join(dir, "disk.img"));
  writeFileSync(join(dir, "log.bin"), "");
  const started = performance.now();
  const work = await qemu(
    boot,
    `mode=work fs=${fs.type} opts=${fs.opts} rounds=${args.rounds}`,
    [
      "-blockdev",
      `driver=file,node-name=disk,filename=${join(dir, "disk.img")}`,
      "-blockdev",
      `driver=file,node-name=logfile,filename=${join(dir, "log.bin")}`,
      "-blockdev",
      "driver=blklogwrites,node-name=logged,file=disk,log=logfile,log-sector-size=512,log-append=false",
      "-device",
      "virtio-blk-pci,drive=logged",
      "-drive",
      `file=${tools},format=raw,if=virtio,readonly=on`,
    ],
    30 * 60_000,
  );
  if (!work.includes("WORK DONE")) throw new Error(`${fsName}: the workload did not finish:\n${work.slice(-2000)}`);
  const [entries] = sh([join(WORK, "root", "bin", "replay"), join(dir, "log.bin")])
    .trim()
    .split(" ")
    .map(Number);
  const wanted = Math.min(Number(args.points), entries);
  const points = [
    ...new Set(Array.from({ length: wanted }, (_, k) => Math.max(1, Math.round(((k + 1) * entries) / wanted)))),
  ];
  const check = await checkPoints(boot, tools, dir, fs.type, points, "points.txt");
  writeFileSync(join(dir, "check.out"), check);
  if (!check.includes("CHECK DONE")) throw new Error(`${fsName}: the check did not finish:\n${check.slice(-2000)}`);
  const tally = judge(parseCheck(check));
  return { fsName, entries, seconds: Math.round((performance.now() - started) / 1000), ...tally };
}

/** The check VM over the crash points listed (a file of the run's dir, on the VM's first disk). */
async function checkPoints(
  boot: { kernel: string; initrd: string },
  tools: string,
  dir: string,
  fsType: string,
  points: number[],
  listName: string,
): Promise<string> {
  const list = points.join("\n") + "\n";
  writeFileSync(join(dir, listName), list + "\0".repeat(4096 - (list.length % 4096)));
  return qemu(
    boot,
    `mode=check fs=${fsType}`,
    [
      "-drive",
      `file=${join(dir, listName)},format=raw,if=virtio,readonly=on`,
      "-drive",
      `file=${tools},format=raw,if=virtio,readonly=on`,
      "-drive",
      `file=${join(dir, "base.img")},format=raw,if=virtio,readonly=on`,
      "-drive",
      `file=${join(dir, "log.bin")},format=raw,if=virtio,readonly=on`,
    ],
    // A minute and a half per point at most: TCG on a loaded machine (a fixed hour cut one run short).
    Math.max(60 * 60_000, points.length * 90_000),
  );
}

/** A table row from a run's numbers. */
const rowOf = (fsName: string, name: string, result: Tally & { entries: number }) =>
  `| ${fsName} | ${name} | ${result.points} of ${result.entries} writes | ${result.emptyPidfile} | ` +
  `${result.noPidAfterPass} | ${result.downAfterCut} | ${result.emptyState} | ${result.lost} | ` +
  `${result.resentAfterFlush} | ${result.resentInFlight} | ${result.unmountable} |`;

if (args.judge) {
  for (const run of args.judge.split(",")) {
    const dir = join(WORK, run);
    const check = readFileSync(join(dir, "check.out"), "latin1");
    const [entries] = sh([join(WORK, "root", "bin", "replay"), join(dir, "log.bin")])
      .trim()
      .split(" ")
      .map(Number);
    const [, fsName, name] = /^run-(.+)-(before|after)$/.exec(run) ?? [, run, "?"];
    console.log(rowOf(fsName, name, { entries, ...judge(parseCheck(check)) }));
  }
  process.exit(0);
}

const boot = prepare();

if (args.resume) {
  const dir = join(WORK, args.resume);
  const [, fsName, name] = /^run-(.+)-(before|after)$/.exec(args.resume) ?? [];
  if (!fsName || !FILE_SYSTEMS[fsName]) throw new Error(`--resume ${args.resume}: not a run-FS-before|after dir`);
  const earlier = readFileSync(join(dir, "check.out"), "latin1");
  // What it holds up to its last whole point; the points listed that it lacks.
  const whole =
    earlier.slice(0, earlier.lastIndexOf("\nEND ") + 1) +
    earlier.slice(earlier.lastIndexOf("\nEND ") + 1).split("\n")[0];
  const done = new Set(parseCheck(whole).map((point) => point.point));
  const listed = readFileSync(join(dir, "points.txt"), "latin1").replaceAll("\0", "").trim().split("\n").map(Number);
  const rest = listed.filter((point) => !done.has(point));
  const tools = join(WORK, `tools-${name}.img`);
  const more = rest.length
    ? await checkPoints(boot, tools, dir, FILE_SYSTEMS[fsName].type, rest, "points-rest.txt")
    : "CHECK DONE";
  if (!more.includes("CHECK DONE")) throw new Error(`${args.resume}: the check did not finish:\n${more.slice(-2000)}`);
  const check = `${whole}\n${more}`;
  writeFileSync(join(dir, "check.out"), check);
  const [entries] = sh([join(WORK, "root", "bin", "replay"), join(dir, "log.bin")])
    .trim()
    .split(" ")
    .map(Number);
  console.log(`${done.size} points checked before, ${rest.length} now`);
  console.log(rowOf(fsName, name, { entries, ...judge(parseCheck(check)) }));
  process.exit(0);
}
if (args.only && !["before", "after"].includes(args.only)) throw new Error(`--only ${args.only}: before or after`);
if (args.only === "before" && !args.before) throw new Error("--only before needs --before PATH");
const binaries: [string, string][] = [["after", join(ROOT, "build", "tend")]];
if (args.before) binaries.unshift(["before", args.before]);
if (args.only) binaries.splice(0, binaries.length, ...binaries.filter(([name]) => name === args.only));
const tools = new Map(binaries.map(([name, binary]) => [name, toolsImage(binary, name)]));
const beforeFs = (args["before-fs"] ?? args.fs!).split(",");
const runs = binaries.flatMap(([name]) =>
  args
    .fs!.split(",")
    .filter((fsName) => name !== "before" || beforeFs.includes(fsName))
    .map((fsName) => ({ name, fsName })),
);
const rows = new Map<string, string>();
// Two VMs at a time (TCG: a core each).
let next = 0;
await Promise.all(
  [0, 1].map(async () => {
    while (next < runs.length) {
      const { name, fsName } = runs[next++];
      const result = await measure(boot, tools.get(name)!, fsName);
      const row = rowOf(fsName, name, result);
      rows.set(`${fsName} ${name}`, row);
      console.log(row, `(${result.seconds}s)`);
    }
  }),
);
console.log(
  [
    "",
    "| file system | tend | crash points | empty pidfile | no PID after a pass | down after the next pass | " +
      "empty or torn state | lost messages | re-sent after a completed flush | re-sent in flight | unmountable |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...runs.map(({ name, fsName }) => rows.get(`${fsName} ${name}`)!),
  ].join("\n"),
);
