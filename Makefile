# perfcached — one entry point: make, make check, make run, make bench, make soak.
#   make            build everything (BUILD=build)
#   make check      install missing deps, build, run every test
#   make check-asan the same under ASan+UBSan (BUILD=build-asan)
#   make bench      engine benchmark (bench/engine) and the RESP comparison
#   make soak       long multi-process soak and crash runs
#   make fuzz       run each fuzz target for FUZZ_SECONDS
#   make install    PREFIX=/usr/local DESTDIR= (see "Install" below); make uninstall
#   make deb        the Debian packages (debian/, dpkg-buildpackage) in build/deb/, and lintian
#   V=1             show full command lines
.DEFAULT_GOAL := all
SHELL := /bin/bash

BUILD ?= build
CXX ?= g++
ifeq ($(origin CXX),default)
CXX := g++
endif
OPT ?= -O2
SAN ?=
CXXFLAGS_BASE := -std=c++20 $(OPT) -g -Wall -Wextra -Werror -pthread -MMD -MP -I.
ifeq ($(SAN),1)
CXXFLAGS_BASE += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS_SAN := -fsanitize=address,undefined
endif
ifeq ($(SAN),thread)
CXXFLAGS_BASE += -fsanitize=thread
LDFLAGS_SAN := -fsanitize=thread
endif
CXXFLAGS := $(CXXFLAGS_BASE) $(EXTRA_CXXFLAGS)
# LDFLAGS (from the environment or the command line) reaches the links of
# the two programs: debian/rules passes Debian's relro/bindnow that way.
LDLIBS := -pthread $(LDFLAGS_SAN)

ifeq ($(V),1)
Q :=
else
Q := @
endif

include mem/Makefile.inc
include cache/Makefile.inc
include proc/Makefile.inc
include net/Makefile.inc
include modules/Makefile.inc
include daemon/Makefile.inc
include mi/Makefile.inc
include db/Makefile.inc

ENGINE_SRCS := $(MEM_SRCS) $(CACHE_SRCS)
ENGINE_OBJS := $(ENGINE_SRCS:%.cc=$(BUILD)/%.o)
DAEMON_SRCS := $(PROC_SRCS) $(NET_SRCS) $(MI_SRCS) $(DB_SRCS) $(MODULES_SRCS)
DAEMON_OBJS := $(DAEMON_SRCS:%.cc=$(BUILD)/%.o)
DAEMON_LIB := $(BUILD)/libperfdaemon.a
DAEMON_BIN := bin/perfcached
CLI_BIN := bin/perfcli
EVENT_LIBS := $(shell pkg-config --libs libevent_core libevent_extra 2>/dev/null || echo -levent_core -levent_extra) \
              $(shell pkg-config --libs libsodium 2>/dev/null || echo -lsodium) \
              $(shell pkg-config --libs tinyxml2 2>/dev/null || echo -ltinyxml2) \
              $(shell pkg-config --libs sqlite3 2>/dev/null || echo -lsqlite3) \
              $(shell pkg-config --libs libpq 2>/dev/null || echo -lpq) \
              $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd)
UNIT_SRCS := $(wildcard test/unit/*.cc test/unit/*/*.cc test/unit/*/*/*.cc)
UNIT_OBJS := $(UNIT_SRCS:%.cc=$(BUILD)/%.o)
SOAK_OBJS := $(BUILD)/test/soak/engine_soak.o
BENCH_OBJS := $(BUILD)/bench/engine_bench.o

ENGINE_LIB := $(BUILD)/libperfengine.a
UNIT_BIN := $(BUILD)/bin/unit_tests
SOAK_BIN := $(BUILD)/bin/engine_soak
BENCH_BIN := $(BUILD)/bin/engine_bench
TRACE_BIN := $(BUILD)/bin/trace_client

# Rebuild everything when the flags change (Redis's .make-settings idea).
SETTINGS := $(BUILD)/.settings
$(shell mkdir -p $(BUILD); echo '$(CXX) $(CXXFLAGS) $(LDLIBS)' | cmp -s - $(SETTINGS) || \
  echo '$(CXX) $(CXXFLAGS) $(LDLIBS)' > $(SETTINGS))

.PHONY: all deps check check-asan check-tsan unit soak soak-short bench fuzz fuzz-build integration diff daemon-san \
        crash-build crash-points crash-points-all canary \
        check-deps format-check clean run install uninstall deb

