// The journal of observations (lib/core/observed.ts): a record turns the state it follows into the next
// one exactly, several records into the last, and a torn or foreign line changes nothing.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyObservations, observationRecord, parseObservations } from "../lib/core/observed.ts";
import { appendSample } from "../lib/core/latency.ts";
import { freshState, markOutput, type ServiceState } from "../lib/core/state.ts";
import { controlledServer, holdLock, waitFor } from "./helpers.ts";
import { closePlaces, openPlace, PLACES, type Place } from "./places.ts";

const MAX = 5;

/** What a healthy pass does to a state: a probe, a latency sample (at most MAX), an RSS look, a verdict. */
function observed(state: ServiceState, at: number, { rss = true } = {}): ServiceState {
  const latency = appendSample(state.latencyLog, state.latencyCount, [at, 3, 1], MAX);
  return {
    ...state,
    ...latency,
    lastProbe: { at, ok: true, detail: "HTTP 200", latencyMs: 3 },
    lastHealthyAt: at,
    verdict: { kind: "ok", word: "healthy", reason: "healthy", until: null, at },
    probes: ((state.probes ?? "") + "1").slice(-10),
    rss: rss ? [...state.rss, [at, 1000 + at] as [number, number]].slice(-3) : state.rss,
    outputMarks: markOutput(state.outputMarks, at * 10, at),
  };
}

const json = (state: ServiceState) => JSON.stringify(state, Object.keys(state).sort());

describe("a record of observations", () => {
  const cases: [string, number][] = [
    ["the first sample", 0],
    ["a log growing", 2],
    ["a log at its size, its oldest dropped", MAX + 3],
    ["arrays at their size", 20],
  ];
  for (const [name, passes] of cases) {
    test(`${name}: the record rebuilds the next state`, () => {
      let state: ServiceState = { ...freshState(), writeId: "w1" };
      for (let at = 1; at <= passes; at++) state = observed(state, at);
      const next = observed(state, passes + 1);
      const record = observationRecord("web", "w1", state, next);
      expect(record).not.toBeNull();
      expect(json(applyObservations(state, [record!]))).toBe(json(next));
      // What the line says: the sample added, not the history.
      expect(record!.l).toBe(`${passes + 1},3,1`);
      expect(JSON.stringify(record).length).toBeLessThan(600);
    });
  }

  test("twelve records in a row rebuild the twelfth state, the log cut once", () => {
    const base = { ...freshState(), writeId: "w1" };
    let state: ServiceState = base;
    const records = [];
    for (let at = 1; at <= 12; at++) {
      const next = observed(state, at, { rss: at % 2 === 0 });
      records.push(observationRecord("web", "w1", state, next)!);
      state = next;
    }
    expect(records.every(Boolean)).toBe(true);
    expect(json(applyObservations(base, records))).toBe(json(state));
    expect(state.latencyCount).toBe(MAX);
  });

  test("a state that lost a key has no record; a log not grown from the last one is carried whole", () => {
    const state = observed({ ...freshState(), writeId: "w1" }, 1);
    const { certExpiresAt: _, ...without } = { ...state, certExpiresAt: 5 };
    expect(observationRecord("web", "w1", { ...state, certExpiresAt: 5 }, without as ServiceState)).toBeNull();
    const log = Array.from({ length: 20 }, (_, index) => `${index},9,1`).join(" ");
    const rewritten = { ...observed(state, 2), latencyLog: log, latencyCount: 20 };
    const record = observationRecord("web", "w1", state, rewritten)!;
    expect(record.l).toBeUndefined();
    expect(record.p.latencyLog).toBe(log);
    expect(json(applyObservations(state, [record]))).toBe(json(rewritten));
  });

  test("a log carried whole between grown ones: the entries after it are added to it", () => {
    const base: ServiceState = observed({ ...freshState(), writeId: "w1" }, 1);
    const grown = observed(base, 2);
    const log = Array.from({ length: 20 }, (_, index) => `${index},9,1`).join(" ");
    const rewritten = { ...observed(grown, 3), latencyLog: log, latencyCount: MAX };
    const after = observed(rewritten, 4);
    const records = [
      observationRecord("web", "w1", base, grown)!,
      observationRecord("web", "w1", grown, rewritten)!,
      observationRecord("web", "w1", rewritten, after)!,
    ];
    expect(records.map((record) => [record.l !== undefined, "latencyLog" in record.p])).toEqual([
      [true, false],
      [false, true],
      [true, false],
    ]);
    expect(json(applyObservations(base, records))).toBe(json(after));
  });

  test("the same state has an empty record; nothing applied changes nothing", () => {
    const state = observed({ ...freshState(), writeId: "w1" }, 1);
    expect(observationRecord("web", "w1", state, { ...state })).toEqual({ s: "web", w: "w1", p: {} });
    expect(applyObservations(state, [])).toBe(state);
  });
});

