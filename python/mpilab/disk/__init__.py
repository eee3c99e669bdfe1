"""Emulated disks with a known cost model (`mpilab disk up|status|check|run|down`).

Two models, several disks at once (for striping):
- `throttle`: a loop device on tmpfs with an ext4 file system, under a blkio cgroup that
  caps requests per second and bytes per second (cgroup v1 blkio.throttle.*; cgroup v2
  io.max where that exists). Processes see the caps when they run in the cgroup
  (`mpilab disk run -- CMD`), with O_DIRECT (buffered writes are flushed by the kernel
  outside the cgroup under v1).
- `seek`: a position-aware disk: the FUSE passthrough `mpilab-seekfs` over a tmpfs
  directory, with one virtual head; each request costs a seek by distance, a rotational
  delay and its transfer time (optionally served in elevator order).

Everything made carries the prefix; `down` removes exactly what `up` recorded (also
after a crash) and never touches what it did not make. See docs/disk.md.
"""
