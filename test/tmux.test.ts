// restart.tmux against a real tmux server on a private socket (TMUX_TMPDIR inside the sandbox).
import { afterEach, expect, test } from "bun:test";
import { alive, BUN, freePort, procState, Sandbox, SERVER, waitFor } from "./helpers.ts";

let box: Sandbox;
afterEach(() => box?.cleanup());

test("tmux: creates the session, respawns a deadlocked pane at strike 3, recreates a killed window", async () => {
  box = new Sandbox();
  const port = await freePort();
  box.writeConfig(`
[watchdog]
state_dir = "${box.state}"
[[service]]
name = "blog"
tmux = "work:blog"
grace = "0s"
cooldown = "0s"
verify_timeout = "20s"
[service.check]
http = "http://127.0.0.1:${port}/"
timeout = "1s"
[service.restart]
tmux = "work:blog"
run = "exec '${BUN}' '${SERVER}' ${port}"
`);
  const tmux = (...args: string[]) => Bun.spawnSync(["tmux", ...args], { env: box.env() });
  const panePid = () =>
    Number(tmux("display-message", "-p", "-t", "work:blog", "#{pane_pid}").stdout.toString().trim());

  const first = await box.tend(["watchdog"]);
  expect(first.stdout).toContain("[START] blog: created tmux session work"); // a first start, not a restart
  expect(first.stdout).not.toContain("[RECOVERED]");
  const frozen = panePid();
  expect(alive(frozen)).toBe(true);

  // tmux sends SIGCONT to a pane process that is stopped, so SIGSTOP cannot freeze it: deadlock it instead.
  process.kill(frozen, "SIGSTOP");
  await waitFor(() => procState(frozen) !== "T", 5000, "tmux to resume the stopped pane");
  process.kill(frozen, "SIGUSR1");
  await waitFor(
    async () =>
      (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(300) }).catch(() => null)) === null,
    5000,
    "deadlock",
  );
  expect((await box.tend(["watchdog"])).stdout).toContain("failure 1/3");
  expect((await box.tend(["watchdog"])).stdout).toContain("failure 2/3");
  expect(panePid()).toBe(frozen);
  const third = await box.tend(["watchdog"]);
  expect(third.stdout).toContain("[HUNG] blog");
  expect(third.stdout).toContain("[RESTART] blog: tmux respawn-pane -k -t work:blog");
  expect(third.stdout).toContain("[RECOVERED] blog recovered");
  const revived = panePid();
  expect(revived).not.toBe(frozen);
  expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);

  // A second window keeps the session alive when the service's window is killed.
  tmux("new-window", "-d", "-t", "work:", "-n", "other", "sleep 600");
  tmux("kill-window", "-t", "work:blog");
  await waitFor(() => !alive(revived), 5000, "window killed");
  const again = await box.tend(["watchdog"]);
  expect(again.stdout).toContain("[WARN] blog is not running (tmux pane work:blog:");
  expect(again.stdout).toContain("[RESTART] blog: created tmux window work:blog");
  expect(again.stdout).toContain("[RECOVERED] blog recovered");
}, 60_000);
