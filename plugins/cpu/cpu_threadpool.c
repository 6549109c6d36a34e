/*
 * The thread pool of one CPU device: a fixed set of workers, started by open_device and joined
 * by close_device, that every kernel of the device reuses.
 *
 * One job at a time: the thread that posts a job holds `dispatch` until the job is done, and
 * takes chunks of it itself. Another host thread that finds `dispatch` held does not wait for
 * it but runs its own work inline: kernels of one device may be called concurrently, and two
 * jobs sharing the workers would gain nothing over one job using them all while the other runs
 * on its caller's thread.
 *
 * A job is posted by writing its fields, then bumping `generation` and storing it in `open_gen`
 * and `posted`, under the lock only for the broadcast to sleeping workers. A worker joins without
 * the lock (cpu__pool_join): it counts itself into `active`, checks that `open_gen` is still the
 * job's, takes chunk numbers from the atomic `next` until they run out, and leaves (active--,
 * and only the last one out takes the lock, to signal `idle`). The poster, after taking chunks
 * itself, closes the job (open_gen to 0: every chunk is taken), watches `active` for up to the
 * spin time (a worker still in its last chunk is usually done within microseconds, where
 * sleeping on `idle` would cost a futex wake of the poster), then waits under the lock until no
 * worker is counted. A worker counted after the close sees it and backs out without touching
 * the job; one counted before it is waited for. So the job is done when the poster returns, and
 * no worker touches `next` or the job's context after that. With the join under the lock, the
 * workers of a 16-thread pool took it one after the other at every job, twice (joining and
 * leaving): the bench MLP 784-256-10 at batch 64 ran in 0.08-0.18 ms on the 16-core Xeon host,
 * 0.06-0.07 with the join as it is (session-run medians, a spin of 50 us).
 *
 * A worker that finishes a job first spins for up to the pool's spin time (option
 * driver.cpu.spin_us, 1 ms by default), watching `posted` (a copy of
 * `generation` readable without the lock), before it sleeps on the condition variable: a model
 * runs one kernel after another, and a worker woken through the kernel's futex joins the next
 * job tens of microseconds late, which is the whole of a small GEMM's or elementwise op's time.
 * Four exceptions. With the spin time "auto" (the default) the workers do not spin at all while
 * a kernel state of the device has run on oneDNN's OpenMP team (cpu__pool_park_for counts it,
 * its destruction uncounts it): between a batch-1 CNN's convolutions the pool's spin only takes
 * the team's cores. cpu__pool_park (before a oneDNN convolution, whose OpenMP team takes the
 * cores) sends spinning workers to sleep at once. A worker does not spin after a job when a
 * convolution parked the pool between its previous job and this one: where every job of the
 * pool is followed by a convolution on OpenMP's team (a batch-1 CNN), spinning only takes the
 * team's cores. And a worker that finds itself spinning on
 * the CPU the last job was posted from moves off it (its affinity without that CPU, then the
 * whole set back): the kernel wakes a worker where its waker runs and sometimes left it there,
 * where it only took time from the poster; on the 2-core VM one process in two then ran the
 * MLP 784-256-10 at batch 64 on 2 threads in 0.16-0.18 ms instead of 0.10-0.12 (300 runs each;
 * 669 context switches against 25), and with the move every process ran in 0.11-0.12.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"

/* ONNX Runtime's and OpenMP's idle workers spin likewise, longer (ONNX Runtime's 2^20 pauses,
 * libgomp's 300000 by default). Measured on the shared 2-core Xeon, quiet (7 paired
 * whole-process runs of session-run): 50 us took the MLP 784-256-10 at batch 64 on 2 threads to
 * 0.78x the wall time of sleeping at once; the CNN and resnet50 on 2 threads and every model on
 * 1 thread were unchanged (0.99-1.04x); 1 ms and 5 ms the same as 50 us there. On the 16-core
 * Xeon host of a lent GPU machine, a KVM guest whose sleeping vCPUs wake late, at 16 threads
 * (bench/onnx_ab.sh, five rounds, medians): the bench CNN at batch 64 took 0.97 ms with 50 us,
 * 0.90 with 200 us, 0.71 with 1 ms and 0.68 with 100 ms; the MLP at batch 64 0.071, 0.064, 0.061
 * and 0.057 ms. Hence 1 ms. With other jobs on the cores spinning costs instead (1.33x in one
 * run with 50 us), hence the option. */

