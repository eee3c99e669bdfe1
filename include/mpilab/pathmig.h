/* Path migration over Multipath TCP (after InfiniBand Automatic Path Migration).
 *
 * Every MPTCP connection of a node has a primary path (its active subflow) and, when
 * ARMED, a loaded alternate (a backup subflow on another rail). The per-connection
 * state machine below is pure: it turns events (kernel MPTCP events, path health, user
 * requests) into a new state and a list of actions for the agent to carry out (create a
 * backup subflow, change a subflow's backup priority, close a subflow). The agent
 * (mpilab-pathmigd, one per node) feeds it from the kernel's MPTCP netlink family,
 * rtnetlink link events and UDP probes between agents. See docs/pathmig.md. */
#ifndef MPILAB_PATHMIG_H
#define MPILAB_PATHMIG_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define MPILAB_PM_MAX_SUBFLOWS 8
#define MPILAB_PM_MAX_RAILS 8
#define MPILAB_PM_MAX_PEERS 64
#define MPILAB_PM_MAX_ACTIONS 8

/* Path migration state of one connection (the paper's Fig. 2). */
typedef enum {
    MPILAB_PM_MIGRATED = 0, /* running on its primary, no alternate loaded */
    MPILAB_PM_REARM,        /* alternate subflow being established */
    MPILAB_PM_ARMED,        /* alternate established as a backup subflow */
    MPILAB_PM_CLOSED
} mpilab_pm_state;

typedef struct {
    uint32_t laddr, raddr; /* IPv4, network byte order */
    uint16_t lport, rport; /* host byte order */
    int lrail, rrail;      /* rails of the local and remote address, -1 unknown */
    int backup;            /* our sending priority: 1 = backup */
    int established;
} mpilab_pm_subflow;

typedef struct {
    uint32_t token;
    int server_side;
    int established;     /* the kernel reported the connection established */
    int managed;         /* remote is a known peer (else the agent leaves it alone) */
    int peer;            /* index of the remote node */
    mpilab_pm_state state;
    int loading_rail;    /* rail of the alternate being loaded, -1 none */
    double loading_since; /* monotonic s */
    double next_load;     /* no automatic load attempt before this (after a failure) */
    int nsub;
    mpilab_pm_subflow sub[MPILAB_PM_MAX_SUBFLOWS];
    uint16_t accept_port; /* server side: the port it was accepted on, 0 unknown */
    int armed_rail;       /* rail of the alternate it was last ARMED with, -1 none */
} mpilab_pm_conn;

/* What the state machine knows about the network and the policy. */
typedef struct {
    int nrails;
    int auto_migrate;    /* migrate on a path fault without user action */
    int auto_rearm;      /* load a new alternate after a migration */
    int alt_auto;        /* alternate = first healthy rail after the primary (else alt_rail) */
    int alt_rail[MPILAB_PM_MAX_PEERS][MPILAB_PM_MAX_RAILS]; /* user/default alternate */
    unsigned char path_up[MPILAB_PM_MAX_PEERS][MPILAB_PM_MAX_RAILS];
} mpilab_pm_ctx;

typedef enum {
    MPILAB_PM_EV_ESTABLISHED = 1, /* connection established (kernel) */
    MPILAB_PM_EV_SUB_ESTABLISHED, /* subflow .sub established (kernel) */
    MPILAB_PM_EV_SUB_CLOSED,      /* subflow .sub closed (kernel) */
    MPILAB_PM_EV_SUB_PRIORITY,    /* subflow .sub priority changed by the peer */
    MPILAB_PM_EV_CLOSED,          /* connection closed (kernel) */
    MPILAB_PM_EV_PATH,            /* path health changed (ctx->path_up updated) */
    MPILAB_PM_EV_ARM,             /* user: load an alternate */
    MPILAB_PM_EV_MIGRATE,         /* user: move to the alternate */
    MPILAB_PM_EV_LOAD_FAILED,     /* creating the alternate subflow failed */
    MPILAB_PM_EV_TICK,            /* periodic re-evaluation */
    MPILAB_PM_EV_LOAD_NOT_READY   /* the kernel refused the alternate because the connection
                                     is not fully established yet (ENOTCONN): retried soon */
} mpilab_pm_event_kind;

