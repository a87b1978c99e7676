/*
 * injector/symbols/undecorate.h - C++ names as people write them: Itanium
 * names (_Z...) through the C++ runtime's demangler, MSVC names (?...)
 * through DbgHelp's UnDecorateSymbolName on Windows. gcc clone suffixes
 * stay (_Z3foov.constprop.0 is demangled with its suffix kept by the
 * runtime's demangler).
 */
#ifndef HOOKSCOPE_UNDECORATE_H
#define HOOKSCOPE_UNDECORATE_H

/* malloc'd: the undecorated name, or a copy of `name`. */
char *hs_undecorate(const char *name);

#endif
