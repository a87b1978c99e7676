/*
 * tests/unit/etl_build.c - the synthetic .etl writer and the test-side
 * [MS-XCA] compressors (see etl_build.h).
 */
#include "tests/unit/etl_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes ------------------------------------------------------------------ */

void eb_put(etlb_bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n)
            nc *= 2;
        b->p = realloc(b->p, nc);
        if (!b->p) {
            fprintf(stderr, "etl_build: out of memory\n");
            exit(2);
        }
        b->cap = nc;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

void eb_u8(etlb_bytes *b, uint8_t v) { eb_put(b, &v, 1); }
void eb_u16(etlb_bytes *b, uint16_t v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; eb_put(b, x, 2); }
void eb_u32(etlb_bytes *b, uint32_t v) { eb_u16(b, (uint16_t)v); eb_u16(b, (uint16_t)(v >> 16)); }
void eb_u64(etlb_bytes *b, uint64_t v) { eb_u32(b, (uint32_t)v); eb_u32(b, (uint32_t)(v >> 32)); }

void eb_ptr(etlb_bytes *b, unsigned ptr, uint64_t v)
{
    if (ptr == 8)
        eb_u64(b, v);
    else
        eb_u32(b, (uint32_t)v);
}

void eb_wstr(etlb_bytes *b, const char *s)
{
    for (; *s; s++)
        eb_u16(b, (uint8_t)*s);
    eb_u16(b, 0);
}

void eb_str(etlb_bytes *b, const char *s) { eb_put(b, s, strlen(s) + 1); }

