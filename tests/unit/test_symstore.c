/*
 * tests/unit/test_symstore.c - symbol servers on Linux: the store's names
 * and paths, the file.ptr line, and the PDB locator asking a symbol server
 * (a stand-in for the WinHTTP client that "downloads" into an in-memory
 * file system): when it asks, with which URL, cache folder, name and key,
 * what it does with the answer, and a prefetch that only starts.
 * The client itself runs under Wine in tests/test_symsrv.py.
 *
 * Needs the fixtures (make fixtures): build/fixtures/pdb/next/pdbc.exe and
 * build/fixtures/pdb/pdbc.pdb.
 *
 *   names/...    compressed name, the server's path, search paths with a
 *                server, the places of search paths, an image's key
 *   ptr/...      file.ptr lines
 *   ask/...      the locator and a server
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/pe/pe.h"
#include "injector/symbols/locate.h"
#include "injector/symbols/symstore.h"
#include "tests/unit/tap.h"

static void test_names(void)
{
    char *c = hs_symstore_compressed_name("pdbc.pdb");
    tap_check(!strcmp(c, "pdbc.pd_"), "names/compressed", "%s", c);
    free(c);
    static const char *const base[][2] = {
        { "", "/pdbc.pdb/KEY1/file.ptr" },
        { "/", "/pdbc.pdb/KEY1/file.ptr" },
        { "/download/symbols", "/download/symbols/pdbc.pdb/KEY1/file.ptr" },
        { "/download/symbols//", "/download/symbols/pdbc.pdb/KEY1/file.ptr" },
    };
    for (size_t i = 0; i < sizeof base / sizeof *base; i++) {
        char *p = hs_symstore_url_path(base[i][0], "pdbc.pdb", "KEY1", "file.ptr");
        tap_check(!strcmp(p, base[i][1]), "names/url-path", "'%s' -> %s", base[i][0], p);
        free(p);
    }
    static const struct {
        const char *list;
        bool server;
    } lists[] = {
        { "srv*C:\\sym*https://msdl.microsoft.com/download/symbols", true },
        { "SRV*http://127.0.0.1:8000", true },
        { "C:\\a;symsrv*symsrv.dll*C:\\sym*http://x/y", true },
        { "cache*C:\\sym;C:\\pdbs", false },
        { "srv*C:\\sym", false },
        { "C:\\http://x", false },
        { "", false },
        { NULL, false },
    };
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        tap_check(hs_symstore_has_server(lists[i].list) == lists[i].server, "names/has-server", "%s",
                  lists[i].list ? lists[i].list : "(null)");
}

static int record(void *ctx, const hs_place *pl)
{
    char *out = ctx;
    static const char kind[] = "DSU";
    size_t n = strlen(out);
    snprintf(out + n, 1024 - n, "%c %s [%s]; ", kind[pl->kind], pl->path, pl->cache ? pl->cache : "-");
    return strstr(pl->path, "stop") != NULL ? 7 : 0;
}

static void test_walk(void)
{
    static const struct {
        const char *lists[2];
        int rc;
        const char *places;
    } cases[] = {
        { { " C:\\a ; srv*C:\\s1*C:\\s2*https://x/y;;SRV*http://z", NULL }, 0,
          "D C:\\a [-]; S C:\\s1 [-]; S C:\\s2 [C:\\s1]; U https://x/y [C:\\s1]; U http://z [-]; " },
        { { "cache*C:\\c;srv*http://z;symsrv*symsrv.dll*C:\\d*http://w", "srv*https://v" }, 0,
          "S C:\\c [-]; U http://z [C:\\c]; S C:\\d [C:\\c]; U http://w [C:\\d]; U https://v [C:\\c]; " },
        { { "C:\\a;C:\\stop;C:\\never", NULL }, 7, "D C:\\a [-]; D C:\\stop [-]; " },
        { { "srv*;symsrv*x;cache*", "" }, 0, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[1024] = "";
        hs_symwalk w = { NULL };
        int rc = hs_symstore_walk(&w, cases[i].lists[0], record, out);
        if (!rc)
            rc = hs_symstore_walk(&w, cases[i].lists[1], record, out);
        hs_symwalk_end(&w);
        tap_check(rc == cases[i].rc && !strcmp(out, cases[i].places), "names/walk", "%s: %d '%s'",
                  cases[i].lists[0], rc, out);
    }
    char key[18];
    hs_symstore_image_key(0x5C2ADDC7, 0x1ef000, key);
    tap_check(!strcmp(key, "5C2ADDC71ef000"), "names/image-key", "%s", key);
    hs_symstore_image_key(0x5000, 0x10000, key);
    tap_check(!strcmp(key, "0000500010000"), "names/image-key-zeros", "%s", key);
}

static void test_ptr(void)
{
    static const struct {
        const char *text;
        int kind;
        const char *out;
    } cases[] = {
        { "PATH:\\\\store\\sym\\pdbc.pdb\r\n", 1, "\\\\store\\sym\\pdbc.pdb" },
        { "PATH:Z:\\tmp\\x.pdb", 1, "Z:\\tmp\\x.pdb" },
        { "MSG:not given to the public \n", 2, "not given to the public" },
        { "PATH:", 0, "" },
        { "MSG:", 0, "" },
        { "path:C:\\x.pdb", 0, "" },
        { "PATH:C:\\a.pdb\nPATH:C:\\b.pdb", 0, "" },
        { "<html>404</html>", 0, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[64] = "";
        int k = hs_symstore_parse_ptr(cases[i].text, strlen(cases[i].text), out, sizeof out);
        tap_check(k == cases[i].kind && (!k || !strcmp(out, cases[i].out)), "ptr/parse", "'%s': %d '%s'",
                  cases[i].text, k, out);
    }
    char tiny[8];
    tap_check(hs_symstore_parse_ptr("PATH:C:\\long\\path.pdb", 21, tiny, sizeof tiny) == 0, "ptr/too-long",
              "a path longer than the buffer is refused");
}

/* ---- the locator and a server ---------------------------------------------- */

