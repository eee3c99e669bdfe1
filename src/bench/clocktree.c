/* Hierarchical clock synchronisation (MPILAB_SYNC_HIERARCHICAL, include/mpilab/clocksync.h),
 * after ReproMPI's hierarchical scheme: node-aware k-nomial trees of radix TREE_RADIX.
 *
 * The tree. Ranks with the same processor name share a node; a node's lowest rank is its
 * leader. Inside a node the ranks form a k-nomial tree over their node-local index (in rank
 * order) rooted at the leader; the leaders form a k-nomial tree over their leader index (in
 * rank order) rooted at rank 0. In a k-nomial tree x's parent is x with its lowest non-zero
 * base-k digit cleared. So a rank's path to rank 0 goes up its node's tree to its leader, then
 * up the leaders' tree: every hop below the leader stays inside one node (shared memory: a
 * short round trip, hence a small pair bound), and only leaders' hops cross the network. With
 * one rank per node this is the k-nomial tree over the ranks (depth up to 2 at 1024 ranks);
 * with every rank on one node too. A parent always has a lower rank than its child.
 *
 * The sweeps. Every rank first synchronises its children one after the other (node-local
 * children first, in k-nomial round order, then leader children), then answers its parent;
 * all parents work at once. Three sweeps: a minimum-round-trip probe of every pair, one shared
 * gap (the drift window, or SK_GAP_S), a second probe of every pair (the pair's SKaMPI model
 * from the two), then the check of every pair (mpilab_cs_verify_one: residual and
 * re-anchoring), which also hands each child its pair model. Every pair's anchor is thus in
 * the last sweep, close to the end, and every pair's drift is resolved over at least the gap.
 * Rank 0 gathers the pair models and composes every rank's model along its path (the
 * uncertainties add: a depth-d rank's bound is the sum of its path's pair bounds, see
 * MPILAB_SYNC_TREE_RADIX). */
#include "clocksync_int.h"
#include "mpilab/wtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TREE_RADIX MPILAB_SYNC_TREE_RADIX
#define KEY_LEADER 64 /* a leader edge's order key: after every node-local round */

typedef struct tree {
    int *parent;   /* [2 size]: parent of every rank (-1 for rank 0), then its order key */
    int *children; /* this rank's children in probing order */
    int nchildren;
    int nodes;
} tree_t;

typedef struct named {
    const char *name;
    int rank;
} named_t;

typedef struct keyed {
    int key, rank;
} keyed_t;

static int by_name(const void *a, const void *b)
{
    const named_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_key(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* x >= 1's parent in a k-nomial tree of the given radix (x with its lowest non-zero base-k
 * digit cleared); *round: that digit's position. */
static int knomial_parent(int x, long radix, int *round)
{
    long step = 1;
    int j = 0;
    while ((x / step) % radix == 0) {
        step *= radix;
        j++;
    }
    *round = j;
    return (int)(x - ((x / step) % radix) * step);
}

/* The ranks by processor name (size entries of len bytes each), then by rank; NULL if
 * memory ran out. */
static named_t *sort_names(const char *names, size_t len, int size)
{
    named_t *s = malloc((size_t)size * sizeof *s);
    if (!s)
        return NULL;
    for (int r = 0; r < size; r++)
        s[r] = (named_t){names + (size_t)r * len, r};
    qsort(s, (size_t)size, sizeof *s, by_name);
    return s;
}

/* Rank 0: every rank's parent and order key (pk: [2 size]) from the ranks' processor names
 * (size entries of len bytes each); flat_leaders: every leader's parent is rank 0 (the
 * leaders' tree of radix > size). Returns the number of nodes, or -1 if memory ran out. */
static int tree_plan(const char *names, size_t len, int size, int flat_leaders, int *pk)
{
    named_t *s = sort_names(names, len, size);
    int *local = malloc((size_t)size * 3 * sizeof *local);
    if (!s || !local) {
        free(s);
        free(local);
        return -1;
    }
    int *start = local + size, *lead = local + 2 * (size_t)size; /* lead: leader index <-> rank */
    for (int k = 0, g = 0; k < size; k++) {
        if (k > 0 && strcmp(s[k].name, s[k - 1].name) != 0)
            g = k;
        local[s[k].rank] = k - g;
        start[s[k].rank] = g;
    }
    int nodes = 0;
    for (int r = 0; r < size; r++)
        if (local[r] == 0)
            lead[nodes++] = r; /* leaders in rank order: index nodes - 1 */
    int *index_of = malloc((size_t)size * sizeof *index_of);
    if (!index_of) {
        free(s);
        free(local);
        return -1;
    }
    for (int a = 0; a < nodes; a++)
        index_of[lead[a]] = a;
    pk[0] = -1;
    pk[size] = 0;
    for (int r = 1; r < size; r++) {
        int j;
        if (local[r] > 0) {
            pk[r] = s[start[r] + knomial_parent(local[r], TREE_RADIX, &j)].rank;
            pk[size + r] = j;
        } else {
            pk[r] = lead[knomial_parent(index_of[r], flat_leaders ? (long)size + 1 : TREE_RADIX, &j)];
            pk[size + r] = KEY_LEADER + j;
        }
    }
    free(index_of);
    free(s);
    free(local);
    return nodes;
}

#define NAME_LEN (MPI_MAX_PROCESSOR_NAME + 1)

/* Collective: every rank's processor name on rank 0 (*names: size entries of NAME_LEN bytes,
 * each terminated; NULL elsewhere). ok: this rank's own allocations succeeded (any rank's
 * failure fails all). Returns 0 or an MPI error code. */
static int gather_names(MPI_Comm comm, int rank, int size, int ok, char **names)
{
    char name[NAME_LEN];
    memset(name, 0, sizeof name);
    int len = 0;
    MPI_Get_processor_name(name, &len);
    *names = rank == 0 ? calloc((size_t)size, NAME_LEN) : NULL;
    ok = ok && (rank != 0 || *names);
    int all_ok = 0;
    int rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (rc == MPI_SUCCESS && !all_ok)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = MPI_Gather(name, NAME_LEN, MPI_CHAR, *names, NAME_LEN, MPI_CHAR, 0, comm);
    if (rc == MPI_SUCCESS && rank == 0)
        for (int r = 0; r < size; r++)
            (*names)[(size_t)r * NAME_LEN + NAME_LEN - 1] = '\0';
    return rc;
}

int mpilab_cs_count_nodes(MPI_Comm comm, int *nodes)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *names = NULL;
    int count = 0;
    int rc = gather_names(comm, rank, size, 1, &names);
    if (rc == MPI_SUCCESS && rank == 0) {
        named_t *s = sort_names(names, NAME_LEN, size);
        for (int k = 0; s && k < size; k++)
            count += k == 0 || strcmp(s[k].name, s[k - 1].name) != 0;
        count = s ? count : -1;
        free(s);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&count, 1, MPI_INT, 0, comm);
    free(names);
    if (rc == MPI_SUCCESS && count < 0)
        rc = MPI_ERR_NO_MEM;
    *nodes = count;
    return rc;
}