void eb_free(etlb_bytes *b)
{
    free(b->p);
    *b = (etlb_bytes){0};
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

/* ---- XPRESS ([MS-XCA] 2.3) ------------------------------------------------- */

#define HBITS 12

/* The longest earlier match of in[pos..] within max_dist bytes, found
 * through a hash chain of 3-byte prefixes (up to 64 candidates). */
static size_t best_match(const uint8_t *in, size_t n, size_t pos, size_t max_dist, size_t max_len,
                         const int32_t *head, const int32_t *prev, size_t *dist)
{
    size_t best = 0;
    if (pos + 3 > n)
        return 0;
    uint32_t h = ((uint32_t)in[pos] << 8 ^ (uint32_t)in[pos + 1] << 4 ^ in[pos + 2]) & ((1u << HBITS) - 1);
    int tries = 64;
    for (int32_t c = head[h]; c >= 0 && tries-- > 0; c = prev[c]) {
        size_t d = pos - (size_t)c;
        if (d > max_dist)
            break;
        size_t l = 0;
        while (pos + l < n && l < max_len && in[c + l] == in[pos + l])
            l++;
        if (l > best) {
            best = l;
            *dist = d;
        }
    }
    return best >= 3 ? best : 0;
}

static void insert(const uint8_t *in, size_t n, size_t pos, int32_t *head, int32_t *prev)
{
    if (pos + 3 > n)
        return;
    uint32_t h = ((uint32_t)in[pos] << 8 ^ (uint32_t)in[pos + 1] << 4 ^ in[pos + 2]) & ((1u << HBITS) - 1);
    prev[pos] = head[h];
    head[h] = (int32_t)pos;
}

size_t etlb_xpress(const uint8_t *in, size_t n, uint8_t *out)
{
    int32_t *head = malloc(sizeof(int32_t) << HBITS), *prev = malloc((n ? n : 1) * sizeof(int32_t));
    memset(head, 0xFF, sizeof(int32_t) << HBITS);
    uint32_t flags = 0;
    int nflags = 0;
    size_t flag_at = 0, op = 4, half = 0, ip = 0;
    while (ip < n) {
        size_t dist = 0, len = best_match(in, n, ip, 8192, (size_t)1 << 20, head, prev, &dist);
        if (!len) {
            out[op++] = in[ip];
            insert(in, n, ip, head, prev);
            ip++;
            flags <<= 1;
        } else {
            size_t ml = len - 3;
            uint32_t word = (uint32_t)((dist - 1) << 3);
            if (ml < 7) {
                put16(out + op, (uint16_t)(word | ml));
                op += 2;
            } else {
                put16(out + op, (uint16_t)(word | 7));
                op += 2;
                ml -= 7;
                int longer = ml >= 15;
                uint8_t nib = (uint8_t)(longer ? 15 : ml);
                if (half == 0) {
                    half = op;
                    out[op++] = nib;
                } else {
                    out[half] |= (uint8_t)(nib << 4);
                    half = 0;
                }
                if (longer) {
                    ml -= 15;
                    if (ml < 255) {
                        out[op++] = (uint8_t)ml;
                    } else {
                        out[op++] = 255;
                        ml += 7 + 15;
                        if (ml < 65536) {
                            put16(out + op, (uint16_t)ml);
                            op += 2;
                        } else {
                            put16(out + op, 0);
                            put32(out + op + 2, (uint32_t)ml);
                            op += 6;
                        }
                    }
                }
            }
            for (size_t k = 0; k < len; k++)
                insert(in, n, ip + k, head, prev);
            ip += len;
            flags = flags << 1 | 1;
        }
        if (++nflags == 32) {
            put32(out + flag_at, flags);
            flags = 0;
            nflags = 0;
            flag_at = op;
            op += 4;
        }
    }
    /* the unused flags of the last word are ones: the stream ends at a match */
    flags = nflags ? flags << (32 - nflags) | ((1u << (32 - nflags)) - 1) : 0xFFFFFFFFu;
    put32(out + flag_at, flags);
    free(head);
    free(prev);
    return op;
}

/* ---- LZNT1 ([MS-XCA] 2.5) -------------------------------------------------- */

size_t etlb_lznt1(const uint8_t *in, size_t n, uint8_t *out)
{
    size_t op = 0;
    for (size_t c0 = 0; c0 < n; c0 += 4096) {
        size_t cn = n - c0 < 4096 ? n - c0 : 4096, hdr = op, body = op + 2, o = body, flag_at = 0;
        const uint8_t *ch = in + c0;
        int nbits = 8;
        for (size_t pos = 0; pos < cn;) {
            if (nbits == 8) {
                flag_at = o;
                out[o++] = 0;
                nbits = 0;
            }
            unsigned lbits = 12;
            for (size_t p = pos ? pos - 1 : 0; pos && p >= 16; p >>= 1)
                lbits--;
            size_t max_len = ((size_t)1 << lbits) - 1 + 3, max_disp = (size_t)1 << (16 - lbits);
            size_t best = 0, bdisp = 0;
            for (size_t d = 1; pos && d <= pos && d <= max_disp; d++) {
                size_t l = 0;
                while (pos + l < cn && l < max_len && ch[pos - d + l] == ch[pos + l])
                    l++;
                if (l > best) {
                    best = l;
                    bdisp = d;
                }
            }
            if (best >= 3) {
                put16(out + o, (uint16_t)((bdisp - 1) << lbits | (best - 3)));
                o += 2;
                out[flag_at] |= (uint8_t)(1u << nbits);
                pos += best;
            } else {
                out[o++] = ch[pos++];
            }
            nbits++;
        }
        size_t bn = o - body;
        if (bn >= cn) {                          /* no gain: an uncompressed chunk */
            put16(out + hdr, (uint16_t)(0x3000 | (cn - 1)));
            memcpy(out + body, ch, cn);
            op = body + cn;
        } else {
            put16(out + hdr, (uint16_t)(0xB000 | (bn - 1)));
            op = o;
        }
    }
    return op;
}

/* ---- the file ----------------------------------------------------------------- */

const uint8_t etlb_guid_process[16] = {0xd0, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
                                       0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c};
const uint8_t etlb_guid_thread[16] = {0xd1, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
                                      0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c};
const uint8_t etlb_guid_image[16] = {0x1d, 0x5d, 0xb1, 0x2c, 0xc1, 0x5f, 0xd2, 0x11,
                                     0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18};
const uint8_t etlb_guid_perfinfo[16] = {0xb4, 0xbf, 0x1d, 0xce, 0x7e, 0x13, 0xa6, 0x4d,
                                        0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc};
const uint8_t etlb_guid_stackwalk[16] = {0x46, 0xfe, 0xf2, 0xde, 0xd6, 0x7b, 0x80, 0x4b,
                                         0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3};
const uint8_t etlb_guid_imageid[16] = {0xd7, 0x75, 0xe6, 0xb3, 0x54, 0x25, 0x18, 0x4f,
                                       0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde};
const uint8_t etlb_guid_clr_runtime[16] = {0x23, 0x0d, 0x3c, 0xe1, 0xbc, 0xcc, 0x12, 0x4e,
                                           0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4};
const uint8_t etlb_guid_clr_rundown[16] = {0x1c, 0x02, 0x69, 0xa6, 0x50, 0xc4, 0x09, 0x46,
                                           0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18};
const uint8_t etlb_guid_clr_method[16] = {0x1a, 0xf6, 0x44, 0x30, 0xb0, 0x99, 0x21, 0x4c,
                                          0xb2, 0x03, 0xd3, 0x94, 0x23, 0xc7, 0x3b, 0x00};
const uint8_t etlb_guid_other[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void buffer_header(uint8_t *h, uint32_t size, uint32_t saved, uint64_t seq, uint16_t cpu, int proc_index,
                          uint32_t state, uint16_t flags, uint16_t type)
{
    memset(h, 0, 72);
    put32(h + 0x00, size);
    put32(h + 0x04, saved);
    put64(h + 0x10, 0);
    put64(h + 0x18, seq);
    if (proc_index) {
        put16(h + 0x28, cpu);
        flags |= 0x20;
    } else {
        h[0x28] = (uint8_t)cpu;
        h[0x29] = 8;                             /* Alignment, as Windows 7 writes it */
    }
    put32(h + 0x2C, state);
    put32(h + 0x30, saved);
    put16(h + 0x34, flags);
    put16(h + 0x36, type);
}

void etlb_init(etlb *b, unsigned ptr, uint32_t ncpus, uint32_t buffer_size)
{
    memset(b, 0, sizeof *b);
    b->ptr = ptr;
    b->buffer_size = buffer_size;
    etlb_bytes lh = {0};
    unsigned P = ptr;
    eb_u32(&lh, buffer_size);
    eb_u32(&lh, 0x0106 | 1u << 16);             /* Version: 6.1, 1 */
    eb_u32(&lh, 7601);                          /* ProviderVersion */
    eb_u32(&lh, ncpus);
    eb_u64(&lh, 130000000000000000ull);         /* EndTime */
    eb_u32(&lh, 156250);                        /* TimerResolution */
    eb_u32(&lh, 0);                             /* MaximumFileSize */
    eb_u32(&lh, 0x00010000);                    /* LogFileMode */
    eb_u32(&lh, 0);                             /* BuffersWritten */
    eb_u32(&lh, 1);                             /* StartBuffers */
    eb_u32(&lh, P);                             /* PointerSize */
    eb_u32(&lh, 7);                             /* EventsLost */
    eb_u32(&lh, 2400);                          /* CpuSpeedInMHz */
    eb_ptr(&lh, P, 0);
    eb_ptr(&lh, P, 0);
    uint8_t tz[176] = {0};
    eb_put(&lh, tz, sizeof tz);
    eb_u64(&lh, 129999999000000000ull);         /* BootTime */
    eb_u64(&lh, 10000000);                      /* PerfFreq */
    eb_u64(&lh, 129999999900000000ull);         /* StartTime */
    eb_u32(&lh, 1);                             /* ReservedFlags: QPC */
    eb_u32(&lh, 3);                             /* BuffersLost */
    eb_wstr(&lh, "Test Logger");
    eb_wstr(&lh, "C:\\test.etl");

    etlb_bytes *f = &b->file;
    uint8_t h[72];
    eb_put(f, h, 72);
    uint8_t sh[32] = {0};
    put16(sh, 2);
    sh[2] = ptr == 8 ? 2 : 1;
    sh[3] = 0xC0;
    put16(sh + 4, (uint16_t)(32 + lh.n));
    put16(sh + 6, 0x0000);                      /* group 0, type 0: the header */
    put64(sh + 16, 129999999900000000ull);      /* a FILETIME, as relogged files have */
    eb_put(f, sh, 32);
    b->logfile_mode_at = f->n + 32;
    eb_put(f, lh.p, lh.n);
    while (f->n % 8)
        eb_u8(f, 0);
    uint32_t saved = (uint32_t)f->n;
    while (f->n < buffer_size)
        eb_u8(f, 0xFF);
    buffer_header(f->p, buffer_size, saved, 0, 0, 0, 0, 1, 4);
    b->header_state_at = 0x2C;
    eb_free(&lh);
}

void etlb_set_compression(etlb *b, uint32_t format)
{
    uint8_t *m = b->file.p + b->logfile_mode_at;
    uint32_t mode = (uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24;
    put32(m, mode | 0x04000000);
    put32(b->file.p + b->header_state_at, format);
}

void etlb_begin(etlb *b, uint16_t cpu, uint64_t seq)
{
    b->buf.n = 0;
    uint8_t h[72] = {0};
    eb_put(&b->buf, h, 72);
    b->cpu = cpu;
    b->seq = seq;
}

static void align8(etlb_bytes *o)
{
    while (o->n % 8)
        eb_u8(o, 0);
}

void etlb_sys(etlb *b, int compact, uint8_t group, uint8_t type, uint16_t version, uint32_t tid, uint32_t pid,
              uint64_t ts, const etlb_bytes *pl)
{
    etlb_bytes *o = &b->buf;
    uint32_t hs = compact ? 24 : 32;
    eb_u16(o, version);
    eb_u8(o, (uint8_t)(compact ? (b->ptr == 8 ? 4 : 3) : (b->ptr == 8 ? 2 : 1)));
    eb_u8(o, 0xC0);
    eb_u16(o, (uint16_t)(hs + pl->n));
    eb_u8(o, type);
    eb_u8(o, group);
    eb_u32(o, tid);
    eb_u32(o, pid);
    eb_u64(o, ts);
    if (!compact) {
        eb_u32(o, 0);
        eb_u32(o, 0);
    }
    eb_put(o, pl->p, pl->n);
    align8(o);
}

void etlb_perf(etlb *b, uint8_t group, uint8_t type, uint16_t version, uint64_t ts, int pebs, int npmc,
               const etlb_bytes *pl)
{
    etlb_bytes *o = &b->buf;
    uint32_t ext = (pebs ? 8u : 0u) + 8u * (uint32_t)npmc;
    eb_u16(o, (uint16_t)(version | (pebs ? 0x8000 : 0) | (npmc & 7) << 8));
    eb_u8(o, b->ptr == 8 ? 0x11 : 0x10);
    eb_u8(o, 0xC0);
    eb_u16(o, (uint16_t)(16 + ext + pl->n));
    eb_u8(o, type);
    eb_u8(o, group);
    eb_u64(o, ts);
    for (uint32_t i = 0; i < ext / 8; i++)
        eb_u64(o, 0x1111111111111111ull * (i + 1));
    eb_put(o, pl->p, pl->n);
    align8(o);
}

void etlb_classic(etlb *b, int instance, const uint8_t guid[16], uint8_t type, uint16_t version, uint32_t tid,
                  uint32_t pid, uint64_t ts, const etlb_bytes *pl)
{
    etlb_bytes *o = &b->buf;
    uint32_t hs = instance ? 72 : 48;
    eb_u16(o, (uint16_t)(hs + pl->n));
    eb_u8(o, instance ? (b->ptr == 8 ? 0x15 : 0x0B) : (b->ptr == 8 ? 0x14 : 0x0A));
    eb_u8(o, 0xC0);
    eb_u8(o, type);
    eb_u8(o, 4);                                 /* level */
    eb_u16(o, version);
    eb_u32(o, tid);
    eb_u32(o, pid);
    eb_u64(o, ts);
    eb_put(o, guid, 16);
    eb_u64(o, 0);
    if (instance) {
        eb_u32(o, 1);
        eb_u32(o, 0);
        eb_put(o, guid, 16);
    }
    eb_put(o, pl->p, pl->n);
    align8(o);
}

void etlb_evh(etlb *b, const uint8_t guid[16], uint16_t id, uint8_t opcode, uint8_t version, uint32_t tid,
              uint32_t pid, uint64_t ts, const uint64_t *stack, uint32_t nstack, const etlb_bytes *pl)
{
    etlb_bytes *o = &b->buf;
    etlb_bytes ext = {0};
    if (nstack) {
        /* a RELATED_ACTIVITYID item, then the stack */
        eb_u16(&ext, 24);
        eb_u16(&ext, 1);
        eb_u16(&ext, 1);
        eb_u16(&ext, 16);
        for (int i = 0; i < 16; i++)
            eb_u8(&ext, (uint8_t)i);
        uint32_t fp = b->ptr;
        uint16_t ds = (uint16_t)(8 + nstack * fp);
        eb_u16(&ext, (uint16_t)(8 + ds));
        eb_u16(&ext, fp == 8 ? 6 : 5);
        eb_u16(&ext, 0);
        eb_u16(&ext, ds);
        eb_u64(&ext, 0);
        for (uint32_t i = 0; i < nstack; i++)
            eb_ptr(&ext, fp, stack[i]);
        align8(&ext);
    }
    eb_u16(o, (uint16_t)(80 + ext.n + pl->n));
    eb_u8(o, b->ptr == 8 ? 0x13 : 0x12);
    eb_u8(o, 0xC0);
    eb_u16(o, (uint16_t)((nstack ? 1 : 0) | (b->ptr == 8 ? 0x40 : 0x20)));
    eb_u16(o, 0);
    eb_u32(o, tid);
    eb_u32(o, pid);
    eb_u64(o, ts);
    eb_put(o, guid, 16);
    eb_u16(o, id);
    eb_u8(o, version);
    eb_u8(o, 0);
    eb_u8(o, 4);
    eb_u8(o, opcode);
    eb_u16(o, 0);
    eb_u64(o, 0);
    eb_u64(o, 0);
    for (int i = 0; i < 16; i++)
        eb_u8(o, 0);
    eb_put(o, ext.p, ext.n);
    eb_put(o, pl->p, pl->n);
    align8(o);
    eb_free(&ext);
}

void etlb_end(etlb *b, int how)
{
    etlb_bytes *o = &b->buf;
    uint32_t saved = (uint32_t)o->n;
    if (how == ETLB_PLAIN) {
        while (o->n < b->buffer_size)
            eb_u8(o, 0xFF);
        buffer_header(o->p, (uint32_t)o->n, saved, b->seq, b->cpu, b->proc_index, 0, b->extra_flags, 0);
        eb_put(&b->file, o->p, o->n);
    } else {
        size_t n = o->n - 72;
        uint8_t *c = malloc(n + n / 8 + 64 + 72);
        size_t cn = how == ETLB_XPRESS ? etlb_xpress(o->p + 72, n, c + 72) : etlb_lznt1(o->p + 72, n, c + 72);
        buffer_header(c, (uint32_t)(72 + cn), saved, b->seq, b->cpu, b->proc_index, 0,
                      (uint16_t)(b->extra_flags | 0x40), 0);
        eb_put(&b->file, c, 72 + cn);
        free(c);
    }
}

void etlb_free(etlb *b)
{
    eb_free(&b->file);
    eb_free(&b->buf);
}

/* ---- payloads ------------------------------------------------------------------ */

void etlb_p_process(etlb_bytes *o, unsigned P, uint32_t pid, uint32_t ppid, int with_sid, const char *name,
                    const char *cmdline)
{
    eb_ptr(o, P, 0xFFFFFA8000001000ull + pid);  /* UniqueProcessKey */
    eb_u32(o, pid);
    eb_u32(o, ppid);
    eb_u32(o, 1);                               /* session */
    eb_u32(o, 259);                             /* exit status: STILL_ACTIVE */
    eb_ptr(o, P, 0x187000);                     /* directory table base */
    eb_u32(o, 0);                               /* flags */
    if (with_sid) {
        eb_ptr(o, P, 0x1234);                   /* TOKEN_USER: the SID pointer and attributes */
        eb_ptr(o, P, 0);
        uint8_t sid[8 + 5 * 4] = {1, 5, 0, 0, 0, 0, 0, 5};
        for (int i = 8; i < (int)sizeof sid; i++)
            sid[i] = (uint8_t)i;
        eb_put(o, sid, sizeof sid);
    } else {
        eb_u32(o, 0);
    }
    eb_str(o, name);
    eb_wstr(o, cmdline);
    eb_wstr(o, "");                             /* PackageFullName */
    eb_wstr(o, "");                             /* ApplicationId */
}

void etlb_p_thread(etlb_bytes *o, unsigned P, uint32_t pid, uint32_t tid)
{
    eb_u32(o, pid);
    eb_u32(o, tid);
    for (int i = 0; i < 7; i++)
        eb_ptr(o, P, 0x1000 * (uint64_t)(i + 1));   /* stack bases, start addresses, TEB */
    eb_u32(o, 0);
    eb_u8(o, 8);
    eb_u8(o, 5);
    eb_u8(o, 2);
    eb_u8(o, 0);
}

void etlb_p_image(etlb_bytes *o, unsigned P, uint64_t base, uint64_t size, uint32_t pid, uint32_t checksum,
                  uint32_t timestamp, const char *path)
{
    eb_ptr(o, P, base);
    eb_ptr(o, P, size);
    eb_u32(o, pid);
    eb_u32(o, checksum);
    eb_u32(o, timestamp);
    eb_u32(o, 0);
    eb_ptr(o, P, base);                         /* DefaultBase */
    for (int i = 0; i < 4; i++)
        eb_u32(o, 0);
    eb_wstr(o, path);
}

void etlb_p_sample(etlb_bytes *o, unsigned P, uint64_t ip, uint32_t tid, uint8_t flags)
{
    eb_ptr(o, P, ip);
    eb_u32(o, tid);
    eb_u16(o, 1);
    eb_u8(o, flags);
    eb_u8(o, 0);
}

void etlb_p_stack(etlb_bytes *o, unsigned P, uint64_t ets, uint32_t pid, uint32_t tid, const uint64_t *frames,
                  uint32_t n)
{
    eb_u64(o, ets);
    eb_u32(o, pid);
    eb_u32(o, tid);
    for (uint32_t i = 0; i < n; i++)
        eb_ptr(o, P, frames[i]);
}

void etlb_p_keyref(etlb_bytes *o, unsigned P, uint64_t ets, uint32_t pid, uint32_t tid, uint64_t key)
{
    eb_u64(o, ets);
    eb_u32(o, pid);
    eb_u32(o, tid);
    eb_ptr(o, P, key);
}

void etlb_p_keydef(etlb_bytes *o, unsigned P, uint64_t key, const uint64_t *frames, uint32_t n)
{
    eb_ptr(o, P, key);
    for (uint32_t i = 0; i < n; i++)
        eb_ptr(o, P, frames[i]);
}

void etlb_p_imageid(etlb_bytes *o, unsigned P, uint64_t base, uint64_t size, uint32_t timestamp, const char *name)
{
    eb_ptr(o, P, base);
    eb_ptr(o, P, size);
    eb_u32(o, 0);
    eb_u32(o, timestamp);
    eb_wstr(o, name);
}

void etlb_p_dbgid(etlb_bytes *o, unsigned P, uint64_t base, const uint8_t guid[16], uint32_t age, const char *pdb)
{
    eb_ptr(o, P, base);
    eb_u32(o, 0);
    eb_put(o, guid, 16);
    eb_u32(o, age);
    eb_str(o, pdb);
}

void etlb_p_cswitch(etlb_bytes *o, uint32_t new_tid, uint32_t old_tid, int8_t new_priority, int8_t old_priority,
                    uint8_t old_wait_reason, uint8_t old_wait_mode, uint8_t old_state, uint32_t new_wait_time,
                    size_t extra)
{
    eb_u32(o, new_tid);
    eb_u32(o, old_tid);
    eb_u8(o, (uint8_t)new_priority);
    eb_u8(o, (uint8_t)old_priority);
    eb_u8(o, 1);                                 /* PreviousCState */
    eb_u8(o, 0);                                 /* SpareByte */
    eb_u8(o, old_wait_reason);
    eb_u8(o, old_wait_mode);
    eb_u8(o, old_state);
    eb_u8(o, 3);                                 /* OldThreadWaitIdealProcessor */
    eb_u32(o, new_wait_time);
    eb_u32(o, 0);                                /* Reserved */
    for (size_t i = 0; i < extra; i++)
        eb_u8(o, 0xEE);
}

void etlb_p_ready(etlb_bytes *o, uint32_t tid, int8_t adjust_reason, int8_t adjust_increment, uint8_t flags)
{
    eb_u32(o, tid);
    eb_u8(o, (uint8_t)adjust_reason);
    eb_u8(o, (uint8_t)adjust_increment);
    eb_u8(o, flags);
    eb_u8(o, 0);                                 /* Reserved */
}

void etlb_p_interval(etlb_bytes *o, uint32_t source, uint32_t new_interval, uint32_t old_interval)
{
    eb_u32(o, source);
    eb_u32(o, new_interval);
    eb_u32(o, old_interval);
}

void etlb_p_clr_method(etlb_bytes *o, unsigned version, uint64_t method_id, uint64_t module_id, uint64_t start,
                       uint32_t size, const char *ns, const char *name, const char *sig, uint64_t rejit_id)
{
    eb_u64(o, method_id);
    eb_u64(o, module_id);
    eb_u64(o, start);
    eb_u32(o, size);
    eb_u32(o, 0x06000001);            /* MethodToken */
    eb_u32(o, 0);                     /* MethodFlags */
    eb_wstr(o, ns);
    eb_wstr(o, name);
    eb_wstr(o, sig);
    if (version >= 1)
        eb_u16(o, 9);                 /* ClrInstanceID */
    if (version >= 2)
        eb_u64(o, rejit_id);
}

void etlb_p_clr_module(etlb_bytes *o, unsigned version, uint64_t module_id, const char *il_path,
                       const char *native_path)
{
    eb_u64(o, module_id);
    eb_u64(o, 0x5000 + module_id);    /* AssemblyID */
    eb_u32(o, 8);                     /* ModuleFlags */
    eb_u32(o, 0);
    eb_wstr(o, il_path);
    eb_wstr(o, native_path);
    if (version >= 1)
        eb_u16(o, 9);
}