typedef struct world {
    const uint8_t *pdb;         /* what the server gives */
    size_t pdb_size;
    int gives;                  /* the server has the file */
    char files[4][160];         /* the cache: paths holding the PDB */
    int nfiles;
    int gets, starts, reads;
    char url[80], cache[80], name[40], key[42];
} world;

static world world_of(const uint8_t *pdb, size_t size, int gives)
{
    world w;
    memset(&w, 0, sizeof w);
    w.pdb = pdb;
    w.pdb_size = size;
    w.gives = gives;
    return w;
}

static int world_read(void *ctx, const char *path, uint8_t **data, size_t *size, char *err, size_t errlen)
{
    world *w = ctx;
    (void)err;
    (void)errlen;
    w->reads++;
    for (int i = 0; i < w->nfiles; i++)
        if (!strcmp(w->files[i], path)) {
            *data = malloc(w->pdb_size);
            memcpy(*data, w->pdb, w->pdb_size);
            *size = w->pdb_size;
            return 0;
        }
    return 1;
}

static int world_exists(void *ctx, const char *path)
{
    world *w = ctx;
    for (int i = 0; i < w->nfiles; i++)
        if (!strcmp(w->files[i], path))
            return 1;
    return 0;
}

static void note(world *w, const char *url, const char *cache, const char *name, const char *key)
{
    snprintf(w->url, sizeof w->url, "%s", url);
    snprintf(w->cache, sizeof w->cache, "%s", cache ? cache : "(none)");
    snprintf(w->name, sizeof w->name, "%s", name);
    snprintf(w->key, sizeof w->key, "%s", key);
}

static char *world_get(void *ctx, const char *url, const char *cache, const char *name, const char *key)
{
    world *w = ctx;
    w->gets++;
    note(w, url, cache, name, key);
    if (!w->gives || !cache)
        return NULL;
    snprintf(w->files[w->nfiles], sizeof w->files[0], "%s\\%s\\%s\\%s", cache, name, key, name);
    return strdup(w->files[w->nfiles++]);
}

static void world_start(void *ctx, const char *url, const char *cache, const char *name, const char *key)
{
    world *w = ctx;
    w->starts++;
    note(w, url, cache, name, key);
}

