# Test fixtures: real Windows programs for hookscope's end-to-end tests,
# built into $(B)/fixtures/ (included by the top-level Makefile).
#
#   make fixtures          build whatever is missing or out of date
#   make fixtures-check    run every fixture untraced under Wine and check it
#   make fixtures-clean    remove $(B)/fixtures (the apt-get source trees in
#                          $(B)/deps/src stay)
#
# Each fixture is built by its own script, scripts/fixtures-NAME.sh, whose
# header says what it is and how it is built; tests/fixtures/fixtures.json
# lists how to run each one. Scripts run only when an output is missing or
# older than an input, so a second `make fixtures` does nothing. A full
# build from nothing takes about a minute on 2 cores, most of it sqlite3.c
# at -O2 (use make -j2 to overlap lua and sqlite). `make clean` does not
# remove fixtures; `make distclean` does.
#
# Needs (make deps): mingw-w64 gcc/g++ (win32 and posix), python3, and the
# packages in scripts/fixture-packages.txt (tcl, libgcrypt-mingw-w64-dev,
# clang, lld, llvm), plus a deb-src entry for `apt-get source lua5.4 sqlite3 libzstd`.

FIX_DIR     := $(B)/fixtures
FIX_COMMON  := scripts/fixtures-common.sh
FIX_RUNTIME := tests/support/cyg_profile.c tests/support/funcset.py

FIX_LUA    := $(FIX_DIR)/lua/lua.exe $(FIX_DIR)/lua/lua-instr.exe
FIX_GT     := $(FIX_DIR)/groundtruth/groundtruth.exe $(FIX_DIR)/groundtruth/groundtruth-instr.exe
FIX_SQLITE := $(FIX_DIR)/sqlite/sqlite3.exe $(FIX_DIR)/sqlite/sqlite3-cp.exe $(FIX_DIR)/sqlite/sqlite3-instr.exe
FIX_CXX    := $(FIX_DIR)/cxx/cxxdemo.exe $(FIX_DIR)/cxx/libstdc++-6.dll \
              $(FIX_DIR)/cxx/libgcc_s_seh-1.dll $(FIX_DIR)/cxx/libwinpthread-1.dll
FIX_HMAC   := $(FIX_DIR)/hmac256/hmac256.exe $(FIX_DIR)/hmac256/input.bin \
              $(FIX_DIR)/hmac256/expected.txt
FIX_CMD    := $(FIX_DIR)/cmd/workload.bat
FIX_PDB    := $(FIX_DIR)/pdb/pdbc.exe $(FIX_DIR)/pdb/pdbcxx.exe $(FIX_DIR)/pdb/pdbmsvc.exe $(FIX_DIR)/pdb/pdbc32.exe \
              $(FIX_DIR)/pdb/fpo32.exe $(FIX_DIR)/pdb/nofpo/fpo32.exe
FIX_PDBLUA := $(FIX_DIR)/pdblua/lua.exe $(FIX_DIR)/pdblua/lua-instr.exe
FIX_ZSTD   := $(FIX_DIR)/zstd/libzstd.dll $(FIX_DIR)/zstd/libzstd-cp.dll $(FIX_DIR)/zstd/libzstd-instr.dll \
              $(FIX_DIR)/zstd/zstdwork.exe
FIX_DATA   := $(FIX_DIR)/lua/workload.lua $(FIX_DIR)/lua/exit3.lua \
              $(FIX_DIR)/sqlite/workload.sql $(FIX_DIR)/pdblua/workload.lua

# real ETL traces (tests/fixtures/etl/README.md), extracted from their zips
FIX_ETL    := $(FIX_DIR)/etl/ppt-win7-x64.etl $(FIX_DIR)/etl/perfview-win10-x86.etl

FIXTURES := $(FIX_LUA) $(FIX_GT) $(FIX_SQLITE) $(FIX_CXX) $(FIX_HMAC) $(FIX_CMD) $(FIX_DATA) \
            $(FIX_PDB) $(FIX_PDBLUA) $(FIX_ETL) $(FIX_ZSTD)

.PHONY: fixtures fixtures-check fixtures-clean
fixtures: $(FIXTURES)

$(FIX_LUA) &: scripts/fixtures-lua.sh tests/fixtures/lua/argv0.c $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-lua.sh

$(FIX_GT) &: scripts/fixtures-groundtruth.sh tests/fixtures/groundtruth/groundtruth.c \
             $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-groundtruth.sh

$(FIX_SQLITE) &: scripts/fixtures-sqlite.sh $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-sqlite.sh

$(FIX_CXX) &: scripts/fixtures-cxx.sh tests/fixtures/cxx/cxxdemo.cpp $(FIX_COMMON)
	scripts/fixtures-cxx.sh

