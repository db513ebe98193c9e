// tend doctor: what is here is ok, what is not is missing or limited, and the exit code follows what the
// configuration uses: on this host and inside the phone (test/places.ts), but for cron's rows (Debian's
// cron, for a second user) and cron's tmux server, this host's (the phone's crond and Termux:Boot rows are
// termux.test's).
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recordingReceiver, Sandbox, TEND, testUser } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

let box: Sandbox;
let place: Place | null = null;
afterEach(async () => {
  box?.cleanup();
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

const rowsOf = (stdout: string) =>
  Object.fromEntries(JSON.parse(stdout).capabilities.map((row: { name: string }) => [row.name, row]));

for (const where of PLACES)
  describe(`doctor (${where})`, () => {
    test("one row per capability; --send-test delivers; exit 0 when what the config uses works", async () => {
      const at = (place = openPlace(where));
      const hook = recordingReceiver();
      const received = hook.received;
      at.configure({
        notify: { url: `http://127.0.0.1:${hook.port}/topic` },
        services: [{ name: "blog", check: { tcp: "127.0.0.1:1" }, restart: { tmux: "main:blog", run: "true" } }],
      });
      try {
        const run = await at.tend(["doctor", "--json"]);
        expect(run.stderr).toBe("");
        expect(run.code).toBe(0);
        const rows = rowsOf(run.stdout);
        for (const name of [
          "flock",
          "process start times",
          "RSS (/proc)",
          "listeners (/proc/net/tcp)",
          "tmux",
          "systemctl",
          "launchctl",
          "cron",
          "Termux:Boot",
          "state dir",
          "config",
          "notify target",
        ]) {
          expect({ name, status: ["ok", "missing", "limited"].includes(rows[name]?.status) }).toEqual({
            name,
            status: true,
          });
        }
        expect(rows.tmux).toMatchObject({ status: "ok", used: true, detail: expect.stringMatching(/^tmux \d/) });
        expect(rows.flock.status).toBe("ok");
        // A pass's work, done once (the device check): spawn and reap, the lock, its start time, a local fetch.
        for (const name of ["spawn and reap", "own start time", "local fetch"]) expect(rows[name].status).toBe("ok");
        expect(rows["own start time"].detail).toMatch(
          /^\/proc\/self\/stat and a boot time from sysinfo: started \d+s ago$/,
        );
        // The phone's rows only on Termux; there, root's processes are hidden (hidepid=2).
        if (where === "host") expect(rows["process visibility"]).toBeUndefined();
        else expect(rows["process visibility"]).toMatchObject({ status: "limited" });
        expect(rows.launchctl).toMatchObject({ status: "missing", used: false });
        expect(rows["notify target"]).toMatchObject({
          status: "ok",
          detail: `http://127.0.0.1:${hook.port}/… reachable (--send-test sends one)`,
        });
        expect(received).toEqual([]); // reachable is a connection, not a message

        const sent = await at.tend(["doctor", "--send-test"]);
        expect(sent.code).toBe(0);
        expect(sent.stdout).toMatch(/notify target\s+ok\s+test message to http:\/\/127\.0\.0\.1:\d+\/…: HTTP 200/);
        expect(received).toEqual([expect.stringMatching(/^tend doctor: a test notification from /)]);
      } finally {
        hook.stop();
      }
    });

    test("exit 1 when something the config uses is missing (state dir others may write, launchd)", async () => {
      const at = (place = openPlace(where));
      // Made by the user, as a careless chmod leaves it.
      expect((await at.shell(`mkdir -p '${at.state}' && chmod 777 '${at.state}'`)).code).toBe(0);
      at.configure({ services: [{ name: "agent", launchd: "org.example.agent", check: { process: true } }] });
      const run = await at.tend(["doctor"]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/state dir\s+missing\s+.* mode 0777: chmod go-w /);
      expect(run.stdout).toMatch(/launchctl\s+missing\s+not macOS\n\s+affects: restart\.launchd/);
      const noConfig = await at.tend(["doctor", "--json"], { TEND_CONFIG: at.scratch("none.toml").inside });
      expect(noConfig.code).toBe(1);
      expect(rowsOf(noConfig.stdout).config).toMatchObject({
        status: "missing",
        detail: expect.stringContaining("no such file"),
      });
    });

    test("the tmux row for a service with its own socket looks at that server, not tmux's default", async () => {
      const at = (place = openPlace(where));
      const socket = at.scratch("panes.sock").inside;
      at.configure({
        services: [
          {
            name: "api",
            check: { tcp: "127.0.0.1:1" },
            restart: { tmux: "main:api", run: "sleep 1000", socket },
          },
        ],
      });
      expect((await at.tmux(["-S", socket, "new-session", "-d", "-s", "main", "sleep 1000"])).code).toBe(0);
      try {
        const rows = rowsOf((await at.tend(["doctor", "--json"])).stdout);
        expect(rows["tmux server"]).toBeUndefined(); // no service uses the default server
        expect(rows[`tmux server (socket ${socket})`]).toMatchObject({
          status: "ok",
          used: true,
          detail: `${socket}: sessions main`,
        });
      } finally {
        await at.tmux(["-S", socket, "kill-server"]);
      }
    });
  });

const DOCTOR_USER = "tenddoctor";
let doctorUser: ReturnType<typeof testUser> | null = null;
afterAll(() => doctorUser?.remove());

/** tend doctor as an unprivileged user with a crontab of its own (HOME in the sandbox). */
function asDoctorUser(args: string[], env: Record<string, string> = {}) {
  doctorUser ??= testUser(DOCTOR_USER);
  const binary = join(box.dir, "tend");
  if (!existsSync(binary)) {
    copyFileSync(TEND, binary);
    chmodSync(binary, 0o755);
  }
  const vars = Object.entries({ HOME: box.dir, ...env }).map(([key, value]) => `${key}=${value}`);
  // From a directory the user may not enter, as `sudo -u` from a checkout in /root (0700) runs it.
  const closed = join(box.dir, "closed");
  mkdirSync(closed, { recursive: true, mode: 0o700 });
  const result = Bun.spawnSync(["runuser", "-u", DOCTOR_USER, "--", "env", ...vars, binary, ...args], {
    env: box.env(),
    cwd: closed,
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

test("doctor checks what cron will really do: the tend line, programs on cron's PATH", async () => {
  box = new Sandbox();
  chmodSync(box.dir, 0o1777); // sticky, as /tmp: the config beside it stays its owner's
  const bin = join(box.dir, "bin");
  mkdirSync(bin);
  // A program found on this shell's PATH but not on cron's /usr/bin:/bin.
  writeFileSync(join(bin, "blog-server"), "#!/bin/sh\nexec sleep 1000\n");
  chmodSync(join(bin, "blog-server"), 0o755);
  box.configure({
    watchdog: { state_dir: `${box.state}/doctor` },
    services: [
      {
        name: "blog",
        pidfile: `${box.dir}/blog.pid`,
        check: { tcp: "127.0.0.1:1" },
        restart: { spawn: ["blog-server", "--port", "8080"] },
      },
    ],
  });
  chmodSync(box.config, 0o644);
  const path = `${bin}:/usr/bin:/bin`;
  try {
    Bun.spawnSync(["crontab", "-r", "-u", DOCTOR_USER]);
    const before = asDoctorUser(["doctor", "--json", "--config", box.config], { PATH: path });
    const rows = rowsOf(before.stdout);
    expect(rows.cron).toMatchObject({ status: "limited", used: false });
    expect(rows.cron.detail).toContain("no tend line in the crontab");
    expect(rows["programs on cron's PATH"]).toMatchObject({ status: "limited", used: true });
    expect(rows["programs on cron's PATH"].detail).toBe(
      `blog-server (blog: restart.spawn) is not on cron's PATH /usr/bin:/bin ` +
        `(here it is ${bin}/blog-server: give the full path or set PATH= in the crontab)`,
    );
    expect(rows["sh (restart.spawn)"]).toMatchObject({ status: "ok", used: true });

    // Installed: the line is there, so a program cron cannot find is missing for real (exit 1).
    const write = asDoctorUser(["watchdog", "install", "cron", "--write", "--config", box.config], { PATH: path });
    expect(write.code).toBe(0);
    const after = asDoctorUser(["doctor", "--json", "--config", box.config], { PATH: path });
    const installed = rowsOf(after.stdout);
    expect(installed.cron.detail).toContain("tend line installed");
    expect(installed["programs on cron's PATH"].status).toBe("missing");
    expect(after.code).toBe(1);

    // A PATH= line above the tend line is the PATH cron gives it.
    const crontab = Bun.spawnSync(["crontab", "-l", "-u", DOCTOR_USER]).stdout.toString();
    Bun.spawnSync(["crontab", "-u", DOCTOR_USER, "-"], { stdin: Buffer.from(`PATH=${path}\n${crontab}`) });
    const fixed = rowsOf(asDoctorUser(["doctor", "--json", "--config", box.config], { PATH: path }).stdout);
    expect(fixed["programs on cron's PATH"]).toMatchObject({ status: "ok" });
    expect(fixed["programs on cron's PATH"].detail).toContain(`resolve on ${path}`);
  } finally {
    Bun.spawnSync(["crontab", "-r", "-u", DOCTOR_USER]);
  }
});

test("doctor names the tmux server the panes live on when it is not the one cron's tend talks to", async () => {
  box = new Sandbox();
  const session = `doctor${process.pid}`;
  box.configure({
    services: [
      { name: "blog", check: { tcp: "127.0.0.1:1" }, restart: { tmux: `${session}:blog`, run: "sleep 1000" } },
    ],
  });
  // The person's panes: a server under the sandbox's TMUX_TMPDIR (cron's tend would use /tmp's).
  const started = Bun.spawnSync(["tmux", "new-session", "-d", "-s", session, "sleep 1000"], { env: box.env() });
  expect(started.exitCode).toBe(0);
  const rows = rowsOf((await box.tend(["doctor", "--json"])).stdout);
  const uid = process.getuid!();
  expect(rows["tmux server"]).toMatchObject({ status: "missing", used: true });
  expect(rows["tmux server"].detail).toBe(
    `session ${session} is on ${box.dir}/tmux-${uid}/default, but cron's tend talks to /tmp/tmux-${uid}/default: ` +
      `it would start a second copy (set TMUX_TMPDIR in the crontab, or run the panes on cron's server)`,
  );
  // Looked at from cron's own TMUX_TMPDIR: nothing there yet, and the first pass creates the session.
  // (tmux makes /tmp/tmux-UID when asked there: removed again if this test made it.)
  const cronDir = `/tmp/tmux-${uid}`;
  const existed = existsSync(cronDir);
  try {
    const same = rowsOf((await box.tend(["doctor", "--json"], { env: { TMUX_TMPDIR: "/tmp" } })).stdout);
    expect(same["tmux server"].detail).toMatch(/^(no server on|\/tmp\/tmux-\d+\/default has no session)/);
  } finally {
    if (!existed) rmSync(cronDir, { recursive: true, force: true });
  }
});

test("on the phone, panes on Termux's tmux server ($PREFIX/tmp) are the server crond's tend talks to: ok", async () => {
  // Termux's tmux has its socket dir built in and TMUX_TMPDIR unset, in a shell and under crond alike.
  const at = (place = openPlace("phone"));
  at.configure({
    services: [{ name: "blog", check: { tcp: "127.0.0.1:1" }, restart: { tmux: "main:blog", run: "sleep 1000" } }],
  });
  expect((await at.tmux(["new-session", "-d", "-s", "main", "sleep 1000"])).code).toBe(0);
  const rows = rowsOf((await at.tend(["doctor", "--json"])).stdout);
  expect(rows["tmux server"]).toMatchObject({ status: "ok", used: true });
  expect(rows["tmux server"].detail).toMatch(/\/usr\/tmp\/tmux-10123\/default: sessions main/);
});
