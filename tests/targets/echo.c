/* echo: prints its arguments one per line, copies stdin to stdout, and
 * exits with the code given by -x N (default 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void show(int i, const char *a)
{
    printf("arg %d: [%s]\n", i, a);
}

int main(int argc, char **argv)
{
    int code = 0, read_stdin = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-x") && i + 1 < argc)
            code = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i"))
            read_stdin = 1;
        else
            show(i, argv[i]);
    }
    if (read_stdin) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
            fwrite(buf, 1, n, stdout);
    }
    fprintf(stderr, "to stderr\n");
    return code;
}
