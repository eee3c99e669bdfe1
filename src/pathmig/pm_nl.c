/* Netlink plumbing of the path migration agent (libmnl). See pm_nl.h. */
#include "pathmig/pm_nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <linux/mptcp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h, which clashes with net/if.h */
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

const char *pm_nl_event_name(int type)
{
    switch (type) {
    case MPTCP_EVENT_CREATED: return "created";
    case MPTCP_EVENT_ESTABLISHED: return "established";
    case MPTCP_EVENT_CLOSED: return "closed";
    case MPTCP_EVENT_ANNOUNCED: return "announced";
    case MPTCP_EVENT_REMOVED: return "removed";
    case MPTCP_EVENT_SUB_ESTABLISHED: return "sub_established";
    case MPTCP_EVENT_SUB_CLOSED: return "sub_closed";
    case MPTCP_EVENT_SUB_PRIORITY: return "sub_priority";
    default: return "other";
    }
}

/* ---- resolving the family and its event group ---- */

typedef struct {
    uint16_t id;
    uint32_t group;
} family_info;

static int grp_cb(const struct nlattr *attr, void *data)
{
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type == CTRL_ATTR_MCAST_GRP_NAME || type == CTRL_ATTR_MCAST_GRP_ID)
        tb[type] = attr;
    return MNL_CB_OK;
}

static int ctrl_cb(const struct nlmsghdr *nlh, void *data)
{
    family_info *fi = data;
    struct nlattr *attr;
    mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
        int type = mnl_attr_get_type(attr);
        if (type == CTRL_ATTR_FAMILY_ID) {
            fi->id = mnl_attr_get_u16(attr);
        } else if (type == CTRL_ATTR_MCAST_GROUPS) {
            struct nlattr *grp;
            mnl_attr_for_each_nested(grp, attr) {
                const struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1] = {0};
                mnl_attr_parse_nested(grp, grp_cb, tb);
                if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
                    strcmp(mnl_attr_get_str(tb[CTRL_ATTR_MCAST_GRP_NAME]),
                           MPTCP_PM_EV_GRP_NAME) == 0)
                    fi->group = mnl_attr_get_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
            }
        }
    }
    return MNL_CB_OK;
}

/* requests per sendto: their acknowledgements (errors with the kernel's message) must fit
 * the socket's receive buffer, which pm_nl_open raises */
#define BATCH_MAX 128
/* sock_diag lookups per sendto */
#define QUERY_BATCH 256

/* One buffer per socket (commands are sent from inside event callbacks) and the request
 * buffers, allocated with the sockets: no state outside the pm_nl object. */
struct pm_nl_bufs {
    char cmd[65536], ev[262144], link[65536], diag[1 << 16];
    char batch[BATCH_MAX * 256], query[QUERY_BATCH * 128];
};

static int resolve(pm_nl *nl, family_info *fi)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = GENL_ID_CTRL;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = ++nl->seq;
    struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
    g->cmd = CTRL_CMD_GETFAMILY;
    g->version = 1;
    mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, MPTCP_PM_NAME);
    if (mnl_socket_sendto(nl->cmd, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    unsigned portid = mnl_socket_get_portid(nl->cmd);
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl->cmd, nl->buf->cmd, sizeof(nl->buf->cmd));
        if (n < 0)
            return -errno;
        int r = mnl_cb_run(nl->buf->cmd, (size_t)n, nl->seq, portid, ctrl_cb, fi);
        if (r == MNL_CB_STOP)
            return 0;
        if (r < 0)
            return -errno;
    }
}

