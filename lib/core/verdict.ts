/**
 * What the pass decided for a service, recorded in its state: the one truth every view reads
 * (status, /api/status, the page, metrics). Views never derive a state word of their own.
 */

/** The words `status`, the page and the metrics use for a service's state (SPEC "watchdog status"). */
export type StateWord =
  | "healthy"
  | "slow"
  | "warning"
  | "busy"
  | "flapping"
  | "starting"
  | "failing"
  | "waiting"
  | "restarting"
  | "down"
  | "backoff"
  | "given-up"
  | "paused"
  | "stopped"
  | "disabled"
  | "new";

/** What a word means to each reader: the one table (SPEC "watchdog status"), read by every view. */
interface WordMeaning {
  /** status exits 0 for it: it needs nobody. */
  calm: boolean;
  /** The Nagios / Icinga / Consul level: 0 OK, 1 WARNING, 2 CRITICAL. */
  nagios: 0 | 1 | 2;
  /** tend_service_up: 1 up, 0 judged down, null no series (not watched, or never judged). */
  up: 0 | 1 | null;
  /** Alertmanager's TendServiceDown fires. */
  firing: boolean;
  /** The terminal's (and the page's) colour. */
  colour: "ok" | "warn" | "bad" | "dim";
  /**
   * What the services that depend on it do while it has this word: wait (a restart of theirs cannot
   * help: it is not serving), go, or as its last probe said (the word says nothing of its answer now).
   */
  dependents: "wait" | "go" | "as-probed";
}

const meaning = (
  calm: boolean,
  nagios: 0 | 1 | 2,
  up: 0 | 1 | null,
  colour: WordMeaning["colour"],
  dependents: WordMeaning["dependents"],
): WordMeaning => ({ calm, nagios, up, firing: up === 0, colour, dependents });

/**
 * The one table of what each state word means. Down (up 0, CRITICAL, firing) only when the pass
 * judged it down — N strikes with the restart held, a restart being verified, backoff, given up —
 * never a strike below N: one blip must not page (lesson 3).
 */
export const WORDS: Readonly<Record<StateWord, WordMeaning>> = {
  healthy: meaning(true, 0, 1, "ok", "go"),
  slow: meaning(true, 1, 1, "warn", "go"),
  warning: meaning(true, 1, 1, "warn", "go"),
  busy: meaning(true, 1, 1, "warn", "wait"),
  flapping: meaning(false, 1, 1, "warn", "as-probed"),
  starting: meaning(true, 0, 1, "warn", "wait"),
  failing: meaning(false, 1, 1, "warn", "wait"),
  waiting: meaning(false, 1, 1, "warn", "wait"),
  restarting: meaning(false, 2, 0, "bad", "wait"),
  down: meaning(false, 2, 0, "bad", "wait"),
  backoff: meaning(false, 2, 0, "bad", "wait"),
  "given-up": meaning(false, 2, 0, "bad", "wait"),
  paused: meaning(true, 0, null, "dim", "as-probed"),
  stopped: meaning(true, 0, null, "dim", "as-probed"),
  disabled: meaning(true, 0, null, "dim", "as-probed"),
  // No pass has judged it: only `--cached` shows it (plain status decides now); not calm until judged.
  new: meaning(false, 0, null, "dim", "as-probed"),
};

/**
 * Its dependents wait on it (a restart of theirs cannot help): the table's column for the word the
 * pass decided, or its last probe where the word says nothing of its answer now (flapping, paused,
 * never judged). The pass, status and blogtunnel's --depends-on all ask this; no other rule.
 */
export function blocksDependents(verdict: Pick<Verdict, "word"> | null, lastProbe: { ok: boolean } | null): boolean {
  const rule = verdict ? WORDS[verdict.word].dependents : "as-probed";
  return rule === "as-probed" ? lastProbe?.ok === false : rule === "wait";
}

/** Every state word, to check a word read from a file or a peer. */
export const STATE_WORDS: ReadonlySet<string> = new Set(Object.keys(WORDS));

/** A state word's colour, the terminal's and the page's alike; a word not known (a peer's newer one) is bad. */
export const colourOf = (state: string): WordMeaning["colour"] =>
  STATE_WORDS.has(state) ? WORDS[state as StateWord].colour : "bad";

/** What kind of decision it was: decide()'s kinds, and `verified` for the outcome of a restart or start. */
type VerdictKind = "skip" | "ok" | "strike" | "busy" | "wait" | "held" | "restart" | "give-up" | "verified";

export interface Verdict {
  kind: VerdictKind;
  word: StateWord;
  /** Why, in a few words: "grace", "strike 2/3", "backoff until 10:05:00", "HTTP 200". */
  reason: string;
  /** When the state ends by itself (grace, boot_delay, a pause, backoff, cooldown, a verification): epoch ms. */
  until: number | null;
  /** When the pass decided (epoch ms). */
  at: number;
  /** The pass could not judge the service this time: why. The word is the last one it had. */
  error?: string;
}

/**
 * Needs nobody: the word's meaning in the table, unless the word could not be decided this time
 * (the pass could not judge the service: not calm).
 */
export const isCalm = (view: { word: StateWord; error?: string | null }): boolean =>
  !view.error && WORDS[view.word].calm;

/** Watched: probed and judged each pass (not disabled, paused or stopped on purpose). */
export const isWatched = (word: StateWord) => word !== "disabled" && word !== "paused" && word !== "stopped";

/** The state a view shows: what the pass recorded, or `new` / `disabled` before any pass judged it. */
export function viewOf(enabled: boolean, verdict: Verdict | null): { word: StateWord; verdict: Verdict | null } {
  if (verdict) return { word: verdict.word, verdict };
  return { word: enabled ? "new" : "disabled", verdict: null };
}

/** Two verdicts that say the same (only `at` differs): recording it again is an observation, not a decision. */
export const sameVerdict = (a: Verdict | null, b: Verdict | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.kind === b.kind &&
    a.word === b.word &&
    a.reason === b.reason &&
    a.until === b.until &&
    a.error === b.error);

/** The verdict kept when a pass could not judge a service: the last word, with why. */
export const notJudged = (last: Verdict | null, error: string, at: number): Verdict => ({
  ...(last ?? { kind: "skip", word: "new", reason: "not judged", until: null }),
  at,
  error,
});

/** An operator paused it (`watchdog pause`, `watchdog stop`): recorded as the pass would record the skip. */
export const pausedVerdict = (until: number | null, at: number): Verdict => ({
  kind: "skip",
  word: "paused",
  reason: "paused",
  until,
  at,
});
