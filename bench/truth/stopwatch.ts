// The ground-truth harness's stopwatch (make truth): beside tend, it asks every service every
// 100 ms (ten times tend's fastest rate) whether it answers 200 within the timeout, and writes
// every answer, stamped with the moment the probe was sent: what really happened. Stamped on the
// wall clock at its start carried on by the monotonic clock: a wall-clock step moves no stamp.
// usage: bun stopwatch.ts OUT TIMEOUT_MS NAME=URL...
import { appendFileSync } from "node:fs";

const [out, timeout, ...targets] = process.argv.slice(2);
const timeoutMs = Number(timeout);
const trueNow = () => performance.timeOrigin + performance.now();
for (const target of targets) {
  const [name, url] = [target.slice(0, target.indexOf("=")), target.slice(target.indexOf("=") + 1)];
  // Samples arrive out of order (a hung probe answers late): only a newer sample may change the word.
  let newest = 0;
  setInterval(async () => {
    const sent = trueNow();
    const ok = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { "x-stopwatch": "1" } })
      .then(async (response) => (await response.arrayBuffer(), response.status === 200))
      .catch(() => false);
    if (sent < newest) return;
    newest = sent;
    appendFileSync(out, JSON.stringify({ at: sent, name, ok }) + "\n");
  }, 100);
}
process.on("SIGTERM", () => process.exit(0));
