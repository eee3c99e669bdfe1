/* The MPI library's own collective algorithms as entries, forced through its MPI_T control
 * variables (include/mpilab/forced.h, docs/tune.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/forced.h"
#include "mpilab/ops.h"

#define MAX_ALGS 32

static int ident(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

int mpilab_forced_mpich_names(const char *desc, char names[][64], int max)
{
    const char *a = strstr(desc, "auto - ");
    if (!a || max < 1)
        return -1;
    snprintf(names[0], 64, "auto");
    /* the separators " - " after the auto line: each preceded by spaces and a name */
    const char *dash[MAX_ALGS], *run[MAX_ALGS], *sp[MAX_ALGS];
    int n = 0;
    for (const char *p = strstr(a + 7, " - "); p && n < MAX_ALGS; p = strstr(p + 3, " - ")) {
        const char *s = p;
        while (s > a + 7 && s[-1] == ' ')
            s--;
        const char *r = s;
        while (r > a + 7 && ident(r[-1]))
            r--;
        if (r == s)
            continue; /* a dash inside a description, not after a name */
        dash[n] = p + 1, sp[n] = s, run[n++] = r;
    }
    if (n == 0)
        return 1;
    /* the column of the dash, counted from the name's start, is the same in the whole list;
     * the shortest maximal name run gives it (a name after a description ending in ')' or a
     * space is whole, one glued to a description's last word is longer than it) */
    ptrdiff_t w = dash[0] - run[0];
    for (int k = 1; k < n; k++)
        if (dash[k] - run[k] < w)
            w = dash[k] - run[k];
    int count = 1;
    const char *prev_end = a + 7;
    for (int k = 0; k < n && count < max; k++) {
        const char *start = dash[k] - w;
        if (start < run[k] || start < prev_end || sp[k] - start >= 64 || sp[k] <= start)
            return -1;
        for (const char *q = start; q < sp[k]; q++)
            if (!ident(*q))
                return -1;
        snprintf(names[count++], 64, "%.*s", (int)(sp[k] - start), start);
        prev_end = dash[k] + 2;
    }
    return count;
}

#if defined(MPILAB_MPI_IS_OPENMPI) || defined(MPILAB_MPI_IS_MPICH)

/* One forced algorithm: the variable to write and the value. Lives as long as the entry
 * (the registered copy keeps the pointer in `data`). */
typedef struct forced {
    int cvar;          /* MPI_T index */
    int value;         /* the algorithm */
    int per_comm;      /* Open MPI: read at communicator creation, so setup duplicates */
    int (*run)(mpilab_op_run_t *r); /* the native entry's run (no look-up while timing) */
} forced_t;

/* The entry's state: the native operation's buffers and, for Open MPI, the communicator
 * created under the forced value. */
typedef struct forced_state {
    void *inner;
    MPI_Comm comm;
} forced_state_t;

static int write_cvar(int index, int value)
{
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS)
        return -1;
    int rc = MPI_T_cvar_write(h, &value) == MPI_SUCCESS ? 0 : -1;
    MPI_T_cvar_handle_free(&h);
    return rc;
}

static int forced_setup(mpilab_op_run_t *r)
{
    const forced_t *f = r->op->data;
    forced_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->comm = MPI_COMM_NULL;
    if (write_cvar(f->cvar, f->value) != 0) {
        free(s);
        return -1;
    }
    if (f->per_comm) { /* the new communicator's tuned module reads the forced value */
        MPI_Comm_dup(r->comm, &s->comm);
        write_cvar(f->cvar, 0); /* only this communicator is forced */
    }
    MPI_Comm keep = r->comm;
    if (f->per_comm)
        r->comm = s->comm;
    int rc = mpilab_coll_setup(r);
    r->comm = keep;
    if (rc != 0) {
        if (s->comm != MPI_COMM_NULL)
            MPI_Comm_free(&s->comm);
        if (!f->per_comm)
            write_cvar(f->cvar, 0);
        free(s);
        return rc;
    }
    s->inner = r->state;
    r->state = s;
    return 0;
}

/* Call fn with the native operation's view of r: its buffers, and the forced communicator. */
static int inner_call(mpilab_op_run_t *r, int (*fn)(mpilab_op_run_t *))
{
    forced_state_t *s = r->state;
    MPI_Comm keep = r->comm;
    if (s->comm != MPI_COMM_NULL)
        r->comm = s->comm;
    r->state = s->inner;
    int rc = fn(r);
    r->state = s;
    r->comm = keep;
    return rc;
}

static int forced_run(mpilab_op_run_t *r)
{
    const forced_t *f = r->op->data;
    return inner_call(r, f->run);
}

static int forced_validate(mpilab_op_run_t *r)
{
    return inner_call(r, mpilab_coll_validate);
}

static void forced_teardown(mpilab_op_run_t *r)
{
    const forced_t *f = r->op->data;
    forced_state_t *s = r->state;
    if (!s)
        return;
    r->state = s->inner;
    mpilab_coll_teardown(r);
    if (s->comm != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm);
    else
        write_cvar(f->cvar, 0); /* MPICH: back to auto */
    free(s);
    r->state = NULL;
}

