/*
 * tests/support/session_layout_probe.c - one object of every record of
 * hookscope/session.h, compiled with debug information by the x86-64 and
 * the i686 compilers: tests/test_session_layout.py compares the two
 * layouts field by field.
 */
#include "hookscope/session.h"

hs_session_header probe_header;
hs_module_rec probe_module;
hs_func_rec probe_func;
hs_fn_entry probe_fn_entry;
hs_frame32_entry probe_frame32_entry;
hs_thread_slot probe_slot;
hs_region_hdr probe_region;
hs_tl_event probe_tl_event;
hs_fblock probe_fblock;
hs_edge_rec probe_edge;
hs_stack_rec probe_stack;
hs_time_rec probe_time;
hs_shadow_rec probe_shadow;
hs_agent_public probe_public;
hs_capacity probe_capacity;
