/** The longest delay setTimeout takes; a longer one fires at once (TimeoutOverflowWarning). */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** setTimeout for any duration up to 365d and more: chained timers. Returns a cancel function. */
export function after(ms: number, callback: () => void): () => void {
  let timer: ReturnType<typeof setTimeout>;
  const deadline = Date.now() + ms;
  const arm = () => {
    const left = deadline - Date.now();
    timer = setTimeout(left > MAX_DELAY_MS ? arm : callback, Math.max(0, Math.min(left, MAX_DELAY_MS)));
  };
  arm();
  return () => clearTimeout(timer);
}