int pm_nl_open(pm_nl *nl, char *err, size_t errlen)
{
    memset(nl, 0, sizeof(*nl));
    nl->buf = malloc(sizeof(*nl->buf));
    if (!nl->buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    nl->seq = (uint32_t)time(NULL);
    nl->cmd = mnl_socket_open(NETLINK_GENERIC);
    nl->ev = mnl_socket_open2(NETLINK_GENERIC, SOCK_NONBLOCK | SOCK_CLOEXEC);
    nl->link = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (!nl->cmd || !nl->ev || !nl->link ||
        mnl_socket_bind(nl->cmd, 0, MNL_SOCKET_AUTOPID) < 0 ||
        mnl_socket_bind(nl->ev, 0, MNL_SOCKET_AUTOPID) < 0 ||
        mnl_socket_bind(nl->link, RTMGRP_LINK, MNL_SOCKET_AUTOPID) < 0) {
        snprintf(err, errlen, "netlink: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    mnl_socket_setsockopt(nl->cmd, NETLINK_EXT_ACK, &one, sizeof(one));
    /* acknowledgements without a copy of the request: a batch's answers stay small */
    mnl_socket_setsockopt(nl->cmd, NETLINK_CAP_ACK, &one, sizeof(one));
    int big = 4 << 20; /* a burst of events for hundreds of connections */
    setsockopt(mnl_socket_get_fd(nl->cmd), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    setsockopt(mnl_socket_get_fd(nl->ev), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    setsockopt(mnl_socket_get_fd(nl->link), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    family_info fi = {0, 0};
    int r = resolve(nl, &fi);
    if (r < 0 || fi.id == 0) {
        snprintf(err, errlen, "the kernel has no MPTCP path manager (generic netlink family "
                 "'%s' not found%s%s)", MPTCP_PM_NAME, r < 0 ? ": " : "",
                 r < 0 ? strerror(-r) : "");
        return -1;
    }
    if (fi.group == 0) {
        snprintf(err, errlen, "MPTCP netlink family has no '%s' group", MPTCP_PM_EV_GRP_NAME);
        return -1;
    }
    nl->family = fi.id;
    if (mnl_socket_setsockopt(nl->ev, NETLINK_ADD_MEMBERSHIP, &fi.group,
                              sizeof(fi.group)) < 0) {
        snprintf(err, errlen, "subscribing to MPTCP events: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void pm_nl_close(pm_nl *nl)
{
    if (nl->cmd)
        mnl_socket_close(nl->cmd);
    if (nl->ev)
        mnl_socket_close(nl->ev);
    if (nl->link)
        mnl_socket_close(nl->link);
    if (nl->diag)
        mnl_socket_close(nl->diag);
    free(nl->buf);
    memset(nl, 0, sizeof(*nl));
}

int pm_nl_ev_fd(const pm_nl *nl) { return mnl_socket_get_fd(nl->ev); }
int pm_nl_link_fd(const pm_nl *nl) { return mnl_socket_get_fd(nl->link); }

/* ---- events ---- */

typedef struct {
    void (*fn)(void *, const pm_nl_event *);
    void *arg;
} ev_ctx;

static int ev_cb(const struct nlmsghdr *nlh, void *data)
{
    ev_ctx *ec = data;
    const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
    pm_nl_event e;
    memset(&e, 0, sizeof(e));
    e.type = g->cmd;
    e.loc_id = e.rem_id = -1;
    struct nlattr *attr;
    mnl_attr_for_each(attr, nlh, sizeof(*g)) {
        size_t len = mnl_attr_get_payload_len(attr);
        switch (mnl_attr_get_type(attr)) {
        case MPTCP_ATTR_TOKEN: if (len >= 4) e.token = mnl_attr_get_u32(attr); break;
        case MPTCP_ATTR_SADDR4: if (len >= 4) memcpy(&e.saddr, mnl_attr_get_payload(attr), 4); break;
        case MPTCP_ATTR_DADDR4: if (len >= 4) memcpy(&e.daddr, mnl_attr_get_payload(attr), 4); break;
        case MPTCP_ATTR_SPORT: if (len >= 2) e.sport = ntohs(mnl_attr_get_u16(attr)); break;
        case MPTCP_ATTR_DPORT: if (len >= 2) e.dport = ntohs(mnl_attr_get_u16(attr)); break;
        case MPTCP_ATTR_BACKUP: if (len >= 1) e.backup = mnl_attr_get_u8(attr); break;
        case MPTCP_ATTR_SERVER_SIDE: if (len >= 1) e.server_side = mnl_attr_get_u8(attr); break;
        case MPTCP_ATTR_ERROR: if (len >= 1) e.error = mnl_attr_get_u8(attr); break;
        case MPTCP_ATTR_LOC_ID: if (len >= 1) e.loc_id = mnl_attr_get_u8(attr); break;
        case MPTCP_ATTR_REM_ID: if (len >= 1) e.rem_id = mnl_attr_get_u8(attr); break;
        default: break;
        }
    }
    ec->fn(ec->arg, &e);
    return MNL_CB_OK;
}

/* read every pending message of a non-blocking netlink socket through cb */
static int drain(int fd, char *buf, size_t size, mnl_cb_t cb, void *data)
{
    for (;;) {
        ssize_t n = recv(fd, buf, size, MSG_DONTWAIT);
        if (n < 0)
            return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        mnl_cb_run(buf, (size_t)n, 0, 0, cb, data);
    }
}

int pm_nl_read_events(pm_nl *nl, void (*fn)(void *arg, const pm_nl_event *ev), void *arg)
{
    ev_ctx ec = {fn, arg};
    return drain(pm_nl_ev_fd(nl), nl->buf->ev, sizeof(nl->buf->ev), ev_cb, &ec);
}

/* ---- links ---- */

typedef struct {
    void (*fn)(void *, const pm_nl_link *);
    void *arg;
} link_ctx;

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
    link_ctx *lc = data;
    if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
        return MNL_CB_OK;
    const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
    pm_nl_link l;
    memset(&l, 0, sizeof(l));
    l.ifindex = ifi->ifi_index;
    l.up = nlh->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_UP) &&
           (ifi->ifi_flags & IFF_LOWER_UP);
    struct nlattr *attr;
    mnl_attr_for_each(attr, nlh, sizeof(*ifi)) {
        if (mnl_attr_get_type(attr) == IFLA_IFNAME)
            snprintf(l.name, sizeof(l.name), "%s", mnl_attr_get_str(attr));
    }
    lc->fn(lc->arg, &l);
    return MNL_CB_OK;
}

int pm_nl_read_links(pm_nl *nl, void (*fn)(void *arg, const pm_nl_link *l), void *arg)
{
    link_ctx lc = {fn, arg};
    return drain(pm_nl_link_fd(nl), nl->buf->link, sizeof(nl->buf->link), link_cb, &lc);
}

int pm_nl_dump_links(pm_nl *nl)
{
    char buf[256];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = ++nl->seq;
    struct rtgenmsg *rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
    rt->rtgen_family = AF_UNSPEC;
    return mnl_socket_sendto(nl->link, nlh, nlh->nlmsg_len) < 0 ? -1 : 0;
}

/* ---- neighbours ---- */

#define MAX_RENEW 256
typedef struct {
    int ifindex;
    uint32_t dst[MAX_RENEW]; /* network order */
    size_t n;
} neigh_ctx;

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
    neigh_ctx *nc = data;
    if (nlh->nlmsg_type != RTM_NEWNEIGH ||
        mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ndmsg))
        return MNL_CB_OK;
    const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
    if (nd->ndm_family != AF_INET || nd->ndm_ifindex != nc->ifindex ||
        !(nd->ndm_state & (NUD_INCOMPLETE | NUD_FAILED)) || nc->n == MAX_RENEW)
        return MNL_CB_OK;
    struct nlattr *attr;
    mnl_attr_for_each(attr, nlh, sizeof(*nd)) {
        if (mnl_attr_get_type(attr) == NDA_DST && mnl_attr_get_payload_len(attr) == 4)
            memcpy(&nc->dst[nc->n++], mnl_attr_get_payload(attr), 4);
    }
    return MNL_CB_OK;
}

/* one request on a private socket, answered in full (a dump to its end, or an ack), read
 * into buf (ROUTE_BUF bytes) */
#define ROUTE_BUF 65536
static int route_talk(struct mnl_socket *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *data,
                      char *buf)
{
    uint32_t seq = nlh->nlmsg_seq, pid = mnl_socket_get_portid(s);
    if (mnl_socket_sendto(s, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(s, buf, ROUTE_BUF);
        if (n < 0)
            return errno == EINTR ? -EINTR : -errno;
        int rc = mnl_cb_run(buf, (size_t)n, seq, pid, cb, data);
        if (rc <= MNL_CB_STOP)
            return rc < 0 ? -errno : 0;
    }
}

int pm_nl_renew_neighbours(int ifindex, char *err, size_t errlen)
{
    char *rbuf = malloc(ROUTE_BUF);
    if (!rbuf) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (!s || mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
        int e = errno;
        snprintf(err, errlen, "rtnetlink: %s", strerror(e));
        if (s)
            mnl_socket_close(s);
        free(rbuf);
        return -e;
    }
    struct timeval tv = {0, 200000}; /* never block the agent for long */
    setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[256];
    neigh_ctx nc;
    memset(&nc, 0, sizeof(nc));
    nc.ifindex = ifindex;
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETNEIGH;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = 1;
    struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));
    nd->ndm_family = AF_INET;
    int rc = route_talk(s, nlh, neigh_cb, &nc, rbuf);
    if (rc < 0) {
        snprintf(err, errlen, "neighbour dump: %s", strerror(-rc));
        mnl_socket_close(s);
        free(rbuf);
        return rc;
    }
    int removed = 0;
    for (size_t i = 0; i < nc.n; i++) {
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_DELNEIGH;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
        nlh->nlmsg_seq = (uint32_t)(2 + i);
        nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));
        nd->ndm_family = AF_INET;
        nd->ndm_ifindex = ifindex;
        mnl_attr_put(nlh, NDA_DST, 4, &nc.dst[i]);
        rc = route_talk(s, nlh, NULL, NULL, rbuf);
        if (rc == 0)
            removed++;
        else if (rc != -ENOENT) { /* resolved or gone meanwhile: fine */
            char a[INET_ADDRSTRLEN];
            snprintf(err, errlen, "neighbour %s: %s",
                     inet_ntop(AF_INET, &nc.dst[i], a, sizeof(a)) ? a : "?", strerror(-rc));
            mnl_socket_close(s);
            free(rbuf);
            return rc;
        }
    }
    mnl_socket_close(s);
    free(rbuf);
    return removed;
}

/* ---- commands ---- */

static struct nlmsghdr *cmd_header(pm_nl *nl, char *buf, int cmd, uint32_t token)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = nl->family;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = ++nl->seq;
    struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
    g->cmd = (uint8_t)cmd;
    g->version = MPTCP_PM_VER;
    mnl_attr_put_u32(nlh, MPTCP_PM_ATTR_TOKEN, token);
    return nlh;
}

static void put_addr(struct nlmsghdr *nlh, int type, int id, uint32_t addr, uint16_t port,
                     int flags)
{
    struct nlattr *nest = mnl_attr_nest_start(nlh, (uint16_t)(type | NLA_F_NESTED));
    mnl_attr_put_u16(nlh, MPTCP_PM_ADDR_ATTR_FAMILY, AF_INET);
    if (id >= 0)
        mnl_attr_put_u8(nlh, MPTCP_PM_ADDR_ATTR_ID, (uint8_t)id);
    mnl_attr_put(nlh, MPTCP_PM_ADDR_ATTR_ADDR4, 4, &addr);
    if (port)
        mnl_attr_put_u16(nlh, MPTCP_PM_ADDR_ATTR_PORT, port);
    if (flags >= 0)
        mnl_attr_put_u32(nlh, MPTCP_PM_ADDR_ATTR_FLAGS, (uint32_t)flags);
    mnl_attr_nest_end(nlh, nest);
}

/* the kernel's answer to one request: 0 or a negative errno, its extended-ack text in err */
static int ack_result(const struct nlmsghdr *h, char *err, size_t errlen)
{
    const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
    if (e->error && errlen && (h->nlmsg_flags & NLM_F_ACK_TLVS)) {
        size_t off = sizeof(*e);
        if (!(h->nlmsg_flags & NLM_F_CAPPED))
            off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
        const struct nlattr *a;
        mnl_attr_for_each(a, h, off) {
            if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG)
                snprintf(err, errlen, "%s", mnl_attr_get_str(a));
        }
    }
    if (e->error && errlen && !err[0])
        snprintf(err, errlen, "%s", strerror(-e->error));
    return e->error;
}

