/*
 * tests/unit/test_etl_clr.c - the ETL reader's JIT methods (hs_etl_jit) on
 * traces built here (etl_build.c) with the CLR's events in each version:
 *   - MethodLoadVerbose V0, V1 and V2 (runtime provider, event id 143),
 *     a method with no namespace, and one logged as a classic MOF event
 *     (the CLR's MethodGuid, opcode 37);
 *   - MethodUnloadVerbose (id 144), then another method loaded at the
 *     same range: each address names the method that held it at that
 *     time, and nothing between the unload and the reuse;
 *   - the rundown's MethodDCEndVerbose (rundown provider, id 144) for a
 *     method loaded during the trace (the same record) and for one only
 *     the rundown names (there since the trace began);
 *   - ModuleLoad (id 152) giving a method's assembly, whatever the order;
 *   - a method event too short for its layout: the one-line error.
 */
#include <stdio.h>
#include <string.h>

#include "sampler/etl/etl.h"
#include "tests/unit/etl_build.h"
#include "tests/unit/tap.h"

#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
static char name[160];

enum { PID = 100, TID = 7 };

static void method(etlb *b, const uint8_t *guid, uint16_t id, uint8_t opcode, unsigned version, uint64_t ts,
                   uint64_t mid, uint64_t module, uint64_t start, uint32_t size, const char *ns, const char *nm)
{
    etlb_bytes pl = {0};
    etlb_p_clr_method(&pl, version, mid, module, start, size, ns, nm, "void  (int32)", 3);
    etlb_evh(b, guid, id, opcode, (uint8_t)version, TID, PID, ts, NULL, 0, &pl);
    eb_free(&pl);
}

static const char *name_at(const hs_etl_trace *t, uint32_t pid, uint64_t addr, uint64_t ts)
{
    const hs_etl_jit *j = hs_etl_jit_at(t, pid, addr, ts);
    return j ? j->name : "(none)";
}

static void expect(const hs_etl_trace *t, uint64_t addr, uint64_t ts, const char *want, unsigned P)
{
    const char *got = name_at(t, PID, addr, ts);
    tap_check(!strcmp(got, want), NAME("P%u: 0x%llx at %llu is %s", P, (unsigned long long)addr,
                                       (unsigned long long)ts, want), "got %s", got);
}

