/*
 * injector/output/flamegraph.c - flamegraph.svg: one self-contained,
 * interactive SVG flame graph (no network, no external files), and the
 * differential flame graph of `hookscope diff`.
 *
 * What it shows: the CPU samples when the profile has any, else the entry
 * stacks (profile/views.h, hs_flame_kind), merged root first into a
 * tree (output/flametree.h). Each frame is a box as wide as its share of
 * the stacks, its callers below it, siblings in name order; colours by
 * module (a hue per module name, the shade varied by function name;
 * kernel images all in one muted orange).
 *
 * The document:
 *
 *   <svg ...> <style/> <rect background/> title, "Reset Zoom", "Search",
 *   <g id="frames">
 *     <g class="f" data-n="N" data-x="X" data-v="V" data-d="D" [data-b="B"]>
 *       <rect x y width height fill/><text x y>label</text></g> ...
 *   </g>
 *   <text id="details"/> <text id="matched"/> <g id="tip">...</g>
 *   <script> var HS = {data}; the code </script> </svg>
 *
 * data-n indexes HS.fns ([name, module index, calls, CPU per call, calls
 * in the baseline]; -1 where unknown), data-x/data-v are the counts left
 * of the frame and in it, data-d its depth (the root "all" is 0), data-b
 * the baseline's count and data-s="1" on a frame whose share is of the
 * stacks both runs reach, HS.stotal and HS.sbtotal (diff only); a group
 * of merged narrow frames has
 * data-n="-1" and data-m="how many". The script (flamegraph_script.c)
 * zooms on click (hsZoom), resets (hsReset, Escape, "Reset Zoom"),
 * searches by regular expression (hsSearch; "Search", Ctrl+F or '/', or
 * ?s=RE in the URL) highlighting the matching frames and printing the
 * share of the stacks they cover, and shows a tooltip per frame.
 *
 * Size: frames narrower than a pixel are not drawn on their own; the
 * narrow children of a frame are drawn as one box ("N narrower frames")
 * when that box is a pixel wide. If more than HS_SVG_MAX_FRAMES boxes
 * would remain, the width below which frames are merged grows (x1.5)
 * until at most that many remain. Names in the table are cut at
 * NAME_MAX bytes. So the file holds at most 20,000 boxes of < 250 bytes
 * each, a name table of at most 20,000 names of <= 300 bytes (most
 * share names), and the ~7 KB script: about 11 MB at the very worst,
 * whatever the number of stacks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/flametree.h"
#include "injector/output/format.h"
#include "injector/output/svgtext.h"
#include "injector/output/writers.h"
#include "injector/profile/match.h"

#define WIDTH 1200
#define PAD 10
#define FRAME_H 16
#define TOP 56
#define BOTTOM 34
#define NAME_MAX 300
#define CHAR_W 7.0

extern const char hs_flamegraph_script[];

typedef struct flame {
    const hs_flametree *t;
    const hs_profile *p;         /* names, calls */
    const hs_profile *base;      /* diff: the baseline */
    uint64_t narrow_below;       /* frames with a smaller count are merged */
    uint8_t *drawn;              /* per node: 1 drawn on its own */
    uint64_t *group;             /* per node: the count of its merged narrow children (drawn if > 0) */
    uint32_t *groupn;            /* ... and how many they are */
    int32_t *fn_of_name;         /* per tree name: its index in HS.fns, -1 until used */
    uint32_t *fn_names;          /* HS.fns in order: tree names (HS_FNONE: "all") */
    size_t nfns;
    uint32_t max_depth;
    double max_delta;            /* diff: the largest change of share of a drawn node */
    uint8_t *in_both;            /* diff, per node: its top frame (under the root) is reached by
                                    both runs, so its share is of those stacks alone */
    uint64_t both_total, both_base;   /* the stacks under such top frames, in each run */
} flame;

static double px(const flame *f, uint64_t v)
{
    return f->t->total ? (double)v * (WIDTH - 2 * PAD) / (double)f->t->total : 0;
}

/* Mark what is drawn when frames with counts below narrow_below are
 * merged; returns the number of boxes. */