typedef struct {
    mpilab_pm_event_kind kind;
    mpilab_pm_subflow sub; /* for the SUB_* events */
    double now;            /* monotonic s */
} mpilab_pm_event;

typedef enum {
    MPILAB_PM_ACT_CREATE = 1, /* create a backup subflow: .sub has lrail/rrail */
    MPILAB_PM_ACT_SET_BACKUP, /* set .sub's priority to .backup */
    MPILAB_PM_ACT_DESTROY     /* close subflow .sub */
} mpilab_pm_action_kind;

typedef struct {
    mpilab_pm_action_kind kind;
    mpilab_pm_subflow sub;
    int backup;
} mpilab_pm_action;

/* Result of one step: the actions to carry out, a transition (from != to) with its cause,
 * and for user requests an error message when refused (err[0] != 0). */
typedef struct {
    int nact;
    mpilab_pm_action act[MPILAB_PM_MAX_ACTIONS];
    mpilab_pm_state from, to;
    const char *cause;    /* names the path (rail) that failed or changed; may point into
                             cause_buf */
    char cause_buf[96];
    char err[160];
} mpilab_pm_result;

const char *mpilab_pm_state_name(mpilab_pm_state s);

/* A new connection (state MIGRATED, no subflows). */
void mpilab_pm_conn_init(mpilab_pm_conn *c, uint32_t token, int server_side, int managed,
                         int peer);

/* Feed one event; fills *res. Returns 0, or -1 when a user request was refused. */
int mpilab_pm_step(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, const mpilab_pm_event *ev,
                   mpilab_pm_result *res);

/* The alternate rail for a primary rail to a peer under ctx's policy, -1 if none is
 * available (not configured, same as the primary, or its path is down). */
int mpilab_pm_alternate(const mpilab_pm_ctx *ctx, int peer, int primary_rail);

/* Probing of one path between two agents (pure; the agent's schedule, in pm_sm.c).
 * The decider of a node pair (the lower index) probes every `interval`; the follower only
 * answers and probes a path itself only after MPILAB_PM_FOLLOW_FACTOR intervals without a
 * message from the peer on it (the path is silent, or no decider runs there). A passive
 * proof (`last_proof`: the path's TCP subflows showed it working, see mpilab_pm_tcp_proof;
 * 0 = none) counts as a probe answered then: no probe is due while proofs stay fresh.
 * Returns when the path's next probe is due (times in seconds, one clock). */
#define MPILAB_PM_FOLLOW_FACTOR 3
double mpilab_pm_probe_due(int decider, double last_sent, double last_heard, double last_proof,
                           double interval);

/* What one TCP subflow's struct tcp_info showed in one sock_diag dump. */
typedef struct {
    uint64_t bytes_acked;       /* tcpi_bytes_acked: our bytes the peer acknowledged */
    uint64_t bytes_received;    /* tcpi_bytes_received: the peer's bytes we received */
    uint32_t last_ack_recv_ms;  /* tcpi_last_ack_recv: ms since the last ACK arrived */
    uint32_t last_data_recv_ms; /* tcpi_last_data_recv: ms since the last data arrived */
    uint32_t unacked;           /* tcpi_unacked: our segments sent and not yet acknowledged */
    uint32_t notsent;           /* tcpi_notsent_bytes: queued, not yet sent (UINT32_MAX:
                                   unknown) */
    uint32_t rtt_us, rttvar_us; /* tcpi_rtt, tcpi_rttvar: the kernel's smoothed round trip */
    uint32_t rto_us;            /* tcpi_rto: the kernel's retransmission timeout */
    uint8_t retransmits;        /* tcpi_retransmits: retransmission timeouts in a row */
    uint8_t backoff;            /* tcpi_backoff: exponential backoff of the RTO timer */
} mpilab_pm_tcp_sample;

