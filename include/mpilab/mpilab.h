/* mpilab: every public header in one include. */
#ifndef MPILAB_H
#define MPILAB_H

#include "mpilab/version.h"
#include "mpilab/parse.h"
#include "mpilab/stats.h"
#include "mpilab/clocksync.h"
#include "mpilab/ops.h"
#include "mpilab/p2p.h"
#include "mpilab/bench.h"
#include "mpilab/coll.h"
#include "mpilab/model.h"
#include "mpilab/loggp.h"
#include "mpilab/robust.h"
#include "mpilab/wtime.h"
#include "mpilab/placement.h"
#include "mpilab/selftest.h"
#include "mpilab/suite.h"
#include "mpilab/wavefront.h"
#include "mpilab/results.h"
#include "mpilab/models.h"
#include "mpilab/runner.h"
#include "mpilab/forced.h"
#include "mpilab/wait.h"

#endif