/* A chunk is at least this many element operations, so that taking one costs little. */
#define CPU__CHUNK_MIN (CPU__PARALLEL_MIN / 2)
/* Chunks per thread: enough to even out threads that start late or run slower. */
#define CPU__CHUNKS_PER_THREAD 4

/* libgomp's entry that runs fn(data) on a team of num_threads threads, the caller one of them
 * (GCC 4.9 and later; what `#pragma omp parallel` compiles to). */
typedef void (*cpu__gomp_parallel_fn)(void (*fn)(void *), void *data, unsigned num_threads,
                                      unsigned flags);

struct cpu__pool {
    uint32_t n_threads; /* the caller and the workers, or OpenMP's team */
    uint32_t n_workers;
    void *gomp;                          /* libgomp.so.1 when the work runs on OpenMP's team */
    cpu__gomp_parallel_fn gomp_parallel; /* its GOMP_parallel; NULL: the pool's own workers */
    pthread_t *threads;

    pthread_mutex_t dispatch; /* held by the thread whose job the pool runs */

    pthread_mutex_t lock; /* guards generation and stop, and the waits on the conditions */
    pthread_cond_t work;  /* a job was posted, or stop was set */
    pthread_cond_t idle;  /* the last worker left the job */
    uint64_t generation;  /* bumped for every job */
    int stop;             /* workers exit */
    atomic_uint active;   /* workers counted into the current job (or backing out of one) */
    uint64_t spin_ns;     /* how long an idle worker watches `posted` before it sleeps */
    int spin_auto;        /* spin_ns only while no kernel state counts as a team user */
    atomic_uint team_users; /* kernel states that run on OpenMP's team (cpu__pool_park_for) */
    atomic_uint_fast64_t posted;   /* `generation`, stored after it changes; and stop as ~0 */
    atomic_uint_fast64_t open_gen; /* the generation workers may still join; 0: none */
    atomic_uint_fast64_t parked;   /* bumped by cpu__pool_park: spinning workers go to sleep */
    atomic_int poster_cpu;         /* the CPU the last job was posted from, or -1 */

    /* The current job; written before `posted` moves to its generation. */
    cpu__task_fn fn;
    void *ctx;
    uint64_t n_items;
    uint64_t chunk; /* items per chunk */
    uint64_t n_chunks;
    atomic_uint_fast64_t next; /* the next chunk to take */
};

static void cpu__pool_take_chunks(cpu__task_fn fn, void *ctx, uint64_t n_items, uint64_t chunk,
                                  uint64_t n_chunks, atomic_uint_fast64_t *next) {
    for (;;) {
        uint64_t c = atomic_fetch_add_explicit(next, 1, memory_order_relaxed);
        if (c >= n_chunks)
            return;
        uint64_t begin = c * chunk;
        uint64_t end = begin + chunk < n_items ? begin + chunk : n_items;
        fn(ctx, begin, end);
    }
}

static uint64_t cpu__now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The first 50 us of a spin only pause; after that each round of it yields the CPU instead,
 * and the spin ends at the first yield that another thread took the CPU for (one that lasted
 * over 20 us; on an idle core a yield returns within a microsecond): a spin of 1 ms is for
 * cores that have nothing else to run, and where they do (another process's work on shared
 * cores, a worker of this pool still in its chunk while the poster waits) the spinner sleeps
 * instead of taking turns with that work. */
#define CPU__SPIN_PAUSE_ONLY_NS 50000u
#define CPU__YIELD_TAKEN_NS 20000u

/* A spin's state: its rounds, when it began, whether it yields yet. */
typedef struct cpu__spinner {
    uint64_t rounds, start;
    int yielding;
} cpu__spinner_t;

/* One round of a spin of @p spin_ns: a pause, or a yield after its first 50 us, and the clock
 * every 64 rounds. Non-zero when the spin is over: its time is up, or a yield was taken. */
