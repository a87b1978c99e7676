/*
 * injector/symbols/locate.c - the PDB search (see locate.h).
 */
#include "injector/symbols/locate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct search {
    const hs_pdb_search *s;
    const hs_symfs *fs;
    const hs_rsds *rsds;
    const char *image;          /* for messages */
    const char *name;           /* the PDB file name */
    char key[42];
    char **tried;               /* paths already looked at */
    size_t ntried, cap;
    int status;                 /* the best failure so far */
    char *msg;
    size_t msglen;
    hs_pdb_found *out;
    int found;
    int ended;                  /* prefetch: a download started, or a file found: no more */
    hs_symwalk walk;            /* across --symbols and _NT_SYMBOL_PATH */
} search;

static int done(const search *s)
{
    return s->found || s->ended;
}

static const char *base_name(const char *p)
{
    const char *b = p;
    for (const char *q = p; *q; q++)
        if (*q == '\\' || *q == '/')
            b = q + 1;
    return b;
}

static int is_windows_dir(const char *d)
{
    return strchr(d, '\\') || (isalpha((unsigned char)d[0]) && d[1] == ':');
}

/* dir + sep + a + [sep + b + [sep + c]] */
static char *join(const char *dir, const char *a, const char *b, const char *c)
{
    char sep = is_windows_dir(dir) ? '\\' : '/';
    size_t n = strlen(dir) + strlen(a) + (b ? strlen(b) : 0) + (c ? strlen(c) : 0) + 4;
    char *p = malloc(n);
    if (!p)
        return NULL;
    size_t dl = strlen(dir);
    int has_sep = dl && (dir[dl - 1] == '\\' || dir[dl - 1] == '/');
    snprintf(p, n, "%s%s%s%s%s%s%s", dir, has_sep || !dl ? "" : (char[]){ sep, 0 }, a,
             b ? (char[]){ sep, 0 } : "", b ? b : "", c ? (char[]){ sep, 0 } : "", c ? c : "");
    return p;
}

/* Try one file; consumes path. Sets s->found on a match. -1: out of memory. */
static int try_path(search *s, char *path, const char *via)
{
    if (!path)
        return -1;
    for (size_t i = 0; i < s->ntried; i++)
        if (strcmp(s->tried[i], path) == 0) {
            free(path);
            return 0;
        }
    if (s->ntried == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 16;
        char **t = realloc(s->tried, nc * sizeof *t);
        if (!t) {
            free(path);
            return -1;
        }
        s->tried = t;
        s->cap = nc;
    }
    s->tried[s->ntried++] = path;
    if (s->s->prefetch && s->fs->exists) {
        /* a file is there: the search proper reads it (and asks a server
         * only should it be another build's) */
        if (s->fs->exists(s->fs->ctx, path))
            s->ended = 1;
        return 0;
    }

    uint8_t *data = NULL;
    size_t size = 0;
    char err[512] = "";
    int rc = s->fs->read(s->fs->ctx, path, &data, &size, err, sizeof err);
    if (rc == 1)
        return 0;
    if (rc < 0) {
        if (s->status < HS_LOC_MISMATCH) {
            s->status = HS_LOC_BAD;
            snprintf(s->msg, s->msglen, "%s", err);
        }
        return 0;
    }
    hs_pdb pdb;
    if (hs_pdb_open(&pdb, data, size, err, sizeof err)) {
        free(data);
        if (s->status < HS_LOC_MISMATCH) {
            s->status = HS_LOC_BAD;
            snprintf(s->msg, s->msglen, "%s: %s", path, err);
        }
        return 0;
    }
    if (memcmp(pdb.guid, s->rsds->guid, 16) != 0 || pdb.age != s->rsds->age) {
        if (s->status != HS_LOC_MISMATCH) {
            char pg[39], ig[39];
            hs_guid_text(pdb.guid, pg);
            hs_guid_text(s->rsds->guid, ig);
            s->status = HS_LOC_MISMATCH;
            snprintf(s->msg, s->msglen,
                     "%s does not match %s (PDB GUID %s age %u, image wants %s age %u)", path,
                     s->image, pg, pdb.age, ig, s->rsds->age);
        }
        hs_pdb_close(&pdb);
        free(data);
        return 0;
    }
    s->out->path = malloc(strlen(path) + 1);
    if (!s->out->path) {
        hs_pdb_close(&pdb);
        free(data);
        return -1;
    }
    strcpy(s->out->path, path);
    s->out->via = via;
    s->out->data = data;
    s->out->size = size;
    s->out->pdb = pdb;
    s->found = 1;
    return 0;
}

