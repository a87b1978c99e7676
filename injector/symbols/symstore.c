/*
 * injector/symbols/symstore.c - symbol store names and paths, and the
 * file.ptr line (see symstore.h).
 */
#include "injector/symbols/symstore.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#ifndef _WIN32
const hs_symfetch *hs_symfetch_host(void)
{
    return NULL;
}
#endif

static bool word_ci(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != word[i])
            return false;
    return true;
}

static bool is_url(const char *p)
{
    return !strncmp(p, "http://", 7) || !strncmp(p, "https://", 8);
}

/* The '*'-separated parts of a srv*, symsrv* or cache* entry (*cache_entry:
 * which), or NULL for a folder. */
static char *entry_parts(char *entry, bool *cache_entry)
{
    char *star = strchr(entry, '*');
    size_t first = star ? (size_t)(star - entry) : strlen(entry);
    *cache_entry = star && word_ci(entry, first, "cache");
    if (star && (word_ci(entry, first, "srv") || *cache_entry))
        return star + 1;
    if (star && word_ci(entry, first, "symsrv"))
        return strchr(star + 1, '*') ? strchr(star + 1, '*') + 1 : star + strlen(star);   /* after the DLL */
    return NULL;
}

/* The places of one entry (its text, NUL-terminated). */
static int walk_entry(hs_symwalk *w, char *entry, int (*visit)(void *, const hs_place *), void *ctx)
{
    bool cache_entry;
    char *parts = entry_parts(entry, &cache_entry);
    if (!parts) {
        hs_place d = { HS_PLACE_DIR, entry, NULL };
        return visit(ctx, &d);
    }
    const char *first_dir = NULL;
    int rc = 0;
    for (char *part = parts; *part && !rc;) {
        char *q = strchr(part, '*');
        if (q)
            *q = 0;
        if (*part) {
            hs_place pl = { is_url(part) ? HS_PLACE_SERVER : HS_PLACE_STORE, part,
                            first_dir ? first_dir : w->cache };
            if (pl.kind == HS_PLACE_STORE && !first_dir)
                first_dir = part;
            rc = visit(ctx, &pl);
        }
        part = q ? q + 1 : part + strlen(part);
    }
    if (!rc && cache_entry && first_dir) {
        char *c = malloc(strlen(first_dir) + 1);
        if (!c)
            return -1;
        strcpy(c, first_dir);
        free(w->cache);
        w->cache = c;
    }
    return rc;
}

/* fn for each entry of list (its text trimmed, NUL-terminated, fn's to
 * change), until fn returns nonzero: that value (-1: out of memory). */
static int each_entry(const char *list, int (*fn)(void *ctx, char *entry), void *ctx)
{
    int rc = 0;
    for (const char *p = list; p && *p && !rc;) {
        size_t n = strcspn(p, ";");
        const char *next = p + n + (p[n] == ';');
        while (n && isspace((unsigned char)*p)) {
            p++;
            n--;
        }
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            char *entry = malloc(n + 1);
            if (!entry)
                return -1;
            memcpy(entry, p, n);
            entry[n] = 0;
            rc = fn(ctx, entry);
            free(entry);
        }
        p = next;
    }
    return rc;
}

typedef struct walk_ctx {
    hs_symwalk *w;
    int (*visit)(void *ctx, const hs_place *place);
    void *ctx;
} walk_ctx;

static int walk_one(void *ctx, char *entry)
{
    walk_ctx *c = ctx;
    return walk_entry(c->w, entry, c->visit, c->ctx);
}

int hs_symstore_walk(hs_symwalk *w, const char *list, int (*visit)(void *ctx, const hs_place *place), void *ctx)
{
    walk_ctx c = { w, visit, ctx };
    return each_entry(list, walk_one, &c);
}

typedef struct check_ctx {
    const hs_symfs *fs;
    char *err;
    size_t errlen;
    char *warn;     /* the first entry that is usable but finds nothing ("" when none) */
    size_t warnlen;
} check_ctx;