static int cpu__spin_round(cpu__spinner_t *sp, uint64_t spin_ns) {
    if (sp->yielding) {
        const uint64_t before = cpu__now_ns();
        sched_yield();
        if (cpu__now_ns() - before > CPU__YIELD_TAKEN_NS)
            return 1;
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    if ((sp->rounds++ & 63) == 0) {
        const uint64_t now = cpu__now_ns();
        if (!sp->start)
            sp->start = now;
        else if (now - sp->start > spin_ns)
            return 1;
        sp->yielding = now - sp->start > CPU__SPIN_PAUSE_ONLY_NS;
    }
    return 0;
}

/*
 * Watches `posted` for up to the pool's spin time without the lock; non-zero when it moved past
 * @p seen. It stops at once when `parked` is no longer @p parked, read when the worker joined
 * the job it just left (read at the start of the spin, a park that came while the worker was
 * still leaving its job would go unseen).
 */
static int cpu__pool_spin(cpu__pool_t *pool, uint64_t seen, uint64_t parked) {
    cpu__spinner_t sp = {0, 0, 0};
    int nudged = 0;

    for (;;) {
        if (atomic_load_explicit(&pool->posted, memory_order_acquire) != seen)
            return 1;
        if (atomic_load_explicit(&pool->parked, memory_order_relaxed) != parked)
            return 0;
        if (!nudged && (sp.rounds & 63) == 0) {
            /* On the poster's own CPU a spinning worker only takes time from it, and the
             * kernel, which woke it there, may leave it there: move off that CPU (the affinity
             * without it, then the whole set back, so nothing stays pinned). */
            const int cpu = sched_getcpu();
            if (cpu >= 0 && cpu == atomic_load_explicit(&pool->poster_cpu, memory_order_relaxed)) {
                cpu_set_t allowed, others;
                nudged = 1;
                if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && cpu < CPU_SETSIZE &&
                    CPU_COUNT(&allowed) > 1) {
                    others = allowed;
                    CPU_CLR(cpu, &others);
                    if (sched_setaffinity(0, sizeof others, &others) == 0)
                        sched_setaffinity(0, sizeof allowed, &allowed);
                }
            }
        }
        if (cpu__spin_round(&sp, pool->spin_ns))
            return 0;
    }
}

/*
 * Joins job @p g without the lock: counts itself into `active`, then checks that the job is still
 * open. The poster closes it (open_gen to 0) before it waits for `active` to reach 0, so
 * either this worker sees it closed and backs out without touching the job, or the poster sees
 * this worker counted and waits for it (both sides are sequentially consistent: one of the two
 * sees the other's write). The job's fields stay as they are while the worker is counted.
 */
static void cpu__pool_join(cpu__pool_t *pool, uint64_t g) {
    atomic_fetch_add(&pool->active, 1);
    if (atomic_load(&pool->open_gen) == g)
        cpu__pool_take_chunks(pool->fn, pool->ctx, pool->n_items, pool->chunk, pool->n_chunks,
                              &pool->next);
    /* Released: the poster that sees 0 may return, and the job's context with it. */
    const unsigned left = atomic_fetch_sub_explicit(&pool->active, 1, memory_order_release);
    if (left == 1) {
        /* The last one out: a poster may be asleep on `idle` (it checks `active` under the
         * lock before it waits, and this signal comes after the decrement, under the lock). */
        pthread_mutex_lock(&pool->lock);
        pthread_cond_signal(&pool->idle);
        pthread_mutex_unlock(&pool->lock);
    }
}