all: $(ENGINE_LIB) $(DAEMON_BIN) $(CLI_BIN) $(UNIT_BIN) $(SOAK_BIN) $(BENCH_BIN) $(TRACE_BIN) bench/engine

$(BUILD)/%.o: %.cc $(SETTINGS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX    $<")
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJS)
	@$(if $(Q),echo "  AR     $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(DAEMON_LIB): $(DAEMON_OBJS)
	@$(if $(Q),echo "  AR     $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(DAEMON_BIN): $(BUILD)/$(DAEMON_MAIN:.cc=.o) $(DAEMON_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(EVENT_LIBS) $(LDLIBS)

$(CLI_BIN): $(BUILD)/$(CLI_MAIN:.cc=.o) $(BUILD)/mi/mi.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(UNIT_BIN): $(UNIT_OBJS) $(DAEMON_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $(UNIT_OBJS) $(DAEMON_LIB) $(ENGINE_LIB) -lCppUTest -lCppUTestExt $(EVENT_LIBS) $(LDLIBS)

$(SOAK_BIN): $(SOAK_OBJS) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_BIN): $(BENCH_OBJS) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench/eviction.py's client (a key trace replayed over RESP).
$(TRACE_BIN): $(BUILD)/bench/trace_client.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^

# bench/engine is the documented entry point (a symlink to the build output).
bench/engine: $(BENCH_BIN)
	$(Q)ln -sf ../$(BENCH_BIN) bench/engine

deps:
	@scripts/install-deps.sh

check-deps:
	@scripts/check-deps.sh

unit: $(UNIT_BIN)
	$(Q)$(UNIT_BIN) $(UNIT_ARGS)

soak-short: $(SOAK_BIN)
	$(Q)$(SOAK_BIN) --procs 3 --seconds 6 --keys 20000
	$(Q)$(SOAK_BIN) --procs 3 --seconds 6 --keys 20000 --crash 12

# make soak: >= 30 minutes, >= 1,000 kills, every crash point (issue 7); the WAL
# crash test (kill -9 of the daemon, a worker, the WAL process) 20 rounds (issue 11).
SOAK_MINUTES ?= 30
soak: $(SOAK_BIN) crash-build
	$(Q)$(SOAK_BIN) --procs 4 --seconds 120 --keys 200000
	$(Q)$(SOAK_BIN) --procs 4 --seconds $$(( $(SOAK_MINUTES) * 60 )) --keys 200000 --crash $$(( $(SOAK_MINUTES) * 40 ))
	$(Q)$(CRASH_BUILD)/bin/crash_points --all
	$(Q)$(MAKE) --no-print-directory $(DAEMON_BIN)
	$(Q)cd test/integration && PERFCACHED_LONG=1 /usr/bin/python3 -m unittest -v test_engine_trust
	$(Q)cd test/integration && PERFCACHED_WAL_ROUNDS=20 /usr/bin/python3 -m unittest -v \
	  test_wal.Wal.test_always_kill9_whole_daemon_loses_no_acknowledged_write

# Crash points (mem/crash_point.h): the engine rebuilt with a kill site at
# every store, and the driver that kills a writer at each and audits.
CRASH_BUILD := build-crash
CRASH_BIN := $(BUILD)/bin/crash_points
$(CRASH_BIN): $(BUILD)/test/crash/crash_points.o $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)
crash-build:
	$(Q)$(MAKE) --no-print-directory BUILD=$(CRASH_BUILD) EXTRA_CXXFLAGS=-DPERFCACHED_CRASH_POINTS \
	  $(CRASH_BUILD)/bin/crash_points

# The engine's own unit tests (mem/, cache/) in one binary without the daemon
# (the canary build links only this).
ENGINE_UNIT_SRCS := test/unit/main.cc $(wildcard test/unit/mem/*.cc test/unit/cache/*.cc)
ENGINE_UNIT_BIN := $(BUILD)/bin/engine_unit_tests
$(ENGINE_UNIT_BIN): $(ENGINE_UNIT_SRCS:%.cc=$(BUILD)/%.o) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK   $@")
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lCppUTest -lCppUTestExt $(LDLIBS)

# The canary: one build with every deliberate fault (mem/canary.h) selectable
# at run time; passes only if each fault makes the engine's tests fail.
CANARY_BUILD := build-canary
canary:
	$(Q)$(MAKE) --no-print-directory BUILD=$(CANARY_BUILD) \
	  EXTRA_CXXFLAGS="-DPERFCACHED_CRASH_POINTS -DPERFCACHED_CANARY" \
	  $(CANARY_BUILD)/bin/crash_points $(CANARY_BUILD)/bin/engine_soak $(CANARY_BUILD)/bin/engine_unit_tests
	$(Q)BUILD=$(CANARY_BUILD) scripts/canary.sh
crash-points: crash-build
	$(Q)$(CRASH_BUILD)/bin/crash_points --sample 300 --per-site 2
crash-points-all: crash-build
	$(Q)$(CRASH_BUILD)/bin/crash_points --all

# Fuzz targets need clang's libFuzzer.
FUZZ_CXX ?= clang++-14
FUZZ_FLAGS := -std=c++20 -g -O1 -I. -fsanitize=fuzzer,address,undefined
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := glob resp config mi http event xmlrpc reload export snapshot wal rdb backup
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%_fuzz)
$(BUILD)/fuzz/glob_fuzz: test/fuzz/glob_fuzz.cc cache/glob.cc cache/glob.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/glob_fuzz.cc cache/glob.cc
$(BUILD)/fuzz/resp_fuzz: test/fuzz/resp_fuzz.cc net/resp.cc net/resp.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/resp_fuzz.cc net/resp.cc
$(BUILD)/fuzz/config_fuzz: test/fuzz/config_fuzz.cc proc/config.cc proc/config.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/config_fuzz.cc proc/config.cc
$(BUILD)/fuzz/mi_fuzz: test/fuzz/mi_fuzz.cc mi/mi.cc mi/mi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/mi_fuzz.cc mi/mi.cc
$(BUILD)/fuzz/http_fuzz: test/fuzz/http_fuzz.cc modules/mi/http_checks.cc modules/mi/http_checks.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/http_fuzz.cc modules/mi/http_checks.cc
$(BUILD)/fuzz/event_fuzz: test/fuzz/event_fuzz.cc modules/resp/event_decode.cc modules/resp/event_decode.h mi/mi.cc mi/mi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/event_fuzz.cc modules/resp/event_decode.cc mi/mi.cc
$(BUILD)/fuzz/xmlrpc_fuzz: test/fuzz/xmlrpc_fuzz.cc modules/mi/xmlrpc.cc modules/mi/xmlrpc.h mi/mi.cc mi/mi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/xmlrpc_fuzz.cc modules/mi/xmlrpc.cc mi/mi.cc -ltinyxml2
$(BUILD)/fuzz/reload_fuzz: test/fuzz/reload_fuzz.cc proc/reload.cc proc/reload.h proc/config.cc proc/config.h proc/secret.cc proc/log.cc
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/reload_fuzz.cc proc/reload.cc proc/config.cc proc/secret.cc proc/log.cc -lsodium
$(BUILD)/fuzz/export_fuzz: test/fuzz/export_fuzz.cc $(ENGINE_SRCS) db/backend.cc cache/export.h db/backend.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/export_fuzz.cc $(ENGINE_SRCS) db/backend.cc
$(BUILD)/fuzz/snapshot_fuzz: test/fuzz/snapshot_fuzz.cc $(ENGINE_SRCS) db/snapshot.cc db/crc32c.cc db/snapshot.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/snapshot_fuzz.cc $(ENGINE_SRCS) db/snapshot.cc db/crc32c.cc -lzstd
$(BUILD)/fuzz/wal_fuzz: test/fuzz/wal_fuzz.cc $(ENGINE_SRCS) db/wal.cc db/crc32c.cc db/wal.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/wal_fuzz.cc $(ENGINE_SRCS) db/wal.cc db/crc32c.cc
$(BUILD)/fuzz/rdb_fuzz: test/fuzz/rdb_fuzz.cc $(ENGINE_SRCS) db/rdb.cc db/rdb.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/rdb_fuzz.cc $(ENGINE_SRCS) db/rdb.cc
$(BUILD)/fuzz/backup_fuzz: test/fuzz/backup_fuzz.cc db/backup.cc db/backup.h db/crc32c.cc net/resp_client.cc net/resp_client.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ   $@")
	$(Q)$(FUZZ_CXX) $(FUZZ_FLAGS) -o $@ test/fuzz/backup_fuzz.cc db/backup.cc db/crc32c.cc net/resp_client.cc -lzstd
fuzz-build: $(FUZZ_BINS)
# Regression mode: run every target over its corpus once (inside make check).
fuzz-regress: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do $(BUILD)/fuzz/$${t}_fuzz -runs=0 test/fuzz/corpus/$$t >/dev/null 2>&1 \
	  || { echo "fuzz regression failed: $$t"; exit 1; }; \
	  $(BUILD)/fuzz/$${t}_fuzz -max_total_time=10 -max_len=512 >/dev/null 2>&1 \
	  || { echo "fuzz run found a crash: $$t"; exit 1; }; echo "fuzz $$t: ok"; done
fuzz: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do mkdir -p $(BUILD)/fuzz/corpus-$$t; \
	  $(BUILD)/fuzz/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) $(BUILD)/fuzz/corpus-$$t test/fuzz/corpus/$$t \
	  || exit 1; done

check: deps
	$(Q)$(MAKE) --no-print-directory all fuzz-build crash-build
	$(Q)$(MAKE) --no-print-directory BUILD=$(CANARY_BUILD) \
	  EXTRA_CXXFLAGS="-DPERFCACHED_CRASH_POINTS -DPERFCACHED_CANARY" \
	  $(CANARY_BUILD)/bin/crash_points $(CANARY_BUILD)/bin/engine_soak $(CANARY_BUILD)/bin/engine_unit_tests
	$(Q)BUILD=$(BUILD) CRASH_BUILD=$(CRASH_BUILD) CANARY_BUILD=$(CANARY_BUILD) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/check.sh

# The differential harness (test/diff): redis-server vs perfcached, same bytes.
#   make diff                     DIFF_ARGS="--seed 42 --ops 20000" to reproduce / dig
diff: $(DAEMON_BIN)
	$(Q)/usr/bin/python3 test/diff/run_diff.py $(DIFF_ARGS)

integration: $(DAEMON_BIN)
	$(Q)cd test/integration && /usr/bin/python3 -m unittest discover -v -p 'test_*.py'

check-asan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT=-O1 unit soak-short daemon-san
	$(Q)cd test/integration && PERFCACHED_BIN=$(CURDIR)/build-asan/bin/perfcached \
	  /usr/bin/python3 -m unittest discover -p 'test_*.py'
	$(Q)! grep -l "AddressSanitizer\|runtime error" /tmp/perfcached-test-*/perfcached.log 2>/dev/null

# The daemon built into $(BUILD)/bin (used by check-asan for the integration tests).
daemon-san: $(BUILD)/bin/perfcached
$(BUILD)/bin/perfcached: $(BUILD)/$(DAEMON_MAIN:.cc=.o) $(DAEMON_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(EVENT_LIBS) $(LDLIBS)

check-tsan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build-tsan SAN=thread OPT=-O1 unit UNIT_ARGS="-g Threads -g Trust -g Audit"

bench: deps all
	$(Q)bench/engine
	$(Q)bench/resp.sh
	$(Q)bench/types.sh
	$(Q)bench/mi_impact.sh
	$(Q)bench/eviction.py
	$(Q)bench/snapshot.py
	$(Q)bench/wal.py

format-check:
	$(Q)clang-format --dry-run -Werror $$(git ls-files '*.cc' '*.h')

run: deps
	$(Q)$(MAKE) --no-print-directory $(DAEMON_BIN)
	$(DAEMON_BIN) -D $(RUN_ARGS)

clean:
	rm -rf build build-asan build-tsan build-crash build-canary* build-deb bench/engine bin

# ---- make install / make uninstall (README.md "Install") -------------------
# Debian's layout: the daemon and perfcached-setup-host in sbin, perfcli in
# bin, the config in /etc whatever the PREFIX (SYSCONFDIR), man pages
# gzip -9n'd, the unit in /lib/systemd/system for PREFIX=/usr and in
# $(PREFIX)/lib/systemd/system otherwise (both on systemd's unit path).
# The config is installed only when absent: an operator's file is never
# overwritten (the new default goes next to it as perfcached.conf.dist),
# and uninstall never removes it.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ifeq ($(PREFIX),/usr)
UNITDIR ?= /lib/systemd/system
else
UNITDIR ?= $(PREFIX)/lib/systemd/system
endif
MAN_PAGES := man/perfcached.8 man/perfcached-setup-host.8 man/perfcli.1 man/perfcached.conf.5
UNIT_FILE := contrib/perfcached.service
CONF_DIR := $(DESTDIR)$(SYSCONFDIR)/perfcached

install: $(DAEMON_BIN) $(CLI_BIN)
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(CONF_DIR) $(DESTDIR)$(BASHCOMPDIR) \
	  $(addprefix $(DESTDIR)$(MANDIR)/man,$(sort $(subst .,,$(suffix $(MAN_PAGES)))))
	$(Q)install -m 755 $(DAEMON_BIN) $(DESTDIR)$(SBINDIR)/perfcached
	$(Q)install -m 755 scripts/perfcached-setup-host $(DESTDIR)$(SBINDIR)/perfcached-setup-host
	$(Q)install -m 755 $(CLI_BIN) $(DESTDIR)$(BINDIR)/perfcli
	$(Q)install -m 644 contrib/perfcli.bash $(DESTDIR)$(BASHCOMPDIR)/perfcli
	$(Q)for m in $(MAN_PAGES); do f=$(DESTDIR)$(MANDIR)/man$${m##*.}/$${m#man/}.gz; \
	  gzip -9n < $$m > $$f && chmod 644 $$f || exit 1; done
	$(Q)if [ -e $(CONF_DIR)/perfcached.conf ]; then \
	  install -m 640 contrib/perfcached.conf.example $(CONF_DIR)/perfcached.conf.dist; \
	  echo "install: kept $(CONF_DIR)/perfcached.conf; the new default is perfcached.conf.dist next to it"; \
	else install -m 640 contrib/perfcached.conf.example $(CONF_DIR)/perfcached.conf; fi
	$(Q)if [ -f $(UNIT_FILE) ]; then install -d $(DESTDIR)$(UNITDIR) && \
	  sed -e 's|/usr/sbin/perfcached|$(SBINDIR)/perfcached|g' -e 's|/usr/bin/perfcli|$(BINDIR)/perfcli|g' \
	    -e 's|/etc/perfcached/|$(SYSCONFDIR)/perfcached/|g' $(UNIT_FILE) > $(DESTDIR)$(UNITDIR)/perfcached.service && \
	  chmod 644 $(DESTDIR)$(UNITDIR)/perfcached.service; fi
	@echo "installed under $(DESTDIR)$(PREFIX) (config: $(CONF_DIR)); next: perfcached-setup-host"

uninstall:
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/perfcached $(DESTDIR)$(SBINDIR)/perfcached-setup-host \
	  $(DESTDIR)$(BINDIR)/perfcli $(DESTDIR)$(BASHCOMPDIR)/perfcli $(DESTDIR)$(UNITDIR)/perfcached.service \
	  $(CONF_DIR)/perfcached.conf.dist \
	  $(foreach m,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)).gz)
	$(Q)if [ -e $(CONF_DIR)/perfcached.conf ]; then echo "uninstall: kept $(CONF_DIR)/perfcached.conf"; \
	  else rmdir $(CONF_DIR) 2>/dev/null || true; fi

# ---- make deb (README.md "Install from a Debian package") -------------------
# dpkg-buildpackage -us -uc -b with debian/: perfcached and perfcached-tools
# (and their -dbgsym) built from this tree, objects in build-deb/ (kept:
# the next make deb recompiles only what changed). The .debs, .buildinfo
# and .changes go to build/deb/ (emptied first), not to `..`, which the
# worktrees of one repository share; debian/ is cleaned after. lintian
# checks the result: an error or a warning fails make deb
# (debian/*.lintian-overrides say why a tag is overridden).
DEB_DIR := build/deb
deb: deps
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	$(Q)d=$(CURDIR)/$(DEB_DIR) && \
	  pva=perfcached_$$(dpkg-parsechangelog -S Version)_$$(dpkg-architecture -qDEB_HOST_ARCH) && \
	  PERFCACHED_DEB_DIR=$$d dpkg-buildpackage -us -uc -b -J2 --post-clean \
	    --buildinfo-option=-u$$d --buildinfo-file=$$d/$$pva.buildinfo \
	    --changes-option=-u$$d --changes-file=$$d/$$pva.changes && \
	  lintian -I --fail-on error,warning $$d/$$pva.changes && \
	  echo "make deb: $$(cd $$d && ls *.deb | tr '\n' ' ')in $(DEB_DIR)/; lintian: no error, no warning"

-include $(DAEMON_OBJS:.o=.d) $(BUILD)/$(DAEMON_MAIN:.cc=.d) $(BUILD)/$(CLI_MAIN:.cc=.d)
-include $(ENGINE_OBJS:.o=.d) $(UNIT_OBJS:.o=.d) $(SOAK_OBJS:.o=.d) $(BENCH_OBJS:.o=.d) $(BUILD)/test/crash/crash_points.d
