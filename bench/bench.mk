# Benchmarks (not tests): `make bench` builds and runs them and prints each
# against an unhooked run of the same code (bench/run.py).
BENCH_DIR := $(B)/bench

$(BENCH_DIR)/benchlib.dll: bench/benchlib.c bench/leaf.h | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) -O2 -I$(B)/inc/bench -shared -o $@ $< -Wl,--out-implib,$(BENCH_DIR)/libbenchlib.a

$(BENCH_DIR)/callbench.exe: bench/callbench.c bench/leaf.h bench/clock.h $(BENCH_DIR)/benchlib.dll | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) -O2 -I$(B)/inc/bench -fno-inline -o $@ $< -L$(BENCH_DIR) -lbenchlib

.PHONY: bench bench-build
bench-build: all $(BENCH_DIR)/callbench.exe

bench: bench-build
	$(PYTHON) bench/run.py

# Per-call cost of each probe (bench/run.py overhead): stackbench.exe calls
# an empty function from 14 nested frames, for --stacks=16 captures that
# always walk 16 frames.
$(BENCH_DIR)/stackbench.exe: bench/stackbench.c bench/clock.h $(BENCH_DIR)/benchlib.dll | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) -O2 -I$(B)/inc/bench -fno-inline -o $@ $< -L$(BENCH_DIR) -lbenchlib

bench-build: $(BENCH_DIR)/stackbench.exe

# manyfuncs.exe: 20,000 generated small functions, for the install rate
# (bench/run.py install). Generated into several C files that compile in
# parallel (make -j); built once, then reused.
MANY_DIR   := $(BENCH_DIR)/manyfuncs
MANY_PARTS := 0 1 2 3 4 5 6 7
MANY_C     := $(foreach p,$(MANY_PARTS),$(MANY_DIR)/part$(p).c) $(MANY_DIR)/main.c
MANY_O     := $(MANY_C:.c=.o)

$(MANY_C) $(MANY_DIR)/manyfuncs.h &: bench/gen_manyfuncs.py
	$(PYTHON) bench/gen_manyfuncs.py -n 20000 --parts $(words $(MANY_PARTS)) $(MANY_DIR)

$(MANY_DIR)/%.o: $(MANY_DIR)/%.c $(MANY_DIR)/manyfuncs.h
	$(WCC) -O2 -fno-inline -c -o $@ $<

$(BENCH_DIR)/manyfuncs.exe: $(MANY_O)
	$(WCC) -o $@ $^

bench-build: $(BENCH_DIR)/manyfuncs.exe

# the lua workload (report time) is a test fixture: build it if missing
bench-build: $(FIX_LUA) $(FIX_DIR)/lua/workload.lua

# The sampler (bench/run.py sample): spin.exe, CPU-bound, 1 or more threads
$(BENCH_DIR)/spin.exe: bench/spin.c
	@mkdir -p $(dir $@)
	$(WCC) -O2 -I$(B)/inc/bench -fno-inline -o $@ $<

bench-build: $(BENCH_DIR)/spin.exe

# Merge and report time of the samples (bench/run.py sample), natively:
# the same portable code a run uses after the target ends
$(B)/native/bench/mergebench: bench/mergebench.c $(NATIVE_LIB) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -I$(B)/inc/bench -o $@ $< $(NATIVE_LIB) -lcapstone -lz -lstdc++ -lm

bench-build: $(B)/native/bench/mergebench