static void *cpu__pool_worker(void *arg) {
    cpu__pool_t *pool = arg;
    uint64_t seen = atomic_load_explicit(&pool->posted, memory_order_acquire);
    uint64_t parked = atomic_load_explicit(&pool->parked, memory_order_relaxed);
    int spun = 0, spin = 1;

    for (;;) {
        const uint64_t g = atomic_load_explicit(&pool->posted, memory_order_acquire);
        if (g == UINT64_MAX)
            break; /* stop */
        if (g == seen) {
            if (!spun && spin && cpu__pool_spin_ns(pool)) {
                /* Once per wait, then sleep until the next posting. */
                spun = 1;
                cpu__pool_spin(pool, seen, parked);
                continue;
            }
            pthread_mutex_lock(&pool->lock);
            while (!pool->stop && atomic_load_explicit(&pool->posted, memory_order_acquire) == seen)
                pthread_cond_wait(&pool->work, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
            continue;
        }
        /* A new job (or one already over: joining it then costs two atomic operations). */
        seen = g;
        spun = 0;
        /* Spin after this job only if no convolution parked the pool since the last one: jobs
         * that follow each other (GEMM slices, pools, elementwise ops) find the workers awake,
         * and where each job is followed by a convolution on OpenMP's team the workers sleep
         * at once, as with no spin at all. */
        const uint64_t now = atomic_load_explicit(&pool->parked, memory_order_relaxed);
        spin = now == parked;
        parked = now;
        cpu__pool_join(pool, g);
    }
    return NULL;
}

/* Joins the first @p n_started workers after telling them to stop, and frees the pool. */
static void cpu__pool_teardown(cpu__pool_t *pool, uint32_t n_started) {
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    atomic_store_explicit(&pool->posted, UINT64_MAX, memory_order_release);
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (uint32_t i = 0; i < n_started; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->idle);
    pthread_cond_destroy(&pool->work);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->dispatch);
    if (pool->gomp)
        dlclose(pool->gomp);
    free(pool->threads);
    free(pool);
}

int cpu__pool_create(uint32_t n_threads, uint32_t spin_us, int openmp, cpu__pool_t **out_pool) {
    cpu__pool_t *pool;
    sigset_t all, old;
    uint32_t started = 0;
    int err = 0;

    *out_pool = NULL;
    pool = calloc(1, sizeof *pool);
    if (!pool)
        return ENOMEM;
    pool->n_threads = n_threads > 1 ? n_threads : 1;
    if (openmp && pool->n_threads > 1) {
        /* The same libgomp oneDNN loads: one object per process, one team of threads. */
        pool->gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL);
        void *entry = pool->gomp ? dlsym(pool->gomp, "GOMP_parallel") : NULL;
        if (!entry) {
            if (pool->gomp)
                dlclose(pool->gomp);
            free(pool);
            return ENOENT;
        }
        memcpy(&pool->gomp_parallel, &entry, sizeof entry);
    }
    pool->n_workers = pool->n_threads > 1 && !pool->gomp_parallel ? pool->n_threads - 1 : 0;
    if (pool->n_workers > 0) {
        pool->threads = calloc(pool->n_workers, sizeof *pool->threads);
        if (!pool->threads) {
            free(pool);
            return ENOMEM;
        }
    }
    pthread_mutex_init(&pool->dispatch, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->idle, NULL);
    atomic_init(&pool->next, 0);
    atomic_init(&pool->posted, 0);
    atomic_init(&pool->active, 0);
    atomic_init(&pool->open_gen, 0);
    atomic_init(&pool->parked, 0);
    atomic_init(&pool->poster_cpu, -1);
    atomic_init(&pool->team_users, 0);
    pool->spin_auto = spin_us == CPU__SPIN_AUTO;
    pool->spin_ns = (uint64_t)(pool->spin_auto ? CPU__SPIN_US_DEFAULT : spin_us) * 1000u;

    /* Workers inherit the creating thread's signal mask: block everything in them, so that
     * process signals keep going to the host's own threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; started < pool->n_workers; started++) {
        err = pthread_create(&pool->threads[started], NULL, cpu__pool_worker, pool);
        if (err != 0)
            break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        cpu__pool_teardown(pool, started);
        return err;
    }
    *out_pool = pool;
    return 0;
}

void cpu__pool_destroy(cpu__pool_t *pool) {
    if (pool)
        cpu__pool_teardown(pool, pool->n_workers);
}

void cpu__pool_park(cpu__pool_t *pool) {
    if (pool && pool->spin_ns)
        atomic_fetch_add_explicit(&pool->parked, 1, memory_order_relaxed);
}

void cpu__pool_park_for(cpu__pool_t *pool, cpu__team_user_t *user) {
    cpu__pool_park(pool);
    if (pool && user && !user->pool) {
        user->pool = pool;
        atomic_fetch_add_explicit(&pool->team_users, 1, memory_order_relaxed);
    }
}

void cpu__team_user_release(cpu__team_user_t *user) {
    if (user && user->pool)
        atomic_fetch_sub_explicit(&user->pool->team_users, 1, memory_order_relaxed);
    if (user)
        user->pool = NULL;
}

uint64_t cpu__pool_spin_ns(const cpu__pool_t *pool) {
    if (!pool ||
        (pool->spin_auto && atomic_load_explicit(&pool->team_users, memory_order_relaxed) > 0))
        return 0;
    return pool->spin_ns;
}

uint32_t cpu__pool_threads(const cpu__pool_t *pool) { return pool ? pool->n_threads : 1; }

/* A job on OpenMP's team: every thread of the team takes chunks, as the pool's workers do. */
typedef struct cpu__omp_job {
    cpu__task_fn fn;
    void *ctx;
    uint64_t n_items, chunk, n_chunks;
    atomic_uint_fast64_t next;
} cpu__omp_job_t;