static void test_methods(unsigned P)
{
    etlb b;
    etlb_bytes pl = {0};
    etlb_init(&b, P, 1, 4096);
    etlb_begin(&b, 0, 1);
    method(&b, etlb_guid_clr_runtime, 143, 37, 0, 100, 1, 7, 0x10000, 0x100, "App.Parser", "Parse");          /* V0 */
    method(&b, etlb_guid_clr_runtime, 143, 37, 1, 110, 2, 0, 0x20000, 0x80, "", "JIT_Stub");                   /* V1 */
    method(&b, etlb_guid_clr_runtime, 143, 37, 2, 120, 3, 7, 0x30000, 0x40, "App.Cache", "Fill");              /* V2 */
    etlb_end(&b, ETLB_PLAIN);
    etlb_begin(&b, 0, 2);
    etlb_p_clr_method(&pl, 0, 6, 7, 0x50000, 0x20, "Old.Style", "Mof", "", 0);
    etlb_classic(&b, 0, etlb_guid_clr_method, 37, 0, TID, PID, 135, &pl);
    method(&b, etlb_guid_clr_runtime, 144, 38, 2, 200, 3, 7, 0x30000, 0x40, "App.Cache", "Fill");              /* unload */
    method(&b, etlb_guid_clr_runtime, 143, 37, 2, 300, 4, 7, 0x30000, 0x40, "App.Cache", "Reused");            /* same range */
    method(&b, etlb_guid_clr_rundown, 144, 40, 1, 400, 1, 7, 0x10000, 0x100, "App.Parser", "Parse");           /* DCEnd, loaded */
    method(&b, etlb_guid_clr_rundown, 144, 40, 1, 401, 5, 7, 0x40000, 0x10, "App.Main", "Run");                /* DCEnd only */
    pl.n = 0;
    etlb_p_clr_module(&pl, 1, 7, "C:\\app\\App.dll", "");
    etlb_evh(&b, etlb_guid_clr_rundown, 154, 36, 1, TID, PID, 402, NULL, 0, &pl);
    etlb_end(&b, ETLB_PLAIN);

    hs_etl_trace t;
    hs_etl_error err;
    int rc = hs_etl_read_mem(b.file.p, b.file.n, &t, &err);
    tap_check(rc == 0, NAME("P%u: the trace reads", P), "%s", err.msg);
    if (rc == 0) {
        tap_check(t.njits == 6, NAME("P%u: six methods' code", P), "got %u", t.njits);
        expect(&t, 0x10000, 150, "App.Parser.Parse", P);
        expect(&t, 0x100ff, 450, "App.Parser.Parse", P);
        expect(&t, 0x10100, 150, "(none)", P);                   /* the end is not in it */
        expect(&t, 0x10000, 50, "(none)", P);                    /* before its load */
        expect(&t, 0x20010, 150, "JIT_Stub", P);                 /* no namespace: the name alone */
        expect(&t, 0x30010, 150, "App.Cache.Fill", P);
        expect(&t, 0x30010, 250, "(none)", P);                   /* unloaded, not yet reused */
        expect(&t, 0x30010, 350, "App.Cache.Reused", P);
        expect(&t, 0x40008, 5, "App.Main.Run", P);               /* the rundown's alone: from the start */
        expect(&t, 0x50000, 140, "Old.Style.Mof", P);            /* classic MOF */
        tap_check(!hs_etl_jit_at(&t, PID + 1, 0x10000, 150), NAME("P%u: another process has none", P), " ");
        const hs_etl_jit *j = hs_etl_jit_at(&t, PID, 0x10000, 150), *s = hs_etl_jit_at(&t, PID, 0x20000, 150);
        const hs_etl_jit *f = hs_etl_jit_at(&t, PID, 0x30000, 150), *r = hs_etl_jit_at(&t, PID, 0x40000, 150);
        tap_check(j && j->module && !strcmp(j->module, "C:\\app\\App.dll") && j->load == 100 &&
                      j->unload == HS_ETL_NEVER && j->size == 0x100 && j->method_id == 1,
                  NAME("P%u: Parse's record", P), "module %s load %llu", j && j->module ? j->module : "NULL",
                  j ? (unsigned long long)j->load : 0);
        tap_check(s && !s->module, NAME("P%u: the stub has no assembly (ModuleID 0)", P), " ");
        tap_check(f && f->load == 120 && f->unload == 200 && !strcmp(f->signature, "void  (int32)"),
                  NAME("P%u: Fill's record: loaded 120, unloaded 200", P), " ");
        tap_check(r && r->load == 0 && r->unload == HS_ETL_NEVER, NAME("P%u: Run's record spans the trace", P), " ");
    }
    hs_etl_trace_free(&t);
    eb_free(&pl);
    etlb_free(&b);
}

static void test_short_event(void)
{
    etlb b;
    etlb_bytes pl = {0};
    etlb_init(&b, 8, 1, 4096);
    etlb_begin(&b, 0, 1);
    for (int i = 0; i < 20; i++)
        eb_u8(&pl, 0);
    etlb_evh(&b, etlb_guid_clr_runtime, 143, 37, 1, TID, PID, 100, NULL, 0, &pl);
    etlb_end(&b, ETLB_PLAIN);
    hs_etl_trace t;
    hs_etl_error err;
    int rc = hs_etl_read_mem(b.file.p, b.file.n, &t, &err);
    tap_check(rc < 0 && strstr(err.msg, "CLR method event (version 1) of 20 bytes is too short for its layout"),
              "a short method event: one line", "rc %d: %s", rc, err.msg);
    hs_etl_trace_free(&t);
    eb_free(&pl);
    etlb_free(&b);
}

int main(void)
{
    test_methods(8);
    test_methods(4);
    test_short_event();
    return tap_status();
}
