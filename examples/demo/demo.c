/*
 * demo.c - the program `make demo` traces: a tiny expression evaluator,
 * a word counter and a few classic recursive functions, so the report
 * shows call counts of very different sizes and shapes (recursion,
 * mutual recursion, callbacks from qsort, a dispatch table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- recursion ---------------------------------------------------------- */

static unsigned long fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int is_odd(unsigned n);
static int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
static int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

static unsigned long ackermann(unsigned long m, unsigned long n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

/* ---- an expression evaluator: recursive descent ------------------------- */

typedef struct parser {
    const char *p;
} parser;

static long parse_expr(parser *ps);

static void skip_spaces(parser *ps)
{
    while (*ps->p == ' ')
        ps->p++;
}

static long parse_number(parser *ps)
{
    long v = 0;
    while (*ps->p >= '0' && *ps->p <= '9')
        v = v * 10 + (*ps->p++ - '0');
    return v;
}

static long parse_factor(parser *ps)
{
    skip_spaces(ps);
    if (*ps->p == '(') {
        ps->p++;
        long v = parse_expr(ps);
        skip_spaces(ps);
        if (*ps->p == ')')
            ps->p++;
        return v;
    }
    if (*ps->p == '-') {
        ps->p++;
        return -parse_factor(ps);
    }
    return parse_number(ps);
}

static long parse_term(parser *ps)
{
    long v = parse_factor(ps);
    for (;;) {
        skip_spaces(ps);
        char op = *ps->p;
        if (op != '*' && op != '/' && op != '%')
            return v;
        ps->p++;
        long r = parse_factor(ps);
        if (op == '*')
            v *= r;
        else if (r != 0)
            v = op == '/' ? v / r : v % r;
    }
}

static long parse_expr(parser *ps)
{
    long v = parse_term(ps);
    for (;;) {
        skip_spaces(ps);
        char op = *ps->p;
        if (op != '+' && op != '-')
            return v;
        ps->p++;
        long r = parse_term(ps);
        v = op == '+' ? v + r : v - r;
    }
}

static long evaluate(const char *text)
{
    parser ps = { text };
    return parse_expr(&ps);
}

/* ---- words: hashing, sorting with a callback ---------------------------- */

static unsigned hash_word(const char *w)
{
    unsigned h = 2166136261u;
    while (*w)
        h = (h ^ (unsigned char)*w++) * 16777619u;
    return h;
}

static int compare_words(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t split_words(char *text, char **words, size_t max)
{
    size_t n = 0;
    for (char *t = strtok(text, " ,.;\n"); t && n < max; t = strtok(NULL, " ,.;\n"))
        words[n++] = t;
    return n;
}

/* ---- a dispatch table ---------------------------------------------------- */

static long op_square(long x) { return x * x; }
static long op_negate(long x) { return -x; }
static long op_double(long x) { return 2 * x; }

static long (*const ops[])(long) = { op_square, op_negate, op_double };

static long apply_all(long x)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        x = ops[i](x);
    return x;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 24;
    printf("fib(%u) = %lu\n", n, fib(n));
    printf("is_even(1001) = %d\n", is_even(1001));
    printf("ackermann(2, 3) = %lu\n", ackermann(2, 3));

    static const char *exprs[] = { "1 + 2 * 3", "(4 + 5) * (2 - 7)", "-(3 * 3) + 100 / 7 % 5",
                                   "((((1))))+((2))*3" };
    for (size_t i = 0; i < sizeof exprs / sizeof *exprs; i++)
        printf("%s = %ld\n", exprs[i], evaluate(exprs[i]));

    char text[] = "the quick brown fox jumps over the lazy dog, the dog sleeps; "
                  "a fox is quick. the end";
    char *words[64];
    size_t nw = split_words(text, words, 64);
    qsort(words, nw, sizeof *words, compare_words);
    unsigned h = 0;
    for (size_t i = 0; i < nw; i++)
        h ^= hash_word(words[i]);
    printf("%zu words, first '%s', last '%s', hash %08x\n", nw, words[0], words[nw - 1], h);

    long x = 3;
    for (int i = 0; i < 5; i++)
        x = apply_all(x) % 1000003;
    printf("apply_all^5(3) = %ld\n", x);
    return 0;
}
