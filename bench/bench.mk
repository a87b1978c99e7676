# Benchmarks (not tests): `make bench` builds and runs them and prints each
# against an unhooked run of the same code (bench/run.py).
BENCH_DIR := $(B)/bench

$(BENCH_DIR)/benchlib.dll: bench/benchlib.c bench/leaf.h
	@mkdir -p $(dir $@)
	$(WCC) -O2 -shared -o $@ $< -Wl,--out-implib,$(BENCH_DIR)/libbenchlib.a

$(BENCH_DIR)/callbench.exe: bench/callbench.c bench/leaf.h $(BENCH_DIR)/benchlib.dll
	@mkdir -p $(dir $@)
	$(WCC) -O2 -fno-inline -o $@ $< -L$(BENCH_DIR) -lbenchlib

.PHONY: bench bench-build
bench-build: all $(BENCH_DIR)/callbench.exe

bench: bench-build
	$(PYTHON) bench/run.py

# Per-call cost of each probe (bench/run.py overhead): stackbench.exe calls
# an empty function from 14 nested frames, for --stacks=16 captures that
# always walk 16 frames.
$(BENCH_DIR)/stackbench.exe: bench/stackbench.c $(BENCH_DIR)/benchlib.dll
	@mkdir -p $(dir $@)
	$(WCC) -O2 -fno-inline -o $@ $< -L$(BENCH_DIR) -lbenchlib

bench-build: $(BENCH_DIR)/stackbench.exe
