# The bundled demo program traced by `make demo`.
EX_DIR := $(B)/examples

$(EX_DIR)/demo.exe: examples/demo/demo.c
	@mkdir -p $(dir $@)
	$(WCC) -std=gnu11 -O2 -gdwarf-4 -fno-inline -fno-optimize-sibling-calls -Wall -o $@ $<

.PHONY: examples
examples: $(EX_DIR)/demo.exe
