# tend: `make` builds build/tend and build/bin/<command> symlinks.
# --compile-jit-policy=64: JSC tiers up 64x later, so a one-shot command (a pass: ~12 ms) does not pay
# for compiling code it runs once; `watchdog run` and `serve` go back to the normal policy (bench P1, P5).
BUN      := node_modules/.bin/bun
# build/tend is always this checkout's version: `make release VERSION=x.y.z` (which needs build/tend for
# its bytecode order) must never leave a development binary that calls itself the release.
DEV_VERSION := $(shell node -p "require('./package.json').version")+$(shell git rev-parse --short HEAD 2>/dev/null || echo nogit)
VERSION  := $(DEV_VERSION)
COMMANDS := watchdog safe-kill notify blogtunnel self-update
SOURCES  := $(shell find scripts lib -name '*.ts') package.json
BASE_FLAGS := --compile --minify --bytecode --format=esm --splitting --no-compile-autoload-dotenv \
            --no-compile-autoload-bunfig --compile-jit-policy=64
FLAGS    := $(BASE_FLAGS) --define 'TEND_VERSION="$(VERSION)"'
DEV_FLAGS := $(BASE_FLAGS) --define 'TEND_VERSION="$(DEV_VERSION)"'
TARGETS  := linux-x64 linux-arm64 linux-arm64-android darwin-arm64
ORDER    := --bytecode-order=build/order/pass.order,build/order/version.order


.PHONY: all cross cross-check release demo test test-timings test-deps typecheck fmt docs clean bench faults battery render powercut screenshots truth fresh-check
all: build/tend

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# Built twice: the first binary records which functions a pass and --version run (bench/order.ts),
# the second lays that bytecode out first (--bytecode-order) and reads less of itself at start-up.
build/tend: node_modules/.installed $(SOURCES) bench/order.ts
	@mkdir -p build/bin build/order
	$(BUN) build $(DEV_FLAGS) scripts/tend.ts --outfile build/order/tend
	$(BUN) bench/order.ts build/order/tend build/order
	$(BUN) build $(DEV_FLAGS) $(ORDER) scripts/tend.ts --outfile build/tend
	@rm -f build/order/tend
	@for c in $(COMMANDS); do ln -sf ../tend build/bin/$$c; done

cross: build/tend
	@mkdir -p build/dist
	@for t in $(TARGETS); do \
	  $(BUN) build $(FLAGS) $(ORDER) --target=bun-$$t scripts/tend.ts --outfile build/dist/tend-$$t || exit 1; \
	done
	@ls -l build/dist

# A signed release (SPEC "Releases"): make release VERSION=x.y.z KEY=PATH [URL=where it is published]
# [RELEASE_DIR=build/release]. KEY: a PKCS#8 PEM Ed25519 key (openssl genpkey -algorithm ed25519); its
# public half is built into each binary (self-update --channel trusts it). release/package.ts writes
# release.json and SHA256SUMS with their signatures, the .debs (dpkg-deb), the Termux .deb, the formula.
RELEASE_DIR ?= build/release
URL ?= file://$(abspath $(RELEASE_DIR))
MAINTAINER ?= tend maintainers <tend@example.org>
export MAINTAINER
release: build/tend
	@$(BUN) release/package.ts check "$(VERSION)" "$(KEY)"
	@rm -rf "$(RELEASE_DIR)" && mkdir -p "$(RELEASE_DIR)"
	@key=$$($(BUN) release/package.ts public-key "$(KEY)") && for t in $(TARGETS); do \
	  $(BUN) build $(FLAGS) $(ORDER) --define "TEND_RELEASE_KEY=\"$$key\"" --target=bun-$$t scripts/tend.ts \
	    --outfile "$(RELEASE_DIR)/tend-$$t" >/dev/null || exit 1; done
	@$(BUN) release/package.ts package "$(VERSION)" "$(KEY)" "$(RELEASE_DIR)" "$(URL)"

# The cross builds, run where this machine can: linux-arm64 under qemu-user-static (Debian's, with
# the arm64 libc from multiarch); the Android and macOS binaries' ELF/Mach-O headers inspected.
cross-check: cross
	@command -v qemu-aarch64-static >/dev/null && command -v readelf >/dev/null && [ -e /lib/ld-linux-aarch64.so.1 ] || \
	  (dpkg --add-architecture arm64 && apt-get update -qq && \
	   DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binutils libc6:arm64 >/dev/null)
	$(BUN) bench/cross-check.ts

