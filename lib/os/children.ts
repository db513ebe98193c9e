/**
 * The processes this process started to outlive the call that started them (a spawn restart's
 * service). In `watchdog run` their end is an event the loop is woken by — s6's way — rather than a
 * /proc look every second. Kept only until the child ends (the kernel then reaps it; its PID is free).
 */
const exits = new Map<number, Promise<void>>();

/** Record a child this process started and will not wait for itself. */
export function startedHere(pid: number, exited: Promise<unknown>): void {
  exits.set(
    pid,
    exited.then(
      () => void exits.delete(pid),
      () => void exits.delete(pid),
    ),
  );
}

/** Resolves when PID, a child started here, has ended; undefined when PID is not (or no longer) such a child. */
export const exitOf = (pid: number): Promise<void> | undefined => exits.get(pid);