static void put_cmd(pm_nl *nl, char *buf, const pm_nl_cmd *c)
{
    static const int kcmd[] = {MPTCP_PM_CMD_SUBFLOW_CREATE, MPTCP_PM_CMD_SET_FLAGS,
                               MPTCP_PM_CMD_SUBFLOW_DESTROY};
    struct nlmsghdr *nlh = cmd_header(nl, buf, kcmd[c->kind], c->token);
    switch (c->kind) {
    case PM_NL_CREATE:
        put_addr(nlh, MPTCP_PM_ATTR_ADDR, c->loc_id, c->laddr, 0,
                 c->backup ? MPTCP_PM_ADDR_FLAG_BACKUP : 0);
        break;
    case PM_NL_SET_BACKUP:
        put_addr(nlh, MPTCP_PM_ATTR_ADDR, -1, c->laddr, c->lport,
                 c->backup ? MPTCP_PM_ADDR_FLAG_BACKUP : 0);
        break;
    case PM_NL_DESTROY:
        put_addr(nlh, MPTCP_PM_ATTR_ADDR, -1, c->laddr, c->lport, -1);
        break;
    }
    put_addr(nlh, MPTCP_PM_ATTR_ADDR_REMOTE, -1, c->raddr, c->rport, -1);
}

int pm_nl_run_batch(pm_nl *nl, pm_nl_cmd *cmds, size_t n)
{
    char *out = nl->buf->batch;
    int failed = 0;
    for (size_t at = 0; at < n;) {
        size_t k = n - at < BATCH_MAX ? n - at : BATCH_MAX, len = 0;
        uint32_t first = nl->seq + 1;
        for (size_t i = 0; i < k; i++) {
            pm_nl_cmd *c = &cmds[at + i];
            c->rc = 1; /* not answered yet */
            c->err[0] = 0;
            put_cmd(nl, out + len, c);
            len += MNL_ALIGN(((struct nlmsghdr *)(out + len))->nlmsg_len);
        }
        size_t left = k;
        if (mnl_socket_sendto(nl->cmd, out, len) < 0)
            left = 0;
        while (left > 0) {
            ssize_t got = mnl_socket_recvfrom(nl->cmd, nl->buf->cmd, sizeof(nl->buf->cmd));
            if (got < 0)
                break;
            const struct nlmsghdr *h = (const struct nlmsghdr *)nl->buf->cmd;
            int rest = (int)got;
            for (; mnl_nlmsg_ok(h, rest); h = mnl_nlmsg_next(h, &rest)) {
                uint32_t i = h->nlmsg_seq - first;
                if (h->nlmsg_type != NLMSG_ERROR || i >= k || cmds[at + i].rc != 1)
                    continue;
                pm_nl_cmd *c = &cmds[at + i];
                c->rc = ack_result(h, c->err, sizeof(c->err));
                left--;
            }
        }
        for (size_t i = 0; i < k; i++) {
            pm_nl_cmd *c = &cmds[at + i];
            if (c->rc == 1) {
                c->rc = -(errno ? errno : EIO);
                snprintf(c->err, sizeof(c->err), "netlink: no answer (%s)", strerror(-c->rc));
                failed = -1;
            }
            if (c->rc != 0 && failed >= 0)
                failed++;
        }
        at += k;
    }
    return failed;
}

