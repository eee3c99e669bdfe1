/* mpilab-pathmigd: path migration agent for MPTCP connections (see docs/pathmig.md). */
#include "mpilab/pathmig.h"

int main(int argc, char **argv) { return mpilab_pathmig_agent_main(argc, argv); }
