# hookscope - build with mingw-w64 from Linux (or MSYS2), test under Wine.
#
#   make deps     install and build every dependency (Debian 12; idempotent)
#   make          hookscope.exe and its agent DLLs (x86-64, and i686 for
#                 32-bit targets), in build/bin/
#   make demo     trace the bundled demo program and print the report
#   make test     build everything and run every test (the units under ASan
#                 and UBSan too)
#   make bench    run the benchmarks
# `make demo` and `make test` run `make deps` first when it never ran here,
# or when scripts/deps.sh changed since (a stamp: build/deps/.ready).
#
# On MSYS2 (mingw64 shell) with capstone installed by pacman:
#   make CROSS= CAPSTONE_WIN=/mingw64 CAPSTONE_LIB=-lcapstone

CROSS        ?= x86_64-w64-mingw32-
CROSS32      ?= i686-w64-mingw32-
WCC          := $(CROSS)gcc
WCC32        := $(CROSS32)gcc
WCXX         := $(CROSS)g++
NCC          ?= gcc
B            := build
CAPSTONE_WIN ?= $(B)/deps/capstone-win
CAPSTONE_LIB ?= $(CAPSTONE_WIN)/lib/capstone.lib
CAPSTONE_WIN32 ?= $(B)/deps32/capstone-win
CAPSTONE_LIB32 ?= $(CAPSTONE_WIN32)/lib/capstone.lib
PYTHON       ?= python3
VERSION      := 0.1.0

WARN     := -Wall -Wextra
COMMON   := -std=gnu11 -O2 -gdwarf-4 $(WARN) -DHOOKSCOPE_VERSION=\"$(VERSION)\"
WFLAGS   := $(COMMON) -D_WIN32_WINNT=0x0601 -DUNICODE -D_UNICODE -D__USE_MINGW_ANSI_STDIO=1 -fno-strict-aliasing
WCFLAGS  := $(WFLAGS) -I$(CAPSTONE_WIN)/include
W32CFLAGS := $(WFLAGS) -I$(CAPSTONE_WIN32)/include
NCFLAGS  := $(COMMON) -fno-strict-aliasing

# --- the layers and what each may include ------------------------------------
# Every include is qualified from the top of the tree ("hook/pe/pe.h",
# "sampler/etl/etl.h"; include/ is the root of "hookscope/..."). A layer's
# files are compiled with one include path, build/inc/LAYER, which holds a
# link to each folder the layer may see and nothing else, so an include
# that reaches up the graph does not compile:
#   include <- hook <- {agent, sampler} <- injector
# (scripts/check_includes.py checks the same graph, and the folders inside
# injector/, as a test.)
SEES_hook     := hookscope hook
SEES_agent    := hookscope hook agent
SEES_sampler  := hookscope hook sampler
SEES_injector := hookscope hook sampler injector
SEES_tests    := hookscope hook agent sampler injector tests
SEES_bench    := hookscope hook agent sampler injector tests bench
LAYERS        := hook agent sampler injector tests bench
layer_of       = $(firstword $(subst /, ,$(1)))
link_src       = $(if $(filter hookscope,$(1)),$(CURDIR)/include/hookscope,$(CURDIR)/$(1))
INC_FARMS     := $(foreach l,$(LAYERS),$(B)/inc/$(l)/.done)

$(B)/inc/%/.done: Makefile
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	@for r in $(SEES_$*); do \
	    case $$r in hookscope) src=$(CURDIR)/include/hookscope ;; *) src=$(CURDIR)/$$r ;; esac; \
	    ln -s "$$src" $(dir $@)$$r; done
	@touch $@

