/* The path migration agent's control socket: status, arm, migrate, auto, stop. */
#include "pathmig/pm_agent.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static json_t *status_json(agent_t *ag)
{
    json_t *conns = json_array(), *paths = json_array();
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++)
            json_array_append_new(paths, json_pack("{s:s,s:i,s:b}", "peer", ag->nodes[p].name,
                                                   "rail", r, "up", ag->ctx.path_up[p][r]));
    for (size_t i = 0; i < ag->nconn; i++) {
        mpilab_pm_conn *c = &ag->conn[i];
        char tok[16];
        snprintf(tok, sizeof(tok), "%08" PRIx32, c->token);
        json_t *subs = json_array();
        for (int k = 0; k < c->nsub; k++)
            json_array_append_new(subs, pma_sub_json(ag, &c->sub[k]));
        json_array_append_new(conns, json_pack(
            "{s:s,s:s,s:s,s:b,s:b,s:o}", "token", tok, "peer",
            c->peer >= 0 ? ag->nodes[c->peer].name : "", "state",
            c->managed ? mpilab_pm_state_name(c->state) : "UNMANAGED", "server_side",
            c->server_side, "established", c->established, "subflows", subs));
    }
    return json_pack("{s:s,s:b,s:b,s:o,s:o,s:I,s:I,s:o}", "node", ag->node_name,
                     "auto_migrate", ag->ctx.auto_migrate, "auto_rearm", ag->ctx.auto_rearm,
                     "paths", paths, "connections", conns, "actions_failed",
                     (json_int_t)ag->actions_failed, "actions_moot",
                     (json_int_t)ag->actions_moot, "stats", pma_stats_json(ag));
}

static json_t *request(agent_t *ag, mpilab_pm_event_kind kind, const char *target)
{
    const char *what = kind == MPILAB_PM_EV_ARM ? "arm" : "migrate";
    mpilab_pm_event ev = {.kind = kind, .now = pma_mono()};
    char err[200];
    if (strcmp(target, "all") == 0) {
        int done = 0, refused = 0;
        json_t *errs = json_array();
        for (size_t i = 0; i < ag->nconn; i++) {
            mpilab_pm_conn *c = &ag->conn[i];
            /* `all` means every connection this agent can act on */
            if (!c->managed || !c->established || c->state == MPILAB_PM_CLOSED ||
                (kind == MPILAB_PM_EV_ARM && c->state != MPILAB_PM_MIGRATED) ||
                (kind == MPILAB_PM_EV_MIGRATE && c->state != MPILAB_PM_ARMED))
                continue;
            if (pma_step(ag, c, &ev, err, sizeof(err)) == 0) {
                done++;
            } else if (!(kind == MPILAB_PM_EV_ARM && c->server_side)) {
                refused++;
                json_array_append_new(errs, json_string(err));
            }
        }
        pma_log_obj(ag, "command", json_pack("{s:s,s:s,s:i,s:i}", "command", what, "target", "all",
                                             "done", done, "refused", refused));
        return json_pack("{s:b,s:i,s:i,s:o}", "ok", 1, "done", done, "refused", refused,
                         "errors", errs);
    }
    char *end;
    unsigned long t = strtoul(target, &end, 16);
    if (!*target || *end || t > 0xffffffffUL)
        return json_pack("{s:s}", "error", "expected a connection token (8 hex digits) or 'all'");
    mpilab_pm_conn *c = pma_find_conn(ag, (uint32_t)t);
    if (!c) {
        snprintf(err, sizeof(err), "no connection with token %s on node %s", target,
                 ag->node_name);
        return json_pack("{s:s}", "error", err);
    }
    if (pma_step(ag, c, &ev, err, sizeof(err)) != 0)
        return json_pack("{s:s}", "error", err);
    pma_log_obj(ag, "command", json_pack("{s:s,s:s}", "command", what, "target", target));
    return json_pack("{s:b,s:i,s:s}", "ok", 1, "done", 1, "state",
                     mpilab_pm_state_name(c->state));
}

static json_t *command(agent_t *ag, char *line)
{
    char *save = NULL, *verb = strtok_r(line, " \t\r\n", &save);
    char *arg = verb ? strtok_r(NULL, " \t\r\n", &save) : NULL;
    if (!verb)
        return json_pack("{s:s}", "error", "empty command");
    if (strcmp(verb, "status") == 0)
        return status_json(ag);
    if ((strcmp(verb, "arm") == 0 || strcmp(verb, "migrate") == 0) && arg)
        return request(ag, verb[0] == 'a' ? MPILAB_PM_EV_ARM : MPILAB_PM_EV_MIGRATE, arg);
    if (strcmp(verb, "auto") == 0 && arg && (!strcmp(arg, "on") || !strcmp(arg, "off"))) {
        ag->ctx.auto_migrate = ag->ctx.auto_rearm = strcmp(arg, "on") == 0;
        pma_log_obj(ag, "command", json_pack("{s:s,s:s}", "command", "auto", "target", arg));
        if (ag->ctx.auto_migrate)
            pma_step_all(ag, MPILAB_PM_EV_TICK, -1);
        return json_pack("{s:b,s:b}", "ok", 1, "auto", ag->ctx.auto_migrate);
    }
    if (strcmp(verb, "stop") == 0) {
        ag->stop = 1;
        return json_pack("{s:b}", "ok", 1);
    }
    if (strcmp(verb, "done") == 0) {
        /* the job is done: its peers' agents stop one after another next, and a path
         * silent because a peer's agent has gone is no path failure */
        if (!ag->done)
            pma_log_obj(ag, "command", json_pack("{s:s,s:s}", "command", "done", "target", "all"));
        ag->done = 1;
        return json_pack("{s:b,s:b}", "ok", 1, "done", 1);
    }
    return json_pack("{s:s}", "error", "unknown command (status, arm TOKEN|all, "
                     "migrate TOKEN|all, auto on|off, done, stop)");
}

void pma_on_ctl(agent_t *ag)
{
    int fd = accept4(ag->ctl, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char line[512];
    size_t n = 0;
    while (n + 1 < sizeof(line)) {
        ssize_t k = read(fd, line + n, sizeof(line) - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        if (memchr(line, '\n', n))
            break;
    }
    line[n] = 0;
    json_t *reply = command(ag, line);
    if (ag->log) /* what the command did is in the log before the answer arrives */
        fflush(ag->log);
    char *text = json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(reply);
    if (text) {
        size_t len = strlen(text), off = 0;
        while (off < len) {
            ssize_t w = write(fd, text + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (write(fd, "\n", 1) < 0) { /* client gone */ }
        free(text);
    }
    close(fd);
}

int pma_open_ctl(agent_t *ag, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(ag->ctl_path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "--control %s: path longer than %zu bytes", ag->ctl_path,
                 sizeof(sa.sun_path) - 1);
        return -1;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ag->ctl_path);
    unlink(ag->ctl_path);
    ag->ctl = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ag->ctl < 0 || bind(ag->ctl, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(ag->ctl, 16) != 0) {
        snprintf(err, errlen, "--control %s: %s", ag->ctl_path, strerror(errno));
        return -1;
    }
    return 0;
}