static uint8_t *slurp(const char *path, size_t *size)
{
    uint8_t *d = NULL;
    char err[256];
    return hs_symfs_host()->read(NULL, path, &d, size, err, sizeof err) == 0 ? d : NULL;
}

/* locate pdbc.exe's PDB with --symbols list; the status, the path found */
static int ask(world *w, const hs_pe *pe, const char *list, bool prefetch, char *path, char *msg)
{
    hs_symfs fs = { world_read, w, world_exists, NULL };
    hs_symfetch fetch = { world_get, world_start, NULL, w };
    hs_pdb_search s = { "D:\\app\\pdbc.exe", list, NULL, &fs, &fetch, prefetch };
    hs_pdb_found found;
    path[0] = msg[0] = 0;
    int st = hs_pdb_locate(pe, &s, &found, msg, 512);
    if (st == HS_LOC_FOUND) {
        snprintf(path, 512, "%s", found.path);
        hs_pdb_found_free(&found);
    }
    return st;
}

static void test_ask(void)
{
    size_t exe_size = 0, pdb_size = 0;
    uint8_t *exe = slurp("build/fixtures/pdb/next/pdbc.exe", &exe_size);
    uint8_t *pdb = slurp("build/fixtures/pdb/pdbc.pdb", &pdb_size);
    hs_pe pe;
    hs_rsds rsds;
    char err[256], key[42];
    if (!exe || !pdb || hs_pe_load_file(&pe, exe, exe_size) != HS_PE_OK ||
        hs_pe_rsds(&pe, &rsds, err, sizeof err) != 1) {
        tap_fail("ask/fixture", "build/fixtures/pdb is not built (make fixtures)");
        return;
    }
    hs_guid_age_key(rsds.guid, rsds.age, key);
    char path[512], msg[512], want[256];
    const char *srv = "srv*C:\\cache*http://127.0.0.1:8000/sym";

    /* the cache misses: the server is asked, once, and its file read */
    world w = world_of(pdb, pdb_size, 1);
    int st = ask(&w, &pe, srv, false, path, msg);
    snprintf(want, sizeof want, "C:\\cache\\pdbc.pdb\\%s\\pdbc.pdb", key);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, want) && w.gets == 1 && w.starts == 0 &&
                  !strcmp(w.url, "http://127.0.0.1:8000/sym") && !strcmp(w.cache, "C:\\cache") &&
                  !strcmp(w.name, "pdbc.pdb") && !strcmp(w.key, key),
              "ask/downloaded", "status %d path %s gets %d url %s cache %s name %s key %s (%s)", st, path, w.gets,
              w.url, w.cache, w.name, w.key, msg);

    /* the cache has it now: the server is not asked */
    w.gets = 0;
    st = ask(&w, &pe, srv, false, path, msg);
    tap_check(st == HS_LOC_FOUND && !strcmp(path, want) && w.gets == 0, "ask/cached", "status %d gets %d", st,
              w.gets);

    /* the server has nothing: not found, the server counted as a place */
    world none = world_of(pdb, pdb_size, 0);
    st = ask(&none, &pe, srv, false, path, msg);
    tap_check(st == HS_LOC_NOT_FOUND && none.gets == 1 &&
                  strstr(msg, "pdbc.pdb not found (looked at C:\\hookscope-absent\\pdbc.pdb, the image's folder, "
                              "2 --symbols places, 0 _NT_SYMBOL_PATH places)"),
              "ask/not-given", "status %d gets %d: %s", st, none.gets, msg);

    /* srv*URL keeps the file in the folder of the cache* entry before it */
    world c = world_of(pdb, pdb_size, 1);
    st = ask(&c, &pe, "cache*E:\\keep;srv*https://example.org/symbols", false, path, msg);
    tap_check(st == HS_LOC_FOUND && c.gets == 1 && !strcmp(c.cache, "E:\\keep"), "ask/cache-entry",
              "status %d gets %d cache %s", st, c.gets, c.cache);
    world nocache = world_of(pdb, pdb_size, 1);
    st = ask(&nocache, &pe, "srv*https://example.org/symbols", false, path, msg);
    tap_check(st == HS_LOC_NOT_FOUND && nocache.gets == 1 && !strcmp(nocache.cache, "(none)"), "ask/no-cache",
              "status %d gets %d cache %s", st, nocache.gets, nocache.cache);

    /* a prefetch starts the download and waits for nothing */
    world pre = world_of(pdb, pdb_size, 1);
    st = ask(&pre, &pe, "C:\\nothing;" "srv*C:\\cache*http://127.0.0.1:8000/sym;D:\\later", true, path, msg);
    tap_check(st != HS_LOC_FOUND && pre.starts == 1 && pre.gets == 0 && !strcmp(pre.cache, "C:\\cache"),
              "ask/prefetch", "status %d starts %d gets %d", st, pre.starts, pre.gets);

    /* the PDB next to the image, or in the cache: no server asked, not even
     * by a prefetch, which reads no file (the search proper will) */
    world next = world_of(pdb, pdb_size, 1);
    snprintf(next.files[next.nfiles++], sizeof next.files[0], "D:\\app\\pdbc.pdb");
    st = ask(&next, &pe, srv, true, path, msg);
    tap_check(next.starts == 0 && next.gets == 0 && next.reads == 0, "ask/local-first",
              "starts %d gets %d reads %d", next.starts, next.gets, next.reads);
    w.reads = 0;
    st = ask(&w, &pe, srv, true, path, msg);
    tap_check(w.starts == 0 && w.gets == 0 && w.reads == 0, "ask/prefetch-cached", "starts %d gets %d reads %d",
              w.starts, w.gets, w.reads);

    /* an image by name, timestamp and size: a folder's file of another
     * build passed over, the server asked, its file taken */
    char ikey[18], *found;
    hs_symstore_image_key(pe.timestamp, pe.size_of_image, ikey);
    world img = world_of(exe, exe_size, 1);
    hs_symfs ifs = { world_read, &img, world_exists, NULL };
    hs_symfetch ifetch = { world_get, world_start, NULL, &img };
    hs_pdb_search is = { NULL, "C:\\bins;srv*C:\\cache*http://s/sym", NULL, &ifs, &ifetch, false };
    found = hs_image_locate("pdbc.exe", pe.timestamp, pe.size_of_image + 0x1000, &is);
    tap_check(!found && img.gets == 1 && strcmp(img.key, ikey), "image/other-size", "found %s gets %d key %s",
              found ? found : "-", img.gets, img.key);
    free(found);
    img = world_of(exe, exe_size, 1);
    snprintf(img.files[img.nfiles++], sizeof img.files[0], "C:\\bins\\pdbc.exe");
    found = hs_image_locate("pdbc.exe", pe.timestamp, pe.size_of_image, &is);
    tap_check(found && !strcmp(found, "C:\\bins\\pdbc.exe") && img.gets == 0, "image/folder", "found %s gets %d",
              found ? found : "-", img.gets);
    free(found);
    img = world_of(exe, exe_size, 1);
    found = hs_image_locate("pdbc.exe", pe.timestamp, pe.size_of_image, &is);
    snprintf(want, sizeof want, "C:\\cache\\pdbc.exe\\%s\\pdbc.exe", ikey);
    tap_check(found && !strcmp(found, want) && img.gets == 1 && !strcmp(img.key, ikey) &&
                  !strcmp(img.name, "pdbc.exe") && !strcmp(img.cache, "C:\\cache"),
              "image/server", "found %s gets %d key %s", found ? found : "-", img.gets, img.key);
    free(found);
    img = world_of(exe, exe_size, 1);
    is.prefetch = true;
    found = hs_image_locate("pdbc.exe", pe.timestamp, pe.size_of_image, &is);
    tap_check(!found && img.starts == 1 && img.gets == 0 && img.reads == 0, "image/prefetch",
              "found %s starts %d gets %d reads %d", found ? found : "-", img.starts, img.gets, img.reads);
    free(found);
    hs_pe_close(&pe);
    free(exe);
    free(pdb);
}

int main(void)
{
    test_names();
    test_walk();
    test_ptr();
    test_ask();
    return tap_status();
}
