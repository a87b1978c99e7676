/*
 * injector/output/protobuf.h - the few pieces of the protobuf wire format
 * (protobuf.dev/programming-guides/encoding) a writer of one message
 * needs: varints, varint fields, length-delimited fields (bytes, strings,
 * nested messages, packed repeated varints). A message is built in a
 * growing byte buffer; a nested one in a buffer of its own, then added to
 * its parent as a length-delimited field.
 *
 * Fields of value 0 are left out by the *_opt functions, as proto3
 * encoders leave out defaults (a reader takes a missing field for 0).
 */
#ifndef HOOKSCOPE_PROTOBUF_H
#define HOOKSCOPE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct hs_pb {
    uint8_t *b;
    size_t n, cap;
} hs_pb;

/* A varint: 7 bits a byte, low bits first, the top bit set on every byte
 * but the last (1 to 10 bytes). */
void hs_pb_varint(hs_pb *m, uint64_t v);
/* Field `field` of wire type 0 (varint) with value v; _opt: nothing when v is 0. */
void hs_pb_uint(hs_pb *m, uint32_t field, uint64_t v);
void hs_pb_uint_opt(hs_pb *m, uint32_t field, uint64_t v);
/* Field `field` of wire type 2 (length-delimited): n bytes. */
void hs_pb_bytes(hs_pb *m, uint32_t field, const void *data, size_t n);
/* Field `field` holding the message `sub` (its bytes so far). */
void hs_pb_message(hs_pb *m, uint32_t field, const hs_pb *sub);
/* Field `field` as a packed repeated varint field of n values; nothing when n is 0. */
void hs_pb_packed(hs_pb *m, uint32_t field, const uint64_t *v, size_t n);

/* Empty the buffer (keeping its memory), and free it. */
static inline void hs_pb_clear(hs_pb *m) { m->n = 0; }
void hs_pb_free(hs_pb *m);

#endif
