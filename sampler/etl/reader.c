/*
 * sampler/etl/reader.c - an .etl file's buffers, and its events in time
 * order (see reader.h).
 *
 * Opening reads the logfile header from the first buffer, then walks every
 * buffer header once to index the file: each buffer's place, size, CPU and
 * sequence number, checked against the file's size. Decoding gives each
 * CPU a stream of its buffers sorted by sequence number, with one buffer
 * of memory (a file is read one buffer at a time; compressed buffers are
 * decompressed into it), and merges the streams with a binary heap keyed
 * by (timestamp, CPU). Every loop advances by at least 8 bytes or one
 * buffer, so a corrupt file cannot make it spin.
 */
#include "sampler/etl/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/util.h"
#include "sampler/etl/decompress.h"
#include "sampler/etl/internal.h"

struct bufix {
    uint64_t off, seq;
    uint32_t size, end;             /* bytes in the file; end of the events (decompressed) */
    uint32_t skip;                  /* the header buffer: bytes of its logfile header event */
    uint16_t cpu, flags;
};

struct stream {
    uint16_t cpu;
    uint32_t first, count, next;    /* its buffers: sorted[first .. first+count) */
    uint8_t *mem;                   /* the current buffer (file, or decompressed) */
    size_t memcap;
    const uint8_t *data;            /* the current buffer's bytes, header included */
    size_t pos, end;
    uint64_t boff;
    int compressed;
    uint64_t last_ts;
    hs_etl_event ev;                /* its next event */
};

struct hs_etl_file {
    const uint8_t *mem;             /* a file in memory, or NULL */
    FILE *fp;
    int owns_fp;                    /* opened here: closed by hs_etl_close */
    uint64_t size;
    hs_etl_info info;
    hs_etl_event header_ev;         /* the logfile header event (points into hdrbuf) */
    uint8_t *hdrbuf;
    struct bufix *bufs;             /* in file order */
    struct bufix *sorted;           /* by CPU, sequence number, file offset */
    uint32_t nbufs;
    struct stream *streams;
    uint32_t nstreams;
    uint8_t *scratch;               /* compressed input read from a file */
    size_t scratch_cap;
    int decoded;
};

/* Bytes [off, off+len) of the file: in memory, or read into *buf (grown). */
static const uint8_t *src_get(hs_etl_file *f, uint64_t off, size_t len, uint8_t **buf, size_t *cap,
                              hs_etl_error *err)
{
    if (off > f->size || len > f->size - off) {
        hs_etl_fail(err, 1, off, "the file ends after %llu bytes, inside %llu bytes wanted here (truncated?)",
                    (unsigned long long)f->size, (unsigned long long)len);
        return NULL;
    }
    if (f->mem)
        return f->mem + off;
    if (*cap < len) {
        uint8_t *nb = realloc(*buf, len);
        if (!nb) {
            hs_etl_fail(err, 0, 0, "out of memory (%llu bytes for a buffer)", (unsigned long long)len);
            return NULL;
        }
        *buf = nb;
        *cap = len;
    }
    if (hs_fseek(f->fp, (long long)off, SEEK_SET) != 0 || fread(*buf, 1, len, f->fp) != len) {
        hs_etl_fail(err, 1, off, "cannot read %llu bytes here", (unsigned long long)len);
        return NULL;
    }
    return *buf;
}

