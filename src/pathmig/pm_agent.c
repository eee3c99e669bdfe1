/* mpilab-pathmigd's library side: the per-node path migration agent (the paper's
 * asynchronous event thread). One event loop: kernel MPTCP events, link events, UDP probes
 * between agents, commands on a unix socket, and timers (asleep until the next probe or
 * verdict is due). This file: creating the agent from its configuration, the event loop
 * and the kernel's MPTCP and link events; the other concerns are in the files listed in
 * pm_agent.h. See docs/pathmig.md. */
#include "pathmig/pm_agent.h"
#include "common/stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/mptcp.h>

/* ---- kernel MPTCP and link events ---- */

static void fill_sub(const agent_t *ag, const pm_nl_event *e, mpilab_pm_subflow *s)
{
    memset(s, 0, sizeof(*s));
    s->laddr = e->saddr;
    s->raddr = e->daddr;
    s->lport = e->sport;
    s->rport = e->dport;
    s->backup = e->backup;
    pma_locate(ag, e->saddr, &s->lrail);
    pma_locate(ag, e->daddr, &s->rrail);
}

static void on_kernel_event(void *arg, const pm_nl_event *e)
{
    agent_t *ag = arg;
    char tok[16], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    snprintf(tok, sizeof(tok), "%08" PRIx32, e->token);
    json_t *o = json_pack("{s:s,s:s}", "type", pm_nl_event_name(e->type), "token", tok);
    if (e->saddr) {
        json_object_set_new(o, "saddr", json_string(pma_ip(e->saddr, a)));
        json_object_set_new(o, "daddr", json_string(pma_ip(e->daddr, b)));
        json_object_set_new(o, "sport", json_integer(e->sport));
        json_object_set_new(o, "dport", json_integer(e->dport));
        json_object_set_new(o, "backup", json_integer(e->backup));
        json_object_set_new(o, "server_side", json_integer(e->server_side));
    }
    if (e->error)
        json_object_set_new(o, "error", json_integer(e->error));
    pma_log_obj(ag, "kernel", o);

    mpilab_pm_conn *c = pma_find_conn(ag, e->token);
    mpilab_pm_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.now = pma_mono();
    fill_sub(ag, e, &ev.sub);
    switch (e->type) {
    case MPTCP_EVENT_CREATED:
        if (!c)
            c = pma_new_conn(ag, e->token, e->server_side, e->daddr);
        if (c && c->managed && c->server_side)
            pma_joinl_add(ag, c, e->sport, ev.sub.lrail);
        return;
    case MPTCP_EVENT_ESTABLISHED:
        if (!c)
            c = pma_new_conn(ag, e->token, e->server_side, e->daddr);
        if (!c)
            return;
        if (c->managed && c->server_side)
            pma_joinl_add(ag, c, e->sport, ev.sub.lrail);
        ev.sub.backup = 0;
        ev.kind = MPILAB_PM_EV_ESTABLISHED;
        break;
    case MPTCP_EVENT_SUB_ESTABLISHED: ev.kind = MPILAB_PM_EV_SUB_ESTABLISHED; break;
    case MPTCP_EVENT_SUB_CLOSED: ev.kind = MPILAB_PM_EV_SUB_CLOSED; break;
    case MPTCP_EVENT_SUB_PRIORITY: ev.kind = MPILAB_PM_EV_SUB_PRIORITY; break;
    case MPTCP_EVENT_CLOSED: ev.kind = MPILAB_PM_EV_CLOSED; break;
    default: return;
    }
    if (!c)
        return;
    pma_step(ag, c, &ev, NULL, 0);
    if (ev.kind == MPILAB_PM_EV_CLOSED)
        pma_forget_conn(ag, c);
}

