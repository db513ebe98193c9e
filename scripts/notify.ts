import { runCli, type Io } from "../lib/cli.ts";
import { loadConfigOrDefaults } from "../lib/config/load.ts";
import { NOTIFY_FORMATS, type NotifyFormat } from "../lib/config/types.ts";
import { usageError } from "../lib/core/errors.ts";
import { redactUrl } from "../lib/core/redact.ts";
import { channelFor, flush, listLetters, sendMessage, type Said } from "../lib/notify/by-hand.ts";
import { buildRequest, describeRequest, type Message } from "../lib/notify/send.ts";
import { dropLetters, reviveDead, sendDirect } from "../lib/notify/spool.ts";
import { tendNow } from "../lib/state/clock.ts";

const USAGE = `usage: notify [--title T] [--priority P] [--tag T]... [--event E] [--service S]
              [--url U] [--format F] [--dry-run] [--no-spool] MESSAGE...   (MESSAGE - reads stdin)
       notify --flush | --spool | --drop ID|all | --retry-dead
2xx is success; anything else fails (exit 1): a passing failure is spooled, to be sent first next
time; an answer refused for good (3xx, 4xx but 408/429) goes to the dead letters.
formats: ${NOTIFY_FORMATS.join(", ")}; url/format default to [notify] in the config or $TEND_NOTIFY_URL
exit: 0 delivered (or suppressed as a repeat), 1 not delivered, 2 usage or configuration error`;

export function main(argv: string[], io: Io, stdin: () => Promise<string> = () => Bun.stdin.text()): Promise<number> {
  const spec = {
    name: "notify",
    usage: USAGE,
    string: ["title", "priority", "tag", "event", "service", "url", "format", "drop"],
    boolean: ["dry-run", "flush", "spool", "retry-dead"],
    default: { spool: true },
    repeatable: ["tag"],
  };
  const say = ({ out, err, code }: Said) => (
    out.forEach((line) => io.out(line)),
    err.forEach((line) => io.err(line)),
    code
  );
  return runCli(spec, argv, io, async (args) => {
    const config = loadConfigOrDefaults({ path: args.config, env: io.env });
    const format = (args.format ?? config.notify.format) as NotifyFormat;
    if (!NOTIFY_FORMATS.includes(format))
      throw usageError(`--format: ${JSON.stringify(format)} is not one of ${NOTIFY_FORMATS.join(", ")}`);
    const url: string | null = args.url ?? config.notify.url;
    const words = args._.map(String);
    const stateDir = config.watchdog.stateDir;
    const now = await tendNow(stateDir); // tend's time: a clock step neither ages the spool nor stretches min_interval
    if (args.drop !== undefined) return (io.out(`dropped ${await dropLetters({ stateDir }, args.drop)} message(s)`), 0);
    if (args["retry-dead"]) io.out(`${await reviveDead({ stateDir })} dead letter(s) back in the spool`);
    if (args.flush || args["retry-dead"]) {
      const channel = url ? channelFor(config, url, format) : null;
      return say(await flush(config, channel, now, { refusedFails: args["retry-dead"] }));
    }
    if (argv.includes("--spool") && !words.length) return (io.out(listLetters(stateDir, now()).join("\n")), 0);
    if (!words.length) throw usageError(`no MESSAGE\n\n${USAGE}`);
    const channel = channelFor(config, url, format);
    const text = words.length === 1 && words[0] === "-" ? (await stdin()).replace(/\n$/, "") : words.join(" ");
    if (!text.trim()) throw usageError("the message is empty");
    const tags = [args.tag ?? []]
      .flat()
      .flatMap((tag: string) => tag.split(","))
      .filter(Boolean);
    const message: Message = {
      message: text,
      title: args.title ?? null,
      priority: args.priority ?? null,
      tags,
      event: args.event ?? null,
      service: args.service ?? null,
      time: new Date(now()).toISOString(),
    };
    if (args["dry-run"]) return (io.out(describeRequest(buildRequest(message, channel))), 0);
    if (args.spool) return say(await sendMessage(config, channel, message, now));
    const result = await sendDirect(message, channel);
    const to = `notify: delivery to ${redactUrl(channel.url)}`;
    if (!result.ok) io.err(`${to} failed after ${result.attempts} attempt(s): ${result.detail} (dropped: --no-spool)`);
    return result.ok ? 0 : 1;
  });
}
