// Malformed configurations, each with what its error must say: used by the config tests and by
// the fault suite (bench/faults.ts).
export const service = (body: string, check = 'http = "http://127.0.0.1:9/"') =>
  `[[service]]\nname = "web"\n${body}\n[service.check]\n${check}\n`;

// [name, config text, what the error must say]
export const MALFORMED: [string, string, string][] = [
  ["not TOML", "[watchdog\n", "tend.toml:1:10: not valid TOML: illegal character in key"],
  [
    "TOML error on a later line",
    '[watchdog]\ninterval = "5m"\nstate_dir = \n',
    "tend.toml:3:13: not valid TOML: invalid value",
  ],
  ["typo'd check kind", service("", 'htp = "http://x/"'), "service[0].check.htp: unknown key, did you mean http?"],
  ["typo'd key", service("failurs = 3"), "service[0].failurs: unknown key, did you mean failures?"],
  [
    "typo'd check key",
    service("", 'tcp = "h:1"\ntimout = "2s"'),
    "service[0].check.timout: unknown key, did you mean timeout?",
  ],
  [
    "bad duration",
    service("", 'http = "http://x/"\ntimeout = "20x"'),
    'service[0].check.timeout: "20x" is not a duration',
  ],
  ["negative duration", "[defaults]\ngrace = -5\n", "defaults.grace: -5 is not a duration"],
  ["duration as bool", "[defaults]\ncooldown = true\n", "defaults.cooldown: true is not a duration"],
  ["unknown top-level key", "colour = 1\n", "colour: unknown key"],
  ["unknown watchdog key", '[watchdog]\nintervall = "5m"\n', "watchdog.intervall: unknown key"],
  ["unknown service key", service('restrat = "x"'), "service[0].restrat: unknown key"],
  ["unknown check key", service("", 'http = "http://x/"\nexpected = [200]'), "service[0].check.expected: unknown key"],
  ["unknown defaults key", '[defaults]\nname = "x"\n', "defaults.name: unknown key"],
  ["missing name", '[[service]]\n[service.check]\nhttp = "http://x/"\n', "service[0].name: is required"],
  [
    "bad name",
    '[[service]]\nname = "my blog"\n[service.check]\nhttp = "http://x/"\n',
    'service[0].name: "my blog" may only hold',
  ],
  ["duplicate names", service("") + service(""), 'service[1].name: "web" is already used by service[0]'],
  ["no check", '[[service]]\nname = "web"\n', "service[0].check: is required"],
  [
    "two checks",
    service("", 'http = "http://x/"\ntcp = "127.0.0.1:80"'),
    "service[0].check: has http and tcp; exactly one of",
  ],
  [
    "check not a table",
    '[[service]]\nname = "web"\ncheck = "http://x/"\n',
    'service[0].check: "http://x/" is a string, expected a table',
  ],
  ["bad URL", service("", 'http = "ftp://x/"'), 'service[0].check.http: "ftp://x/" is not an http:// or https:// URL'],
  [
    "bad status",
    service("", 'http = "http://x/"\nexpect = [200, 999]'),
    "service[0].check.expect: [200,999] is not a non-empty array of HTTP status codes",
  ],
  [
    "expect with fail_codes",
    service("", 'http = "http://x/"\nexpect = [200]\nfail_codes = [502]'),
    "exclude each other",
  ],
  [
    "contains on tcp",
    service("", 'tcp = "127.0.0.1:80"\ncontains = "ok"'),
    "service[0].check.contains: does not apply to a tcp check",
  ],
  ["bad tcp address", service("", 'tcp = "127.0.0.1"'), 'service[0].check.tcp: "127.0.0.1" is not "host:port"'],
  ["tcp port out of range", service("", 'tcp = "127.0.0.1:70000"'), 'is not "host:port" (port 1-65535)'],
  [
    "command not an array",
    service("", 'command = "curl -f x"'),
    'service[0].check.command: "curl -f x" is not an array of strings',
  ],
  ["empty command", service("", "command = []"), "service[0].check.command: must name a program"],
  ["process without pid source", service("", "process = true"), "service[0].check.process: needs a PID source"],
  [
    "process = false",
    service('pidfile = "x.pid"', "process = false"),
    "service[0].check.process: false: only process = true is allowed",
  ],
  ["log without fresh", service("", 'log = "/var/log/x"'), "service[0].check.fresh: is required with check.log"],
  ["headers not strings", service("", 'http = "http://x/"\nheaders = { X = 1 }'), "service[0].check.headers:"],
  ["failures zero", service("failures = 0"), "service[0].failures: 0 is not an integer >= 1"],
  ["failures fractional", service("failures = 2.5"), "service[0].failures: 2.5 is not an integer >= 1"],
  ["concurrency zero", "[watchdog]\nconcurrency = 0\n", "watchdog.concurrency: 0 is not an integer from 1 to 1024"],
  ["interval too short", '[watchdog]\ninterval = "10ms"\n', "watchdog.interval: must be at least 1s"],
  ["enabled not boolean", service('enabled = "yes"'), 'service[0].enabled: "yes" is a string, expected true or false'],
  [
    "two restarts",
    service('[service.restart]\ncommand = ["true"]\ntmux = "a:b"'),
    "service[0].restart: has tmux and command; exactly one of",
  ],
  [
    "spawn without pidfile",
    service('[service.restart]\nspawn = ["sleep", "1"]'),
    "service[0].pidfile: is required with restart.spawn",
  ],
  [
    "tmux without run",
    service('[service.restart]\ntmux = "main:blog"'),
    "service[0].restart.run: is required with restart.tmux",
  ],
  [
    "tmux bad target",
    service('[service.restart]\ntmux = "main"\nrun = "x"'),
    'service[0].restart.tmux: "main" is not "session:window"',
  ],
  [
    "run on command restart",
    service('[service.restart]\ncommand = ["true"]\nrun = "x"'),
    "service[0].restart.run: does not apply to restart.command",
  ],
  ["unknown dependency", service('depends_on = ["db"]'), 'service[0].depends_on: "db" is not a configured service'],
  ["self dependency", service('depends_on = ["web"]'), 'service[0].depends_on: "web" is the service itself'],
  [
    "dependency cycle",
    '[[service]]\nname = "a"\ndepends_on = ["b"]\n[service.check]\ntcp = "h:1"\n' +
      '[[service]]\nname = "b"\ndepends_on = ["a"]\n[service.check]\ntcp = "h:1"\n',
    "depends_on: cycle a -> b -> a",
  ],
  ["service not an array", '[service]\nname = "x"\n', "service: must be an array of tables"],
  ["requires unknown key", service('[service.requires]\nhost = "x"'), "service[0].requires.host: unknown key"],
  [
    "bad notify format",
    '[notify]\nformat = "pigeon"\n',
    'notify.format: "pigeon" is not one of text, json, slack, discord, telegram, gotify, pushover, email, alertmanager',
  ],
  ["bad notify url", '[notify]\nurl = "mailto:me@example.org"\n', "notify.url: "],
  ["notify retries too many", "[notify]\nretries = 50\n", "notify.retries: 50 is not an integer from 0 to 10"],
  ["bad heartbeat url", '[watchdog]\nheartbeat_url = "hc-ping.com/abc"\n', "watchdog.heartbeat_url: "],
  [
    "metrics_file not a string",
    "[watchdog]\nmetrics_file = 1\n",
    "watchdog.metrics_file: 1 is a number, expected a string",
  ],
  [
    "track_restarts without a unit",
    service("track_restarts = true"),
    'service[0].track_restarts: needs unit = "NAME.service"',
  ],
  [
    "busy with neither port nor log",
    service('[service.busy]\nmax = "10m"'),
    "service[0].busy: needs port, log, or both",
  ],
  [
    "busy port out of range",
    service("[service.busy]\nport = 0"),
    "service[0].busy.port: 0 is not an integer from 1 to 65535",
  ],
  [
    "memory size unreadable",
    service('pidfile = "x.pid"\n[service.memory]\nlimit = "lots"'),
    'service[0].memory.limit: "lots" is not a size',
  ],
  ["memory without a PID source", service('[service.memory]\nlimit = "1GiB"'), "service[0].memory: needs a PID source"],
  [
    "two PID sources",
    service('pidfile = "x.pid"\nunit = "x.service"'),
    "service[0].unit: a service has one PID source: pidfile and unit given",
  ],
  ["JSON with a bad type", '{"watchdog": {"concurrency": "16"}}', 'watchdog.concurrency: "16" is not an integer'],
];