/* Read and check the buffer header at off; fills b and returns 0, or -1. */
static int index_buffer(hs_etl_file *f, uint64_t off, struct bufix *b, hs_etl_error *err)
{
    uint8_t tmp[HS_ETL_BUFHDR], *tp = tmp;
    size_t tcap = sizeof tmp;
    if (f->size - off < HS_ETL_BUFHDR) {
        hs_etl_fail(err, 1, off, "the file ends %llu bytes into a 72-byte buffer header (truncated)",
                    (unsigned long long)(f->size - off));
        return -1;
    }
    const uint8_t *p = src_get(f, off, HS_ETL_BUFHDR, &tp, &tcap, err);
    if (!p)
        return -1;
    hs_etl_bufhdr h;
    hs_etl_bufhdr_parse(p, &h);
    if (h.size < HS_ETL_BUFHDR) {
        hs_etl_fail(err, 1, off, "buffer size %u is smaller than its 72-byte header (corrupt buffer header)",
                    h.size);
        return -1;
    }
    if (h.size > HS_ETL_MAX_BUFFER) {
        hs_etl_fail(err, 1, off, "buffer size %u is over 64 MiB (corrupt buffer header)", h.size);
        return -1;
    }
    if (h.size > f->size - off) {
        hs_etl_fail(err, 1, off, "the file ends %llu bytes into this buffer of %u bytes (truncated)",
                    (unsigned long long)(f->size - off), h.size);
        return -1;
    }
    uint32_t end = hs_etl_bufhdr_end(&h);
    int comp = (h.flags & HS_ETL_BUF_COMPRESSED) != 0;
    uint32_t max = comp ? (f->info.buffer_size >= HS_ETL_BUFHDR ? f->info.buffer_size : HS_ETL_MAX_BUFFER)
                        : h.size;
    if (end < HS_ETL_BUFHDR || end > max) {
        hs_etl_fail(err, 1, off, "the events of this buffer end at %u, outside 72..%u (corrupt buffer header)",
                    end, max);
        return -1;
    }
    if (comp) {
        if (!f->info.compressed) {
            hs_etl_fail(err, 1, off, "a compressed buffer in a file whose header names no compression");
            return -1;
        }
        if (f->info.compression != HS_ETL_COMP_XPRESS && f->info.compression != HS_ETL_COMP_LZNT1) {
            hs_etl_fail(err, 1, off, "the buffers are compressed in format %u%s, which hookscope cannot read "
                        "(it reads XPRESS and LZNT1)", f->info.compression,
                        f->info.compression == HS_ETL_COMP_XPRESS_HUFF ? " (XPRESS Huffman)" : "");
            return -1;
        }
        f->info.buffers_compressed++;
    }
    if (h.flags & HS_ETL_BUF_EVENTS_LOST)
        f->info.buffers_events_lost++;
    if (h.flags & HS_ETL_BUF_BUFFER_LOST)
        f->info.buffers_buffer_lost++;
    *b = (struct bufix){.off = off, .seq = h.seq, .size = h.size, .end = end, .cpu = h.cpu, .flags = h.flags};
    return 0;
}

static int cmp_buf(const void *a, const void *b)
{
    const struct bufix *x = a, *y = b;
    if (x->cpu != y->cpu)
        return x->cpu < y->cpu ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sequence numbers missing between the lowest and the highest. */
static int count_gaps(hs_etl_file *f, hs_etl_error *err)
{
    uint64_t *s = malloc((size_t)f->nbufs * sizeof *s);
    if (!s) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < f->nbufs; i++)
        s[i] = f->bufs[i].seq;
    qsort(s, f->nbufs, sizeof *s, cmp_u64);
    uint64_t unique = 1;
    for (uint32_t i = 1; i < f->nbufs; i++)
        unique += s[i] != s[i - 1];
    uint64_t span = s[f->nbufs - 1] - s[0];
    uint64_t gaps = span >= unique ? span - unique + 1 : 0;
    f->info.sequence_gaps = gaps > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)gaps;
    free(s);
    return 0;
}

/* Read the logfile header, then index every buffer. */
static int open_common(hs_etl_file *f, hs_etl_error *err)
{
    if (f->size == 0) {
        hs_etl_fail(err, 0, 0, "the file is empty (not an ETL file)");
        return -1;
    }
    if (f->size < HS_ETL_BUFHDR) {
        hs_etl_fail(err, 0, 0, "the file has %llu bytes, too few for an ETL buffer header (not an ETL file?)",
                    (unsigned long long)f->size);
        return -1;
    }
    /* the header buffer */
    uint8_t tmp[HS_ETL_BUFHDR], *tp = tmp;
    size_t tcap = sizeof tmp;
    const uint8_t *p = src_get(f, 0, HS_ETL_BUFHDR, &tp, &tcap, err);
    if (!p)
        return -1;
    hs_etl_bufhdr h;
    hs_etl_bufhdr_parse(p, &h);
    uint32_t end = hs_etl_bufhdr_end(&h);
    if (h.size < HS_ETL_BUFHDR || h.size > HS_ETL_MAX_BUFFER || end < HS_ETL_BUFHDR + 32 || end > h.size ||
        (h.flags & HS_ETL_BUF_COMPRESSED)) {
        hs_etl_fail(err, 1, 0, "no valid ETL header buffer here (size %u, data end %u, flags 0x%x): not an ETL file?",
                    h.size, end, h.flags);
        return -1;
    }
    if (h.size > f->size) {
        hs_etl_fail(err, 1, 0, "the file ends %llu bytes into its header buffer of %u bytes (truncated)",
                    (unsigned long long)f->size, h.size);
        return -1;
    }
    size_t hcap = 0;
    if (!src_get(f, 0, end, &f->hdrbuf, &hcap, err))
        return -1;
    const uint8_t *hb = f->mem ? f->mem : f->hdrbuf;
    hs_etl_event *ev = &f->header_ev;
    int has_ts;
    const char *why = NULL;
    int r = hs_etl_hdr_parse(hb + HS_ETL_BUFHDR, end - HS_ETL_BUFHDR, ev, &has_ts, &why);
    if (r != 0 || (ev->header != HS_ETL_HDR_SYSTEM32 && ev->header != HS_ETL_HDR_SYSTEM64) ||
        ev->group != HS_ETL_GROUP_HEADER || ev->type != 0) {
        hs_etl_fail(err, 1, HS_ETL_BUFHDR, "the first event is not a logfile header%s%s: not an ETL file?",
                    why ? ": " : "", why ? why : "");
        return -1;
    }
    ev->offset = HS_ETL_BUFHDR;
    ev->cpu = h.cpu;
    if (hs_etl_logfile_parse(ev, h.state, &f->info, err) < 0)
        return -1;

    /* every buffer */
    size_t cap = 0;
    for (uint64_t off = 0; off < f->size;) {
        if (f->nbufs == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct bufix *nb = realloc(f->bufs, nc * sizeof *nb);
            if (!nb) {
                hs_etl_fail(err, 0, 0, "out of memory");
                return -1;
            }
            f->bufs = nb;
            cap = nc;
        }
        if (index_buffer(f, off, &f->bufs[f->nbufs], err) < 0)
            return -1;
        off += f->bufs[f->nbufs].size;
        f->nbufs++;
    }
    f->bufs[0].skip = (ev->total + 7) & ~7u;
    f->info.buffers = f->nbufs;
    if (count_gaps(f, err) < 0)
        return -1;

    f->sorted = malloc((size_t)f->nbufs * sizeof *f->sorted);
    f->streams = calloc(f->nbufs, sizeof *f->streams);
    if (!f->sorted || !f->streams) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    memcpy(f->sorted, f->bufs, (size_t)f->nbufs * sizeof *f->sorted);
    qsort(f->sorted, f->nbufs, sizeof *f->sorted, cmp_buf);
    for (uint32_t i = 0; i < f->nbufs; i++) {
        if (!f->nstreams || f->streams[f->nstreams - 1].cpu != f->sorted[i].cpu) {
            struct stream *s = &f->streams[f->nstreams++];
            s->cpu = f->sorted[i].cpu;
            s->first = i;
        }
        f->streams[f->nstreams - 1].count++;
    }
    f->info.cpus_seen = f->nstreams;
    return 0;
}