describe("the journal's text", () => {
  const state = { ...freshState(), writeId: "w1" };
  const line = (at: number) => JSON.stringify(observationRecord("web", "w1", state, observed(state, at)));

  test("records by service in the order written", () => {
    const other = JSON.stringify({ s: "db", w: "w2", p: { lastHealthyAt: 5 } });
    const parsed = parseObservations(`${line(1)}\n${other}\n${line(2)}\n`);
    expect([...parsed.keys()]).toEqual(["web", "db"]);
    expect(parsed.get("web")!.map((record) => record.p.lastHealthyAt)).toEqual([1, 2]);
  });

  test("a torn tail, a run of NULs and a blank line are skipped; the lines around them kept", () => {
    const torn = line(3).slice(0, 40);
    const text = `${line(1)}\n${"\0".repeat(300)}\n\n${line(2)}\n${torn}`;
    expect(
      parseObservations(text)
        .get("web")!
        .map((record) => record.p.lastHealthyAt),
    ).toEqual([1, 2]);
  });

  test("a line that would change a decision (strikes, a pause, restarts) is not a record", () => {
    const forged = [
      { s: "web", w: "w1", p: { strikes: 3 } },
      { s: "web", w: "w1", p: { paused: true } },
      { s: "web", w: "w1", p: {}, a: { restartTimes: [1, 5] } },
      { s: "web", w: 7, p: {} },
      { s: "web", w: "w1", p: {}, l: 5 },
      ["web"],
    ];
    const text = forged.map((record) => JSON.stringify(record)).join("\n");
    expect(parseObservations(text).size).toBe(0);
  });
});

// The journal end to end, on this host and inside the phone (test/places.ts): what a pass writes, what
// every reader sees, its compaction, and a power cut's damage to it.
let place: Place | null = null;
const stops: (() => void)[] = [];
afterEach(async () => {
  while (stops.length) stops.pop()!();
  await place?.cleanup();
  place = null;
});
afterAll(() => closePlaces());

