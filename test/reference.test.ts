// docs/configuration.md against the code: rendered from lib/config/reference.ts, whose tables
// must hold exactly the keys the readers accept and the defaults an empty configuration parses to.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CHECKS } from "../lib/checks/index.ts";
import { RESTARTS } from "../lib/restarts/index.ts";
import { NOTIFY_KEYS, parseConfig, SELF_UPDATE_KEYS, SERVE_KEYS, WATCHDOG_KEYS } from "../lib/config/load.ts";
import { REFERENCE, referenceKinds, renderReference } from "../lib/config/reference.ts";
import { BUSY_KEYS, MEMORY_KEYS, SERVICE_KEYS, TUNABLE_KEYS } from "../lib/config/service-table.ts";
import { parseDuration } from "../lib/core/duration.ts";
import { parseSize } from "../lib/core/size.ts";
import { ROOT } from "./helpers.ts";

const section = (table: string, kind: string | null = null) =>
  REFERENCE.find((entry) => entry.table === table && entry.kind === kind)!;
const keysOf = (table: string, kind: string | null = null) => section(table, kind).keys.map((entry) => entry.key);
const defaultOf = (table: string, name: string, kind: string | null = null) =>
  section(table, kind).keys.find((entry) => entry.key === name)!.default;

test("docs/configuration.md is rendered from the reference (make docs writes it)", () => {
  expect(readFileSync(join(ROOT, "docs", "configuration.md"), "utf8")).toBe(renderReference());
});

test("the reference has exactly the keys each table's reader accepts, and every registered kind", () => {
  const same = (documented: string[], accepted: string[]) =>
    expect([...documented].sort()).toEqual([...accepted].sort());
  same(keysOf("watchdog"), WATCHDOG_KEYS);
  same(keysOf("notify"), NOTIFY_KEYS);
  same(keysOf("serve"), SERVE_KEYS);
  same(keysOf("self_update"), SELF_UPDATE_KEYS);
  same(keysOf("defaults"), Object.keys(TUNABLE_KEYS));
  same(keysOf("service"), SERVICE_KEYS);
  same(keysOf("service.busy"), BUSY_KEYS);
  same(keysOf("service.memory"), MEMORY_KEYS);
  const kinds = referenceKinds();
  same(kinds.checks, kinds.registered.checks);
  same(kinds.restarts, kinds.registered.restarts);
  for (const [name, kind] of Object.entries(CHECKS)) same(keysOf("service.check", name), kind.keys);
  for (const [name, kind] of Object.entries(RESTARTS)) same(keysOf("service.restart", name), kind.keys);
});

test("the reference's defaults are what an empty configuration parses to", () => {
  const config = parseConfig(
    `[[service]]\nname = "a"\npidfile = "a.pid"\n[service.check]\ntls = "example.org:443"\n` +
      `[service.busy]\nport = 1\n[service.memory]\nlimit = "1GiB"\n`,
    "/c/tend.toml",
    { HOME: "/h" },
  );
  const duration = (table: string, name: string) => parseDuration(defaultOf(table, name)) ?? 0;
  expect(config.watchdog).toMatchObject({
    stateDir: "/h/.local/state/tend",
    log: "/h/.local/state/tend/watchdog.log",
    intervalMs: duration("watchdog", "interval"),
    bootDelayMs: duration("watchdog", "boot_delay"),
    concurrency: Number(defaultOf("watchdog", "concurrency")),
    heartbeatUrl: null,
    metricsFile: null,
    rotation: {
      maxBytes: parseSize(defaultOf("watchdog", "log_max_size")),
      keep: Number(defaultOf("watchdog", "log_keep")),
    },
  });
  expect(config.notify).toMatchObject({
    format: defaultOf("notify", "format"),
    timeoutMs: duration("notify", "timeout"),
    retries: Number(defaultOf("notify", "retries")),
    minIntervalMs: duration("notify", "min_interval"),
    spoolMaxAgeMs: duration("notify", "spool_max_age"),
    spoolMaxAttempts: Number(defaultOf("notify", "spool_max_attempts")),
  });
  expect(config.serve.listen).toBe(defaultOf("serve", "listen"));
  for (const [name, { field, kind }] of Object.entries(TUNABLE_KEYS)) {
    const written = defaultOf("defaults", name);
    const value = written === "" ? 0 : kind === "duration" ? parseDuration(written) : Number(written);
    expect({ name, value: config.defaults[field] as number | null }).toEqual({ name, value });
  }
  const [service] = config.services;
  expect(service.busy).toMatchObject({
    freshMs: duration("service.busy", "fresh"),
    maxMs: duration("service.busy", "max"),
  });
  expect(service.memory!.warnWithinMs).toBe(duration("service.memory", "warn_within"));
  expect(service.enabled).toBe(defaultOf("service", "enabled") === "true");
  expect(service.check).toMatchObject({
    warnDays: Number(defaultOf("service.check", "warn_days", "tls")),
    failDays: Number(defaultOf("service.check", "fail_days", "tls")),
    insecure: defaultOf("service.check", "insecure", "tls") === "true",
  });
});

test("the README is a front page: at most 200 lines, and its quickstart configuration is valid", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  expect(readme.split("\n").length).toBeLessThanOrEqual(200);
  const quickstart = /```toml\n([\s\S]*?)```/.exec(readme)![1];
  const config = parseConfig(quickstart, "/c/tend.toml", { HOME: "/h" });
  expect(config.services.map((service) => service.name)).toEqual(["blog", "api", "web"]);
  expect(config.watchdog.intervalMs).toBe(60_000);
});

test("every link in the README, CONTRIBUTING.md and docs/ stays in the repository (but SPEC.md's) and exists", () => {
  const files = ["README.md", "CONTRIBUTING.md", ...readdirSync(join(ROOT, "docs")).map((name) => `docs/${name}`)];
  const broken: string[] = [];
  for (const file of files.filter((name) => name.endsWith(".md"))) {
    const text = readFileSync(join(ROOT, file), "utf8").replace(/```[\s\S]*?```/g, "");
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const path = target.split("#")[0];
      if (!path) continue; // an anchor in the same file
      const resolved = resolve(ROOT, dirname(file), path);
      if (/^[a-z]+:/i.test(path)) broken.push(`${file}: ${target} leaves the repository`);
      else if (!resolved.startsWith(`${ROOT}/`) || !existsSync(resolved)) broken.push(`${file}: ${target}`);
    }
  }
  expect(broken).toEqual([]);
});