typecheck: node_modules/.installed
	node_modules/.bin/tsc -p .

# prettier (printWidth 120); test/style.test.ts fails on anything it would change or a line over 120.
fmt: node_modules/.installed
	node_modules/.bin/prettier --write $$(git ls-files --cached --others --exclude-standard '*.ts')

# docs/configuration.md, rendered from lib/config/reference.ts (test/reference.test.ts keeps both true).
docs: node_modules/.installed
	$(BUN) -e 'const { renderReference } = await import("./lib/config/reference.ts"); await Bun.write("docs/configuration.md", renderReference())'

# What the tests run besides node/npm: installed with apt when root, else named in one line. nginx
# is installed without being started (policy-rc.d for that one call): a test runs its own, and the
# package's default site would take port 80.
TEST_TOOLS := chromium:chromium mkfs.ext4:e2fsprogs script:bsdutils aiosmtpd:python3-aiosmtpd /usr/lib/nagios/plugins/check_tcp:monitoring-plugins-basic tmux:tmux curl:curl flock:util-linux bash:bash crontab:cron python3:python3 openssl:openssl runuser:util-linux mkfifo:coreutils setfacl:acl faketime:faketime strace:strace sv:runit runsvdir:runit ss:iproute2 unshare:util-linux setpriv:util-linux fuser:psmisc nginx:nginx node:nodejs gcc:gcc gcc:libc6-dev ip:iproute2 nsenter:util-linux dash:dash ssh-agent:openssh-client lintian:lintian ruby:ruby man:man-db sha256sum:coreutils dpkg-deb:dpkg
test-deps:
	@missing=""; for pair in $(TEST_TOOLS); do \
	  command -v "$${pair%%:*}" >/dev/null 2>&1 || missing="$$missing $${pair##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "== apt-get install$$missing"; \
	    apt-get update -qq || exit 1; \
	    others=$$(echo " $$missing " | sed 's/ nginx / /'); \
	    if [ -n "$$(echo $$others)" ]; then \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$others >/dev/null || exit 1; fi; \
	    case " $$missing " in *" nginx "*) \
	      policy=""; [ -e /usr/sbin/policy-rc.d ] || { policy=/usr/sbin/policy-rc.d; \
	        printf '#!/bin/sh\nexit 101\n' > $$policy; chmod 755 $$policy; }; \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null; \
	      installed=$$?; [ -z "$$policy" ] || rm -f "$$policy"; [ $$installed = 0 ] || exit 1;; esac; \
	  else echo "make test needs:$$missing (as root: apt-get install$$missing)"; exit 1; fi; fi

test: test-deps build/tend typecheck build/tools/promtool build/tools/prometheus build/tools/alertmanager build/tools/android build/tools/busybox
	TEND_BIN=$(CURDIR)/build/tend PROMTOOL=$(CURDIR)/build/tools/promtool ALERTMANAGER=$(CURDIR)/build/tools/alertmanager \
	  PROMETHEUS=$(CURDIR)/build/tools/prometheus $(BUN) test --timeout 120000 $(TEST_PARALLEL) test/

# Test files side by side, slowest first (test/timings.json: `make test-timings` measures them again).
# Most of a test's time is waiting on real processes and timers, so 4 workers on 2 cores; TEST_PARALLEL= runs them one by one.
TEST_PARALLEL ?= --parallel=4 --timings=test/timings.json

test-timings: test-deps build/tend typecheck build/tools/promtool build/tools/prometheus build/tools/alertmanager build/tools/android build/tools/busybox
	$(MAKE) test TEST_PARALLEL="--parallel=4 --timings=test/timings.json --update-timings"

# Real receivers from Debian's packages, unpacked (not installed, no service started): promtool
# checks the metrics exposition and tests the rules; Prometheus scrapes a fleet of three serve
# instances (test/fleet.test.ts); Alertmanager receives, keeps firing and resolves tend's alerts.
build/tools/promtool:
	test/deb-tool.sh prometheus usr/bin/promtool $@

