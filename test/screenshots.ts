// make screenshots: the page at 360 and 1280 px, as docs/page-360.png and docs/page-1280.png. A
// sandbox with two services watched by real passes of build/tend (one healthy, one that fails, is
// restarted and recovers), served by `watchdog serve`, shot by headless chromium.
//   bun test/screenshots.ts [OUT-DIR]
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launchBrowser, SIDEWAYS, type Sideways } from "./browser.ts";
import { controlledServer, ROOT, Sandbox, TEND } from "./helpers.ts";

const out = resolve(process.argv[2] ?? join(ROOT, "docs"));
mkdirSync(out, { recursive: true });
const box = new Sandbox();
const web = controlledServer();
const flag = join(box.dir, "down");
const serve = { kill: () => {} };
try {
  box.configure({
    services: [
      { name: "blog", check: { http: web.url } },
      {
        name: "recorder",
        failures: 1,
        cooldown: "0s",
        verify_timeout: "2s",
        check: { command: ["sh", "-c", `[ -e ${flag} ] || exit 0; echo 'no frames for 40s'; exit 1`] },
        restart: { command: ["rm", "-f", flag] },
      },
    ],
  });
  for (const fail of [false, true, false, true, false]) {
    if (fail) writeFileSync(flag, "");
    const pass = await box.tend(["watchdog", "pass"]);
    if (pass.code > 1) throw new Error(`watchdog pass: ${pass.stderr}`);
  }
  const child = Bun.spawn([TEND, "watchdog", "serve", "--listen", "127.0.0.1:0"], {
    env: box.env(),
    stdout: "pipe",
    detached: true,
  });
  serve.kill = () => process.kill(-child.pid, "SIGTERM");
  const line = new TextDecoder().decode((await child.stdout.getReader().read()).value);
  const url = /serving (\S+)/.exec(line)?.[1];
  if (!url) throw new Error(`watchdog serve said: ${line}`);
  const browser = await launchBrowser(join(box.dir, "chromium"));
  try {
    for (const [width, height] of [
      [360, 800],
      [1280, 800],
    ]) {
      await browser.open(url, width, height);
      const sideways = await browser.evaluate<Sideways>(SIDEWAYS);
      if (sideways.scrollWidth > width || sideways.scrolling.length || sideways.past.length)
        throw new Error(`the page scrolls sideways at ${width} px: ${JSON.stringify(sideways)}`);
      const path = join(out, `page-${width}.png`);
      await browser.screenshot(path);
      console.log(`${path}: ${width} px wide, nothing scrolls sideways`);
    }
  } finally {
    browser.close();
  }
} finally {
  serve.kill();
  web.server.stop(true);
  box.cleanup();
}