# The unwinder the sampler uses against DbgHelp's StackWalk64 on the same
# samples of spin.exe (bench/run.py sample)
WALK_OBJ := $(call win_obj,$(BASE_C) hook/base/util_win.c $(wildcard hook/pe/*.c) hook/unwind/unwinder.c hook/unwind/unwind32.c hook/unwind/retshadow.c hook/unwind/cfi32.c hook/unwind/fpo32.c \
              hook/suspend/threads_win.c sampler/codemap.c sampler/suspend/grab_win.c sampler/suspend/modules_win.c)
$(BENCH_DIR)/walkbench.exe: bench/walkbench.c $(WALK_OBJ) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC) $(WCFLAGS) -I$(B)/inc/bench -o $@ $< $(WALK_OBJ) -ldbghelp -lpsapi

bench-build: $(BENCH_DIR)/walkbench.exe

# etlstat: what the ETL reader finds in a trace (samples per process and per
# module), and its decode time (bench/run.py etl). Native, built with the unit
# tests since tests/test_etl.py runs it.
ETLSTAT := $(B)/native/etlstat

$(ETLSTAT): bench/etlstat.c $(call nat_obj,$(ETL_C) $(BASE_C)) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(NCC) $(NCFLAGS) -I$(B)/inc/bench -o $@ $< $(call nat_obj,$(ETL_C) $(BASE_C))

unit: $(ETLSTAT)
bench-build: $(ETLSTAT) $(FIX_ETL)

# What a DLL's presence costs a thread's start and end (bench/run.py
# dll-presence): shortthreads.exe lat loads copies of a do-nothing DLL
# built four ways: mingw's DLL startup (a TLS directory) or none (no TLS
# directory), each with thread notifications or with DisableThreadLibraryCalls.
NULLDLL_FLAGS_tls      :=
NULLDLL_FLAGS_tls_off  := -DNO_THREAD_CALLS
NULLDLL_FLAGS_notls    := -DNO_CRT -nostartfiles -nostdlib -Wl,-e,nulldll_entry
NULLDLL_FLAGS_notls_off := $(NULLDLL_FLAGS_notls) -DNO_THREAD_CALLS
NULLDLLS := $(foreach v,tls tls_off notls notls_off,$(BENCH_DIR)/nulldll_$(v).dll)

$(BENCH_DIR)/nulldll_%.dll: bench/nulldll.c
	@mkdir -p $(dir $@)
	$(WCC) -O2 -shared $(NULLDLL_FLAGS_$*) -o $@ $< -lkernel32

bench-build: $(NULLDLLS)

# The same programs built for i686 (bench/run.py wow64: the 32-bit agent's
# figures beside the 64-bit one's): callbench, stackbench and their DLL,
# manyfuncs (the same generated sources) and spin, into build/bench32/.
BENCH32_DIR := $(B)/bench32

$(BENCH32_DIR)/benchlib.dll: bench/benchlib.c bench/leaf.h | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC32) -O2 -I$(B)/inc/bench -shared -o $@ $< -Wl,--out-implib,$(BENCH32_DIR)/libbenchlib.a

$(BENCH32_DIR)/%bench.exe: bench/%bench.c bench/leaf.h bench/clock.h $(BENCH32_DIR)/benchlib.dll | $(INC_FARMS)
	@mkdir -p $(dir $@)
	$(WCC32) -O2 -I$(B)/inc/bench -fno-inline -o $@ $< -L$(BENCH32_DIR) -lbenchlib

MANY32_O := $(patsubst $(MANY_DIR)/%.c,$(BENCH32_DIR)/manyfuncs/%.o,$(MANY_C))
$(BENCH32_DIR)/manyfuncs/%.o: $(MANY_DIR)/%.c $(MANY_DIR)/manyfuncs.h
	@mkdir -p $(dir $@)
	$(WCC32) -O2 -fno-inline -I$(MANY_DIR) -c -o $@ $<

$(BENCH32_DIR)/manyfuncs.exe: $(MANY32_O)
	$(WCC32) -o $@ $^

$(BENCH32_DIR)/spin.exe: bench/spin.c
	@mkdir -p $(dir $@)
	$(WCC32) -O2 -I$(B)/inc/bench -fno-inline -o $@ $<

bench-build: $(BENCH32_DIR)/callbench.exe $(BENCH32_DIR)/stackbench.exe $(BENCH32_DIR)/manyfuncs.exe \
             $(BENCH32_DIR)/spin.exe