$(FIX_HMAC) &: scripts/fixtures-hmac256.sh $(FIX_COMMON)
	scripts/fixtures-hmac256.sh

$(FIX_CMD): scripts/fixtures-cmd.sh tests/fixtures/cmd/workload.bat $(FIX_COMMON)
	scripts/fixtures-cmd.sh

# programs with a PDB only (clang + lld), and the PDB in every search place
$(FIX_PDB) &: scripts/fixtures-pdb.sh $(wildcard tests/fixtures/pdb/*.c tests/fixtures/pdb/*.cpp) \
              tests/support/pe_rsds.py tests/support/pdbref.py tests/support/pdb_funcset.py \
              $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-pdb.sh

$(FIX_PDBLUA) &: scripts/fixtures-pdblua.sh tests/fixtures/lua/argv0.c tests/support/pe_rsds.py \
                 tests/support/pdb_funcset.py $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-pdblua.sh

$(FIX_DIR)/pdblua/%.lua: tests/fixtures/lua/%.lua
	@mkdir -p $(@D)
	cp $< $@

$(FIX_ZSTD) &: scripts/fixtures-zstd.sh tests/targets/zstdwork.c $(FIX_COMMON) $(FIX_RUNTIME)
	scripts/fixtures-zstd.sh

# workload files are used from the fixture's directory (the cwd of a run)
$(FIX_DIR)/lua/%.lua: tests/fixtures/lua/%.lua
	@mkdir -p $(@D)
	cp $< $@

$(FIX_DIR)/sqlite/%.sql: tests/fixtures/sqlite/%.sql
	@mkdir -p $(@D)
	cp $< $@

$(FIX_DIR)/etl/%.etl: tests/fixtures/etl/%.etl.zip scripts/fixtures-etl.py
	$(PYTHON) scripts/fixtures-etl.py $< $@

# the programs with -finstrument-functions twins again, built for i686
# (FIX_ARCH=i686: the i686 toolchain, scripts/deps32.sh) into
# $(B)/fixtures32/, for the 32-bit agent's counts (tests/test_wow64_truth.py)
FIX32_DIR    := $(B)/fixtures32
FIX32_GT     := $(FIX32_DIR)/groundtruth/groundtruth.exe $(FIX32_DIR)/groundtruth/groundtruth-instr.exe
FIX32_LUA    := $(FIX32_DIR)/lua/lua.exe $(FIX32_DIR)/lua/lua-instr.exe
FIX32_SQLITE := $(FIX32_DIR)/sqlite/sqlite3.exe $(FIX32_DIR)/sqlite/sqlite3-cp.exe \
                $(FIX32_DIR)/sqlite/sqlite3-instr.exe
FIX32_ZSTD   := $(FIX32_DIR)/zstd/libzstd.dll $(FIX32_DIR)/zstd/libzstd-cp.dll \
                $(FIX32_DIR)/zstd/libzstd-instr.dll $(FIX32_DIR)/zstd/zstdwork.exe
FIX32_DATA   := $(FIX32_DIR)/lua/workload.lua $(FIX32_DIR)/lua/exit3.lua $(FIX32_DIR)/sqlite/workload.sql
FIXTURES32   := $(FIX32_GT) $(FIX32_LUA) $(FIX32_SQLITE) $(FIX32_ZSTD) $(FIX32_DATA)

.PHONY: fixtures32
fixtures: fixtures32
fixtures32: $(FIXTURES32)

$(FIX32_GT) &: scripts/fixtures-groundtruth.sh tests/fixtures/groundtruth/groundtruth.c \
               $(FIX_COMMON) $(FIX_RUNTIME)
	FIX_ARCH=i686 scripts/fixtures-groundtruth.sh

$(FIX32_LUA) &: scripts/fixtures-lua.sh tests/fixtures/lua/argv0.c $(FIX_COMMON) $(FIX_RUNTIME)
	FIX_ARCH=i686 scripts/fixtures-lua.sh

$(FIX32_SQLITE) &: scripts/fixtures-sqlite.sh $(FIX_COMMON) $(FIX_RUNTIME)
	FIX_ARCH=i686 scripts/fixtures-sqlite.sh

$(FIX32_ZSTD) &: scripts/fixtures-zstd.sh tests/targets/zstdwork.c $(FIX_COMMON) $(FIX_RUNTIME)
	FIX_ARCH=i686 scripts/fixtures-zstd.sh

$(FIX32_DIR)/lua/%.lua: tests/fixtures/lua/%.lua
	@mkdir -p $(@D)
	cp $< $@

$(FIX32_DIR)/sqlite/%.sql: tests/fixtures/sqlite/%.sql
	@mkdir -p $(@D)
	cp $< $@

fixtures-check: fixtures
	scripts/fixtures-check.sh

fixtures-clean:
	rm -rf $(FIX_DIR) $(FIX32_DIR)
