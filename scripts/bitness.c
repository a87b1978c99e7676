/* bitness.c - the program scripts/deps32.sh runs under each of Wine's
 * loaders: built for x86-64 and for i686, it prints "64-bit" or "32-bit". */
#include <stdio.h>

int main(void)
{
    printf("%d-bit\n", (int)sizeof(void *) * 8);
    return 0;
}
