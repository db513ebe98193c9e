/** Exit codes shared by every command (SPEC "Exit codes"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3 } as const;
type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * What went wrong, for code to branch on (the message is for people and may change):
 * failed / usage / refused are the exit codes' own; the others name a condition a caller handles.
 */
type ErrorCode =
  | "failed"
  /** Arguments or configuration are wrong: nothing was done. */
  | "usage"
  | "refused"
  /** No configuration file was found by the lookup. */
  | "no-config"
  /** A lock stayed held past its wait (another notify or pass is stuck). */
  | "locked"
  /** flock(2) failed for another reason than a holder (ENOSYS on shared storage): said as itself. */
  | "lock-failed"
  /** A file in the state dir is a symlink: refused, nothing read or written through it. */
  | "symlink"
  /** The watchdog itself is out of a resource (descriptors, memory): its failure, never a strike. */
  | "own-resource"
  /** The state dir cannot be written (full, read-only): the operator's to fix. */
  | "state-dir";

const CODE_OF_EXIT: Record<ExitCode, ErrorCode> = { 0: "failed", 1: "failed", 2: "usage", 3: "refused" };

/** The one error type lib throws: it carries the exit code the command should end with, and what it is. */
export class TendError extends Error {
  readonly code: ErrorCode;
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.failed,
    code?: ErrorCode,
  ) {
    super(message);
    this.name = "TendError";
    this.code = code ?? CODE_OF_EXIT[exitCode];
  }
}

export const usageError = (message: string) => new TendError(message, EXIT.usage);
export const refused = (message: string) => new TendError(message, EXIT.refused);

/** Is this tend's error with that code? (Never match on a message's words.) */
export const isTendError = (error: unknown, code: ErrorCode): error is TendError =>
  error instanceof TendError && error.code === code;

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
