/**
 * What the pass decided for a service, recorded in its state: the one truth every view reads
 * (status, /api/status, the page, metrics). Views never derive a state word of their own.
 */

/** The words `status`, the page and the metrics use for a service's state (SPEC "watchdog status"). */
export type StateWord =
  | "healthy"
  | "slow"
  | "failing"
  | "busy"
  | "starting"
  | "restarting"
  | "backoff"
  | "given-up"
  | "paused"
  | "stopped"
  | "waiting"
  | "disabled"
  | "new";

/** Every state word, to check a word read from a file or a peer. */
export const STATE_WORDS: ReadonlySet<string> = new Set<StateWord>([
  "healthy",
  "slow",
  "failing",
  "busy",
  "starting",
  "restarting",
  "backoff",
  "given-up",
  "paused",
  "stopped",
  "waiting",
  "disabled",
  "new",
]);

/** What kind of decision it was: decide()'s kinds, and `verified` for the outcome of a restart or start. */
export type VerdictKind = "skip" | "ok" | "strike" | "busy" | "wait" | "held" | "restart" | "give-up" | "verified";

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

/** States that need nobody: status exits 0 when every service is in one of these (and the watchdog is fresh). */
const CALM: ReadonlySet<StateWord> = new Set(["healthy", "slow", "busy", "starting", "paused", "stopped", "disabled"]);

/**
 * Needs nobody, given the state the pass recorded and (status) the probe made now. A `new` service
 * (no pass has judged it) is fine only when its probe succeeds now: a frozen process no pass has
 * seen yet is not "fine". One the pass judged healthy that does not answer now is not fine either
 * (the next pass counts the strike); busy or starting ones are expected not to. A service the pass
 * could not judge is not fine.
 */
export function isCalm(view: { word: StateWord; error?: string | null }, probeOk: boolean | null): boolean {
  if (view.error) return false;
  if (view.word === "new") return probeOk === true;
  if (view.word === "healthy" || view.word === "slow") return probeOk !== false;
  return CALM.has(view.word);
}

/** Watched: probed and judged each pass (not disabled, paused or stopped on purpose). */
export const isWatched = (word: StateWord) => word !== "disabled" && word !== "paused" && word !== "stopped";

/** Not down as the pass judged it: `tend_service_up` 1. A service skipped on purpose while starting is not down. */
export const isUp = (word: StateWord) =>
  word === "healthy" || word === "slow" || word === "busy" || word === "starting";

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