# sources by layer; *_win.c: Windows only; *_posix.c: their Linux
# counterparts, for native tests
HOOK_C     := $(filter-out %_win.c,$(wildcard hook/*/*.c))
HOOK_WIN   := $(wildcard hook/*/*_win.c)
# the primitives every layer builds on (portable)
BASE_C     := $(filter hook/base/%,$(HOOK_C))
# the agent's files for x86-64 only (the x64 stubs, thunks, timing wrapper,
# and what reads or writes x64 unwind data), and for i686 only in their
# place (agent/agent.h says what the 32-bit agent has)
AGENT_X64_ONLY := agent/stubs.c agent/stub_unwind.c agent/stackwalk.c agent/tailenv.c \
                  agent/thunks.S agent/wrapper.S
AGENT_X86_ONLY := agent/agent32.c agent/thunks32.S agent/time32.S
AGENT_C    := $(filter-out $(AGENT_X86_ONLY),$(wildcard agent/*.c))
AGENT_S    := $(filter-out $(AGENT_X86_ONLY),$(wildcard agent/*.S))
AGENT32_SRC := $(filter-out $(AGENT_X64_ONLY),$(wildcard agent/*.c agent/*.S))
SAMPLER_ALL := $(wildcard sampler/*.c sampler/*/*.c)
SAMPLER_C  := $(filter-out %_win.c,$(SAMPLER_ALL))
SAMPLER_WIN := $(filter %_win.c,$(SAMPLER_ALL))
ETL_C      := $(wildcard sampler/etl/*.c)
INJ_C      := $(filter-out %_posix.c injector/launcher/%,$(wildcard injector/*.c injector/*/*.c))
# the injector's portable parts (profile, symbols, writers), also built
# natively for their unit tests
INJ_PORTABLE := $(filter-out %_win.c injector/main.c injector/commands/% injector/trace/%,$(INJ_C)) \
                $(wildcard injector/*/*_posix.c)

win_obj = $(patsubst %.c,$(B)/win/%.o,$(patsubst %.S,$(B)/win/%.o,$(1)))
win32_obj = $(patsubst %.c,$(B)/win32/%.o,$(patsubst %.S,$(B)/win32/%.o,$(1)))
nat_obj = $(patsubst %.c,$(B)/native/%.o,$(1))

HOOKSCOPE_EXE := $(B)/bin/hookscope.exe
AGENT_DLL     := $(B)/bin/hookscope-agent.dll
AGENT32_DLL   := $(B)/bin/hookscope-agent32.dll
DTRACE_EXE    := $(B)/bin/hookscope-dtrace.exe

.PHONY: all deps demo test test-build unit bench clean distclean
all: $(HOOKSCOPE_EXE) $(AGENT_DLL) $(AGENT32_DLL) $(DTRACE_EXE)

deps:
	./scripts/deps.sh
	@mkdir -p $(dir $(DEPS_STAMP)) && touch $(DEPS_STAMP)

# --- dependencies as a stamped prerequisite ---------------------------------
# scripts/deps.sh, run once (and again when it or the package list
# changes): `make demo` and `make test` are the whole setup of a fresh
# Debian machine. A missing capstone for Windows is built by it as well.
DEPS_STAMP := $(B)/deps/.ready

$(DEPS_STAMP): scripts/deps.sh scripts/deps32.sh scripts/capstone32.sh scripts/multiarch_pins.py scripts/bitness.c \
              scripts/fixture-packages.txt
	./scripts/deps.sh
	@mkdir -p $(dir $@) && touch $@

$(CAPSTONE_LIB):
	./scripts/deps.sh

$(CAPSTONE_LIB32):
	./scripts/capstone32.sh

# --- Windows objects --------------------------------------------------------
$(B)/win/%.o: %.c | $(CAPSTONE_LIB) $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) $(WCFLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(B)/win/%.o: %.S | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) $(WCFLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

# hookscope.exe imports at load time only DLLs Windows loads from System32
# whatever folder it runs from (KnownDLLs); the others are delay-loaded,
# at their first call, after main() has limited the search to System32
# (injector/main.c), so that a dbghelp.dll planted beside hookscope.exe
# (a download folder) is never loaded. Their delay-import libraries are
# made from mingw's import libraries.
DELAY_DLLS := dbghelp winmm winhttp cabinet
DELAY_LIBS := $(patsubst %,$(B)/win/delay/lib%.a,$(DELAY_DLLS))
$(B)/win/delay/lib%.a:
	@mkdir -p $(dir $@)
	( echo "LIBRARY $*.dll"; echo EXPORTS; \
	  $(CROSS)nm -g --defined-only "$$($(WCC) -print-file-name=lib$*.a)" | awk '$$2 == "T" { print $$3 }' | sort -u ) \
	    > $(B)/win/delay/$*.def
	$(CROSS)dlltool --def $(B)/win/delay/$*.def --dllname $*.dll --output-delaylib $@

$(HOOKSCOPE_EXE): $(call win_obj,$(INJ_C) $(HOOK_C) $(HOOK_WIN) $(SAMPLER_C) $(SAMPLER_WIN)) $(CAPSTONE_LIB) $(DELAY_LIBS)
	@mkdir -p $(dir $@)
	$(WCXX) -municode -o $@ $(filter %.o,$^) $(CAPSTONE_LIB) $(DELAY_LIBS) \
	    -static-libgcc -static-libstdc++ -static -lz -lpsapi -lshell32 -lntdll

# hookscope-dtrace.exe: `hookscope dtrace` under a name of its own, for DTRACE=
$(DTRACE_EXE): $(B)/win/injector/launcher/dtrace_main.o
	@mkdir -p $(dir $@)
	$(WCC) -municode -s -o $@ $^ -static-libgcc

$(AGENT_DLL): $(call win_obj,$(AGENT_C) $(AGENT_S) $(HOOK_C) $(HOOK_WIN)) $(CAPSTONE_LIB)
	@mkdir -p $(dir $@)
	$(WCC) -shared -o $@ $(filter %.o,$^) $(CAPSTONE_LIB) \
	    -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lpsapi -lntdll

# --- the 32-bit agent, for i386 (WOW64) targets: the agent and hook/ built
# for i686 into build/win32/ (exports without stdcall decoration:
# --kill-at, so that the injector finds hs_agent_init by its name) -------
$(B)/win32/%.o: %.c | $(CAPSTONE_LIB32) $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC32) $(W32CFLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(B)/win32/%.o: %.S | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC32) $(W32CFLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(AGENT32_DLL): $(call win32_obj,$(AGENT32_SRC) $(HOOK_C) $(HOOK_WIN)) $(CAPSTONE_LIB32)
	@mkdir -p $(dir $@)
	$(WCC32) -shared -Wl,--kill-at -o $@ $(filter %.o,$^) $(CAPSTONE_LIB32) \
	    -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lpsapi -lntdll

# --- native (Linux) build of the engine, for unit tests ---------------------
$(B)/native/%.o: %.c | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

# (test_ebpwalk.c walks live 32-bit frames: a unit of build/native32 only)
UNIT_ONLY32 := tests/unit/test_ebpwalk.c
UNIT_SRC := $(filter-out $(UNIT_ONLY32),$(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/native/unit/%,$(UNIT_SRC))
# (*32.c: 32-bit code only, built into build/native32 for the units that
# use it)
UNIT_SUPPORT := $(filter-out $(UNIT_SRC) $(UNIT_ONLY32) tests/unit/%32.c,$(wildcard tests/unit/*.c))

NATIVE_LIB := $(call nat_obj,$(HOOK_C) $(INJ_PORTABLE) $(SAMPLER_C) $(UNIT_SUPPORT))

$(B)/native/unit/%: tests/unit/%.c $(NATIVE_LIB) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -I$(B)/inc/tests -o $@ $< $(NATIVE_LIB) -lcapstone -lz -lstdc++ -lm

# the engine's 32-bit mode, tested as 32-bit code: the engine and the
# differential harness built with -m32 (gcc-multilib, and capstone built
# for it by scripts/deps.sh) into build/native32/; not PIE (the harness's
# entry jumps through an absolute address)
CAPSTONE_M32 ?= $(B)/deps/capstone-m32
N32FLAGS     := $(NCFLAGS) -m32 -fno-pie -I$(CAPSTONE_M32)/include
UNIT32_SRC   := tests/unit/test_hook_exec.c tests/unit/test_hook_dlls.c tests/unit/test_unwind32.c \
                tests/unit/test_ebpwalk.c
UNIT32_BIN   := $(patsubst tests/unit/%.c,$(B)/native32/unit/%,$(UNIT32_SRC))
nat32_obj     = $(patsubst %.c,$(B)/native32/%.o,$(1))
NATIVE32_LIB := $(call nat32_obj,$(HOOK_C) tests/unit/tap.c tests/unit/xrun.c tests/unit/xcase.c tests/unit/ebpwalk32.c)

$(CAPSTONE_M32)/lib/libcapstone.a:
	./scripts/deps.sh

$(B)/native32/%.o: %.c | $(CAPSTONE_M32)/lib/libcapstone.a $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(N32FLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(B)/native32/%.o: %.S | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(N32FLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(B)/native32/unit/%: tests/unit/%.c $(NATIVE32_LIB) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(N32FLAGS) -no-pie -I$(B)/inc/tests -MMD -MP -o $@ $< $(UNIT32_WITH) $(NATIVE32_LIB) \
	    $(CAPSTONE_M32)/lib/libcapstone.a

# the 32-bit agent's thunks, which test_hook_exec's counting stubs call,
# and their C sides for the tests (tests/unit/thunk32.h); its return
# probes and their tests (tests/unit/time32.h)
THUNK32_NATIVE := $(B)/native32/agent/thunks32.o $(B)/native32/tests/unit/thunk32.o \
                  $(B)/native32/agent/time32.o $(B)/native32/tests/unit/time32.o
$(B)/native32/unit/test_hook_exec: $(THUNK32_NATIVE)
$(B)/native32/unit/test_hook_exec: UNIT32_WITH := $(THUNK32_NATIVE) -pthread

.SECONDARY: $(NATIVE32_LIB) $(THUNK32_NATIVE)

unit: $(UNIT_BIN) $(UNIT32_BIN)

# the native objects are not intermediates to delete after linking
.SECONDARY: $(NATIVE_LIB)

# --- test programs, fixtures, examples, benchmarks --------------------------
include tests/targets/targets.mk
include tests/targets32/targets32.mk
include tests/support/support.mk
-include tests/fixtures.mk
include examples/examples.mk
include bench/bench.mk

test-build: all unit test-targets test-targets32 fixtures examples

# the dependencies first, then everything else (a sub-make, so that nothing
# is compiled before the compilers are there)
test: $(DEPS_STAMP)
	$(MAKE) test-build
	$(PYTHON) tests/run.py

# fib(40): 330 million calls, about a second of CPU hooked: a thousand samples
# (most in the hooks of so small a function) next to the exact counts
demo: $(DEPS_STAMP)
	$(MAKE) all examples
	./hookscope run --sample-rate 1000 -o $(B)/demo-out -- $(B)/examples/demo.exe 40
	@echo
	@cat $(B)/demo-out/report.txt

# --- what the test run builds besides the tests: every benchmark, and the
# native units once more with AddressSanitizer and UBSan -------------------
# build/native-asan/unit/test_*: the units and every object they link, built
# with the sanitizers; tests/run.py runs them as asan/test_* (the fuzz tests
# for a bounded time there: HS_FUZZ_SECONDS). `make unit-asan` builds and
# runs them alone.
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
asan_obj    = $(patsubst %.c,$(B)/native-asan/%.o,$(1))
ASAN_LIB   := $(call asan_obj,$(HOOK_C) $(INJ_PORTABLE) $(SAMPLER_C) $(UNIT_SUPPORT))
ASAN_UNITS := $(patsubst tests/unit/%.c,$(B)/native-asan/unit/%,$(UNIT_SRC))

$(B)/native-asan/%.o: %.c | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) $(ASAN_FLAGS) -I$(B)/inc/$(call layer_of,$*) -MMD -MP -c $< -o $@

$(B)/native-asan/unit/%: tests/unit/%.c $(ASAN_LIB) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) $(ASAN_FLAGS) -I$(B)/inc/tests -o $@ $< $(ASAN_LIB) -lcapstone -lz -lstdc++ -lm

.SECONDARY: $(ASAN_LIB)
.PHONY: unit-asan-build unit-asan
unit-asan-build: $(ASAN_UNITS)
unit-asan: unit-asan-build
	$(PYTHON) tests/run.py -k asan/

test-build: bench-build unit-asan-build

clean:
	rm -rf $(B)/win $(B)/win32 $(B)/native $(B)/native32 $(B)/native-asan $(B)/bin $(B)/tests $(B)/tests32 $(B)/examples $(B)/bench

distclean:
	rm -rf $(B)

-include $(shell find $(B)/win $(B)/win32 $(B)/native $(B)/native32 $(B)/native-asan -name '*.d' 2>/dev/null)
