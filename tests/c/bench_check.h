/* Legacy spelling of the C test kit (kit.h) for the tests not yet split into named cases:
 * CHECK, CHECKF and CHECK_NEAR are the kit's (one implementation, file:line messages);
 * bench_failures is the kit's failure count and CHECK_DONE() the exit status. New tests use
 * kit.h directly with MPILAB_TEST(name) cases. */
#ifndef BENCH_CHECK_H
#define BENCH_CHECK_H
#include "kit.h"
#define bench_failures kit_failures
#define CHECK_DONE() (kit_failures ? (fprintf(stderr, "%d failure(s)\n", kit_failures), 1) : 0)
#endif
