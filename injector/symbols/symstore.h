/*
 * injector/symbols/symstore.h - symbol servers: what a search path's
 * `srv*` entries ask of an HTTP symbol store, and the client that asks.
 *
 * A store keeps NAME of one build at NAME/KEY/NAME: a PDB (pdbc.pdb), KEY
 * being hs_guid_age_key (the GUID's 32 hex digits and the age in hex), or
 * an image (ntdll.dll), KEY being hs_symstore_image_key. A server may instead hold it compressed, NAME/KEY/NAM_ (the last letter
 * of the name an underscore: a cabinet file), or hold NAME/KEY/file.ptr, a
 * line of text: "PATH:<where the file is>" or "MSG:<why it is not given>".
 *
 * In a search path (locate.h), `srv*DIR*URL` looks in DIR, then asks URL
 * and keeps what it gives in DIR, in the store layout, where the next run
 * finds it without asking. `srv*URL` keeps it in the folder of the last
 * `cache*DIR` before it. The portable part here: names and paths, the
 * file.ptr line. The client (symstore_win.c, Windows only) downloads with
 * WinHTTP, several files at once.
 */
#ifndef HOOKSCOPE_SYMSTORE_H
#define HOOKSCOPE_SYMSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "injector/symbols/symfs.h"

/* How locate.h asks for a file a symbol server may have. */
typedef struct hs_symfetch {
    /* NAME of the build KEY from the server at url, into cache (its store
     * layout). Waits for it. Returns the file's path in the cache
     * (malloc'd), or NULL: not got (its one line already printed; a file
     * not got is never asked for again in this run). */
    char *(*get)(void *ctx, const char *url, const char *cache, const char *name, const char *key);
    /* The same, started without waiting for it (a later get waits). */
    void (*start)(void *ctx, const char *url, const char *cache, const char *name, const char *key);
    /* The i-th failure line of this run (malloc'd), or NULL past the last. */
    char *(*message)(void *ctx, size_t i);
    void *ctx;
} hs_symfetch;

/* The client over WinHTTP (Windows; NULL elsewhere). One per process; its
 * downloads stop at HOOKSCOPE_SYMSRV_TIMEOUT seconds without an answer
 * (default 10), and at their deadline: twice that, and that again per MB
 * that came. */
const hs_symfetch *hs_symfetch_host(void);

/* The places of a search path, in order: entries separated by ';' are
 *   DIR                          a folder (DIR/NAME)
 *   srv*DIR[*DIR...][*URL...]    stores (DIR/NAME/KEY/NAME) and servers
 *   symsrv*symsrv.dll*DIR*URL    the same
 *   cache*DIR                    a store, where later entries' servers keep
 *                                what they get when their entry has no DIR
 * (the words in any case). A server keeps its files in its entry's first
 * DIR, else in the last cache*DIR before it. */
typedef enum hs_place_kind { HS_PLACE_DIR, HS_PLACE_STORE, HS_PLACE_SERVER } hs_place_kind;

typedef struct hs_place {
    hs_place_kind kind;
    const char *path;           /* the folder, or the server's URL */
    const char *cache;          /* a server's: where its files are kept, or NULL */
} hs_place;

/* What a walk carries from one search path to the next (the last
 * cache*DIR): zero it before the first, hs_symwalk_end after the last. */
typedef struct hs_symwalk {
    char *cache;
} hs_symwalk;

/* Every place of list to visit, in order, until visit returns nonzero:
 * that value is returned (0: every place visited; -1: out of memory). */
int hs_symstore_walk(hs_symwalk *w, const char *list, int (*visit)(void *ctx, const hs_place *place), void *ctx);
void hs_symwalk_end(hs_symwalk *w);

/* The first fault of a search path, as one line in err: an entry that
 * names nothing (srv*, cache*), a server that is not http:// or https://
 * or outside a srv* entry, a folder that is a file (fs: NULL, not looked
 * at). 0: none; -1: err set. A folder entry that is not there is no
 * fault: warn says it (the first; "" when none; warn may be NULL). */
int hs_symstore_check(const char *list, const hs_symfs *fs, char *err, size_t errlen, char *warn, size_t warnlen);

/* Whether a search path names a symbol server (an http:// or https://
 * part of a srv* or symsrv* entry). */
bool hs_symstore_has_server(const char *list);

/* An image's KEY in a store: its TimeDateStamp (8 hex digits) and its
 * SizeOfImage (hex), as symstore names the folder: "5C2ADDC71ef000". */
void hs_symstore_image_key(uint32_t timestamp, uint32_t size, char out[18]);

/* The compressed form's name: "pdbc.pdb" -> "pdbc.pd_" (malloc'd; NULL:
 * out of memory, as for hs_symstore_url_path). */
char *hs_symstore_compressed_name(const char *name);

/* The server's path of a file: base (the URL's path, "" or "/symbols/")
 * + "/" NAME "/" KEY "/" file; one '/' between parts (malloc'd). */
char *hs_symstore_url_path(const char *base, const char *name, const char *key, const char *file);

/* A file.ptr's text (not NUL-terminated): 1 and out = the path after
 * "PATH:", 2 and out = the message after "MSG:", 0 for anything else.
 * Trailing blanks and line ends are dropped. */
int hs_symstore_parse_ptr(const char *text, size_t n, char *out, size_t outlen);

#endif