/* Passive liveness of a path from one subflow on it, sampled at `prev_at` (`prev`, NULL if
 * the subflow was not seen then) and at `now` (`cur`). Returns the latest moment at which
 * the subflow proved the path alive, or 0 for no proof:
 * - the peer acknowledged new data of ours since the last sample (bytes_acked grew): our
 *   data reached the peer and its ACK came back, both directions worked; proven at the
 *   last ACK's arrival (now - last_ack_recv), never before prev_at;
 * - with `accept_received` (the follower of a pair, whose probes only back up an absent
 *   decider): new data from the peer arrived (bytes_received grew), at now -
 *   last_data_recv, never before prev_at.
 * Unchanged counters prove nothing, however small last_ack_recv is (a pure ACK of old
 * data, a duplicate ACK, a window probe): on a path that silently drops, the counters stop
 * and its last_ack_recv only grows, so stale values never keep it alive. */
double mpilab_pm_tcp_proof(const mpilab_pm_tcp_sample *prev, const mpilab_pm_tcp_sample *cur,
                           double prev_at, double now, int accept_received);

/* Whether one subflow had nothing at stake at the second of two samples (`prev` at the
 * previous dump, NULL if the subflow was not seen then; `cur` now): none of our data is
 * unacknowledged (unacked = 0) and, unless `accept_received` (the follower, for which new
 * data is a proof anyway), no data of the peer's arrived since the previous sample (the
 * peer is not sending to us, so a drop towards us would stall nothing of ours either).
 * Data queued and not yet sent (notsent > 0) is at stake too: a packet dropped on the
 * way out of this host (a local firewall rule, as the testbed's silent-drop fault) never
 * counts as sent, so unacked alone would stay 0 while the data waits.
 * A path whose every primary subflow is settled needs no probe to stay in use: if it
 * failed silently now, nothing would be waiting on it; the moment data is sent the sample
 * is unsettled and unproven, and the path's silence counts from the last settled sample,
 * as it counts from the last reply on a probed path. Returns 1 or 0; a subflow without a
 * previous sample is not settled (no baseline). */
int mpilab_pm_tcp_settled(const mpilab_pm_tcp_sample *prev, const mpilab_pm_tcp_sample *cur,
                          int accept_received);

/* Whether a path silent since `since` (its last message, or when fast probing began) is
 * dead at `now`: silent for more than `limit` while another path to the same peer was
 * heard from more than `interval` after `since` (`freshest`: the latest message on any
 * live path to that peer). If every path went quiet together, this machine or the peer
 * stalled: no verdict. */
int mpilab_pm_path_silent(double now, double since, double limit, double freshest,
                          double interval);

/* ---- The dead-path verdict (pure; src/pathmig/pm_verdict.c) ----
 * A path is judged dead only on evidence that a starved agent cannot fake:
 * - the agent's own loop ran on time (`awake_since`: since then every wake-up came within
 *   its slack of when it was due): silence while the agent itself was asleep is no
 *   evidence, the timer is re-armed from the moment the agent ran again;
 * - the silence (no probe reply, no passive proof since `since`) outlasts a timeout adapted
 *   to the measured round trips, as TCP's RTO is: max(limit, srtt + 4 rttvar) over the
 *   probe round trips and the kernel's round trips of the path's subflows, and
 *   MPILAB_PM_RECOVERED_FACTOR times the longest silence towards the peer that recently
 *   ended with a sign of life (`recovered`: the machine or the network stalled that long
 *   and the path was not dead), capped at MPILAB_PM_TIMEOUT_CAP times `limit`;
 * - another rail to the same peer answered since (`freshest`): if every rail went quiet
 *   together this machine or the peer stalled; and when a rail came back from a silence of
 *   its own (`back_at`: the whole peer or network stalled), the silence counts only from
 *   then, as the other rails of the stall come back a moment later;
 * - where the path carries TCP subflows (the last dump listed some), the kernel's own view:
 *   data of ours outstanding (unacknowledged or queued) on some subflow and no ACK of any
 *   kind on any of them for longer than the timeout (tcpi_last_ack_recv, stamped by the
 *   kernel when the ACK arrived, whatever the agent was doing). An ACK within the timeout
 *   (a slow path) or nothing at stake (an idle connection) is no fault. */
#define MPILAB_PM_TIMEOUT_CAP 20.0
#define MPILAB_PM_RECOVERED_FACTOR 1.5