/* Collective: the tree (every rank: all parents and keys, its own children in order). */
static int tree_build(MPI_Comm comm, int rank, int size, int flat_leaders, tree_t *t)
{
    memset(t, 0, sizeof *t);
    char *names = NULL;
    t->parent = calloc((size_t)size * 2 + 1, sizeof *t->parent);
    t->children = malloc((size_t)size * sizeof *t->children);
    keyed_t *kc = malloc((size_t)size * sizeof *kc);
    int rc = gather_names(comm, rank, size, t->parent && t->children && kc, &names);
    if (rc == MPI_SUCCESS && rank == 0)
        t->parent[2 * size] = tree_plan(names, NAME_LEN, size, flat_leaders, t->parent);
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(t->parent, 2 * size + 1, MPI_INT, 0, comm);
    if (rc == MPI_SUCCESS && t->parent[2 * size] < 0)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS) {
        t->nodes = t->parent[2 * size];
        for (int r = 1; r < size; r++)
            if (t->parent[r] == rank)
                kc[t->nchildren++] = (keyed_t){t->parent[size + r], r};
        qsort(kc, (size_t)t->nchildren, sizeof *kc, by_key);
        for (int c = 0; c < t->nchildren; c++)
            t->children[c] = kc[c].rank;
    }
    free(names);
    free(kc);
    return rc;
}

static void tree_free(tree_t *t)
{
    free(t->parent);
    free(t->children);
    memset(t, 0, sizeof *t);
}

/* One sweep. check 0: every child probed once (minimum round trip, into probe[c]); check 1:
 * every pair checked (mpilab_cs_verify_one on pair[NM * c]; the drift of the line from
 * probe[c], the first sweep's, to the check when tighter) and the model sent to the child.
 * Then the rank answers its parent (and, check 1, receives its pair model into mine). */