int hs_etl_open_mem(hs_etl_file **out, const void *data, size_t size, hs_etl_error *err)
{
    hs_etl_file *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    f->mem = data;
    f->size = size;
    if (open_common(f, err) < 0) {
        hs_etl_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int hs_etl_open_fp(hs_etl_file **out, FILE *fp, hs_etl_error *err)
{
    *out = NULL;
    hs_etl_file *f = calloc(1, sizeof *f);
    if (!f) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    f->fp = fp;
    long long size;
    if (hs_fseek(fp, 0, SEEK_END) != 0 || (size = (long long)hs_ftell(fp)) < 0) {
        hs_etl_fail(err, 0, 0, "cannot find the size of the file (not a regular file?)");
        hs_etl_close(f);
        return -1;
    }
    f->size = (uint64_t)size;
    if (open_common(f, err) < 0) {
        hs_etl_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int hs_etl_open_file(hs_etl_file **out, const char *path, hs_etl_error *err)
{
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        hs_etl_fail(err, 0, 0, "cannot open %s", path);
        return -1;
    }
    if (hs_etl_open_fp(out, fp, err) < 0) {
        fclose(fp);
        return -1;
    }
    (*out)->owns_fp = 1;
    return 0;
}

const hs_etl_info *hs_etl_file_info(const hs_etl_file *f)
{
    return &f->info;
}

/* Make the stream's next buffer current. */
static int load_buffer(hs_etl_file *f, struct stream *s, hs_etl_error *err)
{
    const struct bufix *b = &f->sorted[s->first + s->next++];
    s->boff = b->off;
    s->compressed = (b->flags & HS_ETL_BUF_COMPRESSED) != 0;
    if (!s->compressed) {
        s->data = src_get(f, b->off, b->end, &s->mem, &s->memcap, err);
        if (!s->data)
            return -1;
    } else {
        const uint8_t *in = src_get(f, b->off, b->size, &f->scratch, &f->scratch_cap, err);
        if (!in)
            return -1;
        if (s->memcap < b->end) {
            uint8_t *nm = realloc(s->mem, b->end);
            if (!nm) {
                hs_etl_fail(err, 0, 0, "out of memory (%u bytes for a buffer)", b->end);
                return -1;
            }
            s->mem = nm;
            s->memcap = b->end;
        }
        memcpy(s->mem, in, HS_ETL_BUFHDR);
        size_t at = 0;
        const char *why = "";
        size_t want = b->end - HS_ETL_BUFHDR;
        long got = f->info.compression == HS_ETL_COMP_LZNT1
                       ? hs_lznt1_decompress(in + HS_ETL_BUFHDR, b->size - HS_ETL_BUFHDR, s->mem + HS_ETL_BUFHDR,
                                             want, &at, &why)
                       : hs_xpress_decompress(in + HS_ETL_BUFHDR, b->size - HS_ETL_BUFHDR, s->mem + HS_ETL_BUFHDR,
                                              want, &at, &why);
        if (got < 0) {
            hs_etl_fail(err, 1, b->off + HS_ETL_BUFHDR + at, "%s data of the buffer at byte %llu: %s",
                        f->info.compression == HS_ETL_COMP_LZNT1 ? "LZNT1" : "XPRESS",
                        (unsigned long long)b->off, why);
            return -1;
        }
        if ((size_t)got != want) {
            hs_etl_fail(err, 1, b->off, "the buffer here decompresses to %ld bytes, its header says %llu",
                        got, (unsigned long long)want);
            return -1;
        }
        s->data = s->mem;
    }
    s->pos = HS_ETL_BUFHDR + b->skip;
    s->end = b->end;
    return 0;
}

/* Parse the stream's next event into s->ev: 1 = there is one, 0 = the
 * stream is done, -1 = error. */
static int next_event(hs_etl_file *f, struct stream *s, hs_etl_error *err)
{
    for (;;) {
        if (s->data && s->pos < s->end) {
            int has_ts;
            const char *why = NULL;
            hs_etl_event *ev = &s->ev;
            int r = hs_etl_hdr_parse(s->data + s->pos, s->end - s->pos, ev, &has_ts, &why);
            if (r < 0) {
                hs_etl_event at = {.in_compressed = s->compressed, .buffer_offset = s->boff,
                                   .offset = s->compressed ? s->pos : s->boff + s->pos};
                hs_etl_fail_event(err, &at, "%s", why);
                return -1;
            }
            if (r == 0) {
                ev->cpu = s->cpu;
                ev->buffer_offset = s->boff;
                ev->in_compressed = s->compressed;
                ev->offset = s->compressed ? s->pos : s->boff + s->pos;
                if (!has_ts)
                    ev->ts = s->last_ts;
                s->last_ts = ev->ts;
                s->pos += (ev->total + 7) & ~(size_t)7;
                return 1;
            }
            /* padding: the rest of this buffer is empty */
        }
        if (s->next == s->count)
            return 0;
        if (load_buffer(f, s, err) < 0)
            return -1;
    }
}

static int before(const struct stream *a, const struct stream *b)
{
    return a->ev.ts != b->ev.ts ? a->ev.ts < b->ev.ts : a->cpu < b->cpu;
}

static void sift_down(struct stream **h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        if (l < n && before(h[l], h[m]))
            m = l;
        if (l + 1 < n && before(h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        struct stream *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int hs_etl_decode(hs_etl_file *f, const hs_etl_observer *obs, hs_etl_error *err)
{
    static const hs_etl_observer none;
    if (!obs)
        obs = &none;
    if (f->decoded) {
        hs_etl_fail(err, 0, 0, "this file was already decoded");
        return -1;
    }
    f->decoded = 1;
    if (obs->info && obs->info(obs->ctx, &f->info) < 0)
        return -1;
    if (hs_etl_dispatch(&f->header_ev, obs, err) < 0)
        return -1;

    struct stream **heap = malloc((size_t)(f->nstreams ? f->nstreams : 1) * sizeof *heap);
    if (!heap) {
        hs_etl_fail(err, 0, 0, "out of memory");
        return -1;
    }
    uint32_t n = 0;
    int rc = 0;
    for (uint32_t i = 0; i < f->nstreams; i++) {
        int r = next_event(f, &f->streams[i], err);
        if (r < 0) {
            rc = -1;
            goto out;
        }
        if (r)
            heap[n++] = &f->streams[i];
    }
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down(heap, n, i);
    f->info.first_ts = UINT64_MAX;
    while (n) {
        struct stream *s = heap[0];
        const hs_etl_event *ev = &s->ev;
        f->info.events++;
        if (ev->ts < f->info.first_ts)
            f->info.first_ts = ev->ts;
        if (ev->ts > f->info.last_ts)
            f->info.last_ts = ev->ts;
        if (hs_etl_dispatch(ev, obs, err) < 0) {
            rc = -1;
            goto out;
        }
        int r = next_event(f, s, err);
        if (r < 0) {
            rc = -1;
            goto out;
        }
        if (!r)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    if (f->info.first_ts == UINT64_MAX)
        f->info.first_ts = 0;
out:
    free(heap);
    return rc;
}

void hs_etl_close(hs_etl_file *f)
{
    if (!f)
        return;
    if (f->fp && f->owns_fp)
        fclose(f->fp);
    for (uint32_t i = 0; i < f->nstreams; i++)
        free(f->streams[i].mem);
    free(f->streams);
    free(f->sorted);
    free(f->bufs);
    free(f->hdrbuf);
    free(f->scratch);
    free(f);
}