static void on_link(void *arg, const pm_nl_link *l)
{
    agent_t *ag = arg;
    for (int r = 0; r < ag->nrails; r++) {
        if (ag->ifindex[r] != l->ifindex || ag->link_ok[r] == l->up)
            continue;
        ag->link_ok[r] = l->up;
        pma_log_obj(ag, "link", json_pack("{s:i,s:s,s:b}", "rail", r, "ifname", l->name, "up",
                                          l->up));
        if (!l->up) {
            for (int p = 0; p < ag->nnodes; p++)
                if (p != ag->self) {
                    pma_set_alive(ag, p, r, 0, "local link down");
                    ag->probe[p][r].dead_at = 0; /* usable again once the link is up */
                }
            pma_notify_down(ag, r, -1, 0);
        } else {
            /* back: resolve its neighbours now (not at the next ARP retry, up to 1 s
               away), and probe every peer on it at once, follower or decider, so that both
               ends' next hops are resolved and the replies that heal the paths start */
            char err[200];
            int n = pm_nl_renew_neighbours(l->ifindex, err, sizeof(err));
            ag->st.neigh_renewed += n > 0 ? (uint64_t)n : 0;
            if (n < 0)
                pma_log_obj(ag, "error", json_pack("{s:s,s:i,s:s}", "what", "neighbour renewal",
                                                "rail", r, "error", err));
            else
                pma_log_obj(ag, "neighbours", json_pack("{s:i,s:i}", "rail", r, "renewed", n));
            for (int p = 0; p < ag->nnodes; p++)
                if (p != ag->self) {
                    pma_send_msg(ag, r, p, MSG_PROBE, r, ++ag->probe[p][r].seq);
                    ag->probe[p][r].last_sent = pma_mono();
                }
        }
        pma_refresh_paths(ag);
        pma_step_all(ag, MPILAB_PM_EV_PATH, -1);
    }
}

/* ---- creating the agent ---- */

void mpilab_pm_agent_config_defaults(mpilab_pm_agent_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->interval = 0.010;
    cfg->timeout = 0.050;
    cfg->hold_down = 1.0;
    cfg->port = 47990;
    cfg->realtime_prio = 5;
    cfg->passive = 1;
    cfg->join_listeners = 1;
}

static int configure(agent_t *ag, const mpilab_pm_agent_config *cfg, char *err, size_t errlen)
{
    ag->node_name = cfg->node_name;
    ag->peers_path = cfg->peers_path;
    ag->ctl_path = cfg->ctl_path;
    ag->log_path = cfg->log_path;
    ag->pid_path = cfg->pid_path;
    ag->alt_spec = cfg->alt_spec;
    ag->interval = cfg->interval;
    ag->timeout = cfg->timeout;
    ag->hold_down = cfg->hold_down;
    ag->port = cfg->port;
    ag->ctx.auto_migrate = ag->ctx.auto_rearm = !cfg->manual;
    ag->passive = cfg->passive;
    ag->join_listeners = cfg->join_listeners;
    ag->realtime_prio = cfg->realtime_prio;
    if (!ag->node_name || !ag->peers_path) {
        snprintf(err, errlen, "--node and --peers are required (see --help)");
        return -1;
    }
    if (ag->timeout < 2 * ag->interval) {
        snprintf(err, errlen, "--probe-timeout must be at least twice --probe-interval");
        return -1;
    }
    if (pma_read_peers(ag, err, errlen) || pma_read_alt(ag, err, errlen) ||
        pma_check_kernel(err, errlen) || pma_find_ifaces(ag, err, errlen))
        return -1;
    if (ag->nrails < 2) {
        snprintf(err, errlen, "%s: one rail per node; no alternate path can exist",
                 ag->peers_path);
        return -1;
    }
    ag->ctx.nrails = ag->nrails;
    return 0;
}

static int open_log(agent_t *ag, char *err, size_t errlen)
{
    if (!ag->log_path) {
        ag->log = stderr;
        return 0;
    }
    ag->log = mpilab_stream_open(ag->log_path, "a");
    if (!ag->log) {
        snprintf(err, errlen, "--log %s: %s", ag->log_path, mpilab_stream_error(errno));
        return -1;
    }
    /* a fault on hundreds of connections logs thousands of lines: one write per turn of
     * the main loop, not one per line */
    setvbuf(ag->log, NULL, _IOFBF, 1 << 18);
    return 0;
}

