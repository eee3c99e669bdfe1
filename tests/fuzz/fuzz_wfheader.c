/* Fuzz target: the wavefront matrix file header (wf_open and the block geometry every
 * engine run computes from it). The input is the header; the harness repairs nothing but
 * the magic, then also writes a second file whose payload field and size agree with the
 * header's geometry (sparse), so the fuzzer reaches the geometry code behind the size check.
 * Invariants: wf_open either fails with a one-line reason or yields blocks that lie inside
 * the file. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "wavefront/wf_internal.h"

static void check_file(int fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    for (int io = MPILAB_WF_IO_PREAD; io <= MPILAB_WF_IO_MMAP; io++) {
        wf_file f;
        char err[512] = "";
        if (wf_open(&f, path, 0, io, err, sizeof err) != 0) {
            FUZZ_ASSERT(err[0] != '\0' && strchr(err, '\n') == NULL);
            continue;
        }
        const wf_hdr *h = &f.h;
        if (h->layout != MPILAB_WF_ROWMAJOR) {
            int64_t nbr = wf_nblockrows(h), nbc = wf_nblockcols(h);
            FUZZ_ASSERT(nbr >= 1 && nbc >= 1);
            int64_t probe[3][2] = {{0, 0}, {nbr - 1, nbc - 1}, {nbr / 2, nbc / 2}};
            for (int k = 0; k < 3; k++) {
                off_t off = wf_block_off(h, probe[k][0], probe[k][1]);
                size_t len = wf_block_bytes(h, probe[k][0], probe[k][1]);
                FUZZ_ASSERT(off >= WF_HDR_BYTES);
                FUZZ_ASSERT((uint64_t)off + len <= WF_HDR_BYTES + h->payload);
            }
            FUZZ_ASSERT(wf_scratch_doubles(h, (int64_t)h->mb, (int64_t)h->nb) > 0);
        } else {
            /* wf_open bounds t for every layout (row-major: t = 0), so the scratch size
             * cannot overflow */
            FUZZ_ASSERT(h->t <= 1024);
            FUZZ_ASSERT(wf_scratch_doubles(h, 1, 1) > 0);
        }
        wf_close(&f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * WF_HDR_BYTES)
        return 0;
    unsigned char *buf = calloc(1, WF_HDR_BYTES);
    if (!buf)
        return 0;
    memcpy(buf, WF_MAGIC, 8);
    if (size > 8)
        memcpy(buf + 8, data + 8, size - 8 < WF_HDR_BYTES - 8 ? size - 8 : WF_HDR_BYTES - 8);

    /* 1: the bytes as given (the file is exactly the input) */
    int fd = memfd_create("wfhdr", 0);
    FUZZ_ASSERT(fd >= 0);
    FUZZ_ASSERT(write(fd, buf, size < WF_HDR_BYTES ? (size > 8 ? size : 8) : WF_HDR_BYTES) > 0);
    check_file(fd);
    close(fd);

    /* 2: payload field and file size made consistent with the header's geometry */
    wf_hdr h;
    memcpy(&h, buf, sizeof h);
    /* Only within the bounds wf_open enforces before it computes any geometry: called with
     * an unbounded t, the public mpilab_wf_payload_bytes overflows `2 * t` in
     * check_blocking (wf_file.c; found by this harness, reported to the wavefront's owner). */
    if (h.rows > (1ULL << 40) || h.cols > (1ULL << 40) || h.mb > (1ULL << 40) ||
        h.nb > (1ULL << 40) || h.t > 1024 || h.planes > 5) {
        free(buf);
        return 0;
    }
    int64_t pay = mpilab_wf_payload_bytes((int)h.layout, (int64_t)h.rows, (int64_t)h.cols,
                                          (int64_t)h.mb, (int64_t)h.nb, (int64_t)h.t,
                                          (int64_t)h.planes);
    if (pay >= 0 && pay <= ((int64_t)1 << 32)) {
        h.payload = (uint64_t)pay;
        memcpy(buf, &h, sizeof h);
        fd = memfd_create("wfhdr2", 0);
        FUZZ_ASSERT(fd >= 0);
        FUZZ_ASSERT(write(fd, buf, WF_HDR_BYTES) == WF_HDR_BYTES);
        if (ftruncate(fd, (off_t)(WF_HDR_BYTES + (uint64_t)pay)) == 0)
            check_file(fd);
        close(fd);
    }
    free(buf);
    return 0;
}
