/*
 * hotpatch.c - a 32-bit (i686) program whose two functions have the
 * hot-patchable entry of Windows' system DLLs (gcc's ms_hook_prologue:
 * five int3 before `mov edi,edi; push ebp; mov ebp,esp`), built without
 * unwind tables (no .eh_frame FDE for them) as hotpatch.exe and, linked
 * stripped, as hotpatchs.exe. They are reached only through a table of
 * pointers, so no call or jump finds them: only their entry does.
 *
 * tests/test_wow64.py reads both with `hookscope functions`; the program
 * returns 16 (hp_one(1) + hp_two(2)).
 */
#define HOTPATCH __attribute__((ms_hook_prologue, noinline))

HOTPATCH int hp_one(int a)
{
    return a * 7;
}

HOTPATCH int hp_two(int a)
{
    return a + 9;
}

int (*volatile table[2])(int) = { hp_one, hp_two };

int main(void)
{
    return table[0](1) + table[1](2);
}