static int run_one(pm_nl *nl, pm_nl_cmd *c, char *err, size_t errlen)
{
    pm_nl_run_batch(nl, c, 1);
    if (err && errlen)
        snprintf(err, errlen, "%s", c->err);
    return c->rc;
}

int pm_nl_subflow_create(pm_nl *nl, uint32_t token, uint8_t loc_id, uint32_t laddr,
                         int backup, uint32_t raddr, uint16_t rport, char *err, size_t errlen)
{
    pm_nl_cmd c = {.kind = PM_NL_CREATE, .token = token, .loc_id = loc_id, .laddr = laddr,
                   .raddr = raddr, .rport = rport, .backup = backup};
    return run_one(nl, &c, err, errlen);
}

int pm_nl_subflow_destroy(pm_nl *nl, uint32_t token, uint32_t laddr, uint16_t lport,
                          uint32_t raddr, uint16_t rport, char *err, size_t errlen)
{
    pm_nl_cmd c = {.kind = PM_NL_DESTROY, .token = token, .laddr = laddr, .lport = lport,
                   .raddr = raddr, .rport = rport};
    return run_one(nl, &c, err, errlen);
}

int pm_nl_set_backup(pm_nl *nl, uint32_t token, uint32_t laddr, uint16_t lport,
                     uint32_t raddr, uint16_t rport, int backup, char *err, size_t errlen)
{
    pm_nl_cmd c = {.kind = PM_NL_SET_BACKUP, .token = token, .laddr = laddr, .lport = lport,
                   .raddr = raddr, .rport = rport, .backup = backup};
    return run_one(nl, &c, err, errlen);
}

