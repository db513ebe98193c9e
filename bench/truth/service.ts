// A service of the ground-truth harness (make truth): it answers as its control file says, read
// on every request, so a mode outlives a restart (a 502 spell goes on in the process tend starts).
// usage: bun service.ts PORT CONTROL
//   ok     200
//   502    502 Bad Gateway
//   hang   accepts, never answers (a process hung from its start, or a deadlock)
//   flap   502 on every other request (a half-broken upstream), counted apart for the stopwatch's
//          requests (X-Stopwatch) and everyone else's, so its own probes never choose what tend's see
//   leak   200, and 4 MiB more resident every 100 ms (seed 004), up to 400 MiB
//   slow   200 after 600 ms (inside the 1 s timeout: slow, not failing)
import { readFileSync } from "node:fs";

const [port, control] = process.argv.slice(2);
const mode = () => {
  try {
    return readFileSync(control, "utf8").trim();
  } catch {
    return "ok";
  }
};
const kept: Buffer[] = [];
const turns = { stopwatch: 0, others: 0 };
setInterval(() => {
  if (mode() === "leak" && kept.length < 100) kept.push(Buffer.alloc(4 << 20, 1));
}, 100);
Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  idleTimeout: 0,
  fetch(request) {
    const now = mode();
    const turn = request.headers.has("x-stopwatch") ? "stopwatch" : "others";
    if (now === "hang") return new Promise<Response>(() => {});
    if (now === "slow") return Bun.sleep(600).then(() => new Response("ok\n"));
    if (now === "502" || (now === "flap" && turns[turn]++ % 2 === 0))
      return new Response("bad gateway\n", { status: 502 });
    return new Response("ok\n");
  },
});
