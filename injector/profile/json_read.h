/*
 * injector/profile/json_read.h - a small JSON reader: the whole text into a tree
 * of values, for reading report.json back. Numbers keep their text, so
 * 64-bit counts are read exactly. Errors name the line and column.
 */
#ifndef HOOKSCOPE_JSON_H
#define HOOKSCOPE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hs_jtype { HS_JNULL, HS_JBOOL, HS_JNUM, HS_JSTR, HS_JARR, HS_JOBJ } hs_jtype;

typedef struct hs_json {
    hs_jtype type;
    bool b;                    /* HS_JBOOL */
    char *s;                   /* HS_JSTR: the string (UTF-8); HS_JNUM: the number's text */
    size_t n;                  /* HS_JARR, HS_JOBJ: elements */
    struct hs_json *v;         /* the elements */
    char **k;                  /* HS_JOBJ: the keys */
} hs_json;

/* Parse text[0..len). Returns NULL with a one-line reason in err. Nesting
 * is limited (256 levels). */
hs_json *hs_json_parse(const char *text, size_t len, char *err, size_t errlen);
void hs_json_free(hs_json *j);

/* The member `key` of an object, or NULL (also when obj is not an object). */
const hs_json *hs_json_get(const hs_json *obj, const char *key);

/* Typed reads with a fallback for a missing value or another type. */
bool hs_json_is(const hs_json *j, hs_jtype t);
const char *hs_json_str(const hs_json *j, const char *dflt);
uint64_t hs_json_u64(const hs_json *j, uint64_t dflt);
int64_t hs_json_i64(const hs_json *j, int64_t dflt);
double hs_json_num(const hs_json *j, double dflt);
bool hs_json_bool(const hs_json *j, bool dflt);

#endif
