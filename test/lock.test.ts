// flock(2) through libc: held is a skip; any other error is said as itself (Android's shared storage: ENOSYS).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { tryLock } from "../lib/os/lock.ts";
import { Sandbox, TEND, waitFor } from "./helpers.ts";

describe("flock errors are said as themselves, never taken for another pass (FAT storage gives ENOSYS)", () => {
  const box = new Sandbox();
  const path = join(box.dir, "watchdog.lock");
  mkdirSync(box.dir, { recursive: true });
  // The real libc is used everywhere else; here flock(2) answers as it does on Android's shared storage.
  const failing = (errno: number) => ({ flock: () => -1, errno: () => errno, clock: () => null });
  test("ENOSYS: an error that names it, exit 1", async () => {
    await expect(tryLock(path, { lib: failing(38) })).rejects.toThrow(
      `cannot lock ${path}: flock(2) failed: function not implemented (ENOSYS`,
    );
    await expect(tryLock(path, { lib: failing(38) })).rejects.toMatchObject({ code: "lock-failed", exitCode: 1 });
  });
  test("EWOULDBLOCK: held by another (the one case that is a skip)", async () => {
    expect(await tryLock(path, { lib: failing(11) })).toBeNull();
  });
  test("the real flock: taken, then held for a second taker, then free again", async () => {
    const first = await tryLock(path);
    expect(first).not.toBeNull();
    expect(await tryLock(path)).toBeNull();
    first!.release();
    const again = await tryLock(path);
    expect(again).not.toBeNull();
    again!.release();
    box.cleanup();
  });
});