/* the kernel's view of the TCP subflows on one path at one dump, summed up */
typedef struct {
    int nsub;             /* subflows listed */
    int at_stake;         /* of which with data of ours unacknowledged or queued */
    double ack_age;       /* youngest tcpi_last_ack_recv among them, s (at the dump) */
    double rtt_bound;     /* largest srtt + 4 rttvar among them, s */
    unsigned retransmits; /* largest tcpi_retransmits among those at stake */
    unsigned backoff;     /* largest tcpi_backoff among those at stake */
    uint64_t unacked;     /* segments unacknowledged, summed over those at stake */
} mpilab_pm_path_kernel;

void mpilab_pm_path_kernel_reset(mpilab_pm_path_kernel *k);
/* add one subflow's sample (from the dump just made) */
void mpilab_pm_path_kernel_add(mpilab_pm_path_kernel *k, const mpilab_pm_tcp_sample *s);

/* A round-trip estimator (RFC 6298's srtt and rttvar; times in seconds). */
typedef struct {
    double srtt, rttvar;
    int n;
} mpilab_pm_rtt;
void mpilab_pm_rtt_add(mpilab_pm_rtt *e, double sample);

typedef struct {
    double now;          /* monotonic s */
    double since;        /* the path's last sign of life (reply, passive proof, settled dump) */
    double awake_since;  /* the agent's loop has run on time since then */
    double limit;        /* the smallest timeout (--probe-timeout, or its slow multiple) */
    double interval;     /* the probe period */
    double freshest;     /* the latest sign of life on another live rail to the peer */
    double recovered;    /* the longest recent silence towards the peer that ended with a
                            sign of life, s (0: none) */
    double back_at;      /* when a rail to the peer last came back from a silence (0: none) */
    const mpilab_pm_rtt *probe_rtt;       /* the path's probe round trips, or NULL */
    const mpilab_pm_path_kernel *kernel;  /* the path's subflows at the last dump, or NULL
                                             (no dump, passive liveness off) */
    double kernel_at;    /* when that dump was made */
} mpilab_pm_evidence;

typedef enum {
    MPILAB_PM_V_ALIVE = 0, /* not silent past its timeout */
    MPILAB_PM_V_ASLEEP,    /* silent past it, but the agent itself was late: re-armed */
    MPILAB_PM_V_WAIT,      /* silent past it, the evidence is not there (yet) */
    MPILAB_PM_V_DEAD       /* dead */
} mpilab_pm_verdict_kind;

typedef struct {
    mpilab_pm_verdict_kind kind;
    double timeout;  /* the timeout used, s */
    double recheck;  /* judge again then (ALIVE, ASLEEP; WAIT: the caller's next look) */
    char why[128];   /* DEAD, WAIT: the evidence, one line */
} mpilab_pm_verdict;

/* A path's silence as one probe round saw it: its last sign of life (`since`: a reply, a
 * passive proof, a settled dump, or the moment its fast probing began), whether that was
 * a sign of life (`heard`: not only the start of fast probing), the path's probe period
 * then, how long the agent may leave it unlooked at (`watch`: the period for the decider,
 * MPILAB_PM_FOLLOW_FACTOR periods for the follower, which probes and dumps only then), and
 * whether it was in use. */
typedef struct {
    double since;
    int heard;
    double period;
    double watch;
    int used;
} mpilab_pm_seen;

/* What a probe round learns from a path's silence that ended (pure): returns the silence,
 * in s, that recovered on a path in use at both rounds (`recovered` of the evidence), 0 if
 * none. The silence is the gap between the two signs of life less the previous round's
 * `watch` (a sign of life can come that much before the agent looks), counted when longer
 * than two fast periods. *back is set to 1 when the path came back from a gap longer than
 * two of its periods (the longer of the two rounds': a path probed at the slow rate is
 * silent that long by design). Only a sign of life ends a silence: the start of fast
 * probing (a connection to the peer appeared) re-arms the path's timer, it is not an
 * answer, and the gap before it is the slow rate's, not a stall. `interval` is the fast
 * probe period. `kernel_stall` (s; negative: no dump listed the path's subflows during the
 * silence) is the longest the kernel went without an ACK while data of ours was at stake
 * at the dumps made during the silence: where it is known the silence counts no longer
 * than that (an application that sent nothing is not a stalled path; a stall the verdict
 * would see is seen there). */
