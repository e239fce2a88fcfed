/* STAND-IN for the CUDA nccl-tests binary (all_reduce_perf & co.): NOT nccl-tests, no GPU, no NCCL.
 *
 * The launch test bind-mounts it at the path the generated mpirun command names, so that command runs unchanged.
 * It proves only the launch plumbing: every rank starts where the hostfile puts it, sees the `-x` exports, and
 * rank 0's table reaches the launcher's log. Its numbers are MPI_Allreduce over TCP between network namespaces,
 * in the table layout nccl-tests prints (src/common.cu), capped at STANDIN_MAX_BYTES and STANDIN_MAX_ITERS so it
 * runs on a CPU: they say nothing about any GPU or network.
 *
 * Each rank also writes REPORT_DIR/rank-<N>.env (compiled in with -DREPORT_DIR): rank, size, hostname, pid, then
 * its whole environment, NUL-separated, for the test to check.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef REPORT_DIR
#error "compile with -DREPORT_DIR=\"/path\""
#endif
#define STANDIN_MAX_BYTES (1L << 16)
#define STANDIN_MAX_ITERS 2

extern char **environ;

static char *env_dump;
static size_t env_len;

/* the environment as the rank got it, before this program adds anything */
static void snapshot_env(void) {
    for (char **e = environ; *e; e++) env_len += strlen(*e) + 1;
    env_dump = malloc(env_len + 1);
    size_t at = 0;
    for (char **e = environ; *e; e++) { size_t n = strlen(*e) + 1; memcpy(env_dump + at, *e, n); at += n; }
}

static void report(int rank, int size, const char *host) {
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.env", REPORT_DIR, rank);
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); MPI_Abort(MPI_COMM_WORLD, 3); }
    fprintf(f, "rank=%d\nsize=%d\nhost=%s\npid=%d\n", rank, size, host, (int)getpid());
    fwrite(env_dump, 1, env_len, f);
    fclose(f);
}

int main(int argc, char **argv) {
    long min_bytes = 8, max_bytes = 8, factor = 2, iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b")) min_bytes = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-e")) max_bytes = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-f")) factor = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) iters = atol(argv[i + 1]);
    }
    if (max_bytes > STANDIN_MAX_BYTES) max_bytes = STANDIN_MAX_BYTES;
    if (min_bytes > max_bytes) min_bytes = max_bytes;
    if (min_bytes < 4) min_bytes = 4;
    if (iters > STANDIN_MAX_ITERS) iters = STANDIN_MAX_ITERS;
    if (iters < 1) iters = 1;
    if (factor < 2) factor = 2;

    snapshot_env();
    /* 8 busy-polling ranks per namespace share this machine's few cores: yield when idle (a stand-in's own
     * setting, set in its own process, never in the job's environment) */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    report(rank, size, host);

    /* local rank = the rank's index among the ranks on its host, as nccl-tests' "device" */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int local;
    MPI_Comm_rank(node, &local);
    char *hosts = rank == 0 ? malloc((size_t)size * 256) : NULL;
    int *pids = rank == 0 ? malloc(sizeof(int) * size) : NULL, *locals = rank == 0 ? malloc(sizeof(int) * size) : NULL;
    int pid = (int)getpid();
    MPI_Gather(host, 256, MPI_CHAR, hosts, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&local, 1, MPI_INT, locals, 1, MPI_INT, 0, MPI_COMM_WORLD);
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (rank == 0) {
        printf("# nccl-tests STAND-IN (not nccl-tests: MPI_Allreduce on CPUs, sizes capped at %ld B)\n",
               (long)STANDIN_MAX_BYTES);
        printf("# Collective test starting: %s\n", name);
        printf("# nThread 1 nGpus 1 minBytes %ld maxBytes %ld step: %ld(factor) warmup iters: 1 iters: %ld "
               "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n", min_bytes, max_bytes, factor, iters);
        for (int r = 0; r < size; r++)
            printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:00:00] CPU stand-in\n", r, pids[r],
                   hosts + (size_t)r * 256, locals[r]);
        printf("#\n#                                                              out-of-place                "
               "       in-place          \n");
        printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
               "  algbw   busbw #wrong\n");
        printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) "
               " (GB/s)  (GB/s)       \n");
    }
    double bus_sum = 0;
    int rows = 0;
    long wrong_total = 0;
    for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        long count = bytes / 4;
        float *in = malloc(bytes), *out = malloc(bytes);
        double t[2];
        long wrong[2];
        for (int place = 0; place < 2; place++) {
            float *dst = place ? in : out;
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            for (long it = 0; it < iters; it++) {
                for (long k = 0; k < count; k++) in[k] = (float)(rank + 1);
                MPI_Allreduce(place ? MPI_IN_PLACE : in, dst, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            }
            double elapsed = (MPI_Wtime() - start) / iters, worst;
            MPI_Allreduce(&elapsed, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            long bad = 0, bad_all;
            float expect = (float)size * (size + 1) / 2;
            for (long k = 0; k < count; k++) bad += dst[k] != expect;
            MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            t[place] = worst * 1e6;
            wrong[place] = bad_all;
        }
        if (rank == 0) {
            double alg0 = bytes / (t[0] * 1e3), alg1 = bytes / (t[1] * 1e3);
            double bus = 2.0 * (size - 1) / size;
            printf("%12ld  %12ld     float     sum      -1  %7.1f  %6.2f  %6.2f  %5ld  %7.1f  %6.2f  %6.2f  %5ld\n",
                   bytes, count, t[0], alg0, alg0 * bus, wrong[0], t[1], alg1, alg1 * bus, wrong[1]);
            bus_sum += alg0 * bus;
            rows++;
        }
        wrong_total += wrong[0] + wrong[1];
        free(in);
        free(out);
    }
    if (rank == 0) {
        printf("# Out of bounds values : %ld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g \n#\n", rows ? bus_sum / rows : 0.0);
        fflush(stdout);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}
