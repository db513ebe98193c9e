/** The longest delay setTimeout takes; a longer one fires at once (TimeoutOverflowWarning). */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** setTimeout for any duration up to 365d and more: chained timers. Returns a cancel function. */
export function after(ms: number, callback: () => void): () => void {
  let timer: ReturnType<typeof setTimeout>;
  const deadline = performance.now() + ms;
  const arm = () => {
    const left = deadline - performance.now();
    timer = setTimeout(left > MAX_DELAY_MS ? arm : callback, Math.max(0, Math.min(left, MAX_DELAY_MS)));
  };
  arm();
  return () => clearTimeout(timer);
}

/**
 * `items.map(work)`, giving the event loop back every `sliceMs` of work: a timer due meanwhile (the
 * crash watch's tick, in the process that also serves the page) fires between two items, not after
 * the last. A zero-delay timer, not setImmediate: Bun runs due timers before the next slice only then.
 */
export async function mapInSlices<T, R>(items: readonly T[], work: (item: T) => R, sliceMs = 5): Promise<R[]> {
  const results: R[] = [];
  let sliceStart = performance.now();
  for (const item of items) {
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise((resume) => setTimeout(resume, 0));
      sliceStart = performance.now();
    }
    results.push(work(item));
  }
  return results;
}
