#ifndef CCALLGRIND_H
#define CCALLGRIND_H

/// Starts callgrind's instrumentation (a process run with --instr-atstart=no counts nothing before this). A no-op
/// outside valgrind, and where valgrind's headers were missing at build time.
void micro_callgrind_start(void);

/// Stops callgrind's instrumentation. A no-op outside valgrind.
void micro_callgrind_stop(void);

/// 1 when running under valgrind with client requests compiled in, else 0.
int micro_running_on_valgrind(void);

#endif