static size_t mark(flame *f, uint64_t narrow_below)
{
    const hs_flametree *t = f->t;
    size_t boxes = 0;
    memset(f->drawn, 0, t->n);
    memset(f->group, 0, t->n * sizeof *f->group);
    memset(f->groupn, 0, t->n * sizeof *f->groupn);
    f->max_depth = 0;
    for (size_t i = 0; i < t->n; i++) {
        const hs_fnode *nd = &t->nodes[i];
        if (i > 0 && !f->drawn[nd->parent])
            continue;
        if (i > 0 && nd->value < narrow_below) {
            f->group[nd->parent] += nd->value;
            f->groupn[nd->parent]++;
            continue;
        }
        f->drawn[i] = 1;
        boxes++;
        if (nd->depth > f->max_depth)
            f->max_depth = nd->depth;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (!f->group[i])
            continue;
        if (f->group[i] < narrow_below) {
            f->group[i] = 0;
        } else {
            boxes++;
            if (t->nodes[i].depth + 1 > f->max_depth)
                f->max_depth = t->nodes[i].depth + 1;
        }
    }
    return boxes;
}

/* ---- colours ----------------------------------------------------------------- */

static uint32_t fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void hsl_hex(double h, double s, double l, char *buf)
{
    double c = (1 - fabs(2 * l - 1)) * s, hp = h / 60.0;
    double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2;
    double r = 0, g = 0, b = 0;
    if (hp < 1) { r = c; g = x; }
    else if (hp < 2) { r = x; g = c; }
    else if (hp < 3) { g = c; b = x; }
    else if (hp < 4) { g = x; b = c; }
    else if (hp < 5) { r = x; b = c; }
    else { r = c; b = x; }
    snprintf(buf, 8, "#%02x%02x%02x", (int)lround((r + m) * 255), (int)lround((g + m) * 255),
             (int)lround((b + m) * 255));
}

static void module_colour(const flame *f, uint32_t name, char *buf)
{
    const hs_flametree *t = f->t;
    int32_t m = t->name_module[name];
    if (m < 0) {
        snprintf(buf, 8, "#c8c8c8");
        return;
    }
    double shade = (double)(fnv(t->names.v[name]) % 1000) / 1000.0;
    if (f->p->modules[m].kernel) {
        /* the kernel's frames all in one muted orange, as flamegraph.pl's */
        hsl_hex(28, 0.45, 0.58 + 0.14 * shade, buf);
        return;
    }
    double hue = (double)(fnv(f->p->modules[m].name) % 360);
    hsl_hex(hue, 0.62, 0.56 + 0.14 * shade, buf);
}

/* The change of a frame's inclusive share (B's minus A's). A frame under
 * a top frame that both runs reach (in_both) takes its share of the
 * stacks under such frames only: a stack that only one run has (an
 * unrooted sample, a thread of its own) changes no other frame's colour,
 * so one stray sample cannot paint main blue in a run that got slower.
 * Other frames, and the root's narrow group, take their share of all. */
static double delta(const flame *f, size_t node, uint64_t v, uint64_t b)
{
    bool both = node && f->in_both && f->in_both[node];
    uint64_t tv = both ? f->both_total : f->t->total, tb = both ? f->both_base : f->t->base_total;
    double a = tv ? (double)v / (double)tv : 0;
    double z = tb ? (double)b / (double)tb : 0;
    return a - z;
}

/* Which nodes stand under a top frame both runs reach, and how many
 * stacks each run has under such frames (a child comes after its parent
 * in the tree's node order). */
static void mark_in_both(flame *f)
{
    const hs_flametree *t = f->t;
    f->in_both = hs_xcalloc(t->n + 1, 1);
    for (size_t i = 1; i < t->n; i++) {
        const hs_fnode *nd = &t->nodes[i];
        if (nd->parent == 0) {
            f->in_both[i] = nd->value > 0 && nd->base > 0;
            if (f->in_both[i]) {
                f->both_total += nd->value;
                f->both_base += nd->base;
            }
        } else {
            f->in_both[i] = f->in_both[nd->parent];
        }
    }
}

