/**
 * Connections still closing when a command's work is done: a probe answered at its headers whose
 * body is read on to its end, to close with FIN (SPEC "Answers": a probe leaves no trace). A command
 * waits for them a little before it exits; what is still coming then is a body that does not end
 * (a stream, a long poll): cut, as it would be at its probe's timeout.
 */
const closing = new Map<Promise<unknown>, () => void>();

/** Keep `done` until it settles; `cut` ends it at once. */
export function stillClosing(done: Promise<unknown>, cut: () => void): void {
  closing.set(done, cut);
  void done.finally(() => closing.delete(done));
}

/** Every connection closed, waiting at most `graceMs` for those still reading a body; the rest cut. */
export async function allClosed(graceMs = 1000): Promise<void> {
  if (!closing.size) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([Promise.allSettled([...closing.keys()]), grace]);
  clearTimeout(timer);
  for (const cut of closing.values()) cut();
}
