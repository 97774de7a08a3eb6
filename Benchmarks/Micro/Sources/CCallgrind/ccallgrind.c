#include "ccallgrind.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define MICRO_HAVE_CALLGRIND 1
#endif
#endif

#ifdef MICRO_HAVE_CALLGRIND
void micro_callgrind_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void micro_callgrind_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
int micro_running_on_valgrind(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }
#else
void micro_callgrind_start(void) {}
void micro_callgrind_stop(void) {}
int micro_running_on_valgrind(void) { return 0; }
#endif