build/tools/prometheus:
	test/deb-tool.sh prometheus usr/bin/prometheus $@

# The Termux-shaped sandbox's phone (test/termux.ts): its init, Android's seccomp filter and /proc denials
# for the app, /system/bin/sh and getprop; static, so it runs in the phone's root as it is.
build/tools/android: test/android/android.c
	@mkdir -p build/tools
	cc -O2 -static -Wall -Wextra -o $@ test/android/android.c

# The phone's crond (with termux-services): Debian's busybox, the static build (it has crond).
build/tools/busybox:
	test/deb-tool.sh busybox-static bin/busybox $@

# Debian's Alertmanager reads its templates from /usr/share/prometheus/alertmanager: its wrapper
# shows it build/tools/share there, in a mount namespace of its own (an overlay on /usr/share).
build/tools/alertmanager: test/alertmanager-wrapper.sh
	test/deb-tool.sh prometheus-alertmanager usr/bin/prometheus-alertmanager $@.bin \
	  usr/share/prometheus/alertmanager/default.tmpl usr/share/prometheus/alertmanager/email.tmpl
	cp test/alertmanager-wrapper.sh $@

# Benchmarks against peers (bash+curl, monit) and the fault suite; not part of `make test`.
bench: build/tend
	@command -v hyperfine >/dev/null && command -v monit >/dev/null && command -v curl >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine monit curl >/dev/null)
	$(BUN) bench/bench.ts $(BENCH_ARGS)

# The fault suite, then the migration trial (test/migrating.test.ts) at cron's real 5-minute period:
# the literal run, about 2.6 hours (`make test` runs it at 6 s a period). TRIAL_PERIOD_MS= skips it.
TRIAL_PERIOD_MS ?= 300000
faults: build/tend
	$(BUN) bench/faults.ts $(FAULT_ARGS)
	@if [ -n "$(TRIAL_PERIOD_MS)" ]; then TEND_BIN=$(CURDIR)/build/tend TRIAL_PERIOD_MS=$(TRIAL_PERIOD_MS) \
	  $(BUN) test --timeout 120000 test/migrating.test.ts; fi

# The ground-truth harness (bench/truth.ts): real services, a stopwatch probing them 10x as often as tend,
# a seeded schedule of faults under cron-like passes and the loop; every view held to what happened.
# `make truth SEED=n MODE=cron|loop|both|alternate SEEDS=count`; a failing seed prints its schedule. make test runs a short seed.
SEED ?= 1
SEEDS ?= 1
MODE ?= both
truth: build/tend
	$(BUN) bench/truth.ts --seed $(SEED) --seeds $(SEEDS) --mode $(MODE) $(TRUTH_ARGS)

# The README's set-up line and two commands on a fresh Debian 12 booted with systemd, the repository
# cloned into /root (test/fresh-debian/check.sh); then make test again, and what it left behind. As root.
# BURNERS=2: two `yes` beside it (a busy two-core machine, as CI's may be).
BURNERS ?= 0
fresh-check:
	BURNERS=$(BURNERS) bash test/fresh-debian/check.sh

# What watching 20 services costs a phone per hour: tend's cron pass vs its loop vs monit (bench/battery.ts).
battery: build/tend
	@command -v monit >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends monit >/dev/null)
	$(BUN) bench/battery.ts $(BATTERY_ARGS)

# The page of 100 services x 1000 outages in the loop's process: how late a timer due meanwhile fires (bench/render.ts).
render: node_modules/.installed
	$(BUN) bench/render.ts $(RENDER_ARGS)

# Power cuts replayed block by block on ext4, ext4 noauto_da_alloc and f2fs, in a QEMU VM with
# Debian's kernel (bench/powercut.ts; about an hour under TCG). POWERCUT_ARGS="--before OLD-BINARY".
powercut: build/tend
	$(BUN) bench/powercut.ts $(POWERCUT_ARGS)

# The page at 360 and 1280 px, shot by headless chromium: docs/page-360.png, docs/page-1280.png.
screenshots: build/tend
	@command -v chromium >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null)
	$(BUN) test/screenshots.ts docs

demo: build/tend
	bash examples/demo.sh

clean:
	rm -rf build