static char *dup(const char *p)
{
    char *d = malloc(strlen(p) + 1);
    if (d)
        strcpy(d, p);
    return d;
}

/* the two-tier layout is DIR/na/name.pdb/KEY/name.pdb: join takes three
 * parts, so the last one is added here */
static int try_two_tier(search *s, const char *dir, const char *via)
{
    char two[3] = { s->name[0], s->name[0] ? s->name[1] : 0, 0 };
    if (!two[0] || !two[1])
        return 0;
    char *mid = join(dir, two, s->name, s->key);
    if (!mid)
        return -1;
    char *p = join(mid, s->name, NULL, NULL);
    free(mid);
    return try_path(s, p, via);
}

/* Ask the symbol server at url (its file kept in cache); a prefetch only
 * starts the download, and the search ends there. */
static int try_server(search *s, const char *url, const char *cache, const char *via)
{
    const hs_symfetch *f = s->s->fetch;
    if (s->s->prefetch) {
        if (f->start)
            f->start(f->ctx, url, cache, s->name, s->key);
        s->ended = 1;
        return 0;
    }
    char *path = f->get(f->ctx, url, cache, s->name, s->key);
    if (!path)
        return 0;
    /* the cache's own place was looked at before the download filled it */
    for (size_t i = 0; i < s->ntried; i++)
        if (strcmp(s->tried[i], path) == 0) {
            free(s->tried[i]);
            s->tried[i] = s->tried[--s->ntried];
            break;
        }
    return try_path(s, path, via);
}

/* Where a walk of a search path looks for the PDB. */
typedef struct walker {
    search *s;
    const char *via;
    int places;
} walker;

static int visit(void *ctx, const hs_place *pl)
{
    walker *w = ctx;
    search *s = w->s;
    int rc = 0;
    if (pl->kind == HS_PLACE_DIR) {
        w->places++;
        rc = try_path(s, join(pl->path, s->name, NULL, NULL), w->via);
    } else if (pl->kind == HS_PLACE_STORE) {
        w->places++;
        rc = try_path(s, join(pl->path, s->name, s->key, s->name), w->via);
        if (rc == 0 && !done(s))
            rc = try_two_tier(s, pl->path, w->via);
    } else if (s->s->fetch) {
        w->places++;
        rc = try_server(s, pl->path, pl->cache, w->via);
    }
    return rc < 0 ? -1 : done(s);
}

/* One search path (symstore.h). Returns the number of places it named, or
 * -1 when out of memory. */
static int try_search_path(search *s, const char *list, const char *via)
{
    walker w = { s, via, 0 };
    return hs_symstore_walk(&s->walk, list, visit, &w) < 0 ? -1 : w.places;
}

/* The search for the PDB named by pe's RSDS record, or (pe NULL) by rsds. */
static int locate(const hs_pe *pe, const hs_rsds *rsds, const hs_pdb_search *sp, hs_pdb_found *out,
                  char *msg, size_t msglen)
{
    search s;
    memset(&s, 0, sizeof s);
    memset(out, 0, sizeof *out);
    s.s = sp;
    s.fs = sp->fs ? sp->fs : hs_symfs_host();
    s.image = sp->image_path ? base_name(sp->image_path) : "the image";
    s.msg = msg;
    s.msglen = msglen;
    s.out = out;
    s.status = HS_LOC_NOT_FOUND;
    if (pe) {
        char err[256];
        int r = hs_pe_rsds(pe, &out->rsds, err, sizeof err);
        if (r < 0) {
            snprintf(msg, msglen, "%s: %s", s.image, err);
            return HS_LOC_BAD;
        }
        if (r == 0) {
            snprintf(msg, msglen, "%s names no PDB (no CodeView record)", s.image);
            return HS_LOC_NO_RSDS;
        }
    } else {
        out->rsds = *rsds;
    }
    s.rsds = &out->rsds;
    s.name = base_name(out->rsds.path);
    char fallback[1024];
    if (!s.name[0]) {
        /* an RSDS record without a path: the image's name with .pdb */
        snprintf(fallback, sizeof fallback, "%s", s.image);
        char *dot = strrchr(fallback, '.');
        if (dot)
            *dot = 0;
        strncat(fallback, ".pdb", sizeof fallback - strlen(fallback) - 1);
        s.name = fallback;
    }
    hs_guid_age_key(out->rsds.guid, out->rsds.age, s.key);

    int nsym = 0, nnt = 0, oom = 0;
    if (out->rsds.path[0] && strcmp(out->rsds.path, s.name) != 0)
        oom |= try_path(&s, dup(out->rsds.path), "rsds") < 0;
    if (!done(&s) && !oom && sp->image_path) {
        size_t dl = (size_t)(base_name(sp->image_path) - sp->image_path);
        char *dir = malloc(dl + 2);
        if (!dir) {
            oom = 1;
        } else {
            memcpy(dir, sp->image_path, dl);
            dir[dl] = 0;
            if (!dl)
                strcpy(dir, ".");
            oom |= try_path(&s, join(dir, s.name, NULL, NULL), "image folder") < 0;
            free(dir);
        }
    }
    if (!done(&s) && !oom) {
        nsym = try_search_path(&s, sp->symbols, "--symbols");
        oom |= nsym < 0;
    }
    if (!done(&s) && !oom) {
        nnt = try_search_path(&s, sp->nt_symbol_path, "_NT_SYMBOL_PATH");
        oom |= nnt < 0;
    }
    for (size_t i = 0; i < s.ntried; i++)
        free(s.tried[i]);
    free(s.tried);
    hs_symwalk_end(&s.walk);
    if (oom) {
        hs_pdb_found_free(out);
        snprintf(msg, msglen, "out of memory looking for %s", s.name);
        return HS_LOC_BAD;
    }
    if (s.found)
        return HS_LOC_FOUND;
    if (s.status == HS_LOC_NOT_FOUND)
        snprintf(msg, msglen,
                 "no symbols for %s: %s not found (looked at %s, the image's folder, "
                 "%d --symbols place%s, %d _NT_SYMBOL_PATH place%s)",
                 s.image, s.name, out->rsds.path[0] ? out->rsds.path : "no RSDS path",
                 nsym, nsym == 1 ? "" : "s", nnt, nnt == 1 ? "" : "s");
    return s.status;
}