/* grown: red, shrunk: blue, unchanged: grey; deeper for larger changes */
static void diff_colour(const flame *f, size_t node, uint64_t v, uint64_t b, char *buf)
{
    double d = delta(f, node, v, b);
    double k = f->max_delta > 0 ? fabs(d) / f->max_delta : 0;
    if (fabs(d) < 1e-12)
        k = 0;
    int r0 = 224, g0 = 224, b0 = 224;
    int r1 = d > 0 ? 214 : 40, g1 = d > 0 ? 39 : 90, b1 = d > 0 ? 40 : 214;
    snprintf(buf, 8, "#%02x%02x%02x", (int)lround(r0 + (r1 - r0) * k), (int)lround(g0 + (g1 - g0) * k),
             (int)lround(b0 + (b1 - b0) * k));
}

/* ---- the document ---------------------------------------------------------------- */

static int32_t fn_index(flame *f, uint32_t name)
{
    size_t slot = name == HS_FNONE ? f->t->names.n : name;   /* the root's is last */
    if (f->fn_of_name[slot] < 0) {
        f->fn_of_name[slot] = (int32_t)f->nfns;
        f->fn_names[f->nfns++] = name;
    }
    return f->fn_of_name[slot];
}

/* The label that fits in w px. */
static void label(FILE *out, const char *name, double w)
{
    long n = (long)floor((w - 6) / CHAR_W);
    if (n < 3)
        return;
    size_t chars = hs_utf8_chars(name);
    if ((size_t)n >= chars) {
        hs_xml_text(out, name);
        return;
    }
    size_t cut = hs_utf8_prefix(name, (size_t)n - 2);
    char *s = hs_xstrndup(name, cut);
    hs_xml_text(out, s);
    fputs("..", out);
    free(s);
}

/* The function name of a tree name (without its module), cleaned. */
static const char *display_name(const flame *f, uint32_t name, char *buf, size_t len)
{
    const hs_flametree *t = f->t;
    int32_t fi = t->name_func[name];
    return hs_svg_clean(fi >= 0 ? hs_func_label(f->p, (uint32_t)fi) : t->names.v[name], buf, len);
}

static void box(flame *f, FILE *out, size_t node, int32_t fn, uint64_t x, uint64_t v, uint64_t b, uint32_t depth,
                uint32_t merged, const char *fill, const char *text)
{
    double bx = PAD + px(f, x), bw = px(f, v);
    int y = TOP + (int)(f->max_depth - depth) * FRAME_H;
    fprintf(out, "<g class=\"f%s\" data-n=\"%d\"", merged ? " m" : "", fn);
    if (merged)
        fprintf(out, " data-m=\"%u\"", merged);
    fprintf(out, " data-x=\"%llu\" data-v=\"%llu\" data-d=\"%u\"", (unsigned long long)x,
            (unsigned long long)v, depth);
    if (f->base)
        fprintf(out, " data-b=\"%llu\"%s", (unsigned long long)b, node && f->in_both[node] ? " data-s=\"1\"" : "");
    fprintf(out, "><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">",
            bx, y, bw, FRAME_H - 1, fill, bx + 3, y + FRAME_H - 4);
    label(out, text, bw);
    fputs("</text></g>\n", out);
}