static void cpu__omp_body(void *data) {
    cpu__omp_job_t *job = data;
    cpu__pool_take_chunks(job->fn, job->ctx, job->n_items, job->chunk, job->n_chunks, &job->next);
}

void cpu__parallel_for(cpu__pool_t *pool, uint64_t n_items, uint64_t item_cost, cpu__task_fn fn,
                       void *ctx) {
    if (n_items == 0)
        return;
    if (item_cost == 0)
        item_cost = 1;
    uint64_t threads = cpu__pool_threads(pool);
    /* The cost saturates rather than wraps: only its comparison with the threshold matters. */
    uint64_t total = n_items > UINT64_MAX / item_cost ? UINT64_MAX : n_items * item_cost;
    if (threads < 2 || n_items < 2 || total < CPU__PARALLEL_MIN) {
        fn(ctx, 0, n_items);
        return;
    }

    uint64_t min_items = (CPU__CHUNK_MIN + item_cost - 1) / item_cost;
    uint64_t n_chunks = n_items / (min_items ? min_items : 1);
    if (n_chunks > threads * CPU__CHUNKS_PER_THREAD)
        n_chunks = threads * CPU__CHUNKS_PER_THREAD;
    if (n_chunks < 2) {
        fn(ctx, 0, n_items);
        return;
    }
    uint64_t chunk = (n_items + n_chunks - 1) / n_chunks;
    /* Whole cache lines of output per chunk where the chunks are large enough for it, so that
     * no two threads write one line and the vector loops start aligned. */
    if (chunk >= 64)
        chunk = (chunk + 15) & ~(uint64_t)15;
    n_chunks = (n_items + chunk - 1) / chunk;
    if (n_chunks < 2) {
        fn(ctx, 0, n_items);
        return;
    }

    if (pthread_mutex_trylock(&pool->dispatch) != 0) {
        fn(ctx, 0, n_items);
        return;
    }
    if (pool->gomp_parallel) {
        cpu__omp_job_t job = {fn, ctx, n_items, chunk, n_chunks, 0};
        unsigned team = (unsigned)(n_chunks < threads ? n_chunks : threads);
        pool->gomp_parallel(cpu__omp_body, &job, team, 0);
        pthread_mutex_unlock(&pool->dispatch);
        return;
    }
    atomic_store_explicit(&pool->poster_cpu, sched_getcpu(), memory_order_relaxed);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->n_items = n_items;
    pool->chunk = chunk;
    pool->n_chunks = n_chunks;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock);
    const uint64_t g = ++pool->generation;
    atomic_store(&pool->open_gen, g);
    atomic_store_explicit(&pool->posted, g, memory_order_release);
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);

    cpu__pool_take_chunks(fn, ctx, n_items, chunk, n_chunks, &pool->next);
    /* Every chunk is taken: no worker joins any more (see cpu__pool_join). */
    atomic_store(&pool->open_gen, 0);

    /* A worker still in its chunk: watch for it (it signals `idle` under the lock only after its
     * decrement, so a poster that then sleeps below is always woken). */
    const uint64_t spin_ns = cpu__pool_spin_ns(pool);
    cpu__spinner_t sp = {0, 0, 0};
    while (spin_ns && atomic_load_explicit(&pool->active, memory_order_acquire) > 0 &&
           !cpu__spin_round(&sp, spin_ns)) {
    }
    if (atomic_load_explicit(&pool->active, memory_order_acquire) > 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->active, memory_order_acquire) > 0)
            pthread_cond_wait(&pool->idle, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->dispatch);
}
