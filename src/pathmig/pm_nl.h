/* Netlink plumbing of the path migration agent: the kernel's MPTCP generic-netlink family
 * (events and userspace path-manager commands) and rtnetlink link events, with libmnl. */
#ifndef MPILAB_PM_NL_H
#define MPILAB_PM_NL_H

#include <stddef.h>
#include <stdint.h>

struct mnl_socket;
struct pm_nl_bufs;

typedef struct {
    struct mnl_socket *ev;   /* subscribed to mptcp_pm_events */
    struct mnl_socket *cmd;  /* requests with acknowledgements */
    struct mnl_socket *link; /* rtnetlink RTMGRP_LINK */
    struct mnl_socket *diag; /* NETLINK_SOCK_DIAG, opened at the first dump */
    uint16_t family;
    uint32_t seq;
    struct pm_nl_bufs *buf;  /* receive and request buffers (pm_nl.c) */
} pm_nl;

/* one MPTCP event, decoded */
typedef struct {
    int type; /* MPTCP_EVENT_* */
    uint32_t token;
    uint32_t saddr, daddr; /* network order; 0 if absent */
    uint16_t sport, dport; /* host order */
    int backup, server_side, error;
    int loc_id, rem_id;
} pm_nl_event;

/* one link state change */
typedef struct {
    int ifindex;
    int up; /* IFF_UP and IFF_LOWER_UP */
    char name[32];
} pm_nl_link;

/* Open the sockets and resolve the family; on failure writes a one-line reason to err. */
int pm_nl_open(pm_nl *nl, char *err, size_t errlen);
void pm_nl_close(pm_nl *nl);
int pm_nl_ev_fd(const pm_nl *nl);
int pm_nl_link_fd(const pm_nl *nl);

/* Read pending MPTCP events (non-blocking): calls fn for each. Returns 0 or -1. */
int pm_nl_read_events(pm_nl *nl, void (*fn)(void *arg, const pm_nl_event *ev), void *arg);
/* Read pending link messages (non-blocking). */
int pm_nl_read_links(pm_nl *nl, void (*fn)(void *arg, const pm_nl_link *l), void *arg);
/* Ask for a dump of every link (answers arrive through pm_nl_read_links). */
int pm_nl_dump_links(pm_nl *nl);

/* A link came back: forget the unresolved IPv4 neighbours (INCOMPLETE or FAILED) of
 * interface ifindex, so the next packet to each resolves it at once. While the carrier was
 * gone, every packet sent there left an INCOMPLETE entry whose ARP requests are repeated
 * only every retrans_time (1 s by default): without this, a healed rail stays unusable for
 * up to a second. Returns the number removed or a negative errno (err: the reason). */
int pm_nl_renew_neighbours(int ifindex, char *err, size_t errlen);

/* Userspace path-manager commands. laddr/raddr network order, ports host order.
 * Return 0, or a negative errno with the kernel's message (if any) in err. */
int pm_nl_subflow_create(pm_nl *nl, uint32_t token, uint8_t loc_id, uint32_t laddr,
                         int backup, uint32_t raddr, uint16_t rport, char *err, size_t errlen);
int pm_nl_subflow_destroy(pm_nl *nl, uint32_t token, uint32_t laddr, uint16_t lport,
                          uint32_t raddr, uint16_t rport, char *err, size_t errlen);
int pm_nl_set_backup(pm_nl *nl, uint32_t token, uint32_t laddr, uint16_t lport,
                     uint32_t raddr, uint16_t rport, int backup, char *err, size_t errlen);

/* One path-manager command of a batch; rc and err are filled in by pm_nl_run_batch. */
typedef enum { PM_NL_CREATE, PM_NL_SET_BACKUP, PM_NL_DESTROY } pm_nl_cmd_kind;
typedef struct {
    pm_nl_cmd_kind kind;
    uint32_t token;
    uint8_t loc_id; /* CREATE: the local address id */
    uint32_t laddr, raddr; /* network order */
    uint16_t lport, rport; /* host order */
    int backup;
    int rc; /* 0 or a negative errno */
    char err[160];
} pm_nl_cmd;

/* Send many commands with few system calls (several requests per message, then their
 * acknowledgements), in order; each command's result in its rc/err. Returns the number
 * of commands that failed, or -1 if the socket failed (every unanswered rc set). */
int pm_nl_run_batch(pm_nl *nl, pm_nl_cmd *cmds, size_t n);

/* one established IPv4 TCP socket (an MPTCP subflow, or a plain TCP connection) */
typedef struct {
    uint32_t laddr, raddr; /* network order */
    uint16_t lport, rport; /* host order */
    uint64_t cookie;       /* the kernel's socket cookie: the same socket in every dump */
    uint64_t bytes_acked, bytes_received;
    uint32_t last_ack_recv_ms, last_data_recv_ms;
    uint32_t unacked; /* segments sent and not yet acknowledged */
    uint32_t notsent; /* bytes queued and not yet sent; UINT32_MAX if the kernel's
                         tcp_info is too short to say (Linux < 4.6) */
    uint32_t rtt_us, rttvar_us, rto_us;
    uint8_t retransmits, backoff;
} pm_nl_tcp;

typedef struct {
    uint32_t laddr, raddr; /* network order */
    uint16_t lport, rport; /* host order */
} pm_nl_tcp_id;

/* Every established IPv4 TCP socket of the given ones with its tcp_info (inet_diag over
 * NETLINK_SOCK_DIAG; exact lookups by address and port, batched: the kernel finds each in
 * its hash, where a dump would walk the whole table, milliseconds with a large one): calls
 * fn for each. Sockets that no longer exist are skipped.
 * Returns the number found or a negative errno (err: the reason). */
int pm_nl_query_tcp(pm_nl *nl, const pm_nl_tcp_id *ids, size_t n,
                    void (*fn)(void *arg, const pm_nl_tcp *t), void *arg, char *err,
                    size_t errlen);

const char *pm_nl_event_name(int type);

#endif
