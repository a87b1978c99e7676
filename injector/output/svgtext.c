/*
 * injector/output/svgtext.c - see svgtext.h.
 */
#include "injector/output/svgtext.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    return n;
}

char *hs_svg_clean(const char *s, char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t w = 0;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7F))) {
            if (w + 1 >= len)
                break;
            buf[w++] = '?';
            p++;
            continue;
        }
        if (w + n >= len)
            break;
        memcpy(buf + w, p, n);
        w += n;
        p += n;
    }
    buf[w] = 0;
    return buf;
}

size_t hs_utf8_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

size_t hs_utf8_prefix(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    for (; p[i]; i++)
        if ((p[i] & 0xC0) != 0x80 && n-- == 0)
            break;
    return i;
}

void hs_xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

void hs_js_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        switch (*s) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '<': fputs("\\u003c", out); break;
        case '>': fputs("\\u003e", out); break;
        case '&': fputs("\\u0026", out); break;
        default:
            if ((unsigned char)*s < 0x20)
                fprintf(out, "\\u%04x", (unsigned char)*s);
            else
                fputc(*s, out);
        }
    }
    fputc('"', out);
}