/* ---- TCP sockets and their tcp_info (sock_diag) ---- */

#ifndef TCP_ESTABLISHED
#define TCP_ESTABLISHED 1 /* include/net/tcp_states.h, not exported to user space */
#endif

typedef struct {
    void (*fn)(void *, const pm_nl_tcp *);
    void *arg;
    int n;
} diag_ctx;

static int diag_cb(const struct nlmsghdr *nlh, void *data)
{
    diag_ctx *dc = data;
    if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        mnl_nlmsg_get_payload_len(nlh) < sizeof(struct inet_diag_msg))
        return MNL_CB_OK;
    const struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
    if (m->idiag_family != AF_INET || m->idiag_state != TCP_ESTABLISHED)
        return MNL_CB_OK;
    pm_nl_tcp t;
    memset(&t, 0, sizeof(t));
    memcpy(&t.laddr, &m->id.idiag_src[0], 4);
    memcpy(&t.raddr, &m->id.idiag_dst[0], 4);
    t.lport = ntohs(m->id.idiag_sport);
    t.rport = ntohs(m->id.idiag_dport);
    t.cookie = (uint64_t)m->id.idiag_cookie[0] | (uint64_t)m->id.idiag_cookie[1] << 32;
    int have = 0;
    struct nlattr *attr;
    mnl_attr_for_each(attr, nlh, sizeof(*m)) {
        if (mnl_attr_get_type(attr) != INET_DIAG_INFO)
            continue;
        /* a kernel's struct tcp_info may be shorter or longer than ours: the fields used
           exist since Linux 4.1; a shorter one proves nothing */
        struct tcp_info ti;
        size_t len = mnl_attr_get_payload_len(attr);
        if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
            continue;
        memset(&ti, 0, sizeof(ti));
        memcpy(&ti, mnl_attr_get_payload(attr), len < sizeof(ti) ? len : sizeof(ti));
        t.bytes_acked = ti.tcpi_bytes_acked;
        t.bytes_received = ti.tcpi_bytes_received;
        t.last_ack_recv_ms = ti.tcpi_last_ack_recv;
        t.last_data_recv_ms = ti.tcpi_last_data_recv;
        t.unacked = ti.tcpi_unacked;
        t.notsent = len >= offsetof(struct tcp_info, tcpi_notsent_bytes) +
                               sizeof(ti.tcpi_notsent_bytes)
                        ? ti.tcpi_notsent_bytes
                        : UINT32_MAX;
        t.rtt_us = ti.tcpi_rtt;
        t.rttvar_us = ti.tcpi_rttvar;
        t.rto_us = ti.tcpi_rto;
        t.retransmits = ti.tcpi_retransmits;
        t.backoff = ti.tcpi_backoff;
        have = 1;
    }
    if (have) {
        dc->fn(dc->arg, &t);
        dc->n++;
    }
    return MNL_CB_OK;
}

