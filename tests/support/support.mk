# Test-side tools built from tests/support (included by the top-level
# Makefile):
#   build/native/tools/symdump   hookscope's PDB/DWARF readers and PDB locator
#                                on Linux (tests/test_pdb_native.py)
#   build/tests/symdump.exe      the same for Windows, plus DbgHelp and MSVC
#                                undecoration (tests/test_pdb_wine.py)
#   build/tests/dbghelp_probe.exe  what the system's DbgHelp says about an
#                                image (injector/symbols/FINDINGS.md)
#   build/native/tools/etlgen    synthetic ETW traces (tests/test_report_etl.py)
SYMDUMP_NAT := $(B)/native/tools/symdump
SYMDUMP_WIN := $(B)/tests/symdump.exe
PROBE_WIN   := $(B)/tests/dbghelp_probe.exe

# hookscope's own debug-information readers (injector/symbols), without the
# facade and backends that need the rest of the injector
DEBUGINFO_C   := $(addprefix injector/symbols/,symtab.c msf.c pdb.c rsds.c locate.c symstore.c dwarf.c \
                   undecorate.c debuginfo.c) $(wildcard hook/pe/*.c) hook/unwind/fpo32.c
DEBUGINFO_WIN := $(addprefix injector/symbols/,symfs_win.c undecorate_win.c dbghelp_win.c)
DEBUGINFO_NAT := $(addprefix injector/symbols/,symfs_posix.c undecorate_posix.c)

SYMDUMP_NAT_OBJ := $(call nat_obj,tests/support/symdump.c $(DEBUGINFO_C) $(DEBUGINFO_NAT))
SYMDUMP_WIN_OBJ := $(call win_obj,tests/support/symdump.c $(DEBUGINFO_C) $(DEBUGINFO_WIN))

$(SYMDUMP_NAT): $(SYMDUMP_NAT_OBJ)
	@mkdir -p $(dir $@)
	$(NCC) -o $@ $^ -lstdc++

$(SYMDUMP_WIN): $(SYMDUMP_WIN_OBJ)
	@mkdir -p $(dir $@)
	$(WCXX) -o $@ $^ -static-libgcc -static-libstdc++ -static -ldbghelp

$(PROBE_WIN): tests/support/dbghelp_probe.c
	@mkdir -p $(dir $@)
	$(WCC) -municode -O1 -Wall -Wextra -o $@ $< -ldbghelp

.PHONY: symbol-tools
symbol-tools: $(SYMDUMP_NAT) $(SYMDUMP_WIN) $(PROBE_WIN)
unit: $(SYMDUMP_NAT)
test-targets: $(SYMDUMP_WIN) $(PROBE_WIN)

# build/native/tools/etlgen: synthetic ETW traces for `report --etl`
# (tests/test_report_etl.py), written with tests/unit/etl_build.h
ETLGEN_NAT := $(B)/native/tools/etlgen
$(ETLGEN_NAT): $(call nat_obj,tests/support/etlgen.c tests/unit/etl_build.c)
	@mkdir -p $(dir $@)
	$(NCC) -o $@ $^
unit: $(ETLGEN_NAT)

# build/tests/etwtest.exe: the live ETW layer against a fake of the system's
# ETW functions (tests/test_etw.py)
ETWTEST_WIN := $(B)/tests/etwtest.exe
ETWTEST_OBJ := $(call win_obj,tests/support/etwtest.c tests/support/etw_fake.c tests/unit/etl_build.c \
                 $(filter-out injector/main.c injector/commands/% injector/trace/%,$(INJ_C)) \
                 $(HOOK_C) $(HOOK_WIN) $(SAMPLER_C) $(SAMPLER_WIN))
$(ETWTEST_WIN): $(ETWTEST_OBJ) $(CAPSTONE_LIB)
	@mkdir -p $(dir $@)
	$(WCXX) -o $@ $(filter %.o,$^) $(CAPSTONE_LIB) -static-libgcc -static-libstdc++ -static -lz -ldbghelp -lpsapi -lntdll -lwinmm -lwinhttp -lcabinet
test-targets: $(ETWTEST_WIN)

# build/tests/etw_fake.dll: the same fake as a DLL that hookscope loads
# through HOOKSCOPE_ETW_API, scripted in terms of the real target, for whole
# runs with --sampler etw (tests/test_etw_run.py)
ETWFAKE_DLL := $(B)/tests/etw_fake.dll
ETWFAKE_OBJ := $(call win_obj,tests/support/etw_fake_dll.c tests/support/etw_fake.c tests/unit/etl_build.c)
$(ETWFAKE_DLL): $(ETWFAKE_OBJ)
	@mkdir -p $(dir $@)
	$(WCC) -shared -o $@ $(filter %.o,$^) -static-libgcc -lntdll
test-targets: $(ETWFAKE_DLL)

# `make fuzz-session` builds the session's fuzz target
# (tests/unit/session_fuzz.h) for libFuzzer (clang), for longer runs by hand
# (tests/support/fuzz_session_main.c says how); make test runs it natively and
# under AddressSanitizer and UBSan as a unit (asan/test_session_fuzz).
SESSION_FUZZ_LIB := tests/unit/session_fuzz.c $(HOOK_C) $(INJ_PORTABLE) $(SAMPLER_C)
FUZZ_SESSION := $(B)/native/fuzz/fuzz_session
$(FUZZ_SESSION): tests/support/fuzz_session_main.c $(SESSION_FUZZ_LIB) | $(INC_FARMS)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-strict-aliasing \
	    -DHOOKSCOPE_VERSION=\"$(VERSION)\" -I$(B)/inc/tests -o $@ $(filter %.c,$^) -lcapstone -lz -lstdc++ -lm
.PHONY: fuzz-session
fuzz-session: $(FUZZ_SESSION)

# build/tests/token_fake.dll: a fake of the token functions that hookscope
# loads through HOOKSCOPE_TOKEN_API (injector/trace/rights.h), for the
# tests of the target's rights and of attach's refusals (tests/test_rights.py)
TOKENFAKE_DLL := $(B)/tests/token_fake.dll
$(TOKENFAKE_DLL): $(call win_obj,tests/support/token_fake_dll.c)
	@mkdir -p $(dir $@)
	$(WCC) -shared -o $@ $^ -static-libgcc
test-targets: $(TOKENFAKE_DLL)

# build/tests/planted/{dbghelp,winmm}.dll: DLLs planted beside a copy of
# hookscope.exe under the names of system DLLs (tests/test_dll_search.py)
PLANTED_DLLS := $(B)/tests/planted/dbghelp.dll $(B)/tests/planted/winmm.dll
$(PLANTED_DLLS): tests/support/planted_dll.c
	@mkdir -p $(dir $@)
	$(WCC) -shared -O1 -o $@ $< -static-libgcc
test-targets: $(PLANTED_DLLS)

# build/tests/bpcount.exe: call counts from a debugger's breakpoints, the
# truth for programs without sources to instrument (tests/test_real_programs.py)
BPCOUNT_WIN := $(B)/tests/bpcount.exe
$(BPCOUNT_WIN): tests/support/bpcount.c
	@mkdir -p $(dir $@)
	$(WCC) -municode -O1 -Wall -Wextra -o $@ $<
test-targets: $(BPCOUNT_WIN)
