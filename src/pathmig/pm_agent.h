/* Internals of the path migration agent (mpilab-pathmigd), shared by its files, one idea
 * each: pm_agent.c (set-up, the event loop, kernel and link events), pm_agent_config.c
 * (peers file, --alt map, kernel settings, interfaces), pm_probe.c (probes between agents
 * and verdicts; the verdict's rule is pm_verdict.c, pure), pm_passive.c (passive
 * liveness), pm_conn.c (connections and their state machines), pm_joinl.c (join
 * listeners), pm_ctl.c (the control socket), pm_agent_log.c (the event log and
 * statistics). The option parsing is the tool's
 * (tools/mpilab-pathmigd.c); all state is in the agent object. */
#ifndef MPILAB_PM_AGENT_H
#define MPILAB_PM_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "mpilab/pathmig.h"
#include "pathmig/pm_nl.h"

#define MSG_MAGIC 0x4d504c50u /* "MPLP" */
enum { MSG_PROBE = 1, MSG_REPLY = 2, MSG_DOWN = 3 };
#define MSG_LEN 20
#define GOOD_REPLIES 3   /* consecutive replies that bring a dead path back */
#define SLOW_FACTOR 10   /* probe interval multiplier for peers without connections */
#define SM_TICK 0.050    /* the state machines' timers (load timeout, retry): checked this often */
#define MSG_EVIDENCE 12  /* byte of a DOWN notice: 1 = a verdict on evidence, 0 = link down */

typedef struct {
    char name[64];
    uint32_t addr[MPILAB_PM_MAX_RAILS]; /* network order, 0 = none */
} node_t;

typedef struct {
    int alive;
    int good;            /* consecutive replies while dead */
    double last_reply;   /* monotonic */
    double last_sent;
    double hold_until;   /* replies ignored until then (after a DOWN notice) */
    double fast_since;   /* fast probing (the peer has connections) since then */
    double last_proof;   /* passive: the path's TCP subflows last showed it working */
    double last_skip;    /* a probe last left out for a passive proof */
    uint64_t proof_dump; /* the dump that last proved the path (counted once per dump) */
    uint64_t settle_dump; /* the dump that last listed a subflow of the path... */
    int unsettled;        /* ...and how many of them had something at stake then */
    uint32_t seq;
    int suspect;         /* silent past its limit, a verdict waiting for another rail */
    /* the verdict's evidence (mpilab_pm_judge): the probes' round trips, and the kernel's
     * view of the path's subflows at the last dump that listed some (settle_dump) */
    mpilab_pm_rtt rtt;
    mpilab_pm_path_kernel kernel;
    double kernel_at;
    double dead_at;      /* judged dead on evidence then (0: alive, or its link went down) */
    int told_dead;       /* the follower told the decider its verdict (until alive again) */
    uint32_t probe_seq;  /* the last probe sent... */
    double probe_at;     /* ...and when (0: its reply came) */
    double rearmed_for;  /* the silence (its start) whose verdict the agent's lateness put off */
    mpilab_pm_seen seen; /* the path's last sign of life as the previous probe round saw it */
    double stall;        /* since then: the longest ACK age with data at stake at a dump... */
    int stall_dumps;     /* ...and how many dumps listed the path's subflows */
    double back_at;      /* when the path last came back from a silence (note_recovery) */
} probe_t;

/* what the agent costs: counted for the `stats` in status and the `stop` record */
typedef struct {
    uint64_t wakeups;     /* returns from poll */
    uint64_t ticks;       /* probe rounds (deadline reached) */
    uint64_t ticks_early; /* of which run early, at a wake-up with something else */
    uint64_t probes_sent, replies_sent, notices_sent, msgs_received;
    /* replies received: read at a wake-up something else caused (deferred), or on a
     * reply socket polled because a reply was urgent (mpilab_pm_reply_urgent) */
    uint64_t replies_received, replies_deferred, replies_urgent;
    /* what caused each wake-up (one cause each, the first of: kernel (MPTCP or link
     * events), control, notice, probe, reply (urgent), tick (a deadline), other) */
    uint64_t wake_kernel, wake_control, wake_notice, wake_probe, wake_reply, wake_tick,
        wake_other;
    uint64_t probes_rail[MPILAB_PM_MAX_RAILS];
    /* passive liveness: sock_diag dumps, the sockets they listed on our paths, proofs
     * (a path shown alive by a dump) and the probes left out for them */
    uint64_t diag_dumps, diag_sockets, diag_errors;
    uint64_t neigh_renewed; /* unresolved neighbours forgotten when a link came back */
    uint64_t proofs_rail[MPILAB_PM_MAX_RAILS], skipped_rail[MPILAB_PM_MAX_RAILS];
    uint64_t settled_rail[MPILAB_PM_MAX_RAILS]; /* dumps that found a path settled */
    /* the agent's own punctuality: wake-ups later than LATE_SLACK after they were due, the
     * latest of them, and verdicts put off because of one */
    uint64_t late_wakeups, verdicts_rearmed, verdicts_waited;
    double late_max;
} stats_t;

