/*
 * injector/output/svgtext.h - text inside an SVG document: names made
 * valid UTF-8 without control characters, XML-escaped, and JSON strings
 * that may sit in a <script> section.
 */
#ifndef HOOKSCOPE_SVGTEXT_H
#define HOOKSCOPE_SVGTEXT_H

#include <stddef.h>
#include <stdio.h>

/* Copy s into buf (len > 0) as valid UTF-8: bytes of invalid sequences
 * and control characters become '?'; cut at a character boundary to
 * fit. Returns buf. */
char *hs_svg_clean(const char *s, char *buf, size_t len);

/* The number of characters (code points) of valid UTF-8 text. */
size_t hs_utf8_chars(const char *s);

/* The first n characters of valid UTF-8 text, as a byte count. */
size_t hs_utf8_prefix(const char *s, size_t n);

/* s (valid UTF-8) with & < > " ' escaped, for text and attributes. */
void hs_xml_text(FILE *out, const char *s);

/* s (valid UTF-8) as a JSON string literal with '<', '>' and '&'
 * escaped too, so that it never ends a CDATA section or a script. */
void hs_js_string(FILE *out, const char *s);

#endif
