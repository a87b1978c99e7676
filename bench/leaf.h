/* bench/leaf.h - the function both copies of the benchmark call: a few
 * cycles of work, so that the call itself dominates. */
#ifndef BENCH_LEAF_H
#define BENCH_LEAF_H
#define BENCH_LEAF_BODY(x) ((x) * 2862933555777941757ull + 3037000493ull)
#endif