/** A state file's identity: the same inode, size and mtime is the same write. */
const identity = (path: string) => {
  const info = statSync(path);
  return `${info.ino}:${info.size}:${info.mtimeMs}`;
};
for (const where of PLACES)
  describe(`the journal of observations (${where})`, () => {
    const healthyPlace = () => {
      const box = (place = openPlace(where));
      const web = controlledServer();
      stops.push(() => web.server.stop(true));
      box.configure({
        services: [
          { name: "web", check: { http: web.url } },
          { name: "api", check: { http: web.url } },
        ],
      });
      return { box, web };
    };

    test("a pass that only observed leaves the state files as written and appends a line each", async () => {
      const { box, web } = healthyPlace();
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0); // START: written whole
      const files = ["web", "api"].map((name) => box.stateFile(`services/${name}.json`));
      const written = files.map(identity);
      const journal = box.read("observations.jsonl");
      const passed = Date.now();
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      expect(files.map(identity)).toEqual(written);
      const lines = box.read("observations.jsonl").slice(journal.length).trim().split(/\n+/);
      expect(lines.map((line) => JSON.parse(line).s).sort()).toEqual(["api", "web"]);
      // Every reader sees the pass: status, and the state as saved.
      expect(box.stateOf("web").latencyCount).toBe(2);
      const status = JSON.parse((await box.tend(["watchdog", "status", "--json", "--cached"])).stdout);
      const row = status.services.find((service: { name: string }) => service.name === "web");
      expect(row.state).toBe("healthy");
      expect(Date.parse(row.probe.at)).toBeGreaterThanOrEqual(passed);
      expect(Date.parse(row.last_pass.at)).toBeGreaterThanOrEqual(passed);
      // A strike is a decision: written whole, the journal's lines for it moot from then on.
      web.control.status = 500;
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      expect(identity(files[0])).not.toBe(written[0]);
      expect(box.stateOf("web")).toMatchObject({ strikes: 1, latencyCount: 3 });
      web.control.status = 200;
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      expect(box.stateOf("web")).toMatchObject({ strikes: 0, latencyCount: 4 });
    }, 60_000);

    test("past 64 KiB a pass writes each state whole and empties it first; a held service puts it off", async () => {
      const { box } = healthyPlace();
      for (let pass = 0; pass < 3; pass++) expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      // Lines of a service no longer configured: the journal past its size.
      const gone = JSON.stringify({ s: "gone", w: "x", p: { lastHealthyAt: 1 } }) + "\n";
      box.writeState("observations.jsonl", box.read("observations.jsonl") + gone.repeat(2000), 0o600);
      const owner = holdLock(box.stateFile("services/api.lock"), "operator", "sleep 30");
      stops.push(() => owner.end());
      await waitFor(() => box.read("services/api.lock").startsWith("operator pid"), 5000, "the owner's record");
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      expect(box.read("observations.jsonl").length).toBeGreaterThan(64 * 1024); // put off
      expect(box.stateOf("web").latencyCount).toBe(4);
      owner.end();
      await owner.exited;
      const web = identity(box.stateFile("services/web.json"));
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      // Emptied, then this pass's own lines: one a service; every sample kept in the states written whole.
      const lines = box.read("observations.jsonl").trim().split(/\n+/);
      expect(lines.map((line) => JSON.parse(line).s).sort()).toEqual(["api", "web"]);
      expect(identity(box.stateFile("services/web.json"))).not.toBe(web);
      expect(box.stateOf("web").latencyCount).toBe(5);
      expect(box.stateOf("api").latencyCount).toBe(4); // its pass left to the owner: one look fewer
    }, 60_000);

    test("a symlink planted at the journal: never read or written through, the states written whole", async () => {
      const { box } = healthyPlace();
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      // What it points at names the write web's file holds: were it read, web would seem healthy in 1970.
      const { writeId } = JSON.parse(box.read("services/web.json"));
      const forged = JSON.stringify({ s: "web", w: writeId, p: { lastHealthyAt: 1 } }) + "\n";
      box.writeScratch("precious", forged);
      Bun.spawnSync(["rm", "-f", box.stateFile("observations.jsonl")]);
      symlinkSync(box.scratch("precious").inside, box.stateFile("observations.jsonl"));
      const written = identity(box.stateFile("services/web.json"));
      expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      expect(readFileSync(box.scratch("precious").outside, "utf8")).toBe(forged);
      expect(identity(box.stateFile("services/web.json"))).not.toBe(written);
      expect(box.stateOf("web").latencyCount).toBe(2);
      expect(box.stateOf("web").lastHealthyAt).toBeGreaterThan(1);
    }, 60_000);

    test("a power cut's NUL run and torn line: skipped, the lines after them read, no error", async () => {
      const { box } = healthyPlace();
      for (let pass = 0; pass < 2; pass++) expect((await box.tend(["watchdog", "pass"])).code).toBe(0);
      const torn = box.read("observations.jsonl").trim().split("\n").at(-1)!.slice(0, 50);
      box.writeState("observations.jsonl", box.read("observations.jsonl") + "\0".repeat(4096) + torn, 0o600);
      const pass = await box.tend(["watchdog", "pass"]);
      expect(pass.code).toBe(0);
      expect(pass.stdout + pass.stderr).toBe("");
      // The line torn and the NULs cost that one look; the pass after them is read.
      expect(box.stateOf("web").latencyCount).toBe(3);
      expect((await box.tend(["watchdog", "status"])).code).toBe(0);
    }, 60_000);
  });