static int tree_sweep(MPI_Comm comm, const tree_t *t, int rank, double t0, int effort, int check,
                      probe_t *probe, double *pair, double *mine)
{
    int rc = MPI_SUCCESS;
    for (int c = 0; c < t->nchildren && rc == MPI_SUCCESS; c++) {
        int child = t->children[c];
        if (!check) {
            rc = mpilab_cs_min_rtt_probe(comm, child, t0, SK_MIN_PROBES, effort, &probe[c]);
            if (rc == MPI_SUCCESS)
                rc = mpilab_cs_end_phase(comm, child);
            continue;
        }
        rc = mpilab_cs_verify_one(comm, child, t0, &pair[NM * c], effort);
        /* the drift over the longer span from the first sweep's probe to the check */
        double first[NM] = {probe[c].local - probe[c].ref, 0.0, 0.0, 0.5 * probe[c].rtt, 0.0, probe[c].ref};
        mpilab_cs_combine_drift(first, &pair[NM * c]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(&pair[NM * c], NM, MPI_DOUBLE, child, TAG_MODEL, comm);
    }
    if (rank != 0 && rc == MPI_SUCCESS) {
        rc = mpilab_cs_serve(comm, t->parent[rank]);
        if (check && rc == MPI_SUCCESS)
            rc = MPI_Recv(mine, NM, MPI_DOUBLE, t->parent[rank], TAG_MODEL, comm, MPI_STATUS_IGNORE);
    }
    return rc;
}

/* Rank 0: every rank's model from the pair models (all: NM per rank, r's model against its
 * parent), in rank order (a parent is below its children). Composition of
 * local_r = o + (1 + d) local_p and local_p = O + (1 + D) ref: offset o + (1 + d) O, drift
 * (1 + d)(1 + D) - 1. The uncertainties add: the pair's, carried from its anchor to t_end
 * at its drift uncertainty (both on the parent's clock, which reads O + (1 + D) t_end at
 * t_end to within the parent's uncertainty U), and the parent's U, scaled by the pair's
 * slope (1 + d, known to within the pair's drift uncertainty). */
static void tree_compose(const tree_t *t, const double *all, int size, double t_end, double *model)
{
    memset(model, 0, NM * sizeof *model);
    for (int r = 1; r < size; r++) {
        const double *c = &all[NM * r];
        const double *P = &model[NM * t->parent[r]];
        double *m = &model[NM * r];
        double elapsed = fabs(P[0] + (1.0 + P[1]) * t_end - c[5]) + P[3];
        m[0] = c[0] + (1.0 + c[1]) * P[0];
        m[1] = (1.0 + c[1]) * (1.0 + P[1]) - 1.0;
        m[2] = c[2] + P[2];
        m[3] = c[3] + c[4] * elapsed + (1.0 + fabs(c[1]) + c[4]) * P[3];
        m[4] = (1.0 + fabs(c[1])) * P[4] + c[4] * (1.0 + fabs(P[1])) + c[4] * P[4];
        m[5] = t_end;
        /* each pair's drift is plausible, but a chain of them may add up past the bound
         * (-1029 ppm seen at depth 2 under ASan on a loaded machine): the composed model is
         * then offset-only at t_end, its drift unresolved (as a pair's is, see
         * MAX_PLAUSIBLE_DRIFT) */
        if (fabs(m[1]) > MAX_PLAUSIBLE_DRIFT) {
            m[0] += m[1] * t_end;
            m[4] += fmin(fabs(m[1]), MAX_PLAUSIBLE_DRIFT);
            m[1] = 0.0;
        }
    }
}

int mpilab_cs_tree_side(MPI_Comm comm, int rank, int size, double t0, double *model, int effort, double window,
                        int flat_leaders)
{
    double start = mpilab_wtime(); /* own clock: the ranks' clocks may be far apart */
    tree_t t;
    int rc = tree_build(comm, rank, size, flat_leaders, &t);
    int slots = t.nchildren > 0 ? t.nchildren : 1;
    probe_t *a = calloc((size_t)slots, sizeof *a), *b = calloc((size_t)slots, sizeof *b);
    double *pair = calloc((size_t)slots * NM, sizeof *pair);
    double *all = rank == 0 ? calloc((size_t)size * NM, sizeof *all) : NULL;
    double mine[NM] = {0};
    if (rc == MPI_SUCCESS && (!a || !b || !pair || (rank == 0 && !all)))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, &t, rank, t0, effort, 0, a, pair, mine);
    /* the shared gap, each rank on its own clock from its own start (t0 is rank 0's clock,
     * which another rank's may trail by far more than the window) */
    if (rc == MPI_SUCCESS)
        mpilab_cs_sleep_until(window > 0.0 ? start + window : mpilab_wtime() + SK_GAP_S);
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, &t, rank, t0, effort, 0, b, pair, mine);
    for (int c = 0; c < t.nchildren && rc == MPI_SUCCESS; c++)
        mpilab_cs_skampi_model(&a[c], &b[c], &pair[NM * c]);
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, &t, rank, t0, effort, 1, a, pair, mine);
    /* every rank reaches the gather (a failed rank contributes zeros; publish fails them all) */
    int rc2 = MPI_Gather(mine, NM, MPI_DOUBLE, all, NM, MPI_DOUBLE, 0, comm);
    if (rc == MPI_SUCCESS)
        rc = rc2;
    if (rank == 0 && rc == MPI_SUCCESS)
        tree_compose(&t, all, size, mpilab_wtime() - t0, model);
    tree_free(&t);
    free(a);
    free(b);
    free(pair);
    free(all);
    return rc;
}
