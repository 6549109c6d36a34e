/*
 * session-train-example: the seeds' network trained on Fashion-MNIST.
 *
 *   784 pixels → fc 256 (sigmoid or relu) → fc 10 → softmax cross-entropy
 *
 * It reads Debian's dataset-fashion-mnist (idx files under /usr/share/datasets/fashion-mnist),
 * trains with shuffled mini-batches through a monitored session and its hooks (stop at a step,
 * load the latest checkpoint, save checkpoints, and this file's progress hook), evaluates the
 * test accuracy after each epoch, and ends with the line "test accuracy: 0.xxxx".
 *
 *   meson devenv -C build session-train-example          5 epochs, SGD, the best device
 *   session-train-example --optimizer adam --epochs 10 --device cpu
 *   session-train-example --checkpoint-dir ckpt          saves every 500 steps and at the end
 *   session-train-example --checkpoint-dir ckpt --resume continues from the latest
 *   mpirun -np 3 session-train-example --distributed --evaluator --checkpoint-dir ckpt
 *                                       ranks 0-1 train, rank 2 evaluates each checkpoint
 *   session-train-example --help
 *
 * Training is deterministic for a given --seed: each epoch's order of examples comes from the
 * seed and the epoch number, so a run resumed at step k sees the batches an uninterrupted run
 * would have seen from step k on. The last partial batch of each epoch is dropped (every batch
 * has the same shape, so the compiled plan is reused).
 *
 * Exit status: 0 on success, 1 when training fails (or the data is missing), 2 on a bad
 * argument, 130 when interrupted (Ctrl-C saves a checkpoint first when --checkpoint-dir is set).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <session/checkpoint.h>
#include <session/dataset.h>
#include <session/hooks.h>
#include <session/session.h>
#include <session/task.h>
#include <session/train.h>
#ifdef SES_WITH_MPI
#include <session/mpi.h>
#endif

#define PROGRAM "session-train-example"
#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define DATA_PACKAGE "dataset-fashion-mnist"
#define PIXELS 784
#define CLASSES 10
#define HIDDEN 256
#define EVAL_BATCH 1000

/* ---- options ------------------------------------------------------------------------------ */

typedef struct options {
    const char *data_dir;
    uint64_t epochs;
    uint64_t batch;
    ses_optimizer_kind_t optimizer;
    double lr; /* < 0: the optimizer's default */
    ses_activation_t activation;
    const char *device; /* NULL: the best available */
    const char *checkpoint_dir;
    uint64_t checkpoint_every;
    uint64_t keep_checkpoints;
    int resume;
    uint64_t steps; /* 0: epochs * steps per epoch */
    uint64_t seed;
    uint64_t threads; /* 0: the driver's default */
    uint64_t log_every;
    int progress; /* -1 auto (a terminal), 0 plain lines, 1 a progress bar */
    int distributed; /* data-parallel over the MPI job this process is part of */
    int evaluator;   /* with distributed: the last rank evaluates checkpoints, does not train */
} options_t;

/* --distributed: this process's place in the job (NULL: alone). Only the chief prints, saves
 * checkpoints and evaluates; every training rank trains on its slice of each global batch.
 * With an evaluator (--evaluator or SESSION_EVALUATOR=1) the last rank does not train: it
 * evaluates each checkpoint the chief saves, and prints too. */
#ifdef SES_WITH_MPI
static ses_mpi_t *mpi;
#endif
static const ses_task_spec_t *task;

static const char *const optimizer_names[] = {"sgd", "momentum", "adam"};
/* Learning rates that reach 0.85 test accuracy within 5 epochs at batch 64 on this network
 * (measured: sigmoid 0.858, 0.866, 0.871; relu 0.863, 0.865, 0.873). Relu's unbounded
 * activations make larger SGD steps bounce. Indexed [relu][optimizer]. */
static const double default_lr[2][3] = {{0.5, 0.1, 0.001}, {0.1, 0.02, 0.001}};

static void usage(FILE *out) {
    fprintf(out,
            "Usage: " PROGRAM
            " [OPTION]...\n"
            "Trains a 784-256-10 network on Fashion-MNIST and prints its test accuracy.\n"
            "\n"
            "  --data DIR             the four idx files (default " DEFAULT_DATA_DIR
            ",\n"
            "                         from the Debian package " DATA_PACKAGE
            ")\n"
            "  --epochs N             passes over the 60,000 training images (default 5)\n"
            "  --batch N              examples per step (default 64)\n"
            "  --optimizer NAME       sgd, momentum or adam (default sgd)\n"
            "  --lr X                 learning rate (default: sgd 0.5, momentum 0.1, adam\n"
            "                         0.001; with relu sgd 0.1, momentum 0.02)\n"
            "  --activation NAME      of the hidden layer: sigmoid or relu (default sigmoid)\n"
            "  --device NAME          cpu, gpu:0, accel:0, fpga:0, cuda:0, ... (default: the\n"
            "                         first of gpu:0, accel:0, fpga:0 that can run the\n"
            "                         network, else cpu)\n"
            "  --checkpoint-dir DIR   save checkpoints there (every --checkpoint-every steps\n"
            "                         and at the end)\n"
            "  --checkpoint-every N   steps between checkpoints (default 500)\n"
            "  --keep-checkpoints N   how many to keep, 0 for all (default 3)\n"
            "  --resume               continue from the latest checkpoint in --checkpoint-dir\n"
            "  --steps N              stop when the global step reaches N (counting restored\n"
            "                         steps; default: the end of the last epoch)\n"
            "  --seed N               weights and the order of examples (default 1)\n"
            "  --threads N            CPU threads for kernels and OpenBLAS (default: one per CPU)\n"
            "  --log-every N          steps between progress lines when not on a terminal\n"
            "                         (default 100)\n"
            "  --progress MODE        bar, lines or auto (default auto: a bar on a terminal)\n"
            "  --distributed          data-parallel over the MPI job (run under mpirun): each\n"
            "                         of the N ranks trains on 1/N of every batch, gradients\n"
            "                         are averaged, rank 0 prints, evaluates and saves\n"
            "  --evaluator            with --distributed and --checkpoint-dir: the last rank\n"
            "                         does not train; it evaluates each checkpoint as it\n"
            "                         appears (also SESSION_EVALUATOR=1)\n"
            "  --help                 this text\n"
            "\n"
            "Exit status: 0 done, 1 training failed or no data, 2 bad argument, 130 "
            "interrupted.\n");
}

