// The import corpus, scored (SPEC `watchdog import`, lesson 15): each script in test/import/corpus/ —
// written here in the idioms of public cron watchdogs (curl + fail counters, pidof/pgrep/ps|grep,
// nc -z, /dev/tcp, systemctl is-active, service/init.d/pm2/supervisorctl/docker restarts, nohup,
// tmux kill-session + new-session, send-keys, Telegram/ntfy/Slack/Discord/Gotify/mail, a loop's sleep)
// — beside its expected draft, written by hand (NAME.toml; `_exit` is the exit import owes, 0 if
// absent). Every value is scored: right, missing, wrong (a value the draft has that the script does
// not give is wrong too); a draft is dangerous when it restarts what the script did not, runs
// another command than the script did, or drops a restart without saying so (exit 0).
// `bun test/import-corpus.ts [TEND]` prints the table for any binary (the note's before and after).
import { readdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir, userInfo } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
export const CORPUS = join(ROOT, "test", "import", "corpus");
/** Scripts kept elsewhere in the repository, scored against an expected draft in the corpus. */
const ELSEWHERE: Record<string, string> = { "00-guide": join(ROOT, "docs", "migrating", "watchdog.sh") };

type Toml = Record<string, any>;

export interface Score {
  script: string;
  right: number;
  missing: string[];
  wrong: string[];
  dangerous: string[];
  exit: { want: number; got: number };
  validates: boolean;
  stderr: string;
}

const equal = (a: unknown, b: unknown) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  return value;
}

/** The leaves of a table, one level of sub-tables deep (a list or an inline table is one value). */
function leaves(table: Toml, prefix: string, out = new Map<string, unknown>()): Map<string, unknown> {
  for (const [key, value] of Object.entries(table)) {
    if (key === "_exit") continue;
    const path = prefix ? `${prefix}.${key}` : key;
    const nested = value && typeof value === "object" && !Array.isArray(value) && !["headers", "env"].includes(key);
    if (nested && key !== "service") leaves(value, path, out);
    else if (key !== "service") out.set(path, value);
  }
  return out;
}

const checkId = (service: Toml) =>
  JSON.stringify(
    sortKeys(
      Object.entries(service.check ?? {}).find(([key]) => ["http", "tcp", "command", "process", "log"].includes(key)),
    ),
  );

export function scoreDraft(
  script: string,
  expected: Toml,
  draft: Toml | null,
  exit: number,
  stderr: string,
  validates: boolean,
): Score {
  const score: Score = {
    script,
    right: 0,
    missing: [],
    wrong: [],
    dangerous: [],
    exit: { want: expected._exit ?? 0, got: exit },
    validates,
    stderr,
  };
  const mark = (path: string, want: unknown, got: unknown) => {
    if (want === undefined && got === undefined) return;
    if (want === undefined) score.wrong.push(`${path}: ${JSON.stringify(got)} (not the script's)`);
    else if (got === undefined) score.missing.push(`${path}: ${JSON.stringify(want)}`);
    else if (equal(want, got)) score.right++;
    else score.wrong.push(`${path}: ${JSON.stringify(got)}, the script's is ${JSON.stringify(want)}`);
  };
  const want = leaves(expected, "");
  const got = leaves(draft ?? {}, "");
  for (const path of new Set([...want.keys(), ...got.keys()])) mark(path, want.get(path), got.get(path));
  const expectedServices: Toml[] = expected.service ?? [];
  const draftServices: Toml[] = [...(draft?.service ?? [])];
  for (const service of expectedServices) {
    let at = draftServices.findIndex((one) => one.name === service.name);
    if (at < 0) at = draftServices.findIndex((one) => checkId(one) === checkId(service));
    const drafted = at >= 0 ? draftServices.splice(at, 1)[0] : null;
    const label = `service ${service.name}`;
    if (!drafted) {
      for (const path of leaves(service, "").keys()) score.missing.push(`${label}.${path}`);
      if (service.restart) score.missing.push(`${label}: the whole service`);
      if (service.restart && exit === 0) score.dangerous.push(`${label}: its restart dropped without a word (exit 0)`);
      continue;
    }
    const a = leaves(service, "");
    const b = leaves(drafted, "");
    for (const path of new Set([...a.keys(), ...b.keys()])) mark(`${label}.${path}`, a.get(path), b.get(path));
    if (drafted.restart && !service.restart)
      score.dangerous.push(`${label}: restarts (${JSON.stringify(drafted.restart)}), the script does not`);
    else if (drafted.restart && !equal(drafted.restart, service.restart))
      score.dangerous.push(
        `${label}: runs ${JSON.stringify(drafted.restart)}, the script ${JSON.stringify(service.restart)}`,
      );
    if (service.restart && !drafted.restart && exit === 0)
      score.dangerous.push(`${label}: its restart dropped without a word (exit 0)`);
  }
  for (const extra of draftServices) {
    for (const path of leaves(extra, "").keys())
      score.wrong.push(`service ${extra.name}.${path} (a service the script does not have)`);
    if (extra.restart)
      score.dangerous.push(
        `service ${extra.name}: restarts ${JSON.stringify(extra.restart)}, a service the script does not have`,
      );
  }
  if (score.exit.want !== score.exit.got) score.wrong.push(`exit ${exit}, the script's draft owes ${score.exit.want}`);
  return score;
}

