/**
 * A pass stopped by SIGTERM/SIGINT (the spec's lock paragraph): it starts no new work, records what
 * it already did (a restart's action is let finish and its ⚠️ spooled), leaves a verification to the
 * next pass (its restart is recorded: that pass finishes its story) and drops a probe in flight (its
 * check process is killed: its answer would say nothing of the service).
 */

/** What a probe or a wait in flight gives when the pass was stopped meanwhile. */
export const STOPPED = Symbol("stopped");

/** `work`, or STOPPED as soon as `stop` fires (work is left to end on its own). */
export function untilStopped<T>(work: Promise<T>, stop: AbortSignal | undefined): Promise<T | typeof STOPPED> {
  if (!stop) return work;
  if (stop.aborted) return (work.catch(() => {}), Promise.resolve(STOPPED));
  return new Promise((resolve, reject) => {
    const stopped = () => resolve(STOPPED);
    stop.addEventListener("abort", stopped, { once: true });
    work.then(resolve, reject).finally(() => stop.removeEventListener("abort", stopped));
  });
}

/** A sleep that ends early when the pass is stopped. */
export const stoppableSleep =
  (sleep: (ms: number) => Promise<void>, stop: AbortSignal | undefined) =>
  async (ms: number): Promise<void> => {
    await untilStopped(sleep(ms), stop);
  };