static int bad_argument(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int bad_argument(const char *format, ...) {
    va_list ap;

    fprintf(stderr, PROGRAM ": ");
    va_start(ap, format);
    vfprintf(stderr, format, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROGRAM " --help'.\n");
    return 2;
}

/* A whole number in [min, max], all of the text. */
static int parse_count(const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *out) {
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    if (!text[0] || text[0] == '-' || text[0] == '+')
        return bad_argument("%s: '%s' is not a whole number", option, text);
    v = strtoull(text, &end, 10);
    if (errno == ERANGE || v > max || v < min)
        return bad_argument("%s: %s is out of range (%" PRIu64 " to %" PRIu64 ")", option, text,
                            min, max);
    if (*end)
        return bad_argument("%s: '%s' is not a whole number", option, text);
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, options_t *o) {
    enum {
        OPT_DATA = 256,
        OPT_EPOCHS,
        OPT_BATCH,
        OPT_OPTIMIZER,
        OPT_LR,
        OPT_ACTIVATION,
        OPT_DEVICE,
        OPT_CKPT_DIR,
        OPT_CKPT_EVERY,
        OPT_KEEP,
        OPT_RESUME,
        OPT_STEPS,
        OPT_SEED,
        OPT_THREADS,
        OPT_LOG_EVERY,
        OPT_PROGRESS,
        OPT_HELP,
        OPT_DISTRIBUTED,
        OPT_EVALUATOR,
    };
    static const struct option longopts[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
        {"lr", required_argument, NULL, OPT_LR},
        {"activation", required_argument, NULL, OPT_ACTIVATION},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"checkpoint-dir", required_argument, NULL, OPT_CKPT_DIR},
        {"checkpoint-every", required_argument, NULL, OPT_CKPT_EVERY},
        {"keep-checkpoints", required_argument, NULL, OPT_KEEP},
        {"resume", no_argument, NULL, OPT_RESUME},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"log-every", required_argument, NULL, OPT_LOG_EVERY},
        {"progress", required_argument, NULL, OPT_PROGRESS},
        {"help", no_argument, NULL, OPT_HELP},
        {"distributed", no_argument, NULL, OPT_DISTRIBUTED},
        {"evaluator", no_argument, NULL, OPT_EVALUATOR},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    memset(o, 0, sizeof *o);
    o->data_dir = DEFAULT_DATA_DIR;
    o->epochs = 5;
    o->batch = 64;
    o->optimizer = SES_OPTIMIZER_SGD;
    o->lr = -1;
    o->activation = SES_ACTIVATION_SIGMOID;
    o->checkpoint_every = 500;
    o->keep_checkpoints = 3;
    o->seed = 1;
    o->log_every = 100;
    o->progress = -1;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "option";
        rc = 0;
        switch (c) {
        case OPT_DATA: o->data_dir = optarg; break;
        case OPT_EPOCHS: rc = parse_count("--epochs", optarg, 1, 1000000, &o->epochs); break;
        case OPT_BATCH: rc = parse_count("--batch", optarg, 1, 60000, &o->batch); break;
        case OPT_OPTIMIZER: {
            size_t i;
            for (i = 0; i < 3 && strcmp(optarg, optimizer_names[i]) != 0; i++)
                ;
            if (i == 3)
                return bad_argument("--optimizer: '%s' is not sgd, momentum or adam", optarg);
            o->optimizer = (ses_optimizer_kind_t)i;
            break;
        }
        case OPT_LR: {
            char *end = NULL;
            errno = 0;
            o->lr = strtod(optarg, &end);
            if (!optarg[0] || *end || errno == ERANGE || !isfinite(o->lr) || o->lr <= 0 ||
                o->lr > 100)
                return bad_argument("--lr: '%s' is not a number above 0 and at most 100", optarg);
            break;
        }
        case OPT_ACTIVATION:
            if (strcmp(optarg, "sigmoid") == 0)
                o->activation = SES_ACTIVATION_SIGMOID;
            else if (strcmp(optarg, "relu") == 0)
                o->activation = SES_ACTIVATION_RELU;
            else
                return bad_argument("--activation: '%s' is not sigmoid or relu", optarg);
            break;
        case OPT_DEVICE:
            if (!optarg[0])
                return bad_argument("--device: empty device name");
            o->device = optarg;
            break;
        case OPT_CKPT_DIR:
            if (!optarg[0])
                return bad_argument("--checkpoint-dir: empty folder name");
            o->checkpoint_dir = optarg;
            break;
        case OPT_CKPT_EVERY:
            rc = parse_count("--checkpoint-every", optarg, 1, UINT64_MAX, &o->checkpoint_every);
            break;
        case OPT_KEEP:
            rc = parse_count("--keep-checkpoints", optarg, 0, UINT32_MAX, &o->keep_checkpoints);
            break;
        case OPT_RESUME: o->resume = 1; break;
        case OPT_DISTRIBUTED: o->distributed = 1; break;
        case OPT_EVALUATOR: o->evaluator = 1; break;
        case OPT_STEPS: rc = parse_count("--steps", optarg, 1, UINT64_MAX / 2, &o->steps); break;
        case OPT_SEED: rc = parse_count("--seed", optarg, 0, UINT64_MAX / 4, &o->seed); break;
        case OPT_THREADS: rc = parse_count("--threads", optarg, 1, 1024, &o->threads); break;
        case OPT_LOG_EVERY:
            rc = parse_count("--log-every", optarg, 1, UINT64_MAX, &o->log_every);
            break;
        case OPT_PROGRESS:
            if (strcmp(optarg, "auto") == 0)
                o->progress = -1;
            else if (strcmp(optarg, "lines") == 0)
                o->progress = 0;
            else if (strcmp(optarg, "bar") == 0)
                o->progress = 1;
            else
                return bad_argument("--progress: '%s' is not bar, lines or auto", optarg);
            break;
        case OPT_HELP:
        case 'h': usage(stdout); exit(0);
        case ':': return bad_argument("%s needs a value", name);
        default:
            if (optopt && optopt < 256)
                return bad_argument("unknown option '-%c'", optopt);
            return bad_argument("unknown option '%s'", name);
        }
        if (rc)
            return rc;
    }
    if (optind < argc)
        return bad_argument("unexpected argument '%s'", argv[optind]);
    if (o->resume && !o->checkpoint_dir)
        return bad_argument("--resume needs --checkpoint-dir");
    if (o->evaluator && (!o->distributed || !o->checkpoint_dir))
        return bad_argument("--evaluator needs --distributed and --checkpoint-dir");
    if (o->lr < 0)
        o->lr = default_lr[o->activation == SES_ACTIVATION_RELU][o->optimizer];
    return 0;
}