/* one TCP socket on one of our paths, as the last sock_diag dump showed it */
typedef struct {
    uint64_t cookie;
    mpilab_pm_tcp_sample s;
} tcp_seen_t;

/* Join listeners. An MP_JOIN must reach a listening socket on the address it is sent to.
 * Open MPI listens on the wildcard address, so a join to the peer's other rail finds its
 * listener; UCX (MPICH) binds its listener to one rail's address, and every join there was
 * refused. For each port a server-side connection was accepted on, the agent holds an
 * MPTCP listener at that port on each of its other rails' addresses: a join arriving there
 * is matched to its connection by token and never queued for accept. Where the address is
 * taken already (a wildcard listener), nothing is needed. */
typedef struct {
    uint16_t port;
    int refs;                       /* server-side connections accepted on the port */
    int fd[MPILAB_PM_MAX_RAILS];    /* -1: none (the accepting rail, in use, or failed) */
} joinl_t;

/* the actions of one step of many connections, carried out together */
typedef struct {
    pm_nl_cmd *cmd;
    size_t *conn; /* index into ag->conn */
    mpilab_pm_subflow *sub; /* as logged */
    int *tries; /* earlier attempts of the same command (retries of set_backup) */
    size_t n, cap;
} batch_t;

/* A priority change the kernel refused with "subflow not found" although the subflow had
 * just been announced established: the kernel lists a new subflow among the connection's
 * subflows a little after it says so. Tried again at the next state-machine tick, up to
 * SETB_TRIES times; the refusals before the last are logged as moot. */
#define SETB_TRIES 4
#define SETB_MAX 64

typedef struct {
    uint32_t token;
    mpilab_pm_subflow sub;
    int backup, tries;
} setb_retry_t;

struct mpilab_pm_agent {
    /* configuration (mpilab_pm_agent_config; the strings are the caller's) */
    const char *node_name, *peers_path, *ctl_path, *log_path, *pid_path, *alt_spec;
    double interval, timeout;
    double hold_down;   /* a path judged dead on evidence is not used again before this */
    double awake_since; /* the event loop has woken on time since then (monotonic) */
    int port;
    int join_listeners; /* --no-join-listeners: 0 */
    int realtime_prio;  /* SCHED_FIFO priority asked for (0: normal scheduling) */
    int pid_written;    /* the pid file is ours to remove */
    /* nodes */
    node_t nodes[MPILAB_PM_MAX_PEERS];
    int nnodes, self, nrails;
    /* local rails */
    int ifindex[MPILAB_PM_MAX_RAILS];
    int link_ok[MPILAB_PM_MAX_RAILS];
    int udp[MPILAB_PM_MAX_RAILS];  /* probes and notices (port): wake the agent */
    int rep[MPILAB_PM_MAX_RAILS];  /* replies (port + 1): read at every wake-up */
    double drained_at;             /* when the last drain of the reply sockets began */
    double view_at[MPILAB_PM_MAX_PEERS]; /* arrival of the last decider's view adopted */
    /* silences towards a peer that ended with a sign of life (pma_note_recovery): the
     * longest in the current and the previous RECOVERY_WINDOW, and when the current began */
    double recovered[MPILAB_PM_MAX_PEERS][2], recovered_at[MPILAB_PM_MAX_PEERS];
    probe_t probe[MPILAB_PM_MAX_PEERS][MPILAB_PM_MAX_RAILS];
    int conns_to[MPILAB_PM_MAX_PEERS];
    unsigned used[MPILAB_PM_MAX_PEERS]; /* pma_paths_in_use, valid unless used_dirty */
    int used_dirty;
    pm_nl_tcp_id *q; /* the primary subflows on those paths (looked up for proofs) */
    size_t nq, capq;
    /* passive liveness (--no-passive: off): the sockets of the last dump, by cookie */
    int passive;
    tcp_seen_t *seen, *seen_next;
    size_t nseen, nseen_next, capseen;
    double last_dump;
    int diag_failed; /* a lookup failed before: logged once */
    /* state machine */
    mpilab_pm_ctx ctx;
    mpilab_pm_conn *conn;
    size_t nconn, capconn;
    pm_nl nl;
    int ctl;
    FILE *log;
    int stop;
    int done; /* the job is done (command "done"): no more verdicts, probes still answered */
    uint64_t actions_failed;
    uint64_t actions_moot; /* the connection was gone or not yet ready */
    joinl_t *jl;
    size_t njl, capjl;
    uint64_t jl_opened, jl_taken, jl_failed; /* listeners opened; addresses taken already */
    stats_t st;
    double next_probe; /* earliest probe or verdict due (0: at once) */
    double started;
    batch_t batch;                 /* pma_step_all's actions, its buffers kept between ticks */
    setb_retry_t retry[SETB_MAX];  /* priority changes to try again at the next tick */
    size_t nretry;
};
typedef struct mpilab_pm_agent agent_t;