mpilab_pm_agent *mpilab_pm_agent_create(const mpilab_pm_agent_config *cfg, char *err,
                                        size_t errlen)
{
    agent_t *ag = calloc(1, sizeof(*ag));
    if (!ag) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ag->ctl = -1;
    for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++)
        ag->udp[r] = ag->rep[r] = -1;
    ag->used_dirty = 1;
    ag->started = ag->awake_since = pma_mono();
    if (configure(ag, cfg, err, errlen) || open_log(ag, err, errlen) ||
        pm_nl_open(&ag->nl, err, errlen) || pma_open_udp(ag, err, errlen) ||
        (ag->ctl_path && pma_open_ctl(ag, err, errlen))) {
        mpilab_pm_agent_destroy(ag);
        return NULL;
    }
    double now = pma_mono();
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; r < ag->nrails; r++) {
            ag->probe[p][r].alive = 1; /* optimistic until a probe times out */
            ag->probe[p][r].last_reply = now;
        }
    pma_refresh_paths(ag);
    pm_nl_dump_links(&ag->nl);
    return ag;
}

void mpilab_pm_agent_destroy(mpilab_pm_agent *ag)
{
    if (!ag)
        return;
    if (ag->ctl >= 0) {
        close(ag->ctl);
        unlink(ag->ctl_path);
    }
    if (ag->pid_written)
        unlink(ag->pid_path);
    if (ag->log && ag->log != stderr)
        fclose(ag->log);
    pm_nl_close(&ag->nl);
    for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++) {
        if (ag->udp[r] >= 0)
            close(ag->udp[r]);
        if (ag->rep[r] >= 0)
            close(ag->rep[r]);
    }
    for (size_t i = 0; i < ag->njl; i++)
        pma_joinl_close(&ag->jl[i]);
    free(ag->jl);
    pma_batch_free(&ag->batch);
    free(ag->conn);
    free(ag->seen);
    free(ag->seen_next);
    free(ag->q);
    free(ag);
}

/* ---- starting ---- */

static void log_start(agent_t *ag)
{
    json_t *nodes = json_array();
    for (int p = 0; p < ag->nnodes; p++) {
        json_t *addrs = json_array();
        char a[INET_ADDRSTRLEN];
        for (int r = 0; r < ag->nrails; r++)
            json_array_append_new(addrs, json_string(pma_ip(ag->nodes[p].addr[r], a)));
        json_array_append_new(nodes, json_pack("{s:s,s:o}", "name", ag->nodes[p].name,
                                               "addrs", addrs));
    }
    pma_log_obj(ag, "start", json_pack("{s:i,s:i,s:i,s:f,s:f,s:f,s:b,s:b,s:s,s:o}", "pid",
                                       (int)getpid(), "rails", ag->nrails, "nodes",
                                       ag->nnodes, "probe_interval", ag->interval,
                                       "probe_timeout", ag->timeout, "hold_down",
                                       ag->hold_down, "auto",
                                       ag->ctx.auto_migrate, "passive", ag->passive, "alt",
                                       ag->alt_spec ? ag->alt_spec : "default", "peers",
                                       nodes));
}

/* written to a temporary name and renamed: only onto a regular file or a new name (a FIFO
 * or device would be replaced by a regular file) */
static int write_pidfile(agent_t *ag, char *err, size_t errlen)
{
    struct stat pst;
    if (stat(ag->pid_path, &pst) == 0 && !S_ISREG(pst.st_mode)) {
        snprintf(err, errlen, "--pidfile %s: not a regular file", ag->pid_path);
        return -1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", ag->pid_path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 ||
        rename(tmp, ag->pid_path) != 0) {
        snprintf(err, errlen, "--pidfile %s: %s", ag->pid_path, strerror(errno));
        return -1;
    }
    ag->pid_written = 1;
    return 0;
}