/* Register op:<prefix>_<name> for value `value` of variable `cvar`. */
static int register_one(const char *coll, const char *prefix, const char *name, int cvar, int value,
                        int per_comm, const char *var, char *err, size_t errlen)
{
    const mpilab_op_t *native = mpilab_ops_find(coll, "native");
    if (!native) {
        snprintf(err, errlen, "%s: no native entry to force algorithms of", coll);
        return -1;
    }
    forced_t *f = malloc(sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *f = (forced_t){.cvar = cvar, .value = value, .per_comm = per_comm, .run = native->run};
    char impl[96], origin[300];
    int len = snprintf(impl, sizeof impl, "%.8s_%.80s", prefix, name);
    for (int k = 0; k < len && k < (int)sizeof impl; k++)
        if (!ident(impl[k]))
            impl[k] = '_';
    snprintf(origin, sizeof origin, "mpi:%.250s", var);
    mpilab_op_t op = *native;
    op.impl = impl;
    op.setup = forced_setup;
    op.run = forced_run;
    op.validate = forced_validate;
    op.teardown = forced_teardown;
    op.model = MPILAB_MODEL_NONE;
    op.fn = NULL;
    op.param = (size_t)value;
    op.data = f;
    if (mpilab_ops_register_as(&op, origin) != 0) {
        snprintf(err, errlen, "%s", mpilab_ops_error());
        free(f);
        return -1;
    }
    return 0;
}

#if defined(MPILAB_MPI_IS_OPENMPI)
static int read_cvar_int(int index, int *value)
{
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS)
        return -1;
    int rc = MPI_T_cvar_read(h, value) == MPI_SUCCESS ? 0 : -1;
    MPI_T_cvar_handle_free(&h);
    return rc;
}

/* Open MPI: coll_tuned_<coll>_algorithm with its enumerator. */
static int register_var(int index, const char *name, MPI_T_enum et, const char *desc, char *err, size_t errlen)
{
    (void)desc;
    for (size_t c = 0; mpilab_coll_op_name(c); c++) { /* coll_entries.c's collectives */
        char want[96];
        snprintf(want, sizeof want, "coll_tuned_%s_algorithm", mpilab_coll_op_name(c));
        if (strcmp(name, want) != 0)
            continue;
        int nitems = 0, nl = 0;
        char ename[256];
        nl = (int)sizeof ename;
        if (et == MPI_T_ENUM_NULL || MPI_T_enum_get_info(et, &nitems, ename, &nl) != MPI_SUCCESS) {
            snprintf(err, errlen, "%s: no enumerator of algorithms", name);
            return -1;
        }
        int n = 0;
        for (int k = 0; k < nitems; k++) {
            int v;
            char item[256];
            int il = (int)sizeof item;
            if (MPI_T_enum_get_item(et, k, &v, item, &il) != MPI_SUCCESS || v == 0)
                continue; /* 0: "ignore", the default decision (the native entry) */
            if (register_one(mpilab_coll_op_name(c), "ompi", item, index, v, 1, name, err, errlen) != 0)
                return -1;
            n++;
        }
        return n;
    }
    return 0;
}

static int check_dynamic(char *err, size_t errlen)
{
    int n, idx = -1;
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n && idx < 0; i++) {
        char nm[256];
        int nl = (int)sizeof nm, vb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_T_cvar_get_info(i, nm, &nl, &vb, &dt, &et, NULL, NULL, &bind, &scope) == MPI_SUCCESS &&
            strcmp(nm, "coll_tuned_use_dynamic_rules") == 0)
            idx = i;
    }
    int on = 0;
    if (idx < 0 || read_cvar_int(idx, &on) != 0 || !on) {
        snprintf(err, errlen, "--mpi-algorithms: Open MPI forces algorithms only with dynamic rules: "
                              "launch with --mca coll_tuned_use_dynamic_rules 1");
        return -1;
    }
    return 0;
}
#else
/* MPICH: MPIR_CVAR_<COLL>_INTRA_ALGORITHM, names from the description. */
static int register_var(int index, const char *name, MPI_T_enum et, const char *desc, char *err, size_t errlen)
{
    (void)et;
    for (size_t c = 0; mpilab_coll_op_name(c); c++) { /* coll_entries.c's collectives */
        char want[96];
        snprintf(want, sizeof want, "MPIR_CVAR_%s_INTRA_ALGORITHM", mpilab_coll_op_name(c));
        for (char *p = want; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        if (strcmp(name, want) != 0)
            continue;
        char names[MAX_ALGS][64];
        int n = mpilab_forced_mpich_names(desc, names, MAX_ALGS);
        if (n < 0) {
            snprintf(err, errlen, "%s: its description does not list algorithms as 'name - text'", name);
            return -1;
        }
        for (int k = 1; k < n; k++)
            if (register_one(mpilab_coll_op_name(c), "mpich", names[k], index, k, 0, name, err, errlen) != 0)
                return -1;
        return n - 1;
    }
    return 0;
}

static int check_dynamic(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 0;
}
#endif

int mpilab_forced_register(char *err, size_t errlen)
{
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "--mpi-algorithms: the MPI library's tool interface (MPI_T) did not start");
        return -1;
    }
    int total = -1;
    if (check_dynamic(err, errlen) == 0) {
        int n;
        MPI_T_cvar_get_num(&n);
        total = 0;
        char *desc = malloc(65536);
        for (int i = 0; desc && i < n && total >= 0; i++) {
            char nm[256];
            int nl = (int)sizeof nm, dl = 65536, vb, bind, scope;
            MPI_Datatype dt;
            MPI_T_enum et;
            if (MPI_T_cvar_get_info(i, nm, &nl, &vb, &dt, &et, desc, &dl, &bind, &scope) != MPI_SUCCESS)
                continue;
            int k = register_var(i, nm, et, desc, err, errlen);
            total = k < 0 ? -1 : total + k;
        }
        if (!desc) {
            snprintf(err, errlen, "out of memory");
            total = -1;
        }
        free(desc);
    }
    /* MPI_T stays initialised: the entries write their variables while measuring */
    return total;
}

#else /* SimGrid SMPI: no MPI_T */

int mpilab_forced_register(char *err, size_t errlen)
{
    snprintf(err, errlen, "--mpi-algorithms: this MPI has no tool interface (MPI_T) to force algorithms with");
    return -1;
}

#endif