/* A path in use silent for this many fast periods: the decider probes the peer's other
 * paths now (at most once a period), so that their answers are fresh if a verdict comes. */
#define CONFIRM_AFTER 2.0
#define NEVER 1e300

/* One path's schedule, shared by pma_probe_tick (which acts on it) and pma_probe_deadline.
 * Period and silence limit: fast (--probe-interval, --probe-timeout) for a path to a peer
 * with connections that carries a primary subflow, or that is dead (its healing is seen
 * within a few intervals); slow (SLOW_FACTOR times both) for every other path, i.e. the
 * idle alternates and peers without connections. Probes (mpilab_pm_probe_due): the
 * decider of a pair probes every period, the follower only answers while the decider's
 * probes (or passive proofs) keep coming; a passive proof stands for a probe answered.
 * An alternate is probed at once when a path in use to the same peer falls silent
 * (CONFIRM_AFTER), so a verdict on the primary never waits for the slow period. */
typedef struct {
    int active;      /* the path exists (both addresses, a socket) */
    int used;        /* carries a primary subflow */
    double iv, limit;
    double timeout;  /* the verdict's: limit adapted to the round trips (mpilab_pm_judge) */
    double due;      /* next probe */
    double due_blind; /* next probe if passive proofs did not count (probes_skipped) */
    double since;    /* silent since (last sign of life, or fast probing began) */
    double verdict;  /* judged when silent until then (alive paths), else NEVER */
    double confirm;  /* the decider probes the peer's other paths from then, or NEVER */
} sched_t;

/* ---- pm_agent_log.c: the event log and statistics ---- */
double pma_mono(void);
double pma_realtime(void);
const char *pma_ip(uint32_t a, char *buf);
void pma_log_obj(agent_t *ag, const char *event, json_t *o);
json_t *pma_sub_json(const agent_t *ag, const mpilab_pm_subflow *s);
void pma_log_transition(agent_t *ag, const mpilab_pm_conn *c, mpilab_pm_state from,
                        mpilab_pm_state to, const char *cause);
json_t *pma_stats_json(const agent_t *ag);

/* ---- pm_agent_config.c: configuration ---- */
int pma_locate(const agent_t *ag, uint32_t addr, int *rail);
int pma_read_peers(agent_t *ag, char *err, size_t errlen);
int pma_read_alt(agent_t *ag, char *err, size_t errlen);
int pma_check_kernel(char *err, size_t errlen);
int pma_find_ifaces(agent_t *ag, char *err, size_t errlen);

/* ---- pm_probe.c: probes ---- */
void pma_refresh_paths(agent_t *ag);
int pma_decides(const agent_t *ag, int peer);
void pma_send_msg(agent_t *ag, int rail, int peer, int type, int about_rail, uint32_t seq);
void pma_notify_down(agent_t *ag, int rail, int only_peer, int evidence);
void pma_set_alive(agent_t *ag, int p, int r, int alive, const char *cause);
unsigned pma_on_udp(agent_t *ag, int rail);
size_t pma_drain_replies(agent_t *ag, int urgent);
int pma_replies_urgent(const agent_t *ag);
void pma_path_schedule(agent_t *ag, int p, int r, sched_t *d);
double pma_probe_tick(agent_t *ag, double now);
double pma_probe_deadline(agent_t *ag);
int pma_open_udp(agent_t *ag, char *err, size_t errlen);

/* ---- pm_passive.c: passive liveness ---- */
const unsigned *pma_paths_in_use(agent_t *ag);
void pma_diag_dump(agent_t *ag, double now);
int pma_dump_needed(agent_t *ag, double now);

/* ---- pm_joinl.c: join listeners ---- */
void pma_joinl_add(agent_t *ag, mpilab_pm_conn *c, uint16_t port, int lrail);
void pma_joinl_close(joinl_t *j);
void pma_joinl_release(agent_t *ag, mpilab_pm_conn *c);

/* ---- pm_conn.c: connections ---- */
mpilab_pm_conn *pma_find_conn(agent_t *ag, uint32_t token);
mpilab_pm_conn *pma_new_conn(agent_t *ag, uint32_t token, int server_side, uint32_t raddr);
void pma_forget_conn(agent_t *ag, mpilab_pm_conn *c);
void pma_batch_free(batch_t *b);
int pma_step(agent_t *ag, mpilab_pm_conn *c, const mpilab_pm_event *ev, char *err,
             size_t errlen);
void pma_step_all(agent_t *ag, mpilab_pm_event_kind kind, int only_peer);
void pma_retry_run(agent_t *ag, double now);

/* ---- pm_ctl.c: the control socket ---- */
void pma_on_ctl(agent_t *ag);
int pma_open_ctl(agent_t *ag, char *err, size_t errlen);

#endif