static void write_data(flame *f, FILE *out, const char *unit, const int64_t *bcalls)
{
    const hs_flametree *t = f->t;
    const hs_profile *p = f->p;
    fprintf(out, "var HS = {\"w\": %d, \"pad\": %d, \"fh\": %d, \"total\": %llu, \"btotal\": %llu, "
                 "\"diff\": %s, \"unit\": \"%s\",\n\"mods\": [",
            WIDTH, PAD, FRAME_H, (unsigned long long)t->total, (unsigned long long)t->base_total,
            f->base ? "true" : "false", unit);
    if (f->base)   /* the stacks under top frames both runs reach (data-s frames' shares) */
        fprintf(out, "\"stotal\": %llu, \"sbtotal\": %llu,\n", (unsigned long long)f->both_total,
                (unsigned long long)f->both_base);
    /* the modules of the frames drawn, by name, in the order first named;
     * per frame name, the calls and CPU of every function of that name
     * (two modules of one name, loaded twice, are one frame name) */
    hs_strtab mods = { 0 };
    uint64_t *calls = hs_xcalloc(t->names.n + 1, sizeof *calls), *cpu_total = hs_xcalloc(t->names.n + 1, sizeof *cpu_total);
    double *wall = hs_xcalloc(t->names.n + 1, sizeof *wall);   /* measured, of every call; < 0: not all */
    uint8_t *hooked = hs_xcalloc(t->names.n + 1, 1);
    for (size_t i = 0; i < p->nfuncs; i++) {
        const hs_prof_func *pf = &p->funcs[i];
        if (!pf->hooked && !pf->calls && !pf->cpu_total)
            continue;
        /* its name in the tree, or one another function there has */
        int64_t k = t->func_name[i];
        if (k < 0) {
            char key[600];
            hs_loc l = { (int32_t)i, -1, 0 };
            k = hs_strtab_find(&t->names, hs_loc_format(p, l, true, false, key, sizeof key));
        }
        if (k < 0)
            continue;
        calls[k] += pf->calls;
        cpu_total[k] += pf->cpu_total;
        double w = pf->calls ? hs_func_wall_ns(p, (uint32_t)i) : pf->cpu_total ? -1 : 0;
        wall[k] = w < 0 || wall[k] < 0 ? -1 : wall[k] + w;
        hooked[k] |= pf->hooked || pf->calls;
    }
    for (size_t k = 0; k < f->nfns; k++) {
        uint32_t name = f->fn_names[k];
        int32_t m = name == HS_FNONE ? -1 : t->name_module[name];
        if (m >= 0 && hs_strtab_find(&mods, p->modules[m].name) < 0) {
            char buf[NAME_MAX + 8];
            fprintf(out, "%s", mods.n ? ", " : "");
            hs_js_string(out, hs_svg_clean(p->modules[m].name, buf, sizeof buf));
            hs_strtab_add(&mods, p->modules[m].name);
        }
    }
    fprintf(out, "],\n\"fns\": [");
    for (size_t k = 0; k < f->nfns; k++) {
        uint32_t name = f->fn_names[k];
        char buf[NAME_MAX + 8], cpu[128] = "";
        int32_t m = name == HS_FNONE ? -1 : t->name_module[name];
        int32_t mod = m < 0 ? -1 : (int32_t)hs_strtab_find(&mods, p->modules[m].name);
        long long ncalls = name != HS_FNONE && hooked[name] ? (long long)calls[name] : -1;
        if (name != HS_FNONE && calls[name] && cpu_total[name]) {
            hs_cpu_estimate e = hs_cpu_estimate_of(p, cpu_total[name], calls[name], p->time_on ? wall[name] : -1);
            char t[32];
            if (e.per_call_ns >= 0 && e.capped)
                snprintf(cpu, sizeof cpu, "%s (the measured wall time per call: the samples' estimate was above it)",
                         hs_fmt_estimate(&e, e.per_call_ns, t, sizeof t));
            else if (e.per_call_ns >= 0)
                snprintf(cpu, sizeof cpu, "%s (estimated from %llu samples)",
                         hs_fmt_estimate(&e, e.per_call_ns, t, sizeof t), (unsigned long long)e.samples);
        }
        fprintf(out, "%s\n[", k ? "," : "");
        hs_js_string(out, name == HS_FNONE ? "all" : display_name(f, name, buf, sizeof buf));
        fprintf(out, ", %d, %lld, \"%s\", %lld]", mod, ncalls, cpu,
                name != HS_FNONE && bcalls ? (long long)bcalls[name] : -1LL);
    }
    fprintf(out, "]};\n");
    hs_strtab_free(&mods);
    free(calls);
    free(cpu_total);
    free(wall);
    free(hooked);
}

