// The trial's engine (test/migrating.test.ts): an HTTP service that, while the file BACKFILL exists,
// is busy — it answers nothing (its event loop is free, its handler waits) and writes its log every
// half second, as an engine backfilling does — and otherwise answers 200.
// usage: bun trial-engine.ts PORT LOG BACKFILL
import { appendFileSync, existsSync } from "node:fs";

const [port, log, backfill] = process.argv.slice(2);
appendFileSync(log, `started pid ${process.pid}\n`);
let rows = 0;
setInterval(() => {
  if (existsSync(backfill)) appendFileSync(log, `backfill row ${++rows}\n`);
}, 500);
Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch() {
    while (existsSync(backfill)) await Bun.sleep(100);
    return new Response("ok\n");
  },
});
