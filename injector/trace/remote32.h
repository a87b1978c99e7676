/*
 * injector/trace/remote32.h - the 32-bit side of a WOW64 process, seen
 * from 64-bit hookscope: its modules and the addresses of their exports
 * (a module of a process's list by name for either width: the agent's
 * too).
 *
 * Our own LoadLibraryW is no use in a 32-bit process: its kernel32 is
 * another (the i386 one), at an address only the process knows. And a
 * process created suspended has not loaded it yet: only the exe and the
 * i386 ntdll are mapped (the loader's module list is not even there), so
 * the injector first starts a thread at ntdll's RtlExitUserThread, which
 * completes the process's initialisation (every first thread of a process
 * does) and ends; after it the module list names kernel32.
 */
#ifndef HOOKSCOPE_REMOTE32_H
#define HOOKSCOPE_REMOTE32_H

#include <stdbool.h>
#include <stdint.h>
#include <windows.h>

/* The base of module `name` (a base name, "kernel32.dll") in the loader's
 * module list of `process`, its 32-bit one (x86: a WOW64 process's) or its
 * 64-bit one: 1 and *base; 0 when it is not listed; -1 when the list
 * cannot be read (a process not initialised yet). */
int hs_remote_module(HANDLE process, bool x86, const wchar_t *name, uint64_t *base);

/* The base of the i386 ntdll.dll mapped in `process`, found among its
 * image mappings (so also before the process is initialised); 0 if none. */
uint64_t hs_remote32_ntdll(HANDLE process);

/* The address of export `name` of the 32-bit image at `base` in
 * `process`, read from the image's own export table there (a forwarder,
 * "KERNELBASE.LoadLibraryW", followed to the module it names); 0 when it
 * has none. */
uint64_t hs_remote32_export(HANDLE process, uint64_t base, const char *name);

#endif
