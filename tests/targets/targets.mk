# Test target programs: small Windows programs, each showing one behaviour.
# Built into build/tests/. Most are C built plainly; some need extra flags.
TGT_DIR   := $(B)/tests
TGT_CFLAGS := -std=gnu11 -O1 -gdwarf-4 -fno-inline -Wall -Wno-unused-parameter
# DLL sources (built by their own rules below, not as programs), and sources
# built in several variants by rules of their own
TGT_DLL_C := tests/targets/latedll.c tests/targets/burndll.c tests/targets/relaydll.c
TGT_MULTI_C := tests/targets/tailfwd.c tests/targets/switchtab.c
TGT_C     := $(filter-out $(TGT_DLL_C) $(TGT_MULTI_C),$(wildcard tests/targets/*.c))
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

# stress.exe plays the injector's part itself, and scribble.exe overwrites
# its session: they need the session layout
TGT_EXTRA_stress := -Iinclude
$(TGT_DIR)/stress.exe: include/hookscope/session.h
TGT_EXTRA_scribble := -Iinclude
$(TGT_DIR)/scribble.exe: include/hookscope/session.h
# objprobe.exe lists the session's named objects (ntdll's directory calls)
TGT_LIBS_objprobe := -lntdll

# Issue 4 targets (exceptions, stack walks, timing, stacks) need nothing
# beyond the pattern rules above: cxxexc.cpp is built with the win32 g++
# like cxxbasic and loads the same runtime DLLs; seh.c and cxxexc.cpp
# carry their assembly helpers as top-level asm. Listed here so that
# `make test-targets` is known to build them.
ISSUE4_TARGETS := cxxexc seh stackwalk deeprec manyargs sleeper folded stackevery tailcall napper
test-targets: $(patsubst %,$(TGT_DIR)/%.exe,$(ISSUE4_TARGETS))

# tailcall.c needs its tail call: -O2 (with -foptimize-sibling-calls) after -O1
TGT_EXTRA_tailcall := -O2 -foptimize-sibling-calls
# tailsleep.c: functions that end in tail jumps to Sleep and through a pointer
TGT_EXTRA_tailsleep := -O2 -foptimize-sibling-calls

# latedll.dll: loaded by lateload.exe with LoadLibraryW after main starts
# (not linked to it).
$(TGT_DIR)/latedll.dll: tests/targets/latedll.c
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) -shared -o $@ $<
test-targets: $(TGT_DIR)/latedll.dll

# burndll.dll: loaded, burnt in and unloaded by burnlate.exe during its run
# (samples in a module that comes and goes)
$(TGT_DIR)/burndll.dll: tests/targets/burndll.c tests/targets/burnms.h
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) -shared -o $@ $<
test-targets: $(TGT_DIR)/burndll.dll

# relay1.dll and relay2.dll: relaydll.c in its two variants, at one base
# (no dynamic base), loaded one after the other by relayload.exe
RELAY_DLLS := $(TGT_DIR)/relay1.dll $(TGT_DIR)/relay2.dll
$(RELAY_DLLS): $(TGT_DIR)/relay%.dll: tests/targets/relaydll.c
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) -DRELAY_VARIANT=$* -shared -Wl,--image-base=0x3e0000000 -Wl,--disable-dynamicbase -o $@ $<
test-targets: $(RELAY_DLLS)

# spin.exe built a second time with slow_part() doing 100 times the work
$(TGT_DIR)/spin_slow.exe: tests/targets/spin.c
	@mkdir -p $(dir $@)
	$(WCC) $(TGT_CFLAGS) -DSLOW_SPINS=2000000 -o $@ $<
test-targets: $(TGT_DIR)/spin_slow.exe

# tailfwd.c: stack arguments handed on by tail jumps, at the optimization
# levels that make them (-foptimize-sibling-calls): tailfwd-O2.exe, -O3, -Os
TAILFWD_OPTS := O2 O3 Os
TAILFWD_EXES := $(patsubst %,$(TGT_DIR)/tailfwd-%.exe,$(TAILFWD_OPTS))
$(TAILFWD_EXES): $(TGT_DIR)/tailfwd-%.exe: tests/targets/tailfwd.c
	@mkdir -p $(dir $@)
	$(WCC) -std=gnu11 -$* -gdwarf-4 -Wall -o $@ $<
test-targets: $(TAILFWD_EXES)

# switchtab.c: switches whose jump tables clang puts inside the function's
# code (as in bzip2 built with clang), with clang and lld
CLANG_MINGW := clang --target=x86_64-w64-mingw32 -fuse-ld=lld \
               -L$(dir $(shell $(WCC) -print-libgcc-file-name))
$(TGT_DIR)/switchtab.exe: tests/targets/switchtab.c
	@mkdir -p $(dir $@)
	$(CLANG_MINGW) -O2 -gdwarf-4 -Wall -o $@ $<
test-targets: $(TGT_DIR)/switchtab.exe

# suspendtest.exe drives hook/suspend/threads_win.c itself (built into it)
TGT_EXTRA_suspendtest := -I$(B)/inc/hook -DUNICODE -D_UNICODE
TGT_LIBS_suspendtest := hook/suspend/threads_win.c
$(TGT_DIR)/suspendtest.exe: hook/suspend/threads_win.c hook/suspend/threads_win.h | $(INC_FARMS)

# remotebound.exe drives hook/base/remote_win.c itself (built into it)
TGT_EXTRA_remotebound := -I$(B)/inc/hook -DUNICODE -D_UNICODE
TGT_LIBS_remotebound := hook/base/remote_win.c
$(TGT_DIR)/remotebound.exe: hook/base/remote_win.c hook/base/remote_win.h | $(INC_FARMS)

# stubstep.exe unwinds every stepped state with hookscope's own unwinder
STUBSTEP_LIBS := hook/unwind/unwinder.c hook/pe/unwind_info.c hook/pe/headers.c
TGT_EXTRA_stubstep := -I$(B)/inc/tests
TGT_LIBS_stubstep := $(STUBSTEP_LIBS)
$(TGT_DIR)/stubstep.exe: $(STUBSTEP_LIBS) | $(INC_FARMS)
