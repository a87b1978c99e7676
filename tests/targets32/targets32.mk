# 32-bit (i686) test programs, built with the i686 mingw-w64 toolchain
# (scripts/deps32.sh installs it) into build/tests32/: the 32-bit tests
# (tests/test_wow64.py) run them under Wine's 32-bit side.
# (CROSS32 and WCC32: the Makefile's, which builds the 32-bit agent with them)
TGT32_DIR  := $(B)/tests32
TGT32_C    := $(wildcard tests/targets32/*.c)
TGT32_EXES := $(patsubst tests/targets32/%.c,$(TGT32_DIR)/%.exe,$(TGT32_C))

$(TGT32_DIR)/%.exe: tests/targets32/%.c
	@mkdir -p $(dir $@)
	$(WCC32) $(TGT_CFLAGS) -Wextra -o $@ $<

# C++ (DWARF-2 exceptions), linked statically: no runtime DLLs to copy
TGT32_CXX  := $(wildcard tests/targets32/*.cpp)
TGT32_EXES += $(patsubst tests/targets32/%.cpp,$(TGT32_DIR)/%.exe,$(TGT32_CXX))
$(TGT32_DIR)/%.exe: tests/targets32/%.cpp
	@mkdir -p $(dir $@)
	$(CROSS32)g++ -O1 -gdwarf-4 -fno-inline -Wall -Wextra -static -o $@ $<

# the ground-truth fixture's program (scripts/fixtures-groundtruth.sh),
# built for i686 with the same flags: it prints what the x86-64 build prints
GT32_FLAGS := -std=gnu11 -O1 -gdwarf-4 -fno-inline -Wall -Wextra \
              -fno-ipa-cp -fno-ipa-sra -fno-ipa-pure-const -fno-ipa-modref -fno-optimize-sibling-calls
$(TGT32_DIR)/groundtruth.exe: tests/fixtures/groundtruth/groundtruth.c
	@mkdir -p $(dir $@)
	$(WCC32) $(GT32_FLAGS) -static -o $@ $<

# the 64-bit tests' program of a known CPU split (tests/targets/cpusplit.c),
# built for i686 with the same flags: what the suspend sampler's 32-bit
# walks are checked against (no frame pointers: gcc's default at -O1)
$(TGT32_DIR)/cpusplit.exe: tests/targets/cpusplit.c
	@mkdir -p $(dir $@)
	$(WCC32) $(TGT_CFLAGS) -o $@ $<

# a DLL, and the same linked stripped (-s: named only by its exports)
$(TGT32_DIR)/exports32.dll: tests/targets32/dll/exports32.c
	@mkdir -p $(dir $@)
	$(WCC32) -O1 -Wall -Wextra -shared -o $@ $<
$(TGT32_DIR)/exports32s.dll: tests/targets32/dll/exports32.c
	@mkdir -p $(dir $@)
	$(WCC32) -O1 -Wall -Wextra -shared -s -o $@ $<

# hot-patchable entries without unwind tables, and the same linked stripped
HOTPATCH_FLAGS := -O1 -Wall -Wextra -fno-asynchronous-unwind-tables
$(TGT32_DIR)/hotpatch.exe: tests/targets32/hotpatch/hotpatch.c
	@mkdir -p $(dir $@)
	$(WCC32) $(HOTPATCH_FLAGS) -o $@ $<
$(TGT32_DIR)/hotpatchs.exe: tests/targets32/hotpatch/hotpatch.c
	@mkdir -p $(dir $@)
	$(WCC32) $(HOTPATCH_FLAGS) -s -o $@ $<

# the program that captures its own stack (tests/targets/backtrace.c), for
# i686 with frame pointers: the ebp chain is what its capture walks
$(TGT32_DIR)/backtrace.exe: tests/targets/backtrace.c
	@mkdir -p $(dir $@)
	$(WCC32) $(TGT_CFLAGS) -fno-omit-frame-pointer -o $@ $<

# the attach tests' target (tests/targets/attachee.c), built for i686
$(TGT32_DIR)/attachee.exe: tests/targets/attachee.c tests/targets/codecheck.h
	@mkdir -p $(dir $@)
	$(WCC32) $(TGT_CFLAGS) -Itests/targets -o $@ $<

# the PDB fixture's program of frames without a frame pointer
# (tests/fixtures/pdb/fpo32.c) built by i686 gcc at -O2: its frames are
# described by its .eh_frame alone (the clang build's by its PDB alone)
$(TGT32_DIR)/fpo32-gcc.exe: tests/fixtures/pdb/fpo32.c
	@mkdir -p $(dir $@)
	$(WCC32) -std=gnu11 -O2 -fno-inline -gdwarf-4 -Wall -Wextra -o $@ $<

.PHONY: test-targets32
test-targets32: $(TGT32_EXES) $(TGT32_DIR)/groundtruth.exe $(TGT32_DIR)/cpusplit.exe $(TGT32_DIR)/exports32.dll \
                $(TGT32_DIR)/exports32s.dll $(TGT32_DIR)/hotpatch.exe $(TGT32_DIR)/hotpatchs.exe $(TGT32_DIR)/attachee.exe \
                $(TGT32_DIR)/backtrace.exe \
                $(TGT32_DIR)/fpo32-gcc.exe
