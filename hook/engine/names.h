/*
 * hook/engine/names.h - functions known by name to need care: those that return
 * twice (setjmp and friends: a wrapper frame is gone when they return the
 * second time) and stack probes (__chkstk, alloca helpers: size in rax,
 * rsp moved for the caller). Used by the agent and by the injector's
 * function lists, so both decide alike.
 */
#ifndef HOOKSCOPE_NAMES_H
#define HOOKSCOPE_NAMES_H

int hs_name_returns_twice(const char *name);
int hs_name_stack_probe(const char *name);

#endif