double mpilab_pm_recovery(const mpilab_pm_seen *prev, const mpilab_pm_seen *cur,
                          double interval, double kernel_stall, int *back);

/* the timeout of a path (see above) */
double mpilab_pm_path_timeout(const mpilab_pm_evidence *ev);
void mpilab_pm_judge(const mpilab_pm_evidence *ev, mpilab_pm_verdict *out);

/* When a probe reply arrived, on the agent's monotonic clock. Replies are read from a
 * socket that does not wake the agent (see docs/pathmig.md, "Detecting faults"), so the
 * moment of reading is not the moment of arrival: the kernel's receive stamp is.
 * `stamp` is that stamp (CLOCK_REALTIME, seconds; `has_stamp` 0 if the kernel gave none),
 * `mono_minus_real` the offset between the two clocks read at the drain; the result is
 * clamped to [lo, hi]: `lo` when the previous drain began (a datagram queued before then
 * was read by it), `hi` now (a clock step never makes a reply look younger or older than
 * it can be). Without a stamp: `hi`. */
double mpilab_pm_rx_time(int has_stamp, double stamp, double mono_minus_real, double lo,
                         double hi);

/* Whether a reply on a path must wake the agent at once instead of waiting for its next
 * wake-up: the decider's dead path one reply short of healing (`good` of `good_needed`
 * consecutive replies), or a verdict waiting only for an answer on another rail
 * (`suspect`: silent past its limit while no other rail answered since). Otherwise a
 * reply only moves a deadline later and is read at the next wake-up, with its kernel
 * stamp, before any verdict or probe schedule is evaluated. */
int mpilab_pm_reply_urgent(int decider, int alive, int good, int good_needed, int suspect);

/* The agent (mpilab-pathmigd; the tool parses the options into this configuration). */
typedef struct {
    const char *node_name;  /* this node's name in the peers file (required) */
    const char *peers_path; /* lines 'NAME ADDR_RAIL0 ADDR_RAIL1 ...' (required) */
    const char *ctl_path;   /* unix socket for commands, or NULL */
    const char *log_path;   /* the event log (JSON lines, appended), NULL: stderr */
    const char *pid_path;   /* the pid, written once ready, or NULL */
    const char *alt_spec;   /* "default", "auto" or a map file; NULL: default */
    double interval;        /* probe period per peer and rail, seconds */
    double timeout;         /* a path is dead after this long without a reply, seconds (the
                               smallest timeout; see mpilab_pm_judge) */
    double hold_down;       /* a path judged dead on evidence is used again no sooner than
                               this, seconds (a link that went down: at once when it is up) */
    int port;               /* UDP port of the probes (replies: port + 1) */
    int manual;             /* no automatic migration or re-arming (commands only) */
    int realtime_prio;      /* SCHED_FIFO priority where permitted; 0: normal scheduling */
    int passive;            /* passive liveness (tcp_info of the subflows) */
    int join_listeners;     /* listeners for joins on the other rails' addresses */
} mpilab_pm_agent_config;
typedef struct mpilab_pm_agent mpilab_pm_agent;

void mpilab_pm_agent_config_defaults(mpilab_pm_agent_config *cfg);
/* Check the configuration, read the peers file and the --alt map, check the kernel, find
 * the rails' interfaces, open the log and the sockets. NULL with a one-line reason in err
 * (the configuration's strings must outlive the agent). */
mpilab_pm_agent *mpilab_pm_agent_create(const mpilab_pm_agent_config *cfg, char *err,
                                        size_t errlen);
/* Log the start, write the pid file, raise the scheduling priority, then run the event
 * loop until a `stop` command or until *stop becomes non-zero (the caller's signal
 * handler sets it); logs the `stop` record. 0 when stopped, -1 with err if it could not
 * start (the pid file). */
int mpilab_pm_agent_run(mpilab_pm_agent *ag, volatile sig_atomic_t *stop, char *err,
                        size_t errlen);
/* Remove the control socket and pid file, close everything, free the agent. */
void mpilab_pm_agent_destroy(mpilab_pm_agent *ag);

#endif