/* ---- data --------------------------------------------------------------------------------- */

typedef struct split {
    ses_tensor_t *images; /* u8 [n, 28, 28] */
    ses_tensor_t *labels; /* u8 [n] */
    size_t n;
} split_t;

/* Reads DIR/NAME.gz, or DIR/NAME when there is no compressed copy. 1 when neither exists. */
static int read_idx(const char *dir, const char *name, ses_tensor_t **out) {
    char path[4096];
    struct stat info;

    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    if (stat(path, &info) != 0)
        snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ses_idx_read(path, out) == SES_OK)
        return 0;
    if (stat(path, &info) != 0) {
        fprintf(stderr,
                PROGRAM
                ": Fashion-MNIST not found: no %s(.gz) in %s.\n"
                "Install it with 'sudo apt-get install " DATA_PACKAGE
                "' (or run scripts/setup-debian),\n"
                "or point --data at a folder that holds the four idx files.\n",
                name, dir);
        return 1;
    }
    fprintf(stderr, PROGRAM ": %s\n", ses_last_error());
    return 1;
}

static int load_split(const char *dir, const char *prefix, split_t *out) {
    char images_name[64], labels_name[64];
    const int64_t *d;

    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte", prefix);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte", prefix);
    if (read_idx(dir, images_name, &out->images) || read_idx(dir, labels_name, &out->labels))
        return 1;
    d = ses_tensor_dims(out->images);
    if (ses_tensor_dtype(out->images) != SES_U8 || ses_tensor_rank(out->images) != 3 ||
        d[1] != 28 || d[2] != 28 || ses_tensor_dtype(out->labels) != SES_U8 ||
        ses_tensor_rank(out->labels) != 1 || ses_tensor_dims(out->labels)[0] != d[0] || d[0] == 0) {
        fprintf(stderr,
                PROGRAM
                ": %s/%s and %s do not look like Fashion-MNIST: want u8 [n,28,28] "
                "images and u8 [n] labels, n > 0\n",
                dir, images_name, labels_name);
        return 1;
    }
    out->n = (size_t)d[0];
    for (size_t i = 0; i < out->n; i++) {
        unsigned label = ((const uint8_t *)ses_tensor_data(out->labels))[i];
        if (label >= CLASSES) {
            fprintf(stderr, PROGRAM ": %s/%s: label %zu is %u, not a class 0..9\n", dir,
                    labels_name, i, label);
            return 1;
        }
    }
    return 0;
}

static void free_split(split_t *s) {
    ses_tensor_release(s->images);
    ses_tensor_release(s->labels);
}

/* Copies examples @p index[0..n) of @p split into a batch: pixels scaled to [0, 1], labels as
 * i64 class indices. */
static void fill_batch(const split_t *split, const uint32_t *index, size_t n, float *x,
                       int64_t *y) {
    const uint8_t *images = ses_tensor_data(split->images);
    const uint8_t *labels = ses_tensor_data(split->labels);

    for (size_t i = 0; i < n; i++) {
        const uint8_t *src = images + (size_t)index[i] * PIXELS;
        for (size_t p = 0; p < PIXELS; p++)
            x[i * PIXELS + p] = (float)src[p] * (1.0f / 255.0f);
        y[i] = labels[index[i]];
    }
}

