// Records which functions a pass and `--version` run, for `bun build --bytecode-order` (Makefile):
// the rebuilt binary lays that bytecode out first and reads less of itself at start-up (bench P1, P4c).
// usage: bun bench/order.ts BINARY OUTDIR      writes OUTDIR/pass.order and OUTDIR/version.order
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [binary, outDir] = process.argv.slice(2).map((path) => resolve(path));
if (!binary || !outDir) throw new Error("usage: bun bench/order.ts BINARY OUTDIR");
mkdirSync(outDir, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "tend-order-"));

// Ten healthy services, as in bench P1, answered by this process while the binary runs.
const servers = Array.from({ length: 10 }, () =>
  Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok\n") }),
);
const config = join(work, "tend.toml");
writeFileSync(
  config,
  `[watchdog]\nstate_dir = "${join(work, "state")}"\n` +
    servers.map((server, i) => `[[service]]\nname = "s${i}"\n[service.check]\nhttp = "${server.url}"\n`).join(""),
);

async function record(name: string, args: string[]) {
  const env = { ...process.env, BUN_BYTECODE_ORDER_OUT: join(outDir, `${name}.order`) };
  const child = Bun.spawn([binary, ...args], { env, stdout: "ignore", stderr: "inherit" });
  if ((await child.exited) !== 0) throw new Error(`${binary} ${args.join(" ")} failed`);
}
try {
  const first = Bun.spawn([binary, "watchdog", "pass", "--config", config], { stdout: "ignore" }); // START lines
  if ((await first.exited) !== 0) throw new Error(`${binary} watchdog pass failed`);
  await record("pass", ["watchdog", "pass", "--config", config]); // the pass cron runs all day
  await record("version", ["--version"]);
} finally {
  for (const server of servers) server.stop(true);
  rmSync(work, { recursive: true, force: true });
}