static int write_svg(flame *f, FILE *out, const char *title, const int64_t *bcalls)
{
    const hs_flametree *t = f->t;
    size_t n = t->n;
    f->drawn = hs_xcalloc(n, 1);
    f->group = hs_xcalloc(n, sizeof *f->group);
    f->groupn = hs_xcalloc(n, sizeof *f->groupn);
    f->fn_of_name = hs_xmalloc((t->names.n + 1) * sizeof *f->fn_of_name);
    for (size_t i = 0; i <= t->names.n; i++)
        f->fn_of_name[i] = -1;
    f->fn_names = hs_xcalloc(t->names.n + 1, sizeof *f->fn_names);
    /* the count of a frame one pixel wide, then wider until few enough */
    double narrow = 1.0;
    for (;;) {
        f->narrow_below = (uint64_t)ceil(narrow * (double)t->total / (WIDTH - 2 * PAD));
        if (mark(f, f->narrow_below) <= HS_SVG_MAX_FRAMES)
            break;
        narrow *= 1.5;
    }
    hs_flametree_layout((hs_flametree *)t, f->narrow_below);
    /* the layout puts each frame's narrow children side by side after the
     * others: a group starts where its parent's wide children end */
    if (f->base) {
        mark_in_both(f);
        for (size_t i = 0; i < n; i++) {
            if (f->drawn[i] && fabs(delta(f, i, t->nodes[i].value, t->nodes[i].base)) > f->max_delta)
                f->max_delta = fabs(delta(f, i, t->nodes[i].value, t->nodes[i].base));
        }
    }
    int height = TOP + (int)(f->max_depth + 1) * FRAME_H + BOTTOM;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "xmlns=\"http://www.w3.org/2000/svg\">\n",
            WIDTH, height, WIDTH, height);
    fprintf(out, "<style>\n"
                 "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
                 ".f text { pointer-events: none; }\n"
                 ".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
                 ".f.hit rect { fill: #e040e0; }\n"
                 ".f.anc { opacity: 0.6; }\n"
                 "#title { font-size: 17px; }\n"
                 ".ctl { cursor: pointer; fill: #1b4f9c; }\n"
                 "#tip rect { fill: #ffffe8; stroke: #888; }\n"
                 "</style>\n");
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\"/>\n", WIDTH, height);
    fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", WIDTH / 2);
    hs_xml_text(out, title);
    fprintf(out, "</text>\n<text id=\"reset\" class=\"ctl\" x=\"%d\" y=\"46\" visibility=\"hidden\">Reset Zoom</text>\n"
                 "<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"46\" text-anchor=\"end\">Search</text>\n",
            PAD, WIDTH - PAD);
    fprintf(out, "<g id=\"frames\">\n");
    for (size_t i = 0; i < n; i++) {
        const hs_fnode *nd = &t->nodes[i];
        char fill[8], buf[NAME_MAX + 8];
        if (!f->drawn[i])
            continue;
        int32_t fn = i == 0 ? fn_index(f, HS_FNONE) : fn_index(f, nd->name);
        if (f->base)
            diff_colour(f, i, nd->value, nd->base, fill);
        else if (i == 0)
            snprintf(fill, sizeof fill, "#b4b4b4");
        else
            module_colour(f, nd->name, fill);
        box(f, out, i, fn, nd->x, nd->value, nd->base, nd->depth, 0, fill,
            i == 0 ? "all" : display_name(f, nd->name, buf, sizeof buf));
        if (f->group[i]) {
            uint64_t wide = 0, base = 0;
            for (uint32_t k = nd->first; k != HS_FNONE; k = t->nodes[k].next) {
                if (f->drawn[k])
                    wide += t->nodes[k].value;
                else
                    base += t->nodes[k].base;
            }
            char text[64];
            snprintf(text, sizeof text, "%u narrower frames", f->groupn[i]);
            if (f->base)
                diff_colour(f, i, f->group[i], base, fill);
            else
                snprintf(fill, sizeof fill, "#dcdcdc");
            box(f, out, i, -1, nd->x + wide, f->group[i], base, nd->depth + 1, f->groupn[i], fill, text);
        }
    }
    fprintf(out, "</g>\n");
    fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 12);
    fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n", WIDTH - PAD, height - 12);
    fprintf(out, "<g id=\"tip\" visibility=\"hidden\" pointer-events=\"none\"><rect id=\"tipbox\" rx=\"3\"/>"
                 "<text id=\"tiptext\"></text></g>\n");
    fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n");
    write_data(f, out, hs_stack_unit(t->kind), bcalls);
    fputs(hs_flamegraph_script, out);
    fprintf(out, "]]></script>\n</svg>\n");
    free(f->drawn);
    free(f->in_both);
    free(f->group);
    free(f->groupn);
    free(f->fn_of_name);
    free(f->fn_names);
    return ferror(out) ? -1 : 0;
}

