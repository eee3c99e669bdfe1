/* The delay line's adaptive scheduling class (delayline_sched.h). */
#include "testbed/delayline_sched.h"

#include "testbed/delayline.h"

#include <sched.h>
#include <string.h>

int mpilab_dl_adapt_want(const mpilab_dl_adapt *a, size_t held, int64_t now)
{
    if (held >= MPILAB_DL_ADAPT_HELD)
        return 1;
    /* a stream pauses between windows: stay real-time for a while after it */
    return a->fifo && now - a->stream_ns < MPILAB_DL_ADAPT_COOL_NS;
}

int mpilab_dl_adapt_step(mpilab_dl_adapt *a, size_t held, int64_t now)
{
    if (!a->on)
        return 0;
    if (held >= MPILAB_DL_ADAPT_HELD)
        a->stream_ns = now;
    int want = mpilab_dl_adapt_want(a, held, now);
    if (want == a->fifo)
        return 0;
    struct sched_param sp;
    memset(&sp, 0, sizeof(sp));
    sp.sched_priority = want ? a->priority : 0;
    if (sched_setscheduler(0, want ? SCHED_FIFO : SCHED_OTHER, &sp) != 0) {
        a->refused++;
        a->on = 0;
        return -1;
    }
    if (a->fifo)
        a->fifo_ns += now - a->since_ns;
    a->since_ns = now;
    a->fifo = want;
    a->to_fifo += (uint64_t)want;
    return 1;
}

int64_t mpilab_dl_adapt_fifo_ns(const mpilab_dl_adapt *a, int64_t now)
{
    return a->fifo_ns + (a->fifo ? now - a->since_ns : 0);
}

int mpilab_dl_start_class(const mpilab_dl_options *opt, int root)
{
    if (opt->rt_adaptive)
        return MPILAB_DL_CLASS_ADAPTIVE;
    if (opt->realtime == MPILAB_DL_RT_ON)
        return MPILAB_DL_CLASS_FIFO;
    if (opt->realtime == MPILAB_DL_RT_OFF || !root || mpilab_dl_busy(opt))
        return MPILAB_DL_CLASS_NORMAL;
    return opt->io_packet ? MPILAB_DL_CLASS_ADAPTIVE : MPILAB_DL_CLASS_FIFO;
}
