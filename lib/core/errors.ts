/** Exit codes shared by every command (SPEC "Exit codes"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The one error type lib throws: it carries the exit code the command should end with. */
export class TendError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.failed,
  ) {
    super(message);
    this.name = "TendError";
  }
}

export const usageError = (message: string) => new TendError(message, EXIT.usage);
export const refused = (message: string) => new TendError(message, EXIT.refused);

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
