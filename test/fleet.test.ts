// examples/prometheus/tend.rules.yml, checked and unit-tested by Prometheus's own promtool (Debian's,
// unpacked: make build/tools/promtool): every rule firing and not firing, with its labels and text;
// then a fleet: Debian's Prometheus scraping three `watchdog run --serve` on loopback, the rules
// loaded, Debian's Alertmanager receiving what fires and what resolves.
import { expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, controlledServer, freePort, ROOT, Sandbox, SERVER, TEND, waitFor } from "./helpers.ts";

const PROMTOOL = process.env.PROMTOOL ?? join(ROOT, "build", "tools", "promtool");
const RULES = join(ROOT, "examples", "prometheus");

function promtool(...args: string[]) {
  if (!existsSync(PROMTOOL)) throw new Error(`promtool not found at ${PROMTOOL}: run make build/tools/promtool`);
  const run = Bun.spawnSync([PROMTOOL, ...args], { cwd: RULES, stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, said: run.stdout.toString() + run.stderr.toString() };
}

test("tend.rules.yml: promtool check rules finds the six rules the SPEC lists", () => {
  const checked = promtool("check", "rules", "tend.rules.yml");
  expect(checked.said).toContain("SUCCESS: 6 rules found");
  expect(checked.code).toBe(0);
});

test("tend.rules.yml: promtool test rules — each rule fires when it should and not before, with its labels", () => {
  const tested = promtool("test", "rules", "tend.rules.test.yml");
  console.log(tested.said.trim());
  expect(tested.said).toContain("SUCCESS");
  expect(tested.code).toBe(0);
  // The unit tests cover every rule the file has.
  const rules = [...readFileSync(join(RULES, "tend.rules.yml"), "utf8").matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
  const tests = readFileSync(join(RULES, "tend.rules.test.yml"), "utf8");
  expect(rules).toHaveLength(6);
  for (const rule of rules)
    expect({ rule, tested: tests.includes(`alertname: ${rule}`) }).toEqual({ rule, tested: true });
});

// Lesson 3 through the fleet path: tend's own passes write tend_service_up, and promtool evaluates the
// shipped rule over exactly those values. What happened is known here (the answers the test served):
// one 502 is a blip, three in a row an outage at N = 3.
test("tend's passes through promtool: a blip below N fires nothing, an outage at N fires TendServiceDown", async () => {
  const box = new Sandbox();
  const { control, server, url } = controlledServer();
  try {
    const metrics = join(box.dir, "tend.prom");
    box.configure({
      watchdog: { metrics_file: metrics },
      services: [{ name: "api", check: { http: url, timeout: "1s" } }],
    });
    const served = [200, 502, 200, 200, 502, 502, 502, 502, 200];
    const up: number[] = [];
    for (const status of served) {
      control.status = status;
      expect((await box.tend(["watchdog"])).code).toBe(0);
      up.push(
        Number(/^tend_service_up\{instance="[^"]+",service="api"\} (\d)$/m.exec(readFileSync(metrics, "utf8"))![1]),
      );
    }
    // Down from the third 502 in a row (index 6) until the next 200: from what was served, not from tend.
    const down = served.map((_, i) => i >= 6 && i <= 7);
    const fires = {
      exp_labels: { severity: "critical", instance: "h", service: "api" },
      exp_annotations: {
        summary: "api is down on h",
        description: "tend judged api down (failing at N strikes, its restart failed, or given up).",
      },
    };
    const tests = {
      rule_files: [join(RULES, "tend.rules.yml")],
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: [{ series: 'tend_service_up{instance="h",service="api"}', values: up.join(" ") }],
          alert_rule_test: down.map((fired, i) => ({
            eval_time: `${i}m`,
            alertname: "TendServiceDown",
            exp_alerts: fired ? [fires] : [],
          })),
        },
      ],
    };
    const file = join(box.dir, "passes.test.yml");
    writeFileSync(file, JSON.stringify(tests)); // YAML is a superset of JSON
    const tested = promtool("test", "rules", file);
    expect({ up, said: tested.said.trim(), code: tested.code }).toMatchObject({ code: 0 });
    expect(tested.said).toContain("SUCCESS");
  } finally {
    server.stop(true);
    box.cleanup();
  }
});

const PROMETHEUS = process.env.PROMETHEUS ?? join(ROOT, "build", "tools", "prometheus");
const ALERTMANAGER = process.env.ALERTMANAGER ?? join(ROOT, "build", "tools", "alertmanager");

test("a fleet: a real Prometheus scrapes three serve, the rules fire to a real Alertmanager, and resolve", async () => {
  for (const [tool, path] of [
    ["prometheus", PROMETHEUS],
    ["alertmanager", ALERTMANAGER],
  ])
    if (!existsSync(path))
      throw new Error(`${tool} not found at ${path}: run make build/tools/${tool} (make test does)`);
  const box = new Sandbox();
  const children: ReturnType<typeof Bun.spawn>[] = [];
  const spawn = (argv: string[], env: Record<string, string> = {}) => {
    const child = Bun.spawn(argv, {
      env: { ...box.env(), ...env },
      stdout: "ignore",
      stderr: "ignore",
      detached: true,
    });
    children.push(child);
    box.track(child.pid);
    return child;
  };
  const timeline: string[] = [];
  const started = Date.now();
  try {
    // Three "hosts": a state dir, a service of its own, and a watchdog run --serve each, in a UTS
    // namespace whose host name is the host's (unshare -u: a real host name for each, as tend reads it).
    // vm also sends its alerts straight to the Alertmanager (format = "alertmanager"): both paths.
    const amPort = await freePort();
    const hosts = ["phone", "vm", "mac"];
    const onHost = (host: string, argv: string[]) => [
      "unshare",
      "-u",
      "sh",
      "-c",
      'hostname "$0" && exec "$@"',
      host,
      ...argv,
    ];
    const ports: Record<string, number> = {};
    const services: Record<string, ReturnType<typeof Bun.spawn>> = {};
    const loops: Record<string, ReturnType<typeof Bun.spawn>> = {};
    for (const host of hosts) {
      ports[host] = await freePort();
      const webPort = await freePort();
      services[host] = spawn([BUN, SERVER, String(webPort)]);
      const config = join(box.dir, `${host}.toml`);
      writeFileSync(
        config,
        `[watchdog]\nstate_dir = "${join(box.dir, host)}"\ninterval = "1s"\n` +
          (host === "vm" ? `[notify]\nurl = "http://127.0.0.1:${amPort}"\nformat = "alertmanager"\n` : "") +
          `[[service]]\nname = "web"\nfailures = 1\n[service.check]\n` +
          `http = "http://127.0.0.1:${webPort}/"\ntimeout = "500ms"\n`,
      );
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${webPort}/`).catch(() => null)) !== null,
        10_000,
        "web",
      );
      loops[host] = spawn(
        onHost(host, [TEND, "watchdog", "run", "--interval", "1s", "--serve", "--listen", `127.0.0.1:${ports[host]}`]),
        {
          TEND_CONFIG: config,
        },
      );
    }
    // A real Alertmanager, and a real Prometheus with the shipped rules (their stale threshold,
    // 2 x 5m + 30s, set to 2 x 1s + 8s for passes every second: the one change; a loaded machine can hold
    // a pass back a few seconds, which at the real scale is inside the 30s) and its alerting.
    const amConfig = join(box.dir, "alertmanager.yml");
    writeFileSync(amConfig, `route:\n  receiver: "null"\n  group_wait: 0s\nreceivers:\n  - name: "null"\n`);
    spawn([
      ALERTMANAGER,
      `--config.file=${amConfig}`,
      `--storage.path=${join(box.dir, "am")}`,
      `--web.listen-address=127.0.0.1:${amPort}`,
      "--cluster.listen-address=",
    ]);
    const rules = readFileSync(join(RULES, "tend.rules.yml"), "utf8");
    expect(rules).toContain("> 630");
    writeFileSync(join(box.dir, "tend.rules.yml"), rules.replaceAll("> 630", "> 10"));
    const promPort = await freePort();
    const targets = hosts.map(
      (host) => `      - targets: ["127.0.0.1:${ports[host]}"]\n        labels: { host: ${host} }`,
    );
    writeFileSync(
      join(box.dir, "prometheus.yml"),
      `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n` +
        `rule_files: ["${join(box.dir, "tend.rules.yml")}"]\n` +
        `alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ["127.0.0.1:${amPort}"]\n` +
        // As docs/fleet.md ships it: honor_labels keeps the instance each host names itself by.
        `scrape_configs:\n  - job_name: tend\n    honor_labels: true\n    static_configs:\n${targets.join("\n")}\n`,
    );
    spawn([
      PROMETHEUS,
      `--config.file=${join(box.dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(box.dir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ]);
    const active = async () => {
      const alerts = (await (
        await fetch(`http://127.0.0.1:${amPort}/api/v2/alerts?active=true`).catch(() => null)
      )
        ?.json()
        .catch(() => [])) as { labels: Record<string, string>; status: { state: string } }[] | undefined;
      return (alerts ?? []).filter((alert) => alert.status.state === "active").map((alert) => alert.labels);
    };
    const say = (what: string) => timeline.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${what}`);
    // Every host up, scraped: nothing fires.
    await waitFor(
      async () => {
        const answer = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=tend_service_up`).catch(() => null);
        // Starting, it answers 503 "Service Unavailable" (not JSON): not yet.
        const result = answer ? (((await answer.json().catch(() => ({}))) as any).data?.result ?? []) : [];
        return result.length === 3 && result.every((series: any) => series.value[1] === "1");
      },
      60_000,
      "Prometheus to scrape three healthy hosts",
    );
    say("three hosts scraped, every service up");
    expect(await active()).toEqual([]);

    // The service on "vm" freezes: its down alert, with vm's labels.
    process.kill(services.vm.pid, "SIGSTOP");
    let down: Record<string, string> | undefined;
    await waitFor(
      async () =>
        !!(down = (await active()).find((labels) => labels.alertname === "TendServiceDown" && labels.job === "tend")),
      60_000,
      "TendServiceDown by Prometheus's rule",
    );
    say(`fired ${JSON.stringify(down)}`);
    expect(down).toMatchObject({ alertname: "TendServiceDown", service: "web", host: "vm", severity: "critical" });
    // One instance for the host, whichever path the alert came by: Prometheus's rule, tend's own.
    expect(down!.instance).toBe("vm");
    let direct: Record<string, string> | undefined;
    await waitFor(
      async () => !!(direct = (await active()).find((labels) => labels.alertname === "TendServiceDown" && !labels.job)),
      30_000,
      "vm's own TendServiceDown",
    );
    expect(direct).toMatchObject({ service: "web", instance: "vm", severity: "critical" });
    process.kill(services.vm.pid, "SIGCONT");
    await waitFor(
      async () => !(await active()).some((labels) => labels.alertname === "TendServiceDown"),
      60_000,
      "TendServiceDown resolved",
    );
    say("resolved TendServiceDown (vm's service answers again)");

    // "mac" stops watching (its loop gone; its state still served): the stale-watchdog alert.
    loops.mac.kill("SIGKILL");
    await loops.mac.exited;
    const macConfig = join(box.dir, "mac.toml");
    const serving = spawn(onHost("mac", [TEND, "watchdog", "serve", "--listen", `127.0.0.1:${ports.mac}`]), {
      TEND_CONFIG: macConfig,
    });
    let stale: Record<string, string> | undefined;
    await waitFor(
      async () =>
        !!(stale = (await active()).find(
          (labels) => labels.alertname === "TendWatchdogStale" && labels.host === "mac",
        )),
      60_000,
      "TendWatchdogStale",
    );
    say(`fired ${JSON.stringify(stale)}`);
    expect(stale).toMatchObject({ alertname: "TendWatchdogStale", host: "mac", severity: "critical" });
    serving.kill("SIGKILL");
    await serving.exited;
    spawn(
      onHost("mac", [TEND, "watchdog", "run", "--interval", "1s", "--serve", "--listen", `127.0.0.1:${ports.mac}`]),
      {
        TEND_CONFIG: macConfig,
      },
    );
    await waitFor(
      async () => !(await active()).some((labels) => labels.alertname === "TendWatchdogStale"),
      60_000,
      "TendWatchdogStale resolved",
    );
    say("resolved TendWatchdogStale (mac's loop runs again)");
    console.log(`the fleet's alert timeline:\n${timeline.join("\n")}`);
  } finally {
    for (const child of children) {
      try {
        process.kill(-child.pid, "SIGCONT");
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }
    box.cleanup();
  }
}, 240_000);
