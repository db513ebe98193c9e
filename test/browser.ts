// Debian's chromium, headless, driven over the DevTools protocol (a WebSocket): a page at a given
// viewport, measured in the rendered document (the page itself runs no script: its CSP allows
// none; the protocol's evaluation is the browser's, not the page's), and its screenshot.
import { mkdirSync, writeFileSync } from "node:fs";
import { killAll } from "./helpers.ts";

type Reply = { id?: number; result?: Record<string, unknown>; error?: { message: string } };

export interface Browser {
  /** Load `url` in a viewport of width × height CSS px (a phone's, under 600: mobile). */
  open(url: string, width: number, height: number): Promise<void>;
  /** An expression's value in the loaded document. */
  evaluate<T>(expression: string): Promise<T>;
  /** The whole page (not only the viewport) as PNG. */
  screenshot(path: string): Promise<void>;
  close(): void;
}

/** What makes a page scroll sideways: the document wider than the window, or a box that scrolls. */
export interface Sideways {
  scrollWidth: number;
  innerWidth: number;
  /** Boxes whose content is wider than they are and that scroll (overflow-x auto or scroll). */
  scrolling: string[];
  /** Boxes reaching past the window's right edge. */
  past: string[];
}

export const SIDEWAYS = `(() => {
  const name = (e) =>
    e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className : "");
  const all = [...document.querySelectorAll("body *")];
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    scrolling: all
      .filter((e) => e.scrollWidth > e.clientWidth + 1 && /auto|scroll/.test(getComputedStyle(e).overflowX))
      .map(name),
    past: all.filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5).map(name).slice(0, 10),
  };
})()`;

export async function launchBrowser(profileDir: string, timeoutMs = 60_000): Promise<Browser> {
  mkdirSync(profileDir, { recursive: true });
  const child = Bun.spawn(
    [
      "chromium",
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--hide-scrollbars",
      "--no-first-run",
      "--disable-crash-reporter",
      `--user-data-dir=${profileDir}`,
      "--remote-debugging-port=0",
      "about:blank",
    ],
    // Its own process group (close kills all of it) and its temp files (a singleton socket dir per
    // run) and HOME in the profile: nothing of it outlives the sandbox it was given.
    {
      stdout: "ignore",
      stderr: "pipe",
      stdin: "ignore",
      detached: true,
      env: { ...process.env, TMPDIR: profileDir, HOME: profileDir },
    },
  );
  const deadline = Date.now() + timeoutMs;
  // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID" on stderr.
  const reader = child.stderr.getReader();
  let said = "";
  let endpoint: string | null = null;
  while (!endpoint) {
    const left = deadline - Date.now();
    const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(1, left)).then(() => null)]);
    if (!chunk || chunk.done) {
      child.kill("SIGKILL");
      throw new Error(`chromium did not start its DevTools endpoint: ${said.slice(-500)}`);
    }
    said += new TextDecoder().decode(chunk.value);
    endpoint = /DevTools listening on (ws:\/\/\S+)/.exec(said)?.[1] ?? null;
  }
  reader.releaseLock();
  void child.stderr.cancel().catch(() => {});
  const socket = new WebSocket(endpoint);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`cannot connect to ${endpoint}`));
  });
  let nextId = 0;
  const waiting = new Map<number, (reply: Reply) => void>();
  socket.onmessage = (message) => {
    const reply = JSON.parse(String(message.data)) as Reply;
    if (reply.id !== undefined) waiting.get(reply.id)?.(reply);
  };
  let sessionId: string | undefined;
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++nextId;
      const timer = setTimeout(() => reject(new Error(`${method}: no answer from chromium`)), timeoutMs);
      waiting.set(id, (reply) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (reply.error) reject(new Error(`${method}: ${reply.error.message}`));
        else resolve(reply.result ?? {});
      });
      socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  const { targetId } = await call("Target.createTarget", { url: "about:blank" });
  sessionId = (await call("Target.attachToTarget", { targetId, flatten: true })).sessionId as string;
  const evaluate = async <T>(expression: string): Promise<T> => {
    const answer = await call("Runtime.evaluate", { expression, returnByValue: true });
    if (answer.exceptionDetails)
      throw new Error(`${expression.slice(0, 80)}: ${JSON.stringify(answer.exceptionDetails)}`);
    return (answer.result as { value: T }).value;
  };
  return {
    async open(url, width, height) {
      await call("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: width < 600 });
      await call("Page.navigate", { url });
      const until = Date.now() + timeoutMs;
      const loaded = `location.href !== "about:blank" && document.readyState === "complete"`;
      while (!(await evaluate<boolean>(loaded))) {
        if (Date.now() > until) throw new Error(`${url} did not load within ${timeoutMs} ms`);
        await Bun.sleep(50);
      }
    },
    evaluate,
    async screenshot(path) {
      const { data } = await call("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
      writeFileSync(path, Buffer.from(data as string, "base64"));
    },
    close() {
      try {
        socket.close();
      } catch {}
      killAll([child.pid]);
    },
  };
}
