/* The position-aware disk model (include/mpilab/diskmodel.h). */
#include <math.h>

#include "mpilab/diskmodel.h"

double mpilab_disk_cost(const mpilab_disk_model *m, int64_t head, int64_t pos, int64_t len)
{
    double t = (double)len / m->rate_Bps;
    if (pos != head) {
        double d = fabs((double)pos - (double)head);
        double f = d >= (double)m->size ? 1.0 : d / (double)m->size;
        t += m->seek_min_s + (m->seek_max_s - m->seek_min_s) * sqrt(f) + m->rot_s;
    }
    return t;
}

double mpilab_disk_serve(const mpilab_disk_model *m, mpilab_disk_state *s, int64_t pos,
                         int64_t len, int write)
{
    double c = mpilab_disk_cost(m, s->head, pos, len);
    if (pos != s->head)
        s->seeks++;
    s->head = pos + len;
    s->busy_s += c;
    if (write) {
        s->writes++;
        s->bytes_written += len;
    } else {
        s->reads++;
        s->bytes_read += len;
    }
    return c;
}

int mpilab_disk_elevator_pick(const int64_t *pos, int n, int64_t head)
{
    int up = -1, low = -1;
    for (int i = 0; i < n; i++) {
        if (pos[i] >= head && (up < 0 || pos[i] < pos[up]))
            up = i;
        if (low < 0 || pos[i] < pos[low])
            low = i;
    }
    return up >= 0 ? up : low;
}