/* splitmix64: a small, good generator; each epoch's order depends only on (seed, epoch). */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle_for_epoch(uint32_t *order, size_t n, uint64_t seed, uint64_t epoch) {
    uint64_t state = seed * 0x2545F4914F6CDD1Dull + epoch + 1;

    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(next_random(&state) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ---- the network -------------------------------------------------------------------------- */

typedef struct network {
    ses_graph_t *g;
    ses_edge_t x, labels, logits, loss, prediction;
    ses_node_t *train;
} network_t;

static int build_network(const options_t *o, network_t *net) {
    const int64_t x_dims[] = {-1, PIXELS}, label_dims[] = {-1};
    ses_optimizer_t opt;
    ses_edge_t hidden;
    ses_attr_t argmax_attrs[2] = {ses_attr_int("axis", 1), ses_attr_int("keepdims", 0)};

    switch (o->optimizer) {
    case SES_OPTIMIZER_MOMENTUM: ses_optimizer_momentum(&opt, o->lr, 0.9, 0); break;
    case SES_OPTIMIZER_ADAM: ses_optimizer_adam(&opt, o->lr); break;
    default: ses_optimizer_sgd(&opt, o->lr); break;
    }
    if (ses_graph_create(&net->g) != SES_OK ||
        ses_graph_placeholder(net->g, "x", SES_F32, 2, x_dims, &net->x) != SES_OK ||
        ses_graph_placeholder(net->g, "labels", SES_I64, 1, label_dims, &net->labels) != SES_OK ||
        ses_fc(net->g, "fc1", net->x, HIDDEN, o->activation, o->seed, &hidden) != SES_OK ||
        ses_fc(net->g, "fc2", hidden, CLASSES, SES_ACTIVATION_NONE, o->seed + 1, &net->logits) !=
            SES_OK ||
        ses_softmax_cross_entropy(net->g, "loss", net->logits, net->labels, SES_REDUCTION_MEAN,
                                  &net->loss) != SES_OK ||
        ses_graph_op(net->g, "ArgMax", "prediction", &net->logits, 1, argmax_attrs, 2,
                     &net->prediction) != SES_OK ||
        (o->distributed ? ses_minimize_distributed : ses_minimize)(
            net->g, "train", net->loss, &opt, NULL, 0, &net->train) != SES_OK) {
        fprintf(stderr, PROGRAM ": building the network: %s\n", ses_last_error());
        return 1;
    }
    return 0;
}

/* ---- devices ------------------------------------------------------------------------------ */

static int open_session(const network_t *net, const char *device, const options_t *o,
                        ses_fallback_t fallback, ses_session_t **out) {
    ses_session_options_t so;

    ses_session_options_init(&so);
    so.fallback = fallback;
    so.threads = (uint32_t)o->threads;
    return ses_session_open(net->g, &device, 1, &so, out) == SES_OK ? 0 : 1;
}

/*
 * Whether @p device can run a training step: one step on a small batch in a private scope,
 * so the variables it creates and updates are dropped afterwards and training starts from the
 * same initial weights whichever device is picked.
 */
static int device_runs_the_network(const network_t *net, ses_session_t *s, const split_t *train) {
    enum { PROBE = 4 };
    const int64_t x_dims[] = {PROBE, PIXELS}, y_dims[] = {PROBE};
    uint32_t index[PROBE] = {0, 1, 2, 3};
    ses_tensor_t *x = NULL, *y = NULL, *loss = NULL;
    ses_eval_options_t eo;
    int ok = 0;

    memset(&eo, 0, sizeof eo);
    eo.struct_size = sizeof eo;
    eo.private_scope = 1;
    if (ses_tensor_create(SES_F32, 2, x_dims, &x) == SES_OK &&
        ses_tensor_create(SES_I64, 1, y_dims, &y) == SES_OK) {
        ses_feed_t feeds[2] = {{net->x, x}, {net->labels, y}};
        fill_batch(train, index, PROBE, ses_tensor_data(x), ses_tensor_data(y));
        ok = ses_session_eval_ex(s, &net->loss, 1, feeds, 2, (ses_node_t *const *)&net->train, 1,
                                 &eo, &loss) == SES_OK;
    }
    ses_tensor_release(loss);
    ses_tensor_release(x);
    ses_tensor_release(y);
    return ok;
}

static void print_device(const char *name, const char *why) {
    ses_registry_t *reg = NULL;
    const ses_device_t *dev = NULL;

    if (ses_registry_default(&reg) == SES_OK && ses_registry_find_device(reg, name, &dev) == SES_OK)
        printf("device: %s (%s, driver %s)%s\n", ses_device_name(dev), ses_device_description(dev),
               ses_driver_name(ses_device_driver(dev)), why);
    else
        printf("device: %s%s\n", name, why);
}

/* Opens the session on --device, or on the first of gpu:0, accel:0, fpga:0 that exists and
 * can run a training step, else on the CPU. */
static int choose_device(const network_t *net, const options_t *o, const split_t *train,
                         ses_session_t **out) {
    static const char *const candidates[] = {"gpu:0", "accel:0", "fpga:0"};
    ses_registry_t *reg = NULL;

    if (ses_registry_default(&reg) != SES_OK) {
        fprintf(stderr, PROGRAM ": %s\n", ses_last_error());
        return 1;
    }
    if (ses_registry_device_count(reg) == 0) {
        fprintf(stderr, PROGRAM
                ": no devices: libsession found no driver (not even the CPU's).\n"
                "From a build tree run it with 'meson devenv -C BUILD " PROGRAM
                "'; session-info says what was searched and why drivers did not load.\n");
        return 1;
    }
    if (o->device) {
        /* A device this machine does not have is the caller's mistake: exit 2. */
        if (open_session(net, o->device, o, SES_FALLBACK_WARN, out)) {
            fprintf(stderr, PROGRAM ": --device %s: %s\n", o->device, ses_last_error());
            return 2;
        }
        print_device(o->device, "");
        return 0;
    }
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        const ses_device_t *dev = NULL;
        ses_session_t *s = NULL;

        if (ses_registry_find_device(reg, candidates[i], &dev) != SES_OK)
            continue;
        if (open_session(net, candidates[i], o, SES_FALLBACK_ALLOW, &s) == 0 &&
            device_runs_the_network(net, s, train)) {
            *out = s;
            print_device(candidates[i],
                         " [auto: the first of gpu:0, accel:0, fpga:0 that can "
                         "run it; --device to choose]");
            return 0;
        }
        printf("note: %s exists but cannot run the network: %s\n", candidates[i], ses_last_error());
        ses_session_destroy(s);
    }
    if (open_session(net, "cpu", o, SES_FALLBACK_WARN, out)) {
        fprintf(stderr, PROGRAM ": opening a session on the CPU: %s\n", ses_last_error());
        return 1;
    }
    print_device("cpu", " [auto: no gpu:0, accel:0 or fpga:0 that can run it]");
    return 0;
}

/* ---- progress: a hook ----------------------------------------------------------------------- */

static double now_seconds(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Fetches the loss at every step and shows progress: on a terminal a bar redrawn in place
 * (at most ten times a second), otherwise a line every log_every steps. The rate counts
 * training only: the caller resets the clock after evaluating.
 */
typedef struct progress {
    ses_hook_t hook;
    ses_edge_t loss;
    size_t loss_index;
    int bar;
    uint64_t steps_per_epoch, end_step, batch, log_every;
    double loss_sum; /* since the last line (plain) or the start of the epoch (bar) */
    uint64_t loss_count;
    double epoch_loss_sum;
    uint64_t epoch_loss_count;
    double mark_time; /* the rate is measured from here */
    uint64_t mark_step;
    double rate; /* examples per second */
    double last_draw;
    int columns;
    int drawn; /* a bar is on the current line */
} progress_t;

static void progress_reset_clock(progress_t *p, uint64_t step) {
    p->mark_time = now_seconds();
    p->mark_step = step;
}

/* Measures the rate over at least @p min_span seconds, so that the figure shown is steady; until
 * the first such span has passed, over what there is. */
static void progress_update_rate(progress_t *p, uint64_t step, double now, double min_span) {
    if (step <= p->mark_step || now <= p->mark_time)
        return;
    if (now - p->mark_time >= min_span) {
        p->rate = (double)((step - p->mark_step) * p->batch) / (now - p->mark_time);
        p->mark_time = now;
        p->mark_step = step;
    } else if (p->rate == 0) {
        p->rate = (double)((step - p->mark_step) * p->batch) / (now - p->mark_time);
    }
}

/* "epoch 2/5 [#######.............]  35%  loss 0.4123  25310 examples/s  eta 0:42", redrawn in
 * place; the bar takes what the terminal's width leaves. */
static void progress_draw_bar(progress_t *p, uint64_t step) {
    uint64_t epoch = (step - 1) / p->steps_per_epoch, in_epoch = step - epoch * p->steps_per_epoch;
    uint64_t epochs = (p->end_step + p->steps_per_epoch - 1) / p->steps_per_epoch;
    char bar[64], eta[32] = "";
    int width = p->columns - 72, filled;

    if (width > 40)
        width = 40;
    if (width < 10)
        width = 10;
    filled = (int)((uint64_t)width * in_epoch / p->steps_per_epoch);
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    if (p->rate > 0 && step < p->end_step) {
        double left = (double)((p->end_step - step) * p->batch) / p->rate;
        if (left < 360000)
            snprintf(eta, sizeof eta, "  eta %d:%02d", (int)left / 60, (int)left % 60);
    }
    printf("\repoch %" PRIu64 "/%" PRIu64 " [%s] %3d%%  loss %.4f  %.0f examples/s%s\033[K",
           epoch + 1, epochs, bar, (int)(100 * in_epoch / p->steps_per_epoch),
           p->epoch_loss_count ? p->epoch_loss_sum / (double)p->epoch_loss_count : 0.0, p->rate,
           eta);
    fflush(stdout);
    p->drawn = 1;
}

static ses_status_t progress_before_run(ses_hook_t *h, ses_monitored_t *m, ses_run_args_t *args) {
    progress_t *p = (progress_t *)h;

    (void)m;
    return ses_run_args_add_fetch(args, p->loss, &p->loss_index);
}

static ses_status_t progress_after_run(ses_hook_t *h, ses_monitored_t *m,
                                       const ses_run_args_t *args) {
    progress_t *p = (progress_t *)h;
    ses_tensor_t *value = ses_run_args_value(args, p->loss_index);
    uint64_t step = ses_monitored_step(m);
    double loss = value ? *(const float *)ses_tensor_data(value) : NAN, now = now_seconds();

    p->loss_sum += loss;
    p->loss_count++;
    p->epoch_loss_sum += loss;
    p->epoch_loss_count++;
    if (p->bar) {
        progress_update_rate(p, step, now, 0.5);
        if (now - p->last_draw >= 0.1 || step % p->steps_per_epoch == 0) {
            p->last_draw = now;
            progress_draw_bar(p, step);
        }
    } else if (step % p->log_every == 0) {
        uint64_t epoch = (step - 1) / p->steps_per_epoch;
        progress_update_rate(p, step, now, 0.0);
        printf("step %" PRIu64 " (epoch %" PRIu64 ", batch %" PRIu64 "/%" PRIu64
               "): loss %.4f, %.0f examples/s\n",
               step, epoch + 1, step - epoch * p->steps_per_epoch, p->steps_per_epoch,
               p->loss_sum / (double)p->loss_count, p->rate);
        fflush(stdout);
        p->loss_sum = 0;
        p->loss_count = 0;
    }
    return SES_OK;
}

/* Ends the bar's line, or prints the lines' summary of steps not yet reported. */
static void progress_finish_line(progress_t *p, uint64_t step) {
    if (p->bar) {
        if (p->drawn) {
            progress_draw_bar(p, step); /* the state at the end, not at the last redraw */
            printf("\n");
        }
        p->drawn = 0;
    } else if (p->loss_count) {
        uint64_t epoch = (step - 1) / p->steps_per_epoch;
        progress_update_rate(p, step, now_seconds(), 0.0);
        printf("step %" PRIu64 " (epoch %" PRIu64 ", batch %" PRIu64 "/%" PRIu64
               "): loss %.4f, %.0f examples/s\n",
               step, epoch + 1, step - epoch * p->steps_per_epoch, p->steps_per_epoch,
               p->loss_sum / (double)p->loss_count, p->rate);
        p->loss_sum = 0;
        p->loss_count = 0;
    }
    fflush(stdout);
}

static int terminal_columns(void) {
    struct winsize ws;

    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

/* ---- evaluation --------------------------------------------------------------------------- */

/* The fraction of @p test whose predicted class is the label, in batches of EVAL_BATCH. */
/* Whether to stop: this process's answer, or, distributed, whether any rank wants to. */
static int agree_to_stop(int local) {
#ifdef SES_WITH_MPI
    if (mpi)
        return ses_mpi_any(mpi, local);
#endif
    return local;
}

static int evaluate(ses_session_t *s, const network_t *net, const split_t *test, uint32_t *index,
                    double *out_accuracy);

static ses_monitored_t *volatile interrupted_loop;
static volatile sig_atomic_t interrupted;

#ifdef SES_WITH_MPI
/*
 * The evaluator (the last rank, which does not train): restores each checkpoint the chief
 * saves in --checkpoint-dir as it appears, evaluates it on the test set and prints the
 * accuracy, until every training rank has ended (their last checkpoint is evaluated too).
 */
static int run_evaluator(const options_t *o, ses_session_t *s, const network_t *net,
                         const split_t *test) {
    char latest[4200];
    uint32_t *index = malloc(test->n * sizeof *index);
    uint64_t last = 0;
    int evaluated = 0, ended = 0;
    double accuracy = 0;

    if (!index) {
        fprintf(stderr, PROGRAM ": evaluator: out of memory\n");
        return 1;
    }
    snprintf(latest, sizeof latest, "%s/latest", o->checkpoint_dir);
    printf("evaluator: rank %u evaluates the checkpoints in %s as they appear\n", task->rank,
           o->checkpoint_dir);
    fflush(stdout);
    while (!ended && !interrupted) {
        char *path = NULL;
        uint64_t step = 0;
        /* Asked before looking: the training ranks' last checkpoint is saved by then. Until
         * the chief's first save writes "latest", the folder is not looked at (an older one's
         * checkpoints would be evaluated, and ses_checkpoint_latest would warn). */
        ended = ses_mpi_training_ended(mpi);
        if (access(latest, F_OK) == 0 &&
            ses_checkpoint_latest(o->checkpoint_dir, &path, &step) == SES_OK &&
            (!evaluated || step != last)) {
            double t0 = now_seconds();
            /* A checkpoint deleted meanwhile (--keep-checkpoints) is skipped: a newer one is
             * there. */
            if (ses_session_restore(s, path, 0, NULL) != SES_OK) {
                printf("evaluator: note: %s; trying again\n", ses_last_error());
            } else if (evaluate(s, net, test, index, &accuracy)) {
                free(path);
                free(index);
                return 1;
            } else {
                printf("evaluator: checkpoint of step %" PRIu64
                       ": test accuracy %.4f (evaluated in %.2f s)\n",
                       step, accuracy, now_seconds() - t0);
                fflush(stdout);
                last = step;
                evaluated++;
            }
        }
        free(path);
        if (!ended && !interrupted)
            usleep(200000);
    }
    if (evaluated)
        printf("evaluator: %d checkpoints evaluated, the last of step %" PRIu64
               ": test accuracy %.4f\n",
               evaluated, last, accuracy);
    else
        printf("evaluator: training ended without a checkpoint to evaluate\n");
    free(index);
    return interrupted ? 130 : 0;
}
#endif

static int evaluate(ses_session_t *s, const network_t *net, const split_t *test, uint32_t *index,
                    double *out_accuracy) {
    size_t correct = 0;

    for (size_t i = 0; i < test->n; i++)
        index[i] = (uint32_t)i;
    for (size_t start = 0; start < test->n; start += EVAL_BATCH) {
        size_t n = test->n - start < EVAL_BATCH ? test->n - start : EVAL_BATCH;
        const int64_t dims[] = {(int64_t)n, PIXELS}, label_dims[] = {(int64_t)n};
        ses_tensor_t *x = NULL, *y = NULL, *pred = NULL;
        ses_feed_t feed;
        int ok;

        ok = ses_tensor_create(SES_F32, 2, dims, &x) == SES_OK &&
             ses_tensor_create(SES_I64, 1, label_dims, &y) == SES_OK;
        if (ok) {
            fill_batch(test, index + start, n, ses_tensor_data(x), ses_tensor_data(y));
            feed.edge = net->x;
            feed.value = x;
            ok = ses_session_eval(s, &net->prediction, 1, &feed, 1, NULL, 0, &pred) == SES_OK;
        }
        if (ok) {
            const int64_t *p = ses_tensor_data(pred), *labels = ses_tensor_data(y);
            for (size_t k = 0; k < n; k++)
                correct += p[k] == labels[k];
        }
        ses_tensor_release(pred);
        ses_tensor_release(x);
        ses_tensor_release(y);
        if (!ok) {
            fprintf(stderr, PROGRAM ": evaluating: %s\n", ses_last_error());
            return 1;
        }
    }
    *out_accuracy = (double)correct / (double)test->n;
    return 0;
}

/* ---- main --------------------------------------------------------------------------------- */


/* The first Ctrl-C (or SIGTERM) ends the loop after the current step, so the saver hook writes
 * a last checkpoint; a second one ends the process at once. */
static void on_signal(int sig) {
    if (interrupted) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = 1;
    if (interrupted_loop)
        ses_monitored_request_stop(interrupted_loop);
}

static const char *activation_name(ses_activation_t a) {
    return a == SES_ACTIVATION_RELU ? "relu" : "sigmoid";
}

int main(int argc, char **argv) {
    options_t o;
    split_t train = {0}, test = {0};
    network_t net;
    ses_session_t *s = NULL;
    ses_monitored_t *m = NULL;
    ses_hook_t *hooks[4] = {NULL};
    size_t n_hooks = 0, n_created;
    progress_t progress;
    ses_tensor_t *x = NULL, *y = NULL;
    uint32_t *order = NULL, *test_index = NULL;
    uint64_t steps_per_epoch, end_step, start_step, step, order_epoch = UINT64_MAX;
    uint64_t evaluated_at = UINT64_MAX;
    double accuracy = 0, t_start;
    struct sigaction sa;
    ses_transfer_stats_t moved, moved_before, moved_after;
    int rc;

    memset(&net, 0, sizeof net);
    memset(&moved, 0, sizeof moved);
    moved_before = moved_after = moved;
    moved.struct_size = moved_before.struct_size = moved_after.struct_size = sizeof moved;
    if ((rc = parse_options(argc, argv, &o)) != 0)
        return rc;
    if (o.distributed) {
#ifdef SES_WITH_MPI
        if (ses_mpi_init(&argc, &argv, &mpi) != SES_OK) {
            fprintf(stderr, PROGRAM ": --distributed: %s\n", ses_last_error());
            return 1;
        }
        if (o.evaluator && ses_mpi_use_last_as_evaluator(mpi) != SES_OK) {
            rc = bad_argument("--evaluator: %s", ses_last_error());
            ses_mpi_finalize(mpi);
            return rc;
        }
        task = ses_mpi_task(mpi);
        if (task->has_evaluator && !o.checkpoint_dir) {
            rc = bad_argument("SESSION_EVALUATOR=1: the evaluator needs --checkpoint-dir");
            ses_mpi_finalize(mpi);
            return rc;
        }
        if (o.batch % ses_task_workers(task)) {
            rc = bad_argument("--batch %" PRIu64 " does not split into %u equal parts, one per "
                              "training rank", o.batch, ses_task_workers(task));
            ses_mpi_finalize(mpi);
            return rc;
        }
        /* The chief and the evaluator print; the other training ranks are quiet. */
        if (!task->is_chief && !task->is_evaluator && !freopen("/dev/null", "w", stdout))
            return 1;
        if (task->is_chief)
            printf("distributed: %u ranks (MPI), %" PRIu64 " examples per rank and step%s\n",
                   ses_task_workers(task), o.batch / ses_task_workers(task),
                   task->has_evaluator ? "; the last rank of the job evaluates checkpoints" : "");
#else
        return bad_argument("--distributed: this build has no libsession-mpi (install "
                            "libopenmpi-dev and rebuild)");
#endif
    }

    /* OpenBLAS (in the CPU driver, loaded when the session opens) sizes its pool from the
     * environment when it is loaded, so this must come before anything opens a driver. */
    if (o.threads) {
        char text[24];
        snprintf(text, sizeof text, "%" PRIu64, o.threads);
        setenv("OPENBLAS_NUM_THREADS", text, 1);
    }

    rc = 1;
    if (load_split(o.data_dir, "train", &train) || load_split(o.data_dir, "t10k", &test))
        goto done;
    if (o.batch > train.n) {
        rc = bad_argument("--batch %" PRIu64 " is larger than the %zu training images", o.batch,
                          train.n);
        goto done;
    }
    steps_per_epoch = train.n / o.batch;
    end_step = o.steps ? o.steps : o.epochs * steps_per_epoch;
    printf("data: %zu training and %zu test images from %s\n", train.n, test.n, o.data_dir);

    if (build_network(&o, &net))
        goto done;
    if ((rc = choose_device(&net, &o, &train, &s)) != 0)
        goto done;
    rc = 1;
#ifdef SES_WITH_MPI
    /* Every rank starts from the chief's weights (a restored checkpoint replaces them all). */
    if (mpi && (ses_session_set_communicator(s, ses_mpi_communicator(mpi)) != SES_OK ||
                ses_mpi_broadcast_variables(mpi, s) != SES_OK)) {
        fprintf(stderr, PROGRAM ": --distributed: %s\n", ses_last_error());
        goto done;
    }
    if (task && task->is_evaluator) {
        rc = run_evaluator(&o, s, &net, &test);
        goto done;
    }
#endif

    /* The hooks, in the order they run: restore, stop, progress, save. */
    if (o.resume) {
        char *path = NULL;
        uint64_t saved = 0;
        if (ses_checkpoint_latest(o.checkpoint_dir, &path, &saved) == SES_OK)
            printf("resuming from %s\n", path);
        else
            printf("no checkpoint in %s: starting at step 0\n", o.checkpoint_dir);
        free(path);
        if (ses_hook_load_checkpoint(o.checkpoint_dir, &hooks[n_hooks]) != SES_OK)
            goto hook_failed;
        n_hooks++;
    } else if (o.checkpoint_dir) {
        char *path = NULL;
        uint64_t saved = 0;
        if (ses_checkpoint_latest(o.checkpoint_dir, &path, &saved) == SES_OK)
            printf("note: %s holds checkpoints up to step %" PRIu64
                   "; starting over at step 0 (--resume continues instead)\n",
                   o.checkpoint_dir, saved);
        free(path);
    }
    if (ses_hook_stop_at_step(end_step, &hooks[n_hooks]) != SES_OK)
        goto hook_failed;
    n_hooks++;
    memset(&progress, 0, sizeof progress);
    ses_hook_init(&progress.hook);
    progress.hook.name = "progress";
    progress.hook.before_run = progress_before_run;
    progress.hook.after_run = progress_after_run;
    progress.loss = net.loss;
    progress.bar = o.progress >= 0 ? o.progress : isatty(STDOUT_FILENO);
    progress.columns = terminal_columns();
    progress.steps_per_epoch = steps_per_epoch;
    progress.end_step = end_step;
    progress.batch = o.batch;
    progress.log_every = o.log_every;
    hooks[n_hooks++] = &progress.hook;
    if (o.checkpoint_dir && (!task || task->is_chief)) {
        if (ses_hook_checkpoint_saver(o.checkpoint_dir, o.checkpoint_every, 0,
                                      (uint32_t)o.keep_checkpoints, &hooks[n_hooks]) != SES_OK)
            goto hook_failed;
        n_hooks++;
    }
    /* From here the monitored session owns the built-in hooks, even when create fails. */
    n_created = n_hooks;
    n_hooks = 0;
    if (ses_monitored_create(s, hooks, n_created, &m) != SES_OK) {
        fprintf(stderr, PROGRAM ": %s\n", ses_last_error());
        if (o.resume)
            fprintf(stderr, PROGRAM
                    ": --resume needs the options the checkpoint was saved "
                    "with: --optimizer's state is part of it\n");
        goto done;
    }
    start_step = ses_monitored_step(m);
    if (o.resume && start_step > 0)
        printf("resumed at step %" PRIu64 " (epoch %" PRIu64 ", batch %" PRIu64 " of %" PRIu64
               ")\n",
               start_step, start_step / steps_per_epoch + 1, start_step % steps_per_epoch,
               steps_per_epoch);

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted_loop = m;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    {
        const uint64_t local = task ? o.batch / ses_task_workers(task) : o.batch;
        const int64_t x_dims[] = {(int64_t)local, PIXELS}, y_dims[] = {(int64_t)local};
        order = malloc(train.n * sizeof *order);
        test_index = malloc(test.n * sizeof *test_index);
        if (!order || !test_index || ses_tensor_create(SES_F32, 2, x_dims, &x) != SES_OK ||
            ses_tensor_create(SES_I64, 1, y_dims, &y) != SES_OK) {
            fprintf(stderr, PROGRAM ": out of memory for the batches\n");
            goto done;
        }
    }

    printf("training: %d-%d-%d %s, %s lr %g, batch %" PRIu64 ", steps %" PRIu64 " to %" PRIu64
           " (%" PRIu64 " per epoch)%s%s\n",
           PIXELS, HIDDEN, CLASSES, activation_name(o.activation), optimizer_names[o.optimizer],
           o.lr, o.batch, start_step, end_step, steps_per_epoch,
           o.checkpoint_dir ? ", checkpoints in " : "", o.checkpoint_dir ? o.checkpoint_dir : "");
    fflush(stdout);
    t_start = now_seconds();
    progress_reset_clock(&progress, start_step);

    while (!agree_to_stop(ses_monitored_should_stop(m)) &&
           (step = ses_monitored_step(m)) < end_step) {
        uint64_t epoch = step / steps_per_epoch, position = step % steps_per_epoch;
        ses_feed_t feeds[2] = {{net.x, x}, {net.labels, y}};

        if (epoch != order_epoch) {
            shuffle_for_epoch(order, train.n, o.seed, epoch);
            order_epoch = epoch;
            progress.epoch_loss_sum = 0;
            progress.epoch_loss_count = 0;
        }
        /* This rank's slice of the global batch. */
        {
            uint64_t local = task ? o.batch / ses_task_workers(task) : o.batch;
            fill_batch(&train, order + position * o.batch + (task ? task->rank : 0) * local, local,
                       ses_tensor_data(x), ses_tensor_data(y));
        }
        ses_session_transfers(s, &moved_before);
        if (ses_monitored_run(m, NULL, 0, feeds, 2, &net.train, 1, NULL) != SES_OK) {
            progress_finish_line(&progress, step);
            fprintf(stderr, PROGRAM ": step %" PRIu64 ": %s\n", step + 1, ses_last_error());
            goto done;
        }
        /* What steps after the first move between host and device (their hooks included). */
        ses_session_transfers(s, &moved_after);
        if (step > start_step) {
            moved.h2d_bytes += moved_after.h2d_bytes - moved_before.h2d_bytes;
            moved.h2d_copies += moved_after.h2d_copies - moved_before.h2d_copies;
            moved.d2h_bytes += moved_after.d2h_bytes - moved_before.d2h_bytes;
            moved.d2h_copies += moved_after.d2h_copies - moved_before.d2h_copies;
            moved.runs++;
        }
        step = ses_monitored_step(m);
        if (step % steps_per_epoch == 0 && (!task || task->is_chief)) {
            double t0 = now_seconds();
            progress_finish_line(&progress, step);
            if (evaluate(s, &net, &test, test_index, &accuracy))
                goto done;
            evaluated_at = step;
            printf("epoch %" PRIu64 " done at step %" PRIu64
                   ": mean loss %.4f, test accuracy "
                   "%.4f (evaluated in %.2f s)\n",
                   step / steps_per_epoch, step,
                   progress.epoch_loss_count
                       ? progress.epoch_loss_sum / (double)progress.epoch_loss_count
                       : 0.0,
                   accuracy, now_seconds() - t0);
            fflush(stdout);
            progress_reset_clock(&progress, step);
        }
    }
    step = ses_monitored_step(m);
    progress_finish_line(&progress, step);

    /* The saver hook writes the last checkpoint here. */
    if (ses_monitored_close(m) != SES_OK) {
        fprintf(stderr, PROGRAM ": %s\n", ses_last_error());
        goto done;
    }
    if (o.checkpoint_dir)
        printf("checkpoint: step %" PRIu64 " saved in %s\n", step, o.checkpoint_dir);
#ifdef SES_WITH_MPI
    /* The last checkpoint is saved: the evaluator may evaluate it and stop. */
    if (mpi && ses_mpi_end_training(mpi) != SES_OK) {
        fprintf(stderr, PROGRAM ": --distributed: %s\n", ses_last_error());
        goto done;
    }
#endif
    if (interrupted) {
        printf("interrupted at step %" PRIu64 "\n", step);
        rc = 130;
        goto done;
    }
    printf("trained %" PRIu64 " steps in %.1f s\n", step - start_step, now_seconds() - t_start);
    /* Devices that record graphs (a CUDA GPU) replay the step's kernels as one launch. */
    printf("kernel calls: %" PRIu64 "; graphs: %" PRIu64 " captured, %" PRIu64 " launches\n",
           ses_session_kernel_calls(s), ses_session_graph_captures(s),
           ses_session_graph_launches(s));
    if (moved.runs)
        printf("transfers per step (steps 2 to %" PRIu64 "): host->device %" PRIu64
               " bytes in %" PRIu64 " copies, device->host %" PRIu64 " bytes in %" PRIu64
               " copies\n",
               start_step + moved.runs + 1, moved.h2d_bytes / moved.runs,
               moved.h2d_copies / moved.runs, moved.d2h_bytes / moved.runs,
               moved.d2h_copies / moved.runs);
    if ((!task || task->is_chief) && evaluated_at != step &&
        evaluate(s, &net, &test, test_index, &accuracy))
        goto done;
    printf("test accuracy: %.4f\n", accuracy);
    rc = 0;
    goto done;

hook_failed:
    fprintf(stderr, PROGRAM ": %s\n", ses_last_error());
done:
    interrupted_loop = NULL;
    for (size_t i = 0; i < n_hooks; i++)
        ses_hook_destroy(hooks[i]);
    ses_monitored_destroy(m);
    ses_tensor_release(x);
    ses_tensor_release(y);
    free(order);
    free(test_index);
    ses_session_destroy(s);
    ses_graph_release(net.g);
    free_split(&train);
    free_split(&test);
#ifdef SES_WITH_MPI
    ses_mpi_finalize(mpi);
#endif
    return rc;
}