static void set_realtime(agent_t *ag)
{
    if (ag->realtime_prio <= 0)
        return;
    struct sched_param sp = {.sched_priority = ag->realtime_prio};
    int ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    int locked = ok && mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    pma_log_obj(ag, "sched", json_pack("{s:s,s:i,s:b}", "policy", ok ? "fifo" : "other",
                                       "priority", ok ? ag->realtime_prio : 0,
                                       "memory_locked", locked));
}

/* ---- the event loop ---- */

/* pf[0] MPTCP events, pf[1] link events, pf[2] control, pf[3..3+nrails) probe sockets,
 * then the reply sockets (polled only while a reply is urgent) */
#define POLL_UDP 3
#define POLL_MAX (POLL_UDP + 2 * MPILAB_PM_MAX_RAILS)

static int poll_set(const agent_t *ag, struct pollfd *pf, int urgent)
{
    int n = 0;
    pf[n++] = (struct pollfd){pm_nl_ev_fd(&ag->nl), POLLIN, 0};
    pf[n++] = (struct pollfd){pm_nl_link_fd(&ag->nl), POLLIN, 0};
    pf[n++] = (struct pollfd){ag->ctl, POLLIN, 0};
    for (int r = 0; r < ag->nrails; r++)
        pf[n++] = (struct pollfd){ag->udp[r], POLLIN, 0};
    /* replies wake the agent only while one is urgent (a path one reply short of healing,
     * a verdict waiting for another rail's answer); otherwise they are read at the next
     * wake-up, whatever causes it (pma_drain_replies) */
    for (int r = 0; r < ag->nrails; r++)
        pf[n++] = (struct pollfd){urgent ? ag->rep[r] : -1, POLLIN, 0};
    return n;
}

/* what woke the agent: read it; returns a bit (1 << type) per type of probe message read */
static unsigned dispatch(agent_t *ag, const struct pollfd *pf)
{
    unsigned types = 0;
    if (pf[0].revents & POLLIN && pm_nl_read_events(&ag->nl, on_kernel_event, ag) < 0)
        pma_log_obj(ag, "error", json_pack("{s:s}", "what",
                                           "MPTCP events lost (netlink overrun)"));
    if (pf[1].revents & POLLIN)
        pm_nl_read_links(&ag->nl, on_link, ag);
    if (pf[2].revents & POLLIN)
        pma_on_ctl(ag);
    for (int r = 0; r < ag->nrails; r++)
        if (pf[POLL_UDP + r].revents & POLLIN)
            types |= pma_on_udp(ag, r);
    return types;
}

/* the wake-up's cause, for the statistics (one each, the first that applies) */
static void count_wake(agent_t *ag, const struct pollfd *pf, int k, int urgent, unsigned types)
{
    int reply_woke = 0;
    for (int r = 0; urgent && r < ag->nrails; r++)
        reply_woke |= pf[POLL_UDP + ag->nrails + r].revents & POLLIN;
    if (k > 0 && (pf[0].revents | pf[1].revents) & POLLIN)
        ag->st.wake_kernel++;
    else if (k > 0 && pf[2].revents & POLLIN)
        ag->st.wake_control++;
    else if (types & 1u << MSG_DOWN)
        ag->st.wake_notice++;
    else if (types & 1u << MSG_PROBE)
        ag->st.wake_probe++;
    else if (reply_woke || types & 1u << MSG_REPLY)
        ag->st.wake_reply++;
    else if (k == 0)
        ag->st.wake_tick++;
    else
        ag->st.wake_other++;
}

/* the probe round and the state machines' timers, after a wake-up at `now` (k: poll's
 * result; replies: replies read at this wake-up) */
