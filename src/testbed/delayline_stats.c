/* The delay line's statistics file (--stats): written whole, under a temporary name and
 * renamed, at exit and on SIGUSR1. */
#include "testbed/delayline.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#include <jansson.h>

#include "common/common.h"

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

/* --rt-adaptive: switches into SCHED_FIFO, time spent there, refusals */
static json_t *adapt_json(const mpilab_dl_adapt *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    return json_pack("{s:b, s:I, s:f, s:I, s:I, s:f}", "active", a->on,
                     "to_fifo", (json_int_t)a->to_fifo,
                     "fifo_s", (double)mpilab_dl_adapt_fifo_ns(a, now) * 1e-9,
                     "refused", (json_int_t)a->refused, "stream_packets",
                     (json_int_t)MPILAB_DL_ADAPT_HELD, "cool_s",
                     (double)MPILAB_DL_ADAPT_COOL_NS * 1e-9);
}

int mpilab_dl_write_stats(const mpilab_dl_options *opt, const mpilab_dl_stats *st,
                          const mpilab_dl_sched *sc, int running, const mpilab_dl_legs *legs,
                          json_t *io)
{
    if (!opt->stats)
        return 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    json_t *o = json_pack("{s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:b, "
                          "s:s, s:i, s:b}",
        "dev", opt->dev ? opt->dev : "", "delay_s", (double)opt->delay_ns * 1e-9,
        "buffer_bytes", (json_int_t)opt->buffer,
        "packets", (json_int_t)st->packets, "bytes", (json_int_t)st->bytes,
        "dropped", (json_int_t)st->dropped, "dropped_bytes", (json_int_t)st->dropped_bytes,
        "write_errors", (json_int_t)st->write_errors,
        "late_mean_s", st->packets ? st->late_sum_s / (double)st->packets : 0.0,
        "late_max_s", st->late_max_s, "max_held_bytes", (json_int_t)st->max_held_bytes,
        "cpu_user_s", tv_s(ru.ru_utime), "cpu_sys_s", tv_s(ru.ru_stime),
        "running", running, "sched", sc->fifo || sc->adapt.fifo ? "fifo" : "other",
        "rt_priority", sc->adapt.on ? sc->adapt.priority : sc->priority,
        "mlocked", sc->mlocked);
    if (o) {
        json_object_set_new(o, "idle_poll", json_boolean(sc->idle_poll));
        json_object_set_new(o, "cpu", json_integer(sc->cpu));
        if (opt->rt_adaptive || sc->adapt.on) /* asked for, or auto on packet sockets */
            json_object_set_new(o, "adaptive", adapt_json(&sc->adapt));
        /* the trim taken off every hold (measured from outside: the path's own cost) */
        json_object_set_new(o, "trim_s", json_real((double)st->trim_ns * 1e-9));
        json_object_set_new(o, "hold_s", json_real((double)st->hold_ns * 1e-9));
        json_object_set_new(o, "trim_reads", json_integer((json_int_t)st->trim_reads));
        json_object_set_new(o, "cold_crossing", mpilab_dl_cold_json(st, legs, opt->cold));
        json_t *w = mpilab_dl_wait_json(st, opt->spin_last_ns);
        if (w)
            json_object_update(o, w);
        json_decref(w);
    }
    json_t *hist = json_array();
    for (int b = 0; o && hist && b < MPILAB_DL_LATE_BUCKETS; b++)
        json_array_append_new(hist, json_integer((json_int_t)st->late_hist[b]));
    if (o && hist) {
        json_object_set_new(o, "late_hist", hist);
        json_object_set_new(o, "late_hist_bounds_s", json_pack("[f,f,f,f]", 1e-5, 1e-4, 1e-3, 1e-2));
        /* per-packet lateness percentiles (upper bounds of 19%-wide bins): what a lone
         * packet sees is the low end, what a busy line does the high end */
        json_object_set_new(o, "late_percentiles_s",
                            json_pack("{s:f,s:f,s:f,s:f}", "p50", mpilab_dl_late_quantile(st, 0.5), "p90",
                                      mpilab_dl_late_quantile(st, 0.9), "p99", mpilab_dl_late_quantile(st, 0.99),
                                      "max", st->late_max_s));
        json_object_set_new(o, "wake_margin_s", json_real((double)mpilab_dl_wake_margin(st) * 1e-9));
        json_object_set_new(o, "spun_releases", json_integer((json_int_t)st->spins));
        json_object_set_new(o, "arrivals_kernel_stamped", json_integer((json_int_t)st->kstamped));
        json_object_set_new(o, "arrivals_compensated", json_integer((json_int_t)st->compensated));
        json_object_set_new(o, "arrival_comp_mean_s",
                            json_real(st->compensated ? st->comp_sum_s / (double)st->compensated : 0.0));
        json_object_set_new(o, "busy_poll", json_boolean(st->busy));
        json_object_set_new(o, "leg_tap", json_boolean(st->legs));
        json_object_set_new(o, "arrivals_ingress_stamped", json_integer((json_int_t)st->ingress_stamped));
        json_object_set_new(o, "router", mpilab_dl_router_json(st));
        if (io)
            json_object_set(o, "io", io);
    } else {
        json_decref(hist);
    }
    json_decref(io);
    if (!o) {
        fprintf(stderr, "mpilab-delayline: out of memory\n");
        return -1;
    }
    char err[512];
    int rc = mpilab_json_write_atomic(opt->stats, o, err, sizeof(err));
    json_decref(o);
    if (rc != 0)
        fprintf(stderr, "mpilab-delayline: %s\n", err);
    return rc;
}
