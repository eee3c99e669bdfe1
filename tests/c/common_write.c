/* mpilab_write_atomic: replaces only regular files (or creates new names); devices, FIFOs
 * and "-" are written directly (a FIFO without a reader refused at once); directories and dangling links refused; stale temporary
 * files of dead processes removed, those of live processes kept. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"
#include "common/common.h"
#include "mpilab/runner.h"

static char dir[] = "/tmp/mpilab-common-write-XXXXXX";
static int dir_made;

static void remove_dir(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* NAME in the program's scratch directory (made on the first call, removed at exit). */
static char *in_dir(const char *name)
{
    if (!dir_made) {
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
        dir_made = 1;
        atexit(remove_dir);
    }
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static int slurp(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
    return (int)n;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static long dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

MPILAB_TEST(new_name_then_replace)
{
    char err[512], buf[256];
    /* a new name, then replacing a regular file */
    CHECK(mpilab_write_atomic(in_dir("new.json"), "one", 3, err, sizeof err) == 0);
    CHECK(slurp(in_dir("new.json"), buf, sizeof buf) == 3 && strcmp(buf, "one") == 0);
    CHECK(mpilab_write_atomic(in_dir("new.json"), "two!", 4, err, sizeof err) == 0);
    CHECK(slurp(in_dir("new.json"), buf, sizeof buf) == 4 && strcmp(buf, "two!") == 0);
}

MPILAB_TEST(link_to_file_replaced_through)
{
    char err[512], buf[256];
    struct stat st;
    CHECK(mpilab_write_atomic(in_dir("new.json"), "two!", 4, err, sizeof err) == 0);
    /* a symbolic link to a regular file: the file is replaced, the link stays a link */
    CHECK(symlink("new.json", in_dir("link.json")) == 0);
    CHECK(mpilab_write_atomic(in_dir("link.json"), "three", 5, err, sizeof err) == 0);
    CHECK(lstat(in_dir("link.json"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(slurp(in_dir("new.json"), buf, sizeof buf) == 5 && strcmp(buf, "three") == 0);
}

MPILAB_TEST(link_to_device_written_through)
{
    char err[512];
    struct stat st;
    /* a link to a character device (as /dev/stdout is): written through, not replaced */
    CHECK(symlink("/dev/null", in_dir("null")) == 0);
    CHECK(mpilab_write_atomic(in_dir("null"), "x", 1, err, sizeof err) == 0);
    CHECK(lstat(in_dir("null"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

MPILAB_TEST(fifo_without_reader_refused)
{
    char err[512];
    /* a FIFO with no reader: a one-line error at once, never a hang (the alarm turns a
     * blocked open into a failure) */
    CHECK(mkfifo(in_dir("fifo"), 0600) == 0);
    alarm(30);
    CHECK(mpilab_write_atomic(in_dir("fifo"), "fifo", 4, err, sizeof err) == -1);
    CHECK(strstr(err, "no reader") != NULL && strchr(err, '\n') == NULL);
    alarm(0);
}

MPILAB_TEST(fifo_with_reader_gets_the_bytes)
{
    char err[512];
    struct stat st;
    CHECK(mkfifo(in_dir("fifo2"), 0600) == 0);
    /* a FIFO with a reader: the reader gets the bytes, the FIFO stays */
    int ready[2], gate[2];
    CHECK(pipe(ready) == 0 && pipe(gate) == 0);
    pid_t reader = fork();
    if (reader == 0) {
        char b[64] = "";
        int fd = open(in_dir("fifo2"), O_RDONLY | O_NONBLOCK);
        if (fd >= 0)
            (void)fcntl(fd, F_SETFL, 0);
        (void)!write(ready[1], "r", 1);
        char go; /* read only once the writer has written (before, a read sees EOF) */
        (void)!read(gate[0], &go, 1);
        ssize_t n = 0, k;
        while (fd >= 0 && n < 4 && (k = read(fd, b + n, sizeof b - 1 - (size_t)n)) > 0)
            n += k;
        _exit(n == 4 && memcmp(b, "fifo", 4) == 0 ? 0 : 1);
    }
    char rc1;
    CHECK(read(ready[0], &rc1, 1) == 1);
    CHECK(mpilab_write_atomic(in_dir("fifo2"), "fifo", 4, err, sizeof err) == 0);
    CHECK(write(gate[1], "g", 1) == 1);
    int status = 0;
    waitpid(reader, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(lstat(in_dir("fifo2"), &st) == 0 && S_ISFIFO(st.st_mode));
}

MPILAB_TEST(dash_is_stdout)
{
    char err[512], buf[256];
    /* "-" is standard output, not a file named "-" */
    fflush(stdout);
    int saved = dup(1);
    int out = open(in_dir("stdout.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    int rc = mpilab_write_atomic("-", "dash", 4, err, sizeof err);
    dup2(saved, 1);
    close(out);
    close(saved);
    CHECK(rc == 0);
    CHECK(slurp(in_dir("stdout.txt"), buf, sizeof buf) == 4 && strcmp(buf, "dash") == 0);
    CHECK(access("-", F_OK) != 0);
}

MPILAB_TEST(directory_and_dangling_link_refused)
{
    char err[512];
    /* refused: a directory, a dangling link; nothing created */
    CHECK(mkdir(in_dir("sub"), 0700) == 0);
    err[0] = '\0';
    CHECK(mpilab_write_atomic(in_dir("sub"), "x", 1, err, sizeof err) == -1);
    CHECKF(strstr(err, "is a directory") && !strchr(err, '\n'), "%s", err);
    CHECK(symlink("missing", in_dir("dangling")) == 0);
    CHECK(mpilab_write_atomic(in_dir("dangling"), "x", 1, err, sizeof err) == -1);
    CHECKF(strstr(err, "missing file"), "%s", err);
    CHECK(access(in_dir("missing"), F_OK) != 0);
}

MPILAB_TEST(stale_temporaries)
{
    char err[512], buf[256];
    /* stale temporaries: a dead process's file goes, a live process's file stays */
    char stale[600], live[600];
    snprintf(stale, sizeof stale, "%s.tmp.%ld", in_dir("out.json"), dead_pid());
    snprintf(live, sizeof live, "%s.tmp.%ld", in_dir("out.json"), (long)getppid());
    put(stale, "half");
    put(live, "busy");
    CHECK(mpilab_write_atomic(in_dir("out.json"), "{}", 2, err, sizeof err) == 0);
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(live, F_OK) == 0);
    CHECK(slurp(in_dir("out.json"), buf, sizeof buf) == 2);
}

MPILAB_TEST(json_ends_with_newline)
{
    char err[512], buf[256];
    /* json variant ends with a newline */
    json_t *o = json_pack("{s:i}", "a", 1);
    CHECK(mpilab_json_write_atomic(in_dir("o.json"), o, err, sizeof err) == 0);
    json_decref(o);
    CHECK(slurp(in_dir("o.json"), buf, sizeof buf) > 0 && buf[strlen(buf) - 1] == '\n');
}

/* mpilab-bench's results writer on a thread (it overlaps MPI_Finalize): the file is complete
 * when _end returns, the writer owns its copies (the caller's name and document are gone
 * before it ends), and a failed write comes back as one line. */
MPILAB_TEST(runner_writer_thread)
{
    char err[512], buf[256];
    mpilab_runner_config_t c;
    memset(&c, 0, sizeof c);
    char *name = strdup(in_dir("w.json"));
    c.out = name;
    json_t *doc = json_pack("{s:s,s:[]}", "schema", "mpilab.results/1", "measurements");
    mpilab_runner_writer_t *w = mpilab_runner_out_write_begin(&c, doc, -1, 0, 1);
    json_decref(doc);
    free(name);
    CHECK(w != NULL);
    CHECK(mpilab_runner_out_write_end(w, err, sizeof err) == 0);
    CHECK(slurp(in_dir("w.json"), buf, sizeof buf) > 0 && strstr(buf, "mpilab.results/1"));
    CHECK(mkdir(in_dir("wdir"), 0700) == 0);
    name = strdup(in_dir("wdir"));
    c.out = name;
    doc = json_pack("{s:[]}", "measurements");
    w = mpilab_runner_out_write_begin(&c, doc, -1, 0, 1);
    json_decref(doc);
    CHECK(w != NULL);
    err[0] = '\0';
    CHECK(mpilab_runner_out_write_end(w, err, sizeof err) == -1);
    CHECKF(strstr(err, "is a directory") && !strchr(err, '\n'), "%s", err);
    free(name);
}

MPILAB_TEST_MAIN()
