/*
 * injector/output/flametree.c - see flametree.h.
 */
#include "injector/output/flametree.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

static uint64_t kid_hash(uint32_t parent, uint32_t name)
{
    uint64_t h = ((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

static uint32_t find_kid(const hs_flametree *t, uint32_t parent, uint32_t name)
{
    if (t->nodes[parent].nkids <= HS_FKIDS_LISTED) {
        for (uint32_t k = t->nodes[parent].first; k != HS_FNONE; k = t->nodes[k].next)
            if (t->nodes[k].name == name)
                return k;
        return HS_FNONE;
    }
    size_t cursor = 0;
    uint32_t k;
    while (hs_map_next(&t->kids, kid_hash(parent, name), 0, &cursor, &k))
        if (t->nodes[k].parent == parent && t->nodes[k].name == name)
            return k;
    return HS_FNONE;
}

static uint32_t add_node(hs_flametree *t, uint32_t parent, uint32_t name)
{
    hs_xgrow(&t->nodes, &t->cap, t->n + 1, sizeof *t->nodes);
    uint32_t k = (uint32_t)t->n++;
    hs_fnode *d = &t->nodes[k];
    memset(d, 0, sizeof *d);
    d->name = name;
    d->parent = parent;
    d->first = d->next = HS_FNONE;
    if (parent != HS_FNONE) {
        d->depth = t->nodes[parent].depth + 1;
        d->next = t->nodes[parent].first;
        hs_fnode *up = &t->nodes[parent];
        up->first = k;
        if (d->depth > t->max_depth)
            t->max_depth = d->depth;
        /* a parent's children go into the map once it has more than can
         * be walked quickly, and from then on as they come */
        if (++up->nkids == HS_FKIDS_LISTED + 1) {
            for (uint32_t c = up->first; c != HS_FNONE; c = t->nodes[c].next)
                hs_map_xadd(&t->kids, kid_hash(parent, t->nodes[c].name), 0, c);
        } else if (up->nkids > HS_FKIDS_LISTED) {
            hs_map_xadd(&t->kids, kid_hash(parent, name), 0, k);
        }
    }
    return k;
}

/* The name of a frame: "module!function", "module+0xoff" or "0xaddr". */
static const char *frame_name(const hs_profile *p, hs_loc l, char *buf, size_t len)
{
    return hs_loc_format(p, hs_frame_key(l), true, false, buf, len);
}

/* The name of a frame key, given on its first sight (in the stacks'
 * order, so that a name's function and module are its first key's). */
static uint32_t key_name(hs_flametree *t, const hs_profile *p, hs_loc key, hs_frametab *keys, uint32_t **names,
                         size_t *cap)
{
    if (key.func >= 0 && t->func_name[key.func] >= 0)
        return (uint32_t)t->func_name[key.func];
    size_t known = keys->n;
    uint32_t ki = key.func >= 0 ? 0 : hs_frametab_add(keys, key);
    if (key.func < 0 && keys->n == known)
        return (*names)[ki];
    char buf[600];
    size_t before = t->names.n;
    uint32_t name = hs_strtab_add(&t->names, frame_name(p, key, buf, sizeof buf));
    if (t->names.n > before) {
        size_t ncap = t->names_cap;
        hs_xgrow(&t->name_func, &ncap, t->names.n, sizeof *t->name_func);
        hs_xgrow(&t->name_module, &t->names_cap, t->names.n, sizeof *t->name_module);
        t->name_func[name] = key.func;
        t->name_module[name] = hs_loc_module(p, key);
    }
    if (key.func >= 0) {
        t->func_name[key.func] = (int32_t)name;
    } else {
        hs_xgrow(names, cap, keys->n, sizeof **names);
        (*names)[ki] = name;
    }
    return name;
}

void hs_flametree_build(hs_flametree *t, const hs_profile *p, int kind)
{
    memset(t, 0, sizeof *t);
    t->kind = kind;
    add_node(t, HS_FNONE, HS_FNONE);
    /* each frame key is named once: a function's name is func_name[func],
     * another key's (keys[i]) key_names[i] (two keys can share a name: a
     * function in each of two modules of one name) */
    t->nfuncs = p->nfuncs;
    t->func_name = hs_xmalloc((p->nfuncs ? p->nfuncs : 1) * sizeof *t->func_name);
    for (size_t f = 0; f < p->nfuncs; f++)
        t->func_name[f] = -1;
    hs_frametab keys = { 0 };
    uint32_t *key_names = NULL;
    size_t key_cap = 0;
    /* the nodes of the last stack, root first: the next one, sorted beside
     * it, often shares its first frames, whose nodes are then known */
    const hs_prof_stack *prev = NULL;
    uint32_t *path = NULL;
    size_t path_cap = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != kind || !st->nframes || !st->count)
            continue;
        hs_xgrow(&path, &path_cap, st->nframes, sizeof *path);
        uint32_t same = 0;
        if (prev)
            while (same < st->nframes && same < prev->nframes &&
                   hs_loc_same(hs_frame_key(st->frames[st->nframes - 1 - same]),
                               hs_frame_key(prev->frames[prev->nframes - 1 - same])))
                same++;
        t->nodes[0].value += st->count;
        for (uint32_t j = 0; j < same; j++)
            t->nodes[path[j]].value += st->count;
        uint32_t at = same ? path[same - 1] : 0;
        for (uint32_t j = same; j < st->nframes; j++) {
            uint32_t name = key_name(t, p, hs_frame_key(st->frames[st->nframes - 1 - j]), &keys, &key_names, &key_cap);
            uint32_t k = find_kid(t, at, name);
            if (k == HS_FNONE)
                k = add_node(t, at, name);
            t->nodes[k].value += st->count;
            path[j] = k;
            at = k;
        }
        prev = st;
    }
    hs_frametab_free(&keys);
    free(key_names);
    free(path);
    t->total = t->nodes[0].value;
}

void hs_flametree_add_baseline(hs_flametree *t, const hs_profile *p, const hs_profile *base,
                               const int32_t *p_of_base, int kind)
{
    for (size_t i = 0; i < base->nstacks; i++) {
        const hs_prof_stack *st = &base->stacks[i];
        if (st->kind != kind || !st->nframes || !st->count)
            continue;
        uint32_t at = 0;
        t->nodes[0].base += st->count;
        for (uint32_t d = st->nframes; d-- > 0;) {
            char buf[600];
            hs_loc l = st->frames[d];
            int32_t same = l.func >= 0 ? p_of_base[l.func] : -1;
            const char *text = same >= 0 ? frame_name(p, (hs_loc){ same, -1, 0 }, buf, sizeof buf)
                                         : frame_name(base, l, buf, sizeof buf);
            int64_t name = hs_strtab_find(&t->names, text);
            uint32_t k = name < 0 ? HS_FNONE : find_kid(t, at, (uint32_t)name);
            if (k == HS_FNONE)
                break;
            t->nodes[k].base += st->count;
            at = k;
        }
    }
    t->base_total = t->nodes[0].base;
}

typedef struct kid_order {
    const hs_flametree *t;
    uint64_t narrow_below;
} kid_order;

static int cmp_kid(const void *a, const void *b, void *ctx)
{
    const kid_order *o = ctx;
    const hs_fnode *x = &o->t->nodes[*(const uint32_t *)a], *y = &o->t->nodes[*(const uint32_t *)b];
    int nx = x->value < o->narrow_below, ny = y->value < o->narrow_below;
    if (nx != ny)
        return nx - ny;
    return strcmp(o->t->names.v[x->name], o->t->names.v[y->name]);
}

void hs_flametree_layout(hs_flametree *t, uint64_t narrow_below)
{
    kid_order order = { t, narrow_below };
    uint32_t *kids = hs_xcalloc(t->n ? t->n : 1, sizeof *kids);
    /* nodes are created after their parents, so one pass in index order
     * places every parent before its children */
    for (size_t i = 0; i < t->n; i++) {
        hs_fnode *nd = &t->nodes[i];
        size_t nk = 0;
        for (uint32_t k = nd->first; k != HS_FNONE; k = t->nodes[k].next)
            kids[nk++] = k;
        hs_sort(kids, nk, sizeof *kids, cmp_kid, &order);
        uint64_t x = nd->x;
        nd->first = nk ? kids[0] : HS_FNONE;
        for (size_t j = 0; j < nk; j++) {
            hs_fnode *c = &t->nodes[kids[j]];
            c->next = j + 1 < nk ? kids[j + 1] : HS_FNONE;
            c->x = x;
            x += c->value;
        }
    }
    free(kids);
}

void hs_flametree_free(hs_flametree *t)
{
    hs_strtab_free(&t->names);
    free(t->name_func);
    free(t->name_module);
    free(t->func_name);
    free(t->nodes);
    hs_map_free(&t->kids);
    memset(t, 0, sizeof *t);
}
