# hookscope - build with mingw-w64 from Linux (or MSYS2), test under Wine.
#
#   make deps     install and build every dependency (Debian 12; idempotent)
#   make          hookscope.exe and its agent DLL, in build/bin/
#   make demo     trace the bundled demo program and print the report
#   make test     build everything and run every test
#   make bench    run the benchmarks
#
# On MSYS2 (mingw64 shell) with capstone installed by pacman:
#   make CROSS= CAPSTONE_WIN=/mingw64 CAPSTONE_LIB=-lcapstone

CROSS        ?= x86_64-w64-mingw32-
WCC          := $(CROSS)gcc
WCXX         := $(CROSS)g++
NCC          ?= gcc
B            := build
CAPSTONE_WIN ?= $(B)/deps/capstone-win
CAPSTONE_LIB ?= $(CAPSTONE_WIN)/lib/capstone.lib
PYTHON       ?= python3
VERSION      := 0.1.0

WARN     := -Wall -Wextra
COMMON   := -std=gnu11 -O2 -gdwarf-4 $(WARN) -Iinclude -Ihook -Iinjector -Isampler -DHOOKSCOPE_VERSION=\"$(VERSION)\"
WCFLAGS  := $(COMMON) -I$(CAPSTONE_WIN)/include -D_WIN32_WINNT=0x0601 -DUNICODE -D_UNICODE -D__USE_MINGW_ANSI_STDIO=1 \
            -fno-strict-aliasing
NCFLAGS  := $(COMMON) -fno-strict-aliasing

HOOK_CORE := $(filter-out %_win.c,$(wildcard hook/*.c))
HOOK_WIN  := $(wildcard hook/*_win.c)
AGENT_C   := $(wildcard agent/*.c)
AGENT_S   := $(wildcard agent/*.S)
# *_win.c: Windows only; *_posix.c: their Linux counterparts, for native tests
INJ_C     := $(filter-out %_posix.c injector/launcher/%,$(wildcard injector/*.c injector/*/*.c))
# the injector's portable parts (profile, symbols, writers), also built
# natively for their unit tests
INJ_PORTABLE := $(filter-out %_win.c injector/main.c injector/commands/% injector/trace/%,$(INJ_C)) \
                $(wildcard injector/*/*_posix.c)
ETL_C     := $(wildcard sampler/etl/*.c)
SAMPLER_C := $(wildcard sampler/*.c) $(ETL_C)
# the sampler's portable parts (sample set, unwinder, code map, classifier)
SAMPLER_PORTABLE := $(filter-out %_win.c,$(wildcard sampler/*.c))

win_obj = $(patsubst %.c,$(B)/win/%.o,$(patsubst %.S,$(B)/win/%.o,$(1)))
nat_obj = $(patsubst %.c,$(B)/native/%.o,$(1))

HOOKSCOPE_EXE := $(B)/bin/hookscope.exe
AGENT_DLL     := $(B)/bin/hookscope-agent.dll
DTRACE_EXE    := $(B)/bin/hookscope-dtrace.exe

.PHONY: all deps demo test test-build unit bench clean distclean
all: $(HOOKSCOPE_EXE) $(AGENT_DLL) $(DTRACE_EXE)

deps:
	./scripts/deps.sh

$(CAPSTONE_LIB):
	@echo "capstone for Windows is missing: run 'make deps' first" >&2; exit 1

# --- Windows objects --------------------------------------------------------
$(B)/win/%.o: %.c | $(CAPSTONE_LIB)
	@mkdir -p $(dir $@)
	$(WCC) $(WCFLAGS) -MMD -MP -c $< -o $@

$(B)/win/%.o: %.S
	@mkdir -p $(dir $@)
	$(WCC) $(WCFLAGS) -MMD -MP -c $< -o $@

$(HOOKSCOPE_EXE): $(call win_obj,$(INJ_C) $(HOOK_CORE) $(HOOK_WIN) $(SAMPLER_C)) $(CAPSTONE_LIB)
	@mkdir -p $(dir $@)
	$(WCXX) -municode -o $@ $(filter %.o,$^) $(CAPSTONE_LIB) \
	    -static-libgcc -static-libstdc++ -static -ldbghelp -lpsapi -lshell32 -lntdll -lwinmm

# hookscope-dtrace.exe: `hookscope dtrace` under a name of its own, for DTRACE=
$(DTRACE_EXE): $(B)/win/injector/launcher/dtrace_main.o
	@mkdir -p $(dir $@)
	$(WCC) -municode -s -o $@ $^ -static-libgcc

$(AGENT_DLL): $(call win_obj,$(AGENT_C) $(AGENT_S) $(HOOK_CORE) $(HOOK_WIN)) $(CAPSTONE_LIB)
	@mkdir -p $(dir $@)
	$(WCC) -shared -o $@ $(filter %.o,$^) $(CAPSTONE_LIB) \
	    -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lpsapi -lntdll

# --- native (Linux) build of the engine, for unit tests ---------------------
$(B)/native/%.o: %.c
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -MMD -MP -c $< -o $@

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/native/unit/%,$(UNIT_SRC))
UNIT_SUPPORT := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))

NATIVE_LIB := $(call nat_obj,$(HOOK_CORE) $(INJ_PORTABLE) $(SAMPLER_PORTABLE) $(ETL_C) $(UNIT_SUPPORT))

$(B)/native/unit/%: tests/unit/%.c $(NATIVE_LIB)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -Itests/unit -o $@ $< $(NATIVE_LIB) -lcapstone -lstdc++ -lm

unit: $(UNIT_BIN)

# the native objects are not intermediates to delete after linking
.SECONDARY: $(NATIVE_LIB)

# --- test programs, fixtures, examples, benchmarks --------------------------
include tests/targets/targets.mk
include tests/support/support.mk
-include tests/fixtures.mk
include examples/examples.mk
include bench/bench.mk

test-build: all unit test-targets fixtures examples

test: test-build
	$(PYTHON) tests/run.py

# fib(36): enough CPU for a thousand samples next to the hooks' exact counts
demo: all examples
	./hookscope run --sample-rate 1000 -o $(B)/demo-out -- $(B)/examples/demo.exe 36
	@echo
	@cat $(B)/demo-out/report.txt

clean:
	rm -rf $(B)/win $(B)/native $(B)/bin $(B)/tests $(B)/examples $(B)/bench

distclean:
	rm -rf $(B)

-include $(shell find $(B)/win $(B)/native -name '*.d' 2>/dev/null)