/* A folder's fault: a URL, or a file. */
static int check_folder(check_ctx *c, const char *entry, const char *dir)
{
    if (strstr(dir, "://") && !is_url(dir)) {
        snprintf(c->err, c->errlen, "'%s': a symbol server's address begins with http:// or https://", entry);
        return 1;
    }
    if (is_url(dir)) {
        snprintf(c->err, c->errlen, "'%s' is a symbol server: give it as srv*DIR*%s (DIR: where to keep its files)",
                 entry, dir);
        return 1;
    }
    if (c->fs && c->fs->exists && c->fs->exists(c->fs->ctx, dir)) {
        snprintf(c->err, c->errlen, "'%s': %s is a file, not a folder (give the folder that holds it)", entry, dir);
        return 1;
    }
    return 0;
}

static int check_one(void *ctx, char *entry)
{
    check_ctx *c = ctx;
    char *text = malloc(strlen(entry) + 1);
    if (!text)
        return -1;
    strcpy(text, entry);   /* (the whole entry, for the message) */
    bool cache_entry;
    char *parts = entry_parts(entry, &cache_entry);
    int rc = 0, named = 0;
    if (!parts) {
        rc = check_folder(c, text, entry);
        /* (a store's folders are made when first written; a plain one is
         * only read: one that is not there is said, not refused, as a
         * shared list may name folders of other machines) */
        if (!rc && c->warn && !*c->warn && c->fs && c->fs->is_folder && !c->fs->is_folder(c->fs->ctx, entry))
            snprintf(c->warn, c->warnlen, "'%s': no such folder", text);
    }
    for (char *part = parts; part && *part && !rc;) {
        char *q = strchr(part, '*');
        if (q)
            *q = 0;
        if (*part) {
            named++;
            rc = is_url(part) ? 0 : check_folder(c, text, part);
        }
        part = q ? q + 1 : part + strlen(part);
    }
    if (parts && !rc && !named) {
        snprintf(c->err, c->errlen, "'%s' names no folder and no server", text);
        rc = 1;
    }
    free(text);
    return rc;
}

int hs_symstore_check(const char *list, const hs_symfs *fs, char *err, size_t errlen, char *warn, size_t warnlen)
{
    if (warn && warnlen)
        *warn = 0;
    check_ctx c = { fs, err, errlen, warnlen ? warn : NULL, warnlen };
    int rc = each_entry(list, check_one, &c);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc ? -1 : 0;
}

void hs_symwalk_end(hs_symwalk *w)
{
    free(w->cache);
    w->cache = NULL;
}

static int server_seen(void *ctx, const hs_place *place)
{
    (void)ctx;
    return place->kind == HS_PLACE_SERVER;
}

bool hs_symstore_has_server(const char *list)
{
    hs_symwalk w = { NULL };
    int rc = hs_symstore_walk(&w, list, server_seen, NULL);
    hs_symwalk_end(&w);
    return rc == 1;
}

void hs_symstore_image_key(uint32_t timestamp, uint32_t size, char out[18])
{
    snprintf(out, 18, "%08X%x", timestamp, size);
}

char *hs_symstore_compressed_name(const char *name)
{
    size_t n = strlen(name);
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, name, n + 1);
        if (n)
            c[n - 1] = '_';
    }
    return c;
}

char *hs_symstore_url_path(const char *base, const char *name, const char *key, const char *file)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    size_t len = n + strlen(name) + strlen(key) + strlen(file) + 4;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%.*s/%s/%s/%s", (int)n, base, name, key, file);
    return p;
}

int hs_symstore_parse_ptr(const char *text, size_t n, char *out, size_t outlen)
{
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    int kind = 0;
    size_t skip = 0;
    if (n > 5 && !strncmp(text, "PATH:", 5)) {
        kind = 1;
        skip = 5;
    } else if (n > 4 && !strncmp(text, "MSG:", 4)) {
        kind = 2;
        skip = 4;
    }
    if (!kind || memchr(text + skip, '\n', n - skip) || memchr(text + skip, 0, n - skip) || n - skip >= outlen)
        return 0;
    memcpy(out, text + skip, n - skip);
    out[n - skip] = 0;
    return kind;
}
