# Test target programs: small Windows programs, each showing one behaviour.
# Built into build/tests/. Most are C built plainly; some need extra flags.
TGT_DIR   := $(B)/tests
TGT_CFLAGS := -std=gnu11 -O1 -gdwarf-4 -fno-inline -Wall -Wno-unused-parameter
# DLL sources (built by their own rules below, not as programs)
TGT_DLL_C := tests/targets/latedll.c
TGT_C     := $(filter-out $(TGT_DLL_C),$(wildcard tests/targets/*.c))
TGT_CXX   := $(wildcard tests/targets/*.cpp)
TGT_EXES  := $(patsubst tests/targets/%.c,$(TGT_DIR)/%.exe,$(TGT_C)) \
             $(patsubst tests/targets/%.cpp,$(TGT_DIR)/%.exe,$(TGT_CXX))

$(TGT_DIR)/%.exe: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) $(TGT_EXTRA_$*) -o $@ $< $(TGT_LIBS_$*)

$(TGT_DIR)/%.exe: tests/targets/%.cpp
	@mkdir -p $(dir $@)
	$(WCXX) -O1 -gdwarf-4 -fno-inline -Wall $(TGT_EXTRA_$*) -o $@ $< $(TGT_LIBS_$*)

# shared helpers of the test programs
$(TGT_EXES): $(wildcard tests/targets/*.h)

.PHONY: test-targets
test-targets: $(TGT_EXES)

# C++ targets load the C++ runtime DLLs of the (win32 thread model) toolchain,
# copied next to them.
CXX_DLLS := $(TGT_DIR)/libstdc++-6.dll $(TGT_DIR)/libgcc_s_seh-1.dll
$(CXX_DLLS):
	@mkdir -p $(dir $@)
	cp "$$($(WCXX) -print-file-name=$(notdir $@))" $@
test-targets: $(CXX_DLLS)

# stress.exe plays the injector's part itself: it needs the session layout
TGT_EXTRA_stress := -Iinclude
$(TGT_DIR)/stress.exe: include/hookscope/session.h

# Issue 4 targets (exceptions, stack walks, timing, stacks) need nothing
# beyond the pattern rules above: cxxexc.cpp is built with the win32 g++
# like cxxbasic and loads the same runtime DLLs; seh.c and cxxexc.cpp
# carry their assembly helpers as top-level asm. Listed here so that
# `make test-targets` is known to build them.
ISSUE4_TARGETS := cxxexc seh stackwalk deeprec manyargs sleeper folded stackevery tailcall napper
test-targets: $(patsubst %,$(TGT_DIR)/%.exe,$(ISSUE4_TARGETS))

# tailcall.c needs its tail call: -O2 (with -foptimize-sibling-calls) after -O1
TGT_EXTRA_tailcall := -O2 -foptimize-sibling-calls

# latedll.dll: loaded by lateload.exe with LoadLibraryW after main starts
# (not linked to it).
$(TGT_DIR)/latedll.dll: tests/targets/latedll.c
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) -shared -o $@ $<
test-targets: $(TGT_DIR)/latedll.dll

# suspendtest.exe drives hook/suspend_win.c itself (built into it)
TGT_EXTRA_suspendtest := -Ihook -DUNICODE -D_UNICODE
TGT_LIBS_suspendtest := hook/suspend_win.c
$(TGT_DIR)/suspendtest.exe: hook/suspend_win.c hook/suspend_win.h
