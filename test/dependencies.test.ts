// One dependency rule: the pass, `status` (all services, or one with its dependency outside the rows) and
// the table's column (core/verdict.ts) say the same of whether a service's failures are its dependency's.
// Through the binary, against real HTTP servers on port 0 and a real process in grace.
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blocksDependents, STATE_WORDS, WORDS, type StateWord } from "../lib/core/verdict.ts";
import { controlledServer, holdLock, Sandbox, waitFor } from "./helpers.ts";

let box: Sandbox;
const stops: (() => void)[] = [];
afterEach(() => {
  while (stops.length) stops.pop()!();
  box?.cleanup();
});

/** db and app, each behind a server whose answer the test sets; app depends on db. Watch only. */
function twoServices(dbService: Record<string, string> = {}) {
  box = new Sandbox();
  const db = controlledServer();
  const app = controlledServer();
  stops.push(
    () => db.server.stop(true),
    () => app.server.stop(true),
  );
  box.configure({
    services: [
      { name: "db", ...dbService, check: { http: db.url, timeout: "1s" } },
      { name: "app", depends_on: ["db"], check: { http: app.url, timeout: "1s" } },
    ],
  });
  return { db: db.control, app: app.control };
}

/** The words status shows now, by service. */
async function statusWords(...names: string[]): Promise<Record<string, string>> {
  const result = await box.tend(["watchdog", "status", "--json", ...names]);
  const report = JSON.parse(result.stdout);
  return Object.fromEntries(report.services.map((row: { name: string; state: string }) => [row.name, row.state]));
}

/** The words the last pass recorded, by service. */
const recordedWords = (...names: string[]) =>
  Object.fromEntries(names.map((name) => [name, box.stateOf(name).verdict.word]));

test("db failing: status before any pass, the pass, and status after it all say app waits on db", async () => {
  const answers = twoServices();
  answers.db.status = 503;
  answers.app.status = 503;
  expect(await statusWords()).toEqual({ db: "failing", app: "waiting" });
  // app alone: db is no row, so status assesses it as the pass will, before app.
  expect(await statusWords("app")).toEqual({ app: "waiting" });
  expect((await box.tend(["watchdog"])).code).toBe(0);
  expect(recordedWords("db", "app")).toEqual({ db: "failing", app: "waiting" });
  expect(box.read("watchdog.log")).toContain("[WAIT] app");
  expect(await statusWords()).toEqual({ db: "failing", app: "waiting" });
});

test("the dry run says it as the pass does, holding no lock and writing nothing (its own driver)", async () => {
  const answers = twoServices();
  answers.db.status = 503;
  answers.app.status = 503;
  // An operator holds app's lock meanwhile: a pass would leave app to it; the dry run owns nothing.
  mkdirSync(join(box.state, "services"), { recursive: true, mode: 0o700 });
  const holder = holdLock(join(box.state, "services", "app.lock"), "operator", "sleep 30");
  try {
    await waitFor(() => box.read("services/app.lock").includes("operator"), 5000, "the operator's record");
    const dry = await box.tend(["watchdog", "pass", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^db: strike \(HTTP 503 .* in \d+ms; strike 1\)$/m);
    expect(dry.stdout).toMatch(/^app: wait \(HTTP 503 .* in \d+ms; dependency db is failing\)$/m);
    expect(box.read("watchdog.log")).toBe("");
    expect(box.read("services/db.json") + box.read("services/app.json")).toBe("");
  } finally {
    holder.end();
    await holder.exited;
  }
});

test("db answering: app's failure is its own (a strike), in status and in the pass alike", async () => {
  const answers = twoServices();
  answers.db.status = 200;
  answers.app.status = 503;
  expect(await statusWords()).toEqual({ db: "healthy", app: "failing" });
  expect(await statusWords("app")).toEqual({ app: "failing" });
  await box.tend(["watchdog"]);
  expect(recordedWords("db", "app")).toEqual({ db: "healthy", app: "failing" });
});

test("db starting (inside its grace): app waits for it, in status and in the pass alike", async () => {
  // A process just started, named by db's pidfile: db is in its grace (not probed, not judged).
  const sleeper = Bun.spawn(["sleep", "600"]);
  const pidfile = join(tmpdir(), `tend-dependencies-${sleeper.pid}.pid`);
  writeFileSync(pidfile, `${sleeper.pid}\n`);
  const answers = twoServices({ pidfile, grace: "1h" });
  box.track(sleeper.pid);
  stops.push(() => rmSync(pidfile, { force: true }));
  answers.db.status = 503;
  answers.app.status = 503;
  expect(await statusWords()).toEqual({ db: "starting", app: "waiting" });
  expect(await statusWords("app")).toEqual({ app: "waiting" });
  await box.tend(["watchdog"]);
  expect(recordedWords("db", "app")).toEqual({ db: "starting", app: "waiting" });
});

test("the table's dependents column agrees with its other columns", () => {
  for (const word of STATE_WORDS) {
    const meaning = WORDS[word as StateWord];
    const verdict = { word: word as StateWord };
    const [afterOk, afterFail] = [blocksDependents(verdict, { ok: true }), blocksDependents(verdict, { ok: false })];
    // Judged down (it pages): its dependents never go on as if it served.
    if (meaning.firing) expect([word, afterOk, afterFail]).toEqual([word, true, true]);
    // Answering as it should: its dependents' failures are their own.
    if (meaning.calm && meaning.colour === "ok") expect([word, afterOk, afterFail]).toEqual([word, false, false]);
    // A word that says nothing of the answer now (not probed, or changing): its last probe says.
    if (meaning.dependents === "as-probed") expect([word, afterOk, afterFail]).toEqual([word, false, true]);
  }
  // Never judged: its last probe, and none at all is no reason to wait.
  expect([blocksDependents(null, null), blocksDependents(null, { ok: false })]).toEqual([false, true]);
});