static void timers(agent_t *ag, double now, int k, size_t replies, double *next_sm)
{
    /* a message moves the deadlines (a reply postpones a verdict; the decider's probe a
     * follower's own probe): recomputed after every wake-up, sending nothing early */
    if (now >= ag->next_probe) {
        ag->st.ticks++;
        ag->next_probe = pma_probe_tick(ag, now);
    } else if (k > 0 && ag->next_probe <= now + ag->interval / 4) {
        /* awake anyway (a peer's probe, an event) with our own round due within a quarter
         * period: run it now (pma_probe_tick sends what is due within a quarter period and
         * judges only what is due), saving that wake-up; the rounds of agents that probe
         * each other lock onto one phase */
        ag->st.ticks++;
        ag->st.ticks_early++;
        ag->next_probe = pma_probe_tick(ag, now);
    } else if (k > 0 || replies > 0) {
        ag->next_probe = pma_probe_deadline(ag);
    }
    if (now >= *next_sm) {
        pma_retry_run(ag, now);
        pma_step_all(ag, MPILAB_PM_EV_TICK, -1);
        for (size_t i = ag->nconn; i-- > 0;)
            if (ag->conn[i].state == MPILAB_PM_CLOSED)
                pma_forget_conn(ag, &ag->conn[i]);
        *next_sm = now + SM_TICK;
    }
}

/* Whether the agent itself was asleep: a wake-up that comes later than LATE_SLACK after
 * it was due means this process was not running (a busy machine, a stop); the silence of
 * its paths in that time is no evidence against them, so the verdicts count silence only
 * from now (awake_since; mpilab_pm_judge re-arms their timers). */
#define LATE_SLACK(ag) ((ag)->interval / 2)

static void note_lateness(agent_t *ag, double due, double now)
{
    double late = now - due;
    if (late <= LATE_SLACK(ag))
        return;
    ag->st.late_wakeups++;
    if (late > ag->st.late_max)
        ag->st.late_max = late;
    ag->awake_since = now;
    /* each one in the log, so that a long round trip can be matched to a machine stall */
    pma_log_obj(ag, "late", json_pack("{s:f,s:f}", "late_ms", late * 1e3, "due", due));
}

static void loop(agent_t *ag, volatile sig_atomic_t *stop)
{
    double next_sm = pma_mono();
    ag->next_probe = 0;
    while (!ag->stop && !*stop) {
        struct pollfd pf[POLL_MAX];
        int urgent = pma_replies_urgent(ag);
        int n = poll_set(ag, pf, urgent);
        double now = pma_mono();
        /* asleep until the next probe or verdict is due, or the state machines' timers */
        double wake = ag->next_probe < next_sm ? ag->next_probe : next_sm;
        int wait_ms = (int)((wake - now) * 1e3 + 0.999);
        if (wait_ms < 0)
            wait_ms = 0;
        if (ag->log)
            fflush(ag->log);
        int k = poll(pf, (nfds_t)n, wait_ms);
        if (k < 0 && errno != EINTR)
            break;
        ag->st.wakeups++;
        note_lateness(ag, wake > now ? wake : now, pma_mono());
        /* first the replies that came since the last wake-up, at their arrival: before any
         * message, command, verdict or probe schedule is looked at */
        size_t replies = pma_drain_replies(ag, urgent);
        unsigned types = k > 0 ? dispatch(ag, pf) : 0;
        now = pma_mono();
        count_wake(ag, pf, k, urgent, types);
        timers(ag, now, k, replies, &next_sm);
    }
}

int mpilab_pm_agent_run(mpilab_pm_agent *ag, volatile sig_atomic_t *stop, char *err,
                        size_t errlen)
{
    log_start(ag);
    if (ag->pid_path && write_pidfile(ag, err, errlen))
        return -1;
    set_realtime(ag);
    loop(ag, stop);
    json_t *stats = pma_stats_json(ag);
    json_object_set_new(stats, "why", json_string(*stop ? "signal" : "stop command"));
    pma_log_obj(ag, "stop", stats);
    return 0;
}
