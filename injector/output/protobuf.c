/*
 * injector/output/protobuf.c - see protobuf.h.
 */
#include "injector/output/protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void put(hs_pb *m, const void *data, size_t n)
{
    hs_xgrow(&m->b, &m->cap, m->n + n, 1);
    if (n)
        memcpy(m->b + m->n, data, n);
    m->n += n;
}

void hs_pb_varint(hs_pb *m, uint64_t v)
{
    uint8_t out[10];
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    put(m, out, n);
}

static void key(hs_pb *m, uint32_t field, int wire)
{
    hs_pb_varint(m, (uint64_t)field << 3 | (uint64_t)wire);
}

void hs_pb_uint(hs_pb *m, uint32_t field, uint64_t v)
{
    key(m, field, WIRE_VARINT);
    hs_pb_varint(m, v);
}

void hs_pb_uint_opt(hs_pb *m, uint32_t field, uint64_t v)
{
    if (v)
        hs_pb_uint(m, field, v);
}

void hs_pb_bytes(hs_pb *m, uint32_t field, const void *data, size_t n)
{
    key(m, field, WIRE_LEN);
    hs_pb_varint(m, n);
    put(m, data, n);
}

void hs_pb_message(hs_pb *m, uint32_t field, const hs_pb *sub)
{
    hs_pb_bytes(m, field, sub->b, sub->n);
}

void hs_pb_packed(hs_pb *m, uint32_t field, const uint64_t *v, size_t n)
{
    if (!n)
        return;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        do {
            len++;
            x >>= 7;
        } while (x);
    }
    key(m, field, WIRE_LEN);
    hs_pb_varint(m, len);
    for (size_t i = 0; i < n; i++)
        hs_pb_varint(m, v[i]);
}

void hs_pb_free(hs_pb *m)
{
    free(m->b);
    memset(m, 0, sizeof *m);
}