int hs_pdb_locate(const hs_pe *pe, const hs_pdb_search *sp, hs_pdb_found *out, char *msg,
                  size_t msglen)
{
    return locate(pe, NULL, sp, out, msg, msglen);
}

int hs_pdb_locate_rsds(const hs_rsds *rsds, const hs_pdb_search *sp, hs_pdb_found *out, char *msg,
                       size_t msglen)
{
    return locate(NULL, rsds, sp, out, msg, msglen);
}

/* ---- images by name, timestamp and size ------------------------------------ */

typedef struct image_search {
    const hs_pdb_search *s;
    const hs_symfs *fs;
    const char *name;
    uint32_t timestamp, size;
    char key[18];
    char *found;
} image_search;

/* 1 when path (consumed) is the image; -1: out of memory */
static int try_image(image_search *m, char *path)
{
    if (!path)
        return -1;
    int ok = 0;
    if (m->s->prefetch && m->fs->exists) {
        ok = m->fs->exists(m->fs->ctx, path);
    } else {
        uint8_t *data = NULL;
        size_t n = 0;
        char err[256];
        hs_pe pe;
        if (m->fs->read(m->fs->ctx, path, &data, &n, err, sizeof err) == 0) {
            if (hs_pe_load_file(&pe, data, n) == HS_PE_OK) {
                ok = pe.timestamp == m->timestamp && pe.size_of_image == m->size;
                hs_pe_close(&pe);
            }
            free(data);
        }
    }
    if (ok)
        m->found = path;
    else
        free(path);
    return ok;
}

static int visit_image(void *ctx, const hs_place *pl)
{
    image_search *m = ctx;
    if (pl->kind == HS_PLACE_DIR)
        return try_image(m, join(pl->path, m->name, NULL, NULL));
    if (pl->kind == HS_PLACE_STORE)
        return try_image(m, join(pl->path, m->name, m->key, m->name));
    const hs_symfetch *f = m->s->fetch;
    if (!f)
        return 0;
    if (m->s->prefetch) {
        if (f->start)
            f->start(f->ctx, pl->path, pl->cache, m->name, m->key);
        return 1;
    }
    char *path = f->get(f->ctx, pl->path, pl->cache, m->name, m->key);
    return path ? try_image(m, path) : 0;
}

char *hs_image_locate(const char *name, uint32_t timestamp, uint32_t size, const hs_pdb_search *s)
{
    image_search m = { s, s->fs ? s->fs : hs_symfs_host(), name, timestamp, size, "", NULL };
    hs_symstore_image_key(timestamp, size, m.key);
    hs_symwalk w = { NULL };
    if (hs_symstore_walk(&w, s->symbols, visit_image, &m) == 0)
        hs_symstore_walk(&w, s->nt_symbol_path, visit_image, &m);
    hs_symwalk_end(&w);
    return m.found;
}

void hs_pdb_found_free(hs_pdb_found *f)
{
    if (f->data)
        hs_pdb_close(&f->pdb);
    free(f->data);
    free(f->path);
    memset(f, 0, sizeof *f);
}