describe("a tick is never lost to blogtunnel: only another pass makes a pass skip (SPEC, the pass lock)", () => {
  test("a pass during blogtunnel's 5 s probe runs at once; a held lock says who holds it", async () => {
    const box = new Sandbox();
    // The tunnel's public URL accepts and never answers: blogtunnel's probe lasts its whole timeout.
    const accepted: Socket[] = [];
    const silent = createServer((socket) => void accepted.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
    box.writeConfig(
      `[watchdog]\nstate_dir = "${box.state}"\n[[service]]\nname = "web"\n[service.check]\n` +
        `http = "http://127.0.0.1:${web.port}/"\n`,
    );
    try {
      const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}/`;
      const tunnel = Bun.spawn(
        [TEND, "blogtunnel", "--url", url, "--timeout", "5s", "--counter", join(box.dir, "count")],
        { env: box.env(), stdout: "pipe", stderr: "pipe" },
      );
      let tunnelDone = false;
      void tunnel.exited.then(() => (tunnelDone = true));
      await waitFor(() => accepted.length > 0, 10_000, "blogtunnel to be probing");
      const pass = await box.tend(["watchdog", "pass"]);
      expect(tunnelDone).toBe(false); // the pass did not wait for the probe
      expect(pass).toMatchObject({ code: 0 });
      expect(pass.stdout).not.toContain("[SKIP]");
      expect(box.stateOf("web").lastProbe).toMatchObject({ ok: true });
      await tunnel.exited;
      expect(await new Response(tunnel.stdout).text()).toContain("blogtunnel failed health check (no answer within");

      // Held by a command that holds it around state reads and writes: waited for, then the pass runs.
      const lockPath = join(box.state, "watchdog.lock");
      // flock(1) holds it and, holding it, records who it is (as tend's holders do).
      const hold = (who: string, then: string) =>
        Bun.spawn(["flock", lockPath, "sh", "-c", `echo '${who} pid '$$ > '${lockPath}'; ${then}`]);
      const recorded = (who: string) => () => readFileSync(lockPath, "utf8").startsWith(`${who} pid `);
      const released = join(box.dir, "released");
      const holder = hold("blogtunnel", `sleep 1.5; date +%s%N > '${released}'`);
      await waitFor(recorded("blogtunnel"), 5000, "blogtunnel's record");
      const waited = await box.tend(["watchdog", "pass"]);
      expect(waited.stdout).not.toContain("[SKIP]");
      await holder.exited;
      // The pass ended (its heartbeat) after the holder let go: it waited, then ran.
      const releasedMs = Number(BigInt(readFileSync(released, "utf8").trim()) / 1_000_000n);
      expect(statSync(join(box.state, "heartbeat")).mtimeMs).toBeGreaterThanOrEqual(releasedMs - 5);
      // Held by another pass: skipped at once, as ever.
      const other = hold("pass", "sleep 30");
      await waitFor(recorded("pass"), 5000, "the other pass's record");
      const skipped = await box.tend(["watchdog", "pass"]);
      expect(other.exitCode).toBeNull(); // still holding it: the pass did not wait
      expect(skipped.stdout).toContain("[SKIP] another pass is running: this one exits");
      other.kill();
      await other.exited;
    } finally {
      for (const socket of accepted) socket.destroy();
      silent.close();
      web.stop(true);
      box.cleanup();
    }
  }, 60_000);
});

describe("blogtunnel and a long pass (the trial: exit 1, nothing recorded, when a pass held the lock 30 s)", () => {
  test("blogtunnel waits for a pass that holds the lock over 30 s, then checks; the counter is tend's", async () => {
    const box = new Sandbox();
    const edge = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 530 }) });
    box.configure();
    const counter = join(box.dir, "count");
    try {
      mkdirSync(box.state, { recursive: true, mode: 0o700 });
      const lockPath = join(box.state, "watchdog.lock");
      // A pass's record, held 32 s: over the old 30 s wait.
      const holder = Bun.spawn(["flock", lockPath, "sh", "-c", `echo 'pass pid '$$ > '${lockPath}'; sleep 32`]);
      await waitFor(
        () => existsSync(lockPath) && readFileSync(lockPath, "utf8").startsWith("pass pid "),
        5000,
        "the pass record",
      );
      const tunnel = await box.tend(
        ["blogtunnel", "--url", `http://127.0.0.1:${edge.port}/`, "--timeout", "2s", "--counter", counter],
        { timeoutMs: 120_000 },
      );
      expect(holder.exitCode).not.toBeNull(); // it ran once the pass let go
      expect(tunnel.code).toBe(1); // struck: failing, as the old script's exit said
      expect(tunnel.stdout).toContain("blogtunnel failed health check (HTTP 530 (a fail code), failure 1/3)");
      expect(readFileSync(counter, "utf8").trim()).toBe("1");
      expect(box.stateOf("blogtunnel").strikes).toBe(1);
    } finally {
      edge.stop(true);
      box.cleanup();
    }
  }, 90_000);

  test("a run lost all the same (the lock held past the wait) is said in the log, the counter kept", async () => {
    const box = new Sandbox();
    box.configure();
    const counter = join(box.dir, "count");
    writeFileSync(counter, "2\n");
    const { loadConfig } = await import("../lib/config/load.ts");
    const { watchTunnel } = await import("../lib/tools/tunnel.ts");
    const config = loadConfig({ path: box.config });
    try {
      mkdirSync(box.state, { recursive: true, mode: 0o700 });
      const lockPath = join(box.state, "watchdog.lock");
      const holder = Bun.spawn(["flock", lockPath, "sh", "-c", `echo 'pass pid '$$ > '${lockPath}'; sleep 30`]);
      await waitFor(
        () => existsSync(lockPath) && readFileSync(lockPath, "utf8").startsWith("pass pid "),
        5000,
        "the pass record",
      );
      const record = {
        url: "http://127.0.0.1:1/",
        timeoutMs: 1000,
        strikes: 3,
        failCodes: [530],
        pane: null,
        requiresDns: null,
      };
      const run = watchTunnel(config, "blogtunnel", record, counter, () => {}, { lockWaitMs: 500 });
      await expect(run).rejects.toMatchObject({ exitCode: 1 });
      holder.kill();
      await holder.exited;
      expect(box.read("watchdog.log")).toMatch(
        new RegExp(
          "\\[ERROR\\] blogtunnel: a watchdog pass held the lock for 0\\.5s \\(pass pid \\d+\\): " +
            "this check did not run; the counter is unchanged",
        ),
      );
      expect(readFileSync(counter, "utf8").trim()).toBe("2");
    } finally {
      box.cleanup();
    }
  }, 30_000);
});