static int diag_open(pm_nl *nl, char *err, size_t errlen)
{
    if (nl->diag)
        return 0;
    nl->diag = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
    if (!nl->diag || mnl_socket_bind(nl->diag, 0, MNL_SOCKET_AUTOPID) < 0) {
        int e = errno;
        snprintf(err, errlen, "sock_diag netlink: %s", strerror(e));
        if (nl->diag)
            mnl_socket_close(nl->diag);
        nl->diag = NULL;
        return -e;
    }
    /* the agent never blocks for long on a lost answer */
    struct timeval tv = {0, 200000};
    setsockopt(mnl_socket_get_fd(nl->diag), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return 0;
}

int pm_nl_query_tcp(pm_nl *nl, const pm_nl_tcp_id *ids, size_t n,
                    void (*fn)(void *arg, const pm_nl_tcp *t), void *arg, char *err,
                    size_t errlen)
{
    int rc = diag_open(nl, err, errlen);
    if (rc < 0)
        return rc;
    char *req = nl->buf->query;
    diag_ctx dc = {fn, arg, 0};
    for (size_t off = 0; off < n; off += QUERY_BATCH) {
        size_t k = n - off < QUERY_BATCH ? n - off : QUERY_BATCH, len = 0;
        uint32_t seq0 = nl->seq + 1;
        for (size_t i = 0; i < k; i++) {
            const pm_nl_tcp_id *id = &ids[off + i];
            struct nlmsghdr *nlh = mnl_nlmsg_put_header(req + len);
            nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
            nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
            nlh->nlmsg_seq = ++nl->seq;
            struct inet_diag_req_v2 *r = mnl_nlmsg_put_extra_header(nlh, sizeof(*r));
            r->sdiag_family = AF_INET;
            r->sdiag_protocol = IPPROTO_TCP;
            r->idiag_states = 1u << TCP_ESTABLISHED;
            r->idiag_ext = 1u << (INET_DIAG_INFO - 1);
            memcpy(&r->id.idiag_src[0], &id->laddr, 4);
            memcpy(&r->id.idiag_dst[0], &id->raddr, 4);
            r->id.idiag_sport = htons(id->lport);
            r->id.idiag_dport = htons(id->rport);
            r->id.idiag_cookie[0] = r->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
            len += NLMSG_ALIGN(nlh->nlmsg_len);
        }
        if (mnl_socket_sendto(nl->diag, req, len) < 0) {
            int e = errno;
            snprintf(err, errlen, "sock_diag lookup: %s", strerror(e));
            return -e;
        }
        /* each request ends with its acknowledgement (or error: ENOENT when the socket is
           gone); answers of an earlier, abandoned batch are skipped by their numbers */
        size_t pending = k;
        while (pending > 0) {
            ssize_t got = mnl_socket_recvfrom(nl->diag, nl->buf->diag, sizeof(nl->buf->diag));
            if (got < 0) {
                if (errno == EINTR)
                    continue;
                int e = errno;
                snprintf(err, errlen, "sock_diag lookup: %s", strerror(e));
                return -e;
            }
            int left = (int)got;
            for (const struct nlmsghdr *h = (const struct nlmsghdr *)nl->buf->diag;
                 mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
                if (h->nlmsg_seq < seq0 || h->nlmsg_seq > nl->seq)
                    continue;
                if (h->nlmsg_type == NLMSG_ERROR)
                    pending--;
                else if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY)
                    diag_cb(h, &dc);
            }
        }
    }
    return dc.n;
}
