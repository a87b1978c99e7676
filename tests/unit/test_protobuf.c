/*
 * tests/unit/test_protobuf.c - the protobuf encoder (output/protobuf.h)
 * against known bytes: the examples of protobuf.dev's encoding guide
 * (a varint field, a string, a nested message, a packed repeated field)
 * and varints at every length, up to 2^64 - 1 in ten bytes.
 */
#include <stdio.h>
#include <string.h>

#include "injector/output/protobuf.h"
#include "tests/unit/tap.h"

static void check_bytes(const char *name, const hs_pb *m, const uint8_t *want, size_t n)
{
    char got[256] = "";
    for (size_t i = 0; i < m->n && i < 60; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%02x ", m->b[i]);
    tap_check(m->n == n && !memcmp(m->b, want, n), name, "got %s(%zu bytes, expected %zu)", got, m->n, n);
}

static void test_encoder(void)
{
    hs_pb m = { 0 };
    static const struct {
        uint64_t v;
        uint8_t bytes[10];
        size_t n;
    } varints[] = {
        { 0, { 0x00 }, 1 },
        { 1, { 0x01 }, 1 },
        { 127, { 0x7f }, 1 },
        { 128, { 0x80, 0x01 }, 2 },
        { 150, { 0x96, 0x01 }, 2 },
        { 300, { 0xac, 0x02 }, 2 },
        { 16383, { 0xff, 0x7f }, 2 },
        { 16384, { 0x80, 0x80, 0x01 }, 3 },
        { 0xffffffffull, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
        { 1ull << 63, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 10 },
        { UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
    };
    for (size_t i = 0; i < sizeof varints / sizeof *varints; i++) {
        char name[64];
        snprintf(name, sizeof name, "varint %llu", (unsigned long long)varints[i].v);
        hs_pb_clear(&m);
        hs_pb_varint(&m, varints[i].v);
        check_bytes(name, &m, varints[i].bytes, varints[i].n);
    }

    /* protobuf.dev's examples: message Test1 { int32 a = 1; } with a = 150 */
    hs_pb_clear(&m);
    hs_pb_uint(&m, 1, 150);
    check_bytes("field 1 = 150", &m, (const uint8_t[]){ 0x08, 0x96, 0x01 }, 3);
    /* Test2 { string b = 2; } with "testing" */
    hs_pb_clear(&m);
    hs_pb_bytes(&m, 2, "testing", 7);
    check_bytes("field 2 = \"testing\"", &m, (const uint8_t[]){ 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g' }, 9);
    /* Test3 { Test1 c = 3; } with c.a = 150 */
    hs_pb sub = { 0 };
    hs_pb_uint(&sub, 1, 150);
    hs_pb_clear(&m);
    hs_pb_message(&m, 3, &sub);
    check_bytes("field 3 = a message", &m, (const uint8_t[]){ 0x1a, 0x03, 0x08, 0x96, 0x01 }, 5);
    /* Test5 { repeated int32 f = 6 [packed = true]; } with 3, 270, 86942 */
    hs_pb_clear(&m);
    hs_pb_packed(&m, 6, (const uint64_t[]){ 3, 270, 86942 }, 3);
    check_bytes("field 6 = packed 3, 270, 86942", &m,
                (const uint8_t[]){ 0x32, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05 }, 8);
    /* a field number past 15 takes a 2-byte key; 0 is left out by _opt;
     * an empty packed field is left out; an empty string is not */
    hs_pb_clear(&m);
    hs_pb_uint(&m, 16, 1);
    hs_pb_uint_opt(&m, 5, 0);
    hs_pb_packed(&m, 7, NULL, 0);
    hs_pb_bytes(&m, 6, "", 0);
    check_bytes("field 16, defaults left out, an empty string", &m, (const uint8_t[]){ 0x80, 0x01, 0x01, 0x32, 0x00 },
                5);
    hs_pb_free(&sub);
    hs_pb_free(&m);
}

int main(void)
{
    test_encoder();
    return tap_status();
}