static void title_of(const hs_profile *p, int kind, uint64_t total, char *buf, size_t len)
{
    char clean[NAME_MAX + 8];
    hs_svg_clean(hs_basename(p->target_path ? p->target_path : "?"), clean, sizeof clean);
    if (kind == HS_STACK_ENTRY) {
        char policy[128];
        hs_fmt_stack_policy(p, policy, sizeof policy);
        snprintf(buf, len, "%s: entry stacks (%llu captures, at %s)", clean, (unsigned long long)total, policy);
    } else {
        snprintf(buf, len, "%s: CPU samples (%llu samples)", clean, (unsigned long long)total);
    }
}

bool hs_flamegraph_wanted(const hs_profile *p)
{
    return hs_flame_kind(p) >= 0;
}

int hs_write_flamegraph(const hs_profile *p, FILE *out)
{
    int kind = hs_flame_kind(p);
    if (kind < 0)
        return -1;
    hs_flametree t;
    hs_flametree_build(&t, p, kind);
    char title[600];
    title_of(p, kind, t.total, title, sizeof title);
    flame f;
    memset(&f, 0, sizeof f);
    f.t = &t;
    f.p = p;
    int rc = write_svg(&f, out, title, NULL);
    hs_flametree_free(&t);
    return rc;
}

int hs_write_flamegraph_diff(const hs_profile *a, const hs_profile *b, int kind, FILE *out)
{
    hs_flametree t;
    int32_t *b_of_a = hs_match_funcs(a, b);
    hs_flametree_build(&t, b, kind);
    hs_flametree_add_baseline(&t, b, a, b_of_a, kind);
    /* the baseline's calls per name, matched by "module!function" (and
     * for two functions of one name, by their order) */
    int64_t *bcalls = hs_xcalloc(t.names.n + 1, sizeof *bcalls);
    for (size_t i = 0; i < t.names.n; i++)
        bcalls[i] = -1;
    for (size_t i = 0; i < a->nfuncs; i++) {
        const hs_prof_func *fa = &a->funcs[i];
        if (!fa->hooked && !fa->calls)
            continue;
        char buf[600];
        hs_loc la = { (int32_t)i, -1, 0 }, lb = { b_of_a[i], -1, 0 };
        int64_t k = hs_strtab_find(&t.names, lb.func >= 0 ? hs_loc_format(b, lb, true, false, buf, sizeof buf)
                                                          : hs_loc_format(a, la, true, false, buf, sizeof buf));
        if (k >= 0)
            bcalls[k] = (bcalls[k] < 0 ? 0 : bcalls[k]) + (int64_t)fa->calls;
    }
    char ta[300], tb[300], title[700];
    hs_svg_clean(hs_basename(a->target_path ? a->target_path : "?"), ta, sizeof ta);
    hs_svg_clean(hs_basename(b->target_path ? b->target_path : "?"), tb, sizeof tb);
    snprintf(title, sizeof title, "Differential %s: %s (%llu) -> %s (%llu); red grew, blue shrank",
             kind == HS_STACK_ENTRY ? "entry stacks" : "CPU samples", ta, (unsigned long long)t.base_total, tb,
             (unsigned long long)t.total);
    flame f;
    memset(&f, 0, sizeof f);
    f.t = &t;
    f.p = b;
    f.base = a;
    int rc = write_svg(&f, out, title, bcalls);
    free(bcalls);
    free(b_of_a);
    hs_flametree_free(&t);
    return rc;
}