/** A state dir of its own (its services/ made), and its journal's path; removed after `use`. */
async function inStateDir(use: (dir: string, journal: string) => void | Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), "tend-journal-"));
  try {
    mkdirSync(join(dir, "services"));
    await use(dir, join(dir, "observations.jsonl"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a reader that stays (the loop, serve) reads what was appended since, once whole", () => {
  test("a line being appended is read once it ends; a compacted journal is read anew", async () => {
    const { journalOf } = await import("../lib/state/observed.ts");
    await inStateDir((dir, path) => {
      const line = (name: string, at: number, checkWarning = "") =>
        `\n${JSON.stringify({ s: name, w: "w1", p: { lastHealthyAt: at, checkWarning } })}\n`;
      const seen = (name: string) => (journalOf(dir).records.get(name) ?? []).map((record) => record.p.lastHealthyAt);
      writeFileSync(path, line("web", 1) + line("api", 1));
      expect(seen("web")).toEqual([1]);
      // Half a line (its writer midway, within a character's UTF-8 bytes): not read yet; whole, read once.
      const next = Buffer.from(line("web", 2, "expires soon ✓") + line("web", 3) + line("api", 2));
      const cut = next.indexOf("✓") + 1;
      appendFileSync(path, next.subarray(0, cut));
      expect(seen("web")).toEqual([1]);
      appendFileSync(path, next.subarray(cut));
      expect(seen("web")).toEqual([1, 2, 3]);
      expect(seen("api")).toEqual([1, 2]);
      expect(journalOf(dir).records.get("web")![1].p.checkWarning).toBe("expires soon ✓");
      // Compacted: a new file (a new inode), read from its start.
      writeFileSync(`${path}.new`, line("web", 4));
      renameSync(`${path}.new`, path);
      expect(seen("web")).toEqual([4]);
      expect(seen("api")).toEqual([]);
    });
  });
});

describe("when the journal is compacted", () => {
  test("past 64 KiB, or 3.5 KiB a service where there are more (100: 64 KiB was every other pass)", async () => {
    const { compactObservations } = await import("../lib/state/service-state.ts");
    await inStateDir(async (dir, path) => {
      const names = (count: number) => Array.from({ length: count }, (_, index) => `s${index}`);
      // Records of a service with no state file: counted in the size, nothing to write whole.
      const line = `\n${JSON.stringify({ s: "gone", w: "w1", p: { lastHealthyAt: 1 } })}\n`;
      const journalOf = (kib: number) => writeFileSync(path, line.repeat(Math.ceil((kib * 1024) / line.length)));
      journalOf(70);
      expect(await compactObservations(dir, names(10), "pass")).toBe(true);
      expect(statSync(path).size).toBe(0);
      journalOf(70);
      expect(await compactObservations(dir, names(100), "pass")).toBe(false); // 100 services: 350 KiB
      expect(statSync(path).size).toBeGreaterThan(70 * 1024);
      journalOf(340);
      expect(await compactObservations(dir, names(100), "pass")).toBe(false);
      journalOf(351);
      expect(await compactObservations(dir, names(100), "pass")).toBe(true);
      expect(statSync(path).size).toBe(0);
    });
  });
});
