/* libmpilab-collaudit.so: a dynamic-linker audit library (LD_AUDIT, rtld-audit(7)) that
 * names, on stderr, every call crossing a shared-library boundary into a function whose name
 * starts with one of the prefixes in MPILAB_AUDIT_PREFIX (comma list; default
 * "ompi_coll_base_"): one line per call, "mpilab-audit: rank R NAME" (or into MPILAB_PROBE_LOG/probe.R.log). Open MPI's coll_tuned
 * component is its own shared object and calls the algorithms of libmpi
 * (ompi_coll_base_bcast_intra_binomial, ...) through its PLT, so the line names the
 * algorithm that ran: evidence of a forced algorithm or of a rules file that does not
 * depend on timing (Debian's Open MPI is built without the debug output that would name it;
 * docs/tune.md). No MPI here: the library only observes and returns each symbol unchanged. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned int la_version(unsigned int version)
{
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    (void)map;
    (void)lmid;
    (void)cookie;
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

/* Whether name starts with one of the comma-separated prefixes. */
static int wanted(const char *name)
{
    const char *list = getenv("MPILAB_AUDIT_PREFIX");
    if (!list || !*list)
        list = "ompi_coll_base_";
    while (*list) {
        const char *end = strchr(list, ',');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (n && strncmp(name, list, n) == 0)
            return 1;
        if (!end)
            break;
        list = end + 1;
    }
    return 0;
}

static void say(const char *name)
{
    if (!name || !wanted(name))
        return;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
        rank = getenv("PMI_RANK");
    char line[512];
    int n = snprintf(line, sizeof line, "mpilab-audit: rank %s %s\n", rank ? rank : "?", name);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    /* MPILAB_PROBE_LOG=DIR: into DIR/probe.RANK.log beside mpilab-bench --probe's own lines
     * (whole lines appended: the order inside one process is kept), else stderr */
    const char *dir = getenv("MPILAB_PROBE_LOG");
    int fd = STDERR_FILENO;
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/probe.%s.log", dir, rank ? rank : "x");
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return;
    }
    if (write(fd, line, len) < 0) {
        /* nothing to do: an audit library must not disturb the program */
    }
    if (fd != STDERR_FILENO)
        close(fd);
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned int *flags, const char *symname)
{
    (void)ndx;
    (void)refcook;
    (void)defcook;
    (void)flags; /* keep pltenter on: every later call is seen too */
    say(symname);
    return sym->st_value;
}

#if defined(__x86_64__)
Elf64_Addr la_x86_64_gnu_pltenter(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                                  La_x86_64_regs *regs, unsigned int *flags, const char *symname,
                                  long int *framesizep)
{
    (void)ndx;
    (void)refcook;
    (void)defcook;
    (void)regs;
    (void)flags;
    (void)framesizep;
    say(symname);
    return sym->st_value;
}
#endif
