import { runCli, type Io } from "../lib/cli.ts";
import { loadConfigOrDefaults } from "../lib/config/load.ts";
import { NOTIFY_FORMATS, type NotifyFormat } from "../lib/config/types.ts";
import { usageError } from "../lib/core/errors.ts";
import { buildRequest, describeRequest, type Channel, type Message } from "../lib/notify/send.ts";
import { isHttpUrl, redactUrl } from "../lib/core/redact.ts";
import { deliver, sendDirect, spoolFile } from "../lib/notify/spool.ts";

const USAGE = `usage: notify [--title T] [--priority P] [--tag T]... [--event E] [--service S]
              [--url U] [--format F] [--dry-run] [--no-spool] MESSAGE...   (MESSAGE - reads stdin)
       notify --flush                  send what the spool holds, oldest first
2xx is success; anything else fails (exit 1) and the message is spooled, to be sent first next time.
formats: ${NOTIFY_FORMATS.join(", ")}; url/format default to [notify] in the config or $TEND_NOTIFY_URL
exit: 0 delivered (or suppressed as a repeat), 1 not delivered, 2 usage or configuration error`;

export function main(argv: string[], io: Io, stdin: () => Promise<string> = () => Bun.stdin.text()): Promise<number> {
  const spec = {
    name: "notify",
    usage: USAGE,
    string: ["title", "priority", "tag", "event", "service", "url", "format"],
    boolean: ["dry-run", "flush", "spool"],
    default: { spool: true },
    repeatable: ["tag"],
  };
  return runCli(spec, argv, io, async (args) => {
    const config = loadConfigOrDefaults({ path: args.config, env: io.env });
    const format = (args.format ?? config.notify.format) as NotifyFormat;
    if (!NOTIFY_FORMATS.includes(format))
      throw usageError(`--format: ${JSON.stringify(format)} is not one of ${NOTIFY_FORMATS.join(", ")}`);
    const url = args.url ?? config.notify.url;
    if (!url) throw usageError("no notification URL: pass --url, set [notify] url in the config, or TEND_NOTIFY_URL");
    if (!isHttpUrl(url)) throw usageError(`--url: ${redactUrl(url)} is not an http:// or https:// URL`);
    const channel: Channel = { url, format, timeoutMs: config.notify.timeoutMs, retries: config.notify.retries };
    const options = { stateDir: config.watchdog.stateDir, channel, minIntervalMs: config.notify.minIntervalMs };

    if (args.flush) {
      if (args._.length) throw usageError("--flush takes no MESSAGE");
      const report = await deliver([], options);
      if (report.flushed) io.out(`flushed ${report.flushed} spooled message(s)`);
      if (report.waiting) io.err(`notify: ${report.waiting} message(s) still spooled: ${report.failure}`);
      return report.waiting ? 1 : 0;
    }
    const words = args._.map(String);
    if (!words.length) throw usageError(`no MESSAGE\n\n${USAGE}`);
    const text = words.length === 1 && words[0] === "-" ? (await stdin()).replace(/\n$/, "") : words.join(" ");
    if (!text.trim()) throw usageError("the message is empty");
    const tags = ([] as string[])
      .concat(args.tag ?? [])
      .flatMap((tag) => tag.split(","))
      .filter(Boolean);
    const message: Message = {
      message: text,
      title: args.title ?? null,
      priority: args.priority ?? null,
      tags,
      event: args.event ?? null,
      service: args.service ?? null,
      time: new Date().toISOString(),
    };
    if (args["dry-run"]) return (io.out(describeRequest(buildRequest(message, channel))), 0);
    if (!args.spool) {
      const result = await sendDirect(message, channel);
      if (!result.ok)
        io.err(
          `notify: delivery to ${redactUrl(url)} failed after ${result.attempts} attempt(s): ${result.detail} ` +
            `(dropped: --no-spool)`,
        );
      return result.ok ? 0 : 1;
    }
    const report = await deliver([message], options);
    const outcome = report.outcomes[0];
    if (outcome.result === "suppressed") return (io.out(`notify: suppressed: ${outcome.detail}`), 0);
    if (outcome.result === "sent")
      return (report.spoolError && io.err(`notify: delivered; but ${report.spoolError}`), 0);
    if (outcome.result === "lost")
      return (io.err(`notify: delivery to ${redactUrl(url)} failed: ${outcome.detail}`), 1);
    const why = outcome.attempts
      ? `failed after ${outcome.attempts} attempt(s): ${outcome.detail}`
      : `not sent: ${outcome.detail} that could not be delivered (${report.failure})`;
    io.err(
      `notify: delivery to ${redactUrl(url)} ${why}; ` +
        `spooled (${report.waiting} waiting in ${spoolFile(config.watchdog.stateDir)})`,
    );
    return 1;
  });
}