/** Every script of the corpus through `TEND watchdog import`, and each draft through `validate`. */
export function scoreCorpus(tend: string): Score[] {
  const home = mkdtempSync(join(tmpdir(), "tend-corpus-"));
  const mailFrom = `${userInfo().username}@${hostname()}`;
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TEND_STATE_DIR: join(home, "state") };
  try {
    const names = readdirSync(CORPUS)
      .filter((file) => file.endsWith(".toml"))
      .map((file) => file.slice(0, -5))
      .sort();
    return names.map((name) => {
      const script = ELSEWHERE[name] ?? join(CORPUS, `${name}.sh`);
      const expected = Bun.TOML.parse(
        readFileSync(join(CORPUS, `${name}.toml`), "utf8").replaceAll("$MAILFROM", mailFrom),
      ) as Toml;
      const run = Bun.spawnSync([tend, "watchdog", "import", script], { env, cwd: home });
      const stdout = run.stdout.toString();
      let draft: Toml | null = null;
      try {
        draft = stdout.trim() ? (Bun.TOML.parse(stdout) as Toml) : null;
      } catch {
        draft = null;
      }
      let validates = false;
      if (draft) {
        const file = join(home, `${name}.toml`);
        writeFileSync(file, stdout, { mode: 0o600 });
        validates = Bun.spawnSync([tend, "watchdog", "validate", "--config", file], { env, cwd: home }).exitCode === 0;
      }
      return scoreDraft(name, expected, draft, run.exitCode ?? -1, run.stderr.toString(), validates);
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export function table(scores: Score[]): string {
  const rows = scores.map((s) => {
    const total = s.right + s.missing.length + s.wrong.length;
    const cells = [s.script, `${s.right}/${total}`, s.missing.length, s.wrong.length, s.dangerous.length];
    return `| ${cells.join(" | ")} | ${s.exit.got} (${s.exit.want}) | ${s.validates ? "yes" : "NO"} |`;
  });
  const right = scores.reduce((n, s) => n + s.right, 0);
  const missing = scores.reduce((n, s) => n + s.missing.length, 0);
  const wrong = scores.reduce((n, s) => n + s.wrong.length, 0);
  const dangerous = scores.filter((s) => s.dangerous.length).length;
  const all = right + missing + wrong;
  const share = ((100 * right) / all).toFixed(1);
  return [
    "| script | values right | missing | wrong | dangerous | exit (owed) | validates |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    `| **all ${scores.length}** | **${right}/${all} (${share} %)** | ${missing} | ${wrong} | ${dangerous} drafts | | |`,
  ].join("\n");
}

if (import.meta.main) {
  const tend = process.argv[2] ?? join(ROOT, "build", "tend");
  const scores = scoreCorpus(tend);
  console.log(table(scores));
  if (process.argv.includes("--why"))
    for (const s of scores)
      for (const line of [
        ...s.missing.map((m) => `missing ${m}`),
        ...s.wrong.map((w) => `wrong ${w}`),
        ...s.dangerous.map((d) => `DANGER ${d}`),
      ])
        console.log(`${s.script}: ${line}`);
}
