/*
 * ABI checks: the driver's library is loaded here, apart from libsession, and its table is
 * called directly through the strict host, the way sdk/DRIVER_ABI.md says the host calls it.
 * Each check is one result line; a check whose failure makes the next ones meaningless stops
 * the run (a library that does not load has no table to check).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* The largest buffer the memory and copy checks ask for (less when the device says so). */
#define LARGE_BYTES (16u << 20)

typedef struct abi {
    const ses_conf_options_t *o;
    ses_conf_report_t *r;
    void *library;
    ses_drv_negotiate_fn negotiate;
    const ses_drv_api_t *api;
    ses_drv_driver_t *driver;
    struct ses_drv_host_ctx ctx;
    ses_drv_device_desc_t *descs;
    uint32_t n_devices;
    uint32_t minor; /* negotiated with this host's range */
    uint32_t driver_minor_max; /* the newest minor the driver speaks */
} abi_t;

/* Whether the table has the ABI 1.1 graph entries (negotiated minor and struct_size). */
static int has_graph_entries(const abi_t *a) {
    return a->minor >= 1 &&
           a->api->struct_size >= offsetof(ses_drv_api_t, graph_destroy) + sizeof(void *);
}

/* Whether the table has the ABI 1.2 native entries (negotiated minor and struct_size). */
static int has_native_entries(const abi_t *a) {
    return a->minor >= 2 &&
           a->api->struct_size >= offsetof(ses_drv_api_t, import_native) + sizeof(void *);
}

static const char *code_name(int32_t code) {
    static const char *const names[] = {
        "OK",          "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION",
        "OUT_OF_MEMORY", "UNIMPLEMENTED",  "INCOMPATIBLE", "UNAVAILABLE",
        "INTERNAL",    "CANCELLED",        "ALREADY_EXISTS",
    };
    return code >= 0 && code <= SES_DRV_ALREADY_EXISTS ? names[code] : "an unknown code";
}

/*
 * Records whether a call that returned @p got met the contract, which wants @p want
 * (want < 0: any error code). Every error must come with a message from host->error.
 * Returns 1 when it passed.
 */
static int expect(abi_t *a, const char *group, const char *name, int32_t got, int32_t want) {
    const char *message = ses_conf_host_message();
    int matches = want < 0 ? got != SES_DRV_OK : got == want;

    if (!matches) {
        ses_conf_add(a->r, group, name, SES_CONF_FAIL, "returned %s%s%s, expected %s",
                     code_name(got), message ? " with message: " : " (no message)",
                     message ? message : "", want < 0 ? "an error code" : code_name(want));
        return 0;
    }
    if (got != SES_DRV_OK && !message) {
        ses_conf_add(a->r, group, name, SES_CONF_FAIL,
                     "returned %s without attaching a message through host->error",
                     code_name(got));
        return 0;
    }
    ses_conf_add(a->r, group, name, SES_CONF_PASS, "%s%s%s", got ? code_name(got) : "",
                 message && got ? ": " : "", got && message ? message : "");
    return 1;
}

/* Calls expect only when the call failed, so passing steps of a longer check stay silent. */
static int step_ok(abi_t *a, const char *group, const char *name, int32_t got) {
    return got == SES_DRV_OK ? 1 : expect(a, group, name, got, SES_DRV_OK);
}

/* ---- loading and negotiation -------------------------------------------------------------- */

static int load_library(abi_t *a) {
    const char *path = ses_driver_library_path(a->o->driver);
    union {
        void *object;
        ses_drv_negotiate_fn function;
    } entry;

    if (!path[0]) {
        ses_conf_add(a->r, "abi", "library loads", SES_CONF_FAIL,
                     "the manifest names no usable library: %s", ses_driver_error(a->o->driver));
        return 0;
    }
    dlerror();
    a->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!a->library) {
        ses_conf_add(a->r, "abi", "library loads", SES_CONF_FAIL, "%s", dlerror());
        return 0;
    }
    ses_conf_add(a->r, "abi", "library loads", SES_CONF_PASS, "%s", path);
    entry.object = dlsym(a->library, SES_DRV_NEGOTIATE_SYMBOL);
    if (!entry.object) {
        ses_conf_add(a->r, "abi", "exports " SES_DRV_NEGOTIATE_SYMBOL, SES_CONF_FAIL,
                     "not a libsession driver: the symbol is missing (is it built with "
                     "SES_DRV_EXPORT?)");
        return 0;
    }
    a->negotiate = entry.function;
    ses_conf_add(a->r, "abi", "exports " SES_DRV_NEGOTIATE_SYMBOL, SES_CONF_PASS, "%s", "");
    return 1;
}

static void negotiate_args(abi_t *a, ses_drv_negotiate_t *n, uint32_t major, uint32_t min,
                           uint32_t max) {
    memset(n, 0, sizeof *n);
    n->struct_size = sizeof *n;
    n->abi_major = major;
    n->host_minor_min = min;
    n->host_minor_max = max;
    n->host = &ses_conf_host;
    n->host_ctx = &a->ctx;
}

/* Whether bytes [from, to) of @p p all still hold the 0xA5 the check filled them with. */
static int untouched(const void *p, size_t from, size_t to) {
    const unsigned char *b = p;
    for (size_t i = from; i < to; i++)
        if (b[i] != 0xA5)
            return 0;
    return 1;
}

/*
 * Calls the driver's negotiate with a struct of @p struct_size for ABI @p major (minors 0 to
 * @p minor_max), every other byte 0xA5 so that untouched() sees what the driver wrote, and the
 * host's call counter reset. Returns the driver's code; @p n holds what it answered.
 */
static int32_t negotiate_filled(abi_t *a, ses_drv_negotiate_t *n, size_t struct_size,
                                uint32_t major, uint32_t minor_max) {
    memset(n, 0xA5, sizeof *n);
    n->struct_size = (uint32_t)struct_size;
    n->reserved = 0;
    n->next = NULL;
    n->abi_major = major;
    n->host_minor_min = 0;
    n->host_minor_max = minor_max;
    n->host = &ses_conf_host;
    n->host_ctx = &a->ctx;
    ses_conf_host_reset();
    return a->negotiate(n);
}

/*
 * DRV-6, DRV-7, DRV-11: the order of the negotiation checks. A struct too short for the frozen
 * prefix gets INVALID_ARGUMENT and nothing written; with the prefix, the driver says who it is;
 * another major then gets INCOMPATIBLE even when the struct is shorter than this major's 1.0
 * size (another major's struct need only hold the prefix); this major with a struct shorter
 * than 1.0 gets INVALID_ARGUMENT. None of these calls the host or writes past struct_size.
 */
static void check_negotiation_sizes(abi_t *a, uint32_t driver_max) {
    const size_t prefix = SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, driver_minor_max);
    const size_t full = SES_DRV_SIZEOF_1_0(ses_drv_negotiate_t, api);
    const char *group = "abi";
    ses_drv_negotiate_t n;
    int32_t code;

    /* Another major, the prefix only. */
    code = negotiate_filled(a, &n, prefix, SES_DRV_ABI_MAJOR + 1, 0);
    if (code != SES_DRV_INCOMPATIBLE || n.driver_abi_major != SES_DRV_ABI_MAJOR ||
        n.driver_minor_max != driver_max || ses_conf_host_calls() != 0 ||
        !untouched(&n, prefix, sizeof n))
        ses_conf_add(a->r, group, "negotiate: another major, a struct of the frozen prefix only",
                     SES_CONF_FAIL,
                     "returned %s, driver_abi_major %" PRIu32 ", driver_minor_max %" PRIu32
                     ", %" PRIu32 " host calls, %s past struct_size %zu; expected INCOMPATIBLE, "
                     "%d, %" PRIu32 ", none, nothing (DRV-6, DRV-7: check the prefix's size, say "
                     "who you are, then compare majors, before checking this major's 1.0 size)",
                     code_name(code), n.driver_abi_major, n.driver_minor_max,
                     ses_conf_host_calls(), untouched(&n, prefix, sizeof n) ? "nothing" : "wrote",
                     prefix, SES_DRV_ABI_MAJOR, driver_max);
    else
        ses_conf_add(a->r, group, "negotiate: another major, a struct of the frozen prefix only",
                     SES_CONF_PASS, "INCOMPATIBLE, versions stated, nothing else touched");

    /* This major, shorter than 1.0: who it is, then INVALID_ARGUMENT, no message. */
    code = negotiate_filled(a, &n, prefix, SES_DRV_ABI_MAJOR, SES_DRV_ABI_MINOR);
    if (code != SES_DRV_INVALID_ARGUMENT || n.driver_abi_major != SES_DRV_ABI_MAJOR ||
        n.driver_minor_max != driver_max || ses_conf_host_calls() != 0 ||
        !untouched(&n, prefix, sizeof n))
        ses_conf_add(a->r, group, "negotiate: this major, a struct shorter than ABI 1.0",
                     SES_CONF_FAIL,
                     "returned %s, driver_abi_major %" PRIu32 ", %" PRIu32 " host calls, %s "
                     "past struct_size %zu (1.0 needs %zu); expected INVALID_ARGUMENT, %d, no "
                     "host call, nothing written past it (DRV-6)",
                     code_name(code), n.driver_abi_major, ses_conf_host_calls(),
                     untouched(&n, prefix, sizeof n) ? "nothing" : "wrote", prefix, full,
                     SES_DRV_ABI_MAJOR);
    else
        ses_conf_add(a->r, group, "negotiate: this major, a struct shorter than ABI 1.0",
                     SES_CONF_PASS, "INVALID_ARGUMENT, versions stated");

    /* Too short for the prefix: nothing can be said. */
    code = negotiate_filled(a, &n, offsetof(ses_drv_negotiate_t, driver_abi_major),
                            SES_DRV_ABI_MAJOR, SES_DRV_ABI_MINOR);
    if (code != SES_DRV_INVALID_ARGUMENT || ses_conf_host_calls() != 0 ||
        !untouched(&n, offsetof(ses_drv_negotiate_t, driver_abi_major), sizeof n))
        ses_conf_add(a->r, group, "negotiate: a struct shorter than the frozen prefix",
                     SES_CONF_FAIL,
                     "returned %s with %" PRIu32 " host calls, %s past struct_size %" PRIu32
                     "; expected INVALID_ARGUMENT, no host call, nothing written (DRV-6)",
                     code_name(code), ses_conf_host_calls(),
                     untouched(&n, offsetof(ses_drv_negotiate_t, driver_abi_major), sizeof n)
                         ? "nothing"
                         : "wrote",
                     n.struct_size);
    else
        ses_conf_add(a->r, group, "negotiate: a struct shorter than the frozen prefix",
                     SES_CONF_PASS, "INVALID_ARGUMENT, nothing written");
}

static int check_negotiation(abi_t *a) {
    ses_drv_negotiate_t n, again;
    const char *group = "abi";
    const uint32_t host_max = SES_DRV_ABI_MINOR; /* a variable: `x < 0` trips -Wtype-limits */
    uint32_t driver_max;
    int32_t code;

    ses_conf_host_reset();
    negotiate_args(a, &n, SES_DRV_ABI_MAJOR, 0, SES_DRV_ABI_MINOR);
    code = a->negotiate(&n);
    if (!expect(a, group, "negotiate: this host's range", code, SES_DRV_OK))
        return 0;
    driver_max = n.driver_minor_max;
    if (!n.api || n.driver_abi_major != SES_DRV_ABI_MAJOR ||
        n.chosen_minor != (driver_max < host_max ? driver_max : host_max)) {
        ses_conf_add(a->r, group, "negotiate: answer", SES_CONF_FAIL,
                     "api %s, driver_abi_major %" PRIu32 " (want %d), chosen_minor %" PRIu32
                     " (want min(host %d, driver %" PRIu32 "))",
                     n.api ? "set" : "NULL", n.driver_abi_major, SES_DRV_ABI_MAJOR,
                     n.chosen_minor, SES_DRV_ABI_MINOR, driver_max);
        return 0;
    }
    ses_conf_add(a->r, group, "negotiate: answer", SES_CONF_PASS,
                 "ABI %" PRIu32 ".%" PRIu32 " (driver speaks up to 1.%" PRIu32 ")",
                 n.driver_abi_major, n.chosen_minor, driver_max);
    a->api = n.api;
    a->minor = n.chosen_minor;
    a->driver_minor_max = driver_max;

    negotiate_args(a, &again, SES_DRV_ABI_MAJOR, 0, SES_DRV_ABI_MINOR);
    code = a->negotiate(&again);
    ses_conf_add(a->r, group, "negotiate: twice, same static table",
                 code == SES_DRV_OK && again.api == n.api ? SES_CONF_PASS : SES_CONF_FAIL, "%s",
                 code != SES_DRV_OK      ? code_name(code)
                 : again.api != n.api    ? "the second call returned another table"
                                         : "");

    /* Another major: the host table's layout may differ, so the driver must not touch it. */
    ses_conf_host_reset();
    negotiate_args(a, &n, SES_DRV_ABI_MAJOR + 1, 0, 0);
    code = a->negotiate(&n);
    if (code != SES_DRV_INCOMPATIBLE || n.driver_abi_major != SES_DRV_ABI_MAJOR ||
        ses_conf_host_calls() != 0 || n.api)
        ses_conf_add(a->r, group, "negotiate: another major", SES_CONF_FAIL,
                     "returned %s, driver_abi_major %" PRIu32 ", api %s, %" PRIu32
                     " host calls; expected INCOMPATIBLE, %d, NULL, none",
                     code_name(code), n.driver_abi_major, n.api ? "set" : "NULL",
                     ses_conf_host_calls(), SES_DRV_ABI_MAJOR);
    else
        ses_conf_add(a->r, group, "negotiate: another major", SES_CONF_PASS,
                     "INCOMPATIBLE without calling the host");

    check_negotiation_sizes(a, driver_max);

    /* A host whose oldest minor is newer than anything the driver speaks. */
    ses_conf_host_reset();
    negotiate_args(a, &n, SES_DRV_ABI_MAJOR, driver_max + 1, driver_max + 5);
    code = a->negotiate(&n);
    if (expect(a, group, "negotiate: minors out of reach", code, SES_DRV_INCOMPATIBLE) &&
        n.driver_minor_max != driver_max)
        ses_conf_add(a->r, group, "negotiate: minors out of reach", SES_CONF_FAIL,
                     "driver_minor_max is %" PRIu32 ", was %" PRIu32 " before",
                     n.driver_minor_max, driver_max);

    /* A newer host that still accepts the driver's minors. */
    ses_conf_host_reset();
    negotiate_args(a, &n, SES_DRV_ABI_MAJOR, 0, driver_max + 3);
    code = a->negotiate(&n);
    if (expect(a, group, "negotiate: newer host", code, SES_DRV_OK) &&
        n.chosen_minor != driver_max)
        ses_conf_add(a->r, group, "negotiate: newer host", SES_CONF_FAIL,
                     "chose minor %" PRIu32 ", expected the driver's newest, %" PRIu32,
                     n.chosen_minor, driver_max);
    return 1;
}

/* ---- the table and info ------------------------------------------------------------------ */

static int valid_name(const char *s) {
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static int check_table(abi_t *a) {
    const ses_drv_api_t *api = a->api;
    const ses_drv_info_t *info = api->info;
    const size_t min_size = SES_DRV_SIZEOF_1_0(ses_drv_api_t, event_synchronize);
    char missing[256] = "";
    size_t used = 0;

#define REQUIRE(field)                                                                    \
    if (!api->field)                                                                      \
        used += (size_t)snprintf(missing + used, used < sizeof missing ? sizeof missing - used : 0, \
                                 "%s%s", used ? ", " : "", #field);
    if (api->struct_size < min_size) {
        ses_conf_add(a->r, "abi", "table: struct_size", SES_CONF_FAIL,
                     "%" PRIu32 " bytes, ABI 1.0 needs %zu", api->struct_size, min_size);
        return 0;
    }
    ses_conf_add(a->r, "abi", "table: struct_size", SES_CONF_PASS, "%" PRIu32 " bytes",
                 api->struct_size);
    REQUIRE(info)
    REQUIRE(open)
    REQUIRE(close)
    REQUIRE(enumerate_devices)
    REQUIRE(open_device)
    REQUIRE(close_device)
    REQUIRE(get_kernels)
    REQUIRE(alloc)
    REQUIRE(free)
    REQUIRE(copy_h2d)
    REQUIRE(copy_d2h)
    REQUIRE(copy_d2d)
#undef REQUIRE
    if (used) {
        ses_conf_add(a->r, "abi", "table: required entries", SES_CONF_FAIL, "NULL: %s",
                     missing);
        return 0;
    }
    ses_conf_add(a->r, "abi", "table: required entries", SES_CONF_PASS, "%s", "");

    {
        int streams = !!api->stream_create + !!api->stream_destroy + !!api->stream_synchronize;
        int events = !!api->event_create + !!api->event_destroy + !!api->event_record +
                     !!api->stream_wait_event + !!api->event_synchronize;
        const char *problem = (!api->map) != (!api->unmap)  ? "map and unmap come together"
                              : streams % 3                  ? "stream entries come all or none"
                              : events % 5                   ? "event entries come all or none"
                              : events && !streams           ? "events need streams"
                                                             : NULL;
        int graphs = has_graph_entries(a) ? !!api->capture_begin + !!api->capture_end +
                                                !!api->graph_launch + !!api->graph_destroy
                                          : 0;
        if (!problem)
            problem = graphs % 4              ? "graph entries come all or none"
                      : graphs && !streams    ? "graphs need streams"
                                              : NULL;
        ses_conf_add(a->r, "abi", "table: optional entries in pairs",
                     problem ? SES_CONF_FAIL : SES_CONF_PASS, "%s", problem ? problem : "");
    }

    if (info->struct_size < SES_DRV_SIZEOF_1_0(ses_drv_info_t, flags) || !valid_name(info->name) ||
        strcmp(info->name, ses_driver_name(a->o->driver)) != 0 || !info->vendor ||
        !*info->vendor || !info->version || !*info->version || !info->build_features ||
        (info->flags & ~SES_DRV_INFO_UNLOADABLE)) {
        ses_conf_add(a->r, "abi", "info", SES_CONF_FAIL,
                     "struct_size %" PRIu32 ", name \"%s\" (manifest: \"%s\"; [a-z0-9_-]+), "
                     "vendor \"%s\", version \"%s\", build_features %s, flags 0x%" PRIx32
                     ": each must be set, and no unknown flags",
                     info->struct_size, info->name ? info->name : "(NULL)",
                     ses_driver_name(a->o->driver), info->vendor ? info->vendor : "(NULL)",
                     info->version ? info->version : "(NULL)",
                     info->build_features ? "set" : "NULL", info->flags);
        return 0;
    }
    snprintf(a->r->driver_description, sizeof a->r->driver_description, "%s %s", info->vendor,
             info->version);
    ses_conf_add(a->r, "abi", "info", SES_CONF_PASS, "%s %s %s, op set %" PRIu32 "%s%s",
                 info->name, info->vendor, info->version, info->opset_version,
                 *info->build_features ? ", " : "", info->build_features);
    return 1;
}

/* ---- opening and devices ----------------------------------------------------------------- */

/* "acme:0", "gpu:12", "cuda": what ses_session_open takes as a device name (DRV-35 keeps stable
 * ids apart from those). "host", the id DRV-35 itself gives the host CPU, is not one. */
static int looks_like_device_name(const char *id) {
    const char *colon;

    if (!id || !strcmp(id, "host"))
        return 0;
    colon = strchr(id, ':');
    if (!colon || colon == id || !colon[1])
        return !colon && valid_name(id);
    for (const char *p = id; p < colon; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return 0;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/*
 * DRV-13: a host table shorter than ABI 1.0 makes open fail with INVALID_ARGUMENT. With the
 * table long enough to hold `error`, the driver says why through it; with the bare header it
 * calls nothing.
 */
static void check_open_small_host(abi_t *a) {
    static const struct {
        size_t size;
        int message; /* 1: a message is wanted; 0: no host call at all */
        const char *name;
    } sizes[] = {
        {SES_DRV_SIZEOF_1_0(ses_drv_host_t, get_option), 1,
         "short host table, without should_abort: open refuses it"},
        {SES_DRV_SIZEOF_1_0(ses_drv_host_t, next), 0,
         "short host table, the bare header: open refuses it"},
    };

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        ses_drv_host_t host = ses_conf_host;
        ses_drv_driver_t *driver = NULL;
        const char *message;
        uint32_t calls;
        int32_t code;

        host.struct_size = (uint32_t)sizes[i].size;
        ses_conf_host_reset();
        code = a->api->open(&host, &a->ctx, &driver);
        message = ses_conf_host_message();
        calls = ses_conf_host_calls();
        if (code == SES_DRV_OK && driver)
            a->api->close(driver);
        if (code != SES_DRV_INVALID_ARGUMENT || (code == SES_DRV_OK && driver) ||
            (sizes[i].message ? !message : calls != 0))
            ses_conf_add(a->r, "device", sizes[i].name, SES_CONF_FAIL,
                         "a %zu-byte table (1.0 is %zu): returned %s, %" PRIu32
                         " host calls%s%s; expected INVALID_ARGUMENT %s (DRV-13)",
                         sizes[i].size, SES_DRV_SIZEOF_1_0(ses_drv_host_t, should_abort),
                         code_name(code), calls, message ? ", message: " : "",
                         message ? message : "",
                         sizes[i].message ? "with a message through host->error, which the "
                                            "table holds"
                                          : "without calling the host (it holds no entry)");
        else
            ses_conf_add(a->r, "device", sizes[i].name, SES_CONF_PASS, "%s",
                         message ? message : "INVALID_ARGUMENT");
    }
}

static int check_open_and_enumerate(abi_t *a) {
    const ses_drv_api_t *api = a->api;
    const size_t stride = sizeof(ses_drv_device_desc_t) + 32;
    unsigned char *raw = NULL;
    uint32_t n = 0, filled;
    int32_t code;

    check_open_small_host(a);
    ses_conf_host_reset();
    code = api->open(&ses_conf_host, &a->ctx, &a->driver);
    if (code == SES_DRV_UNAVAILABLE && ses_conf_host_message()) {
        ses_conf_add(a->r, "device", "open", SES_CONF_SKIP, "no devices on this machine: %s",
                     ses_conf_host_message());
        a->driver = NULL;
        return 0;
    }
    if (!expect(a, "device", "open", code, SES_DRV_OK))
        return 0;
    if (!a->driver) {
        ses_conf_add(a->r, "device", "open", SES_CONF_FAIL, "OK but the instance is NULL");
        return 0;
    }

    ses_conf_host_reset();
    code = api->enumerate_devices(a->driver, &n, NULL);
    if (!expect(a, "device", "enumerate: count", code, SES_DRV_OK))
        return 0;
    if (n == 0) {
        ses_conf_add(a->r, "device", "enumerate", SES_CONF_SKIP,
                     "the driver opened but offers no device; nothing more to check");
        return 0;
    }
    /* A host newer than the driver passes bigger descriptors: the driver must keep to the
     * fields it knows and leave struct_size, next and the tail alone. */
    raw = malloc((size_t)n * stride);
    a->descs = calloc(n, sizeof *a->descs);
    if (!raw || !a->descs) {
        free(raw);
        ses_conf_add(a->r, "device", "enumerate", SES_CONF_FAIL, "out of memory");
        return 0;
    }
    memset(raw, 0xA5, (size_t)n * stride);
    for (uint32_t i = 0; i < n; i++) {
        ses_drv_device_desc_t *d = (ses_drv_device_desc_t *)(void *)(raw + (size_t)i * stride);
        d->struct_size = (uint32_t)stride;
        d->reserved = 0;
        d->next = NULL;
    }
    filled = n;
    ses_conf_host_reset();
    code = api->enumerate_devices(a->driver, &filled, (ses_drv_device_desc_t *)(void *)raw);
    if (!expect(a, "device", "enumerate: fill", code, SES_DRV_OK)) {
        free(raw);
        return 0;
    }
    {
        const char *problem = filled != n ? "filled a different count than it announced" : NULL;
        for (uint32_t i = 0; !problem && i < n; i++) {
            const unsigned char *e = raw + (size_t)i * stride;
            const ses_drv_device_desc_t *d = (const void *)e;
            if (d->struct_size != stride || d->next != NULL)
                problem = "changed struct_size or next (the host sets them)";
            for (size_t b = sizeof *d; !problem && b < stride; b++)
                if (e[b] != 0xA5)
                    problem = "wrote past its struct into the host's larger descriptor";
            if (!problem) {
                memcpy(&a->descs[i], d, sizeof *d);
                a->descs[i].struct_size = sizeof *d;
            }
        }
        ses_conf_add(a->r, "device", "enumerate: respects the host's stride",
                     problem ? SES_CONF_FAIL : SES_CONF_PASS, "%s%s",
                     problem ? problem : "", "");
        free(raw);
        if (problem)
            return 0;
    }
    if (n > 1) {
        ses_drv_device_desc_t one = {.struct_size = sizeof one};
        filled = 1;
        ses_conf_host_reset();
        code = api->enumerate_devices(a->driver, &filled, &one);
        ses_conf_add(a->r, "device", "enumerate: a shorter array",
                     code == SES_DRV_OK && filled == 1 ? SES_CONF_PASS : SES_CONF_FAIL,
                     "returned %s, filled %" PRIu32 " of room for 1", code_name(code), filled);
    }
    a->n_devices = n;

    for (uint32_t i = 0; i < n; i++) {
        const ses_drv_device_desc_t *d = &a->descs[i];
        const uint64_t known_caps = (SES_DRV_CAP_NATIVE << 1) - 1;
        char name[64];
        const char *problem =
            d->kind > SES_DRV_DEVICE_ACCEL                           ? "kind is not a SES_DRV_DEVICE_*"
            : d->ordinal != i                                        ? "ordinal differs from its index"
            : !d->name || !*d->name                                  ? "name is empty"
            : !d->stable_id                                          ? "stable_id is NULL"
            : !d->alignment || (d->alignment & (d->alignment - 1))   ? "alignment is not a power of two"
            : !(d->mem_kinds & (1u << SES_DRV_MEM_DEVICE))            ? "mem_kinds lacks SES_DRV_MEM_DEVICE"
            : d->mem_kinds >> (SES_DRV_MEM_SHARED + 1)               ? "mem_kinds has unknown bits"
            : (d->caps & ~known_caps) && a->driver_minor_max <= SES_DRV_ABI_MINOR
                ? "caps has bits no minor up to the driver's own defines (DRV-15)"
            : looks_like_device_name(d->stable_id)
                ? "stable_id has the form of a device name (<name>:<N>); use pci:, uuid:, host "
                  "or <vendor>:<id> with an id that is not a bare number (DRV-35)"
            : (d->caps & SES_DRV_CAP_HOST_VISIBLE) && !(d->caps & SES_DRV_CAP_MAP)
                ? "CAP_HOST_VISIBLE without CAP_MAP (host-visible promises a map that costs no "
                  "copy, DRV-41)"
            : (d->caps & SES_DRV_CAP_MAP) && (!a->api->map || !a->api->unmap)
                ? "CAP_MAP without map and unmap"
            : (d->caps & SES_DRV_CAP_HOST_IMPORT) && !a->api->import_host_ptr
                ? "CAP_HOST_IMPORT without import_host_ptr"
            : (d->caps & (SES_DRV_CAP_STREAMS | SES_DRV_CAP_ASYNC_COPY)) && !a->api->stream_create
                ? "CAP_STREAMS or CAP_ASYNC_COPY without stream entries"
            : (d->caps & SES_DRV_CAP_EVENTS) && !a->api->event_create
                ? "CAP_EVENTS without event entries"
            : (d->caps & SES_DRV_CAP_GRAPHS) && has_graph_entries(a) &&
                    (!a->api->capture_begin || !(d->caps & SES_DRV_CAP_STREAMS))
                ? "CAP_GRAPHS without graph entries or without CAP_STREAMS"
            : (d->caps & SES_DRV_CAP_NATIVE) && has_native_entries(a) &&
                    (!a->api->buffer_native || !a->api->import_native)
                ? "CAP_NATIVE without buffer_native and import_native (DRV-83)"
            : d->memory_bytes && d->memory_free > d->memory_bytes ? "memory_free exceeds memory_bytes"
                                                                    : NULL;
        snprintf(name, sizeof name, "descriptor %s:%" PRIu32, ses_driver_name(a->o->driver), i);
        ses_conf_add(a->r, "device", name, problem ? SES_CONF_FAIL : SES_CONF_PASS,
                     "%s%s%s", problem ? problem : d->name, problem ? "" : ", id ",
                     problem ? "" : d->stable_id);
    }
    return 1;
}

/* ---- kernels ------------------------------------------------------------------------------- */

static int valid_dtype_token(const char *s, size_t n) {
    static const char *const names[] = {"f32", "f64", "f16", "bf16", "i8",  "i16", "i32",
                                        "i64", "u8",  "u16", "u32",  "u64", "bool"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && !strncmp(names[i], s, n))
            return 1;
    return 0;
}

/* "f32,f32->f32", "f32...->f32": known dtypes, one arrow, "..." only after the last input. The
 * output list may be empty ("f32,f32,f32->"): an in-place update op writes its inputs. */
static int valid_signature(const char *sig) {
    const char *arrow = sig ? strstr(sig, "->") : NULL;
    const char *p = sig;

    if (!arrow || strstr(arrow + 2, "->"))
        return 0;
    while (p < arrow) {
        const char *end = p;
        while (end < arrow && *end != ',' && *end != '.')
            end++;
        if (!valid_dtype_token(p, (size_t)(end - p)))
            return 0;
        if (end < arrow && *end == '.') {
            if (strncmp(end, "...", 3) != 0 || end + 3 != arrow)
                return 0;
            end += 3;
        }
        p = end < arrow ? end + 1 : end;
        if (end < arrow && p == arrow)
            return 0; /* a trailing comma */
    }
    for (p = arrow + 2; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!valid_dtype_token(p, n))
            return 0;
        p += n + (end ? 1 : 0);
        if (end && !*p)
            return 0;
    }
    return 1;
}

/* Adds "op\tsig" to @p list once, with "\treuse" after it when an entry of that op and
 * signature has reuse_inputs (kernel_checks.c then runs its cases with computed inputs too). */
static int add_unique(char ***list, size_t *n, const char *op, const char *sig, int reuse) {
    size_t len = strlen(op) + strlen(sig) + sizeof "\t\treuse", key;
    char *entry = malloc(len), **grown;

    if (!entry)
        return 0;
    snprintf(entry, len, "%s\t%s", op, sig);
    key = strlen(entry);
    if (reuse)
        strcat(entry, "\treuse");
    for (size_t i = 0; i < *n; i++) {
        if (!strncmp((*list)[i], entry, key) &&
            ((*list)[i][key] == '\0' || (*list)[i][key] == '\t')) {
            if (reuse && (*list)[i][key] == '\0') {
                free((*list)[i]);
                (*list)[i] = entry;
            } else {
                free(entry);
            }
            return 1;
        }
    }
    grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown) {
        free(entry);
        return 0;
    }
    *list = grown;
    (*list)[(*n)++] = entry;
    return 1;
}

static void check_kernel_table(abi_t *a, ses_drv_device_t *device, uint32_t ordinal,
                               char ***out_kernels, size_t *out_n) {
    const ses_drv_kernel_t *kernels = NULL;
    const size_t min_stride = SES_DRV_SIZEOF_1_0(ses_drv_kernel_t, compute);
    uint32_t count = 0, stride = 0;
    char problem[512] = "";
    int32_t code;

    ses_conf_host_reset();
    code = a->api->get_kernels(device, &kernels, &count, &stride);
    if (!expect(a, "device", "get_kernels", code, SES_DRV_OK))
        return;
    if (count && (!kernels || stride < min_stride)) {
        ses_conf_add(a->r, "device", "kernel table", SES_CONF_FAIL,
                     "%" PRIu32 " entries at %s with stride %" PRIu32 " (ABI 1.0 needs %zu)",
                     count, kernels ? "a table" : "NULL", stride, min_stride);
        return;
    }
    for (uint32_t i = 0; i < count && !problem[0]; i++) {
        const ses_drv_kernel_t *k =
            (const void *)((const unsigned char *)kernels + (size_t)i * stride);
        /* Kernel flags exist from ABI 1.1 on. */
        const uint32_t known_flags = a->minor >= 1 ? SES_DRV_KERNEL_NO_CAPTURE : 0;
        if (k->struct_size < min_stride || !k->op || !*k->op || !valid_signature(k->signature) ||
            !k->compute || (!k->create) != (!k->destroy) || (k->flags & ~known_flags)) {
            snprintf(problem, sizeof problem,
                     "entry %" PRIu32 " (%s %s): needs struct_size >= %zu (has %" PRIu32
                     "), an op, a signature like \"f32,f32->f32\", compute, create and destroy "
                     "together, no unknown flags (has 0x%" PRIx32 ")",
                     i, k->op ? k->op : "(NULL op)", k->signature ? k->signature : "(NULL)",
                     min_stride, k->struct_size, k->flags);
            break;
        }
        for (uint32_t j = 0; j < i; j++) {
            const ses_drv_kernel_t *e =
                (const void *)((const unsigned char *)kernels + (size_t)j * stride);
            if (!strcmp(e->op, k->op) && !strcmp(e->signature, k->signature) &&
                e->priority == k->priority)
                snprintf(problem, sizeof problem,
                         "entries %" PRIu32 " and %" PRIu32 " are both %s %s at priority %" PRIu32
                         ": which one runs is undefined",
                         j, i, k->op, k->signature, k->priority);
        }
        /* reuse_inputs exists from ABI 1.4 on, in a table whose stride covers it. */
        const int reuse = a->minor >= 4 &&
                          stride >= offsetof(ses_drv_kernel_t, reuse_inputs) + sizeof(void *) &&
                          k->reuse_inputs != NULL;
        if (!problem[0] && ordinal == a->o->device && out_kernels &&
            !add_unique(out_kernels, out_n, k->op, k->signature, reuse))
            snprintf(problem, sizeof problem, "out of memory");
    }
    if (problem[0])
        ses_conf_add(a->r, "device", "kernel table", SES_CONF_FAIL, "%s", problem);
    else
        ses_conf_add(a->r, "device", "kernel table", SES_CONF_PASS, "%" PRIu32 " entries", count);
}

/* ---- memory and copies ------------------------------------------------------------------- */

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 17u + (i >> 8)) & 0xFF);
}

static uint64_t large_bytes(const ses_drv_device_desc_t *d) {
    uint64_t bytes = LARGE_BYTES;

    if (d->max_alloc && d->max_alloc < bytes)
        bytes = d->max_alloc;
    return bytes;
}

static void check_alloc(abi_t *a, ses_drv_device_t *device, const ses_drv_device_desc_t *d) {
    const uint64_t sizes[] = {1, 7, 4099, large_bytes(d)};
    char detail[256] = "";
    int32_t code;

    for (uint32_t kind = 0; kind <= SES_DRV_MEM_SHARED; kind++) {
        if (!(d->mem_kinds & (1u << kind)))
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            ses_drv_buffer_t *buffer = NULL;
            ses_conf_host_reset();
            code = a->api->alloc(device, sizes[s], kind, &buffer);
            if (code != SES_DRV_OK || !buffer) {
                snprintf(detail, sizeof detail, "memory kind %" PRIu32 ", %" PRIu64 " bytes: %s%s%s",
                         kind, sizes[s], code_name(code), ses_conf_host_message() ? ": " : "",
                         ses_conf_host_message() ? ses_conf_host_message() : "");
                break;
            }
            a->api->free(device, buffer);
        }
        if (detail[0])
            break;
    }
    ses_conf_add(a->r, "memory", "alloc and free: 1, 7, 4099 bytes and large, each memory kind",
                 detail[0] ? SES_CONF_FAIL : SES_CONF_PASS, "%s", detail);
    a->api->free(device, NULL);
    ses_conf_add(a->r, "memory", "free(NULL) is accepted", SES_CONF_PASS, "%s", "");

    {
        ses_drv_buffer_t *buffer = NULL;
        ses_conf_host_reset();
        code = a->api->alloc(device, 0, SES_DRV_MEM_DEVICE, &buffer);
        if (code == SES_DRV_OK)
            a->api->free(device, buffer);
        expect(a, "memory", "alloc of 0 bytes is refused", code, SES_DRV_INVALID_ARGUMENT);
    }
    for (uint32_t kind = 0; kind < 32; kind++) {
        ses_drv_buffer_t *buffer = NULL;
        if (d->mem_kinds & (1u << kind))
            continue;
        ses_conf_host_reset();
        code = a->api->alloc(device, 64, kind, &buffer);
        if (code == SES_DRV_OK)
            a->api->free(device, buffer);
        {
            char name[96];
            snprintf(name, sizeof name, "alloc of an unsupported memory kind (%" PRIu32 ")", kind);
            expect(a, "memory", name, code, -1);
        }
        break;
    }
    if (a->api->memory_info) {
        uint64_t free_bytes = 0, total = 0;
        ses_conf_host_reset();
        code = a->api->memory_info(device, &free_bytes, &total);
        if (expect(a, "memory", "memory_info", code, SES_DRV_OK) && total && free_bytes > total)
            ses_conf_add(a->r, "memory", "memory_info", SES_CONF_FAIL,
                         "free %" PRIu64 " exceeds total %" PRIu64, free_bytes, total);
    }
}

/* h2d at one offset, d2d to another buffer at another offset, d2h back: the bytes survive. */
static const char *round_trip(abi_t *a, ses_drv_device_t *device, uint64_t bytes,
                              uint64_t offset, char *why, size_t why_size) {
    const uint64_t size = bytes + offset + 64;
    ses_drv_buffer_t *x = NULL, *y = NULL;
    unsigned char *src = malloc((size_t)bytes + 1), *dst = malloc((size_t)bytes + 1);
    int32_t code = SES_DRV_OK;
    const char *step = NULL;

    if (!src || !dst) {
        step = "host memory";
        snprintf(why, why_size, "out of memory");
        goto done;
    }
    fill_pattern(src, (size_t)bytes, (unsigned)bytes);
    memset(dst, 0, (size_t)bytes + 1);
    ses_conf_host_reset();
    if ((code = a->api->alloc(device, size, SES_DRV_MEM_DEVICE, &x)) != SES_DRV_OK ||
        (code = a->api->alloc(device, size, SES_DRV_MEM_DEVICE, &y)) != SES_DRV_OK) {
        step = "alloc";
    } else if ((code = a->api->copy_h2d(device, NULL, src, x, offset, bytes)) != SES_DRV_OK) {
        step = "copy_h2d";
    } else if ((code = a->api->copy_d2d(device, NULL, x, offset, y, 64 - offset % 64, bytes)) !=
               SES_DRV_OK) {
        step = "copy_d2d";
    } else if ((code = a->api->copy_d2h(device, NULL, y, 64 - offset % 64, dst, bytes)) !=
               SES_DRV_OK) {
        step = "copy_d2h";
    } else if (memcmp(src, dst, (size_t)bytes) != 0) {
        size_t i = 0;
        while (src[i] == dst[i])
            i++;
        step = "compare";
        snprintf(why, why_size, "byte %zu is 0x%02x, wrote 0x%02x", i, dst[i], src[i]);
    }
    if (step && code != SES_DRV_OK)
        snprintf(why, why_size, "%s", ses_conf_host_message() ? ses_conf_host_message()
                                                              : "(no message)");
done:
    a->api->free(device, x);
    a->api->free(device, y);
    free(src);
    free(dst);
    return step;
}

static void check_copies(abi_t *a, ses_drv_device_t *device, const ses_drv_device_desc_t *d) {
    const uint64_t sizes[] = {0, 1, 7, 4099, large_bytes(d) - 128};
    const uint64_t offsets[] = {0, 5};
    ses_drv_buffer_t *buffer = NULL;
    unsigned char bytes[128];
    char name[128], why[512];
    int32_t code;

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t o = 0; o < 2; o++) {
            const char *step;
            why[0] = '\0';
            step = round_trip(a, device, sizes[s], offsets[o], why, sizeof why);
            snprintf(name, sizeof name, "round trip h2d, d2d, d2h: %" PRIu64 " bytes at offset %" PRIu64,
                     sizes[s], offsets[o]);
            if (step)
                ses_conf_add(a->r, "copy", name, SES_CONF_FAIL, "%s: %s", step, why);
            else
                ses_conf_add(a->r, "copy", name, SES_CONF_PASS, "%s", "");
        }
    }

    /* A copy past the end of a buffer must be refused, not run into other memory. */
    ses_conf_host_reset();
    if (a->api->alloc(device, 64, SES_DRV_MEM_DEVICE, &buffer) != SES_DRV_OK) {
        ses_conf_add(a->r, "copy", "out-of-bounds copies are refused", SES_CONF_FAIL,
                     "alloc of 64 bytes failed");
        return;
    }
    memset(bytes, 0, sizeof bytes);
    ses_conf_host_reset();
    code = a->api->copy_h2d(device, NULL, bytes, buffer, 32, 64);
    expect(a, "copy", "copy_h2d past the end is refused", code, -1);
    ses_conf_host_reset();
    code = a->api->copy_d2h(device, NULL, buffer, 1, bytes, 64);
    expect(a, "copy", "copy_d2h past the end is refused", code, -1);
    ses_conf_host_reset();
    code = a->api->copy_d2d(device, NULL, buffer, 0, buffer, UINT64_MAX - 8, 16);
    expect(a, "copy", "copy_d2d with an offset that wraps is refused", code, -1);

    /* DRV-43: 0 bytes at offset == size lie inside the buffer, and need no host memory. */
    ses_conf_host_reset();
    code = a->api->copy_h2d(device, NULL, NULL, buffer, 64, 0);
    expect(a, "copy", "copy_h2d of 0 bytes at the end, source NULL, succeeds", code, SES_DRV_OK);
    ses_conf_host_reset();
    code = a->api->copy_d2h(device, NULL, buffer, 64, NULL, 0);
    expect(a, "copy", "copy_d2h of 0 bytes at the end, destination NULL, succeeds", code,
           SES_DRV_OK);
    ses_conf_host_reset();
    code = a->api->copy_d2d(device, NULL, buffer, 64, buffer, 64, 0);
    expect(a, "copy", "copy_d2d of 0 bytes at the end succeeds", code, SES_DRV_OK);
    /* ... but an offset past the end is out of bounds even for 0 bytes. */
    ses_conf_host_reset();
    code = a->api->copy_h2d(device, NULL, bytes, buffer, 65, 0);
    expect(a, "copy", "copy_h2d of 0 bytes past the end is refused", code,
           SES_DRV_INVALID_ARGUMENT);
    ses_conf_host_reset();
    code = a->api->copy_d2h(device, NULL, buffer, 65, bytes, 0);
    expect(a, "copy", "copy_d2h of 0 bytes past the end is refused", code,
           SES_DRV_INVALID_ARGUMENT);
    a->api->free(device, buffer);
}

static void check_map_and_import(abi_t *a, ses_drv_device_t *device,
                                 const ses_drv_device_desc_t *d) {
    const uint64_t n = 4099;
    unsigned char src[4099], dst[4099];
    ses_drv_buffer_t *buffer = NULL;
    void *mapped = NULL;
    const char *step = NULL;
    int32_t code = SES_DRV_OK;

    fill_pattern(src, sizeof src, 3);
    if (!(d->caps & SES_DRV_CAP_MAP)) {
        ses_conf_add(a->r, "memory", "map and unmap", SES_CONF_SKIP, "not offered (no CAP_MAP)");
    } else {
        ses_conf_host_reset();
        if ((code = a->api->alloc(device, n, SES_DRV_MEM_DEVICE, &buffer)) != SES_DRV_OK)
            step = "alloc";
        else if ((code = a->api->map(device, buffer, 0, n, SES_DRV_MAP_WRITE, &mapped)) !=
                     SES_DRV_OK ||
                 !mapped)
            step = "map for writing";
        else if ((d->caps & SES_DRV_CAP_HOST_VISIBLE) &&
                 ((uintptr_t)mapped % d->alignment) != 0)
            step = "alignment of the mapped pointer";
        else {
            memcpy(mapped, src, n);
            if ((code = a->api->unmap(device, buffer, mapped)) != SES_DRV_OK)
                step = "unmap";
            else if ((code = a->api->copy_d2h(device, NULL, buffer, 0, dst, n)) != SES_DRV_OK)
                step = "copy_d2h";
            else if (memcmp(src, dst, n) != 0)
                step = "the bytes written through the map";
            else if ((code = a->api->map(device, buffer, 7, 64, SES_DRV_MAP_READ, &mapped)) !=
                         SES_DRV_OK ||
                     !mapped)
                step = "map for reading at offset 7";
            else if (memcmp(mapped, src + 7, 64) != 0)
                step = "the bytes read through the map";
            else if ((code = a->api->unmap(device, buffer, mapped)) != SES_DRV_OK)
                step = "second unmap";
        }
        if (!step) {
            /* DRV-15, DRV-63: map_flags asks for something, so an unknown bit is refused. */
            void *p = NULL;
            ses_conf_host_reset();
            code = a->api->map(device, buffer, 0, 64, SES_DRV_MAP_READ | UINT32_C(0x80000000),
                               &p);
            if (code == SES_DRV_OK)
                a->api->unmap(device, buffer, p);
            expect(a, "memory", "map refuses an unknown map_flags bit", code,
                   SES_DRV_INVALID_ARGUMENT);
        }
        a->api->free(device, buffer);
        buffer = NULL;
        if (step)
            ses_conf_add(a->r, "memory", "map and unmap", SES_CONF_FAIL, "%s: %s%s", step,
                         code ? code_name(code) : "wrong",
                         code && ses_conf_host_message() ? ses_conf_host_message() : "");
        else
            ses_conf_add(a->r, "memory", "map and unmap", SES_CONF_PASS, "%s", "");
    }

    step = NULL;
    if (!(d->caps & SES_DRV_CAP_HOST_IMPORT)) {
        ses_conf_add(a->r, "memory", "import_host_ptr", SES_CONF_SKIP,
                     "not offered (no CAP_HOST_IMPORT)");
        return;
    }
    {
        size_t align = d->alignment < sizeof(void *) ? sizeof(void *) : d->alignment;
        size_t bytes = (4096 + align - 1) / align * align;
        unsigned char *host = aligned_alloc(align, bytes);
        if (!host) {
            ses_conf_add(a->r, "memory", "import_host_ptr", SES_CONF_FAIL, "out of memory");
            return;
        }
        fill_pattern(host, bytes, 9);
        ses_conf_host_reset();
        if ((code = a->api->import_host_ptr(device, host, bytes, &buffer)) != SES_DRV_OK)
            step = "import_host_ptr";
        else if ((code = a->api->copy_d2h(device, NULL, buffer, 0, dst, 4096)) != SES_DRV_OK)
            step = "copy_d2h";
        else if (memcmp(host, dst, 4096) != 0)
            step = "the imported bytes read back";
        else if ((code = a->api->copy_h2d(device, NULL, src, buffer, 0, 4096)) != SES_DRV_OK)
            step = "copy_h2d";
        else if (memcmp(host, src, 4096) != 0)
            step = "a write to the imported buffer reaching the host memory";
        a->api->free(device, buffer);
        free(host);
    }
    if (step)
        ses_conf_add(a->r, "memory", "import_host_ptr", SES_CONF_FAIL, "%s: %s %s", step,
                     code ? code_name(code) : "wrong",
                     code && ses_conf_host_message() ? ses_conf_host_message() : "");
    else
        ses_conf_add(a->r, "memory", "import_host_ptr", SES_CONF_PASS, "%s", "");
}

/*
 * DRV-83, DRV-84: an allocated buffer's native address, imported again, names the same bytes;
 * import_native refuses a NULL address and 0 bytes.
 */
static void check_native(abi_t *a, ses_drv_device_t *device, const ses_drv_device_desc_t *d) {
    const uint64_t n = 4096;
    unsigned char src[4096], dst[4096];
    ses_drv_buffer_t *buffer = NULL, *imported = NULL;
    void *native = NULL, *again = NULL;
    const char *step = NULL;
    int32_t code = SES_DRV_OK;

    if (!has_native_entries(a) || !(d->caps & SES_DRV_CAP_NATIVE)) {
        ses_conf_add(a->r, "memory", "buffer_native and import_native", SES_CONF_SKIP,
                     "not offered (no CAP_NATIVE at ABI 1.2)");
        return;
    }
    fill_pattern(src, sizeof src, 5);
    ses_conf_host_reset();
    if ((code = a->api->alloc(device, n, SES_DRV_MEM_DEVICE, &buffer)) != SES_DRV_OK)
        step = "alloc";
    else if ((code = a->api->copy_h2d(device, NULL, src, buffer, 0, n)) != SES_DRV_OK)
        step = "copy_h2d";
    else if ((code = a->api->buffer_native(device, buffer, &native)) != SES_DRV_OK || !native)
        step = "buffer_native";
    else if ((code = a->api->import_native(device, native, n, &imported)) != SES_DRV_OK ||
             !imported)
        step = "import_native";
    else if ((code = a->api->copy_d2h(device, NULL, imported, 0, dst, n)) != SES_DRV_OK)
        step = "copy_d2h from the imported buffer";
    else if (memcmp(src, dst, n) != 0)
        step = "the bytes read through the imported buffer";
    else if ((code = a->api->buffer_native(device, imported, &again)) != SES_DRV_OK ||
             again != native)
        step = "buffer_native of the imported buffer (must give the address back)";
    /* Freeing the imported handle must leave the memory to its owner: read it again after. */
    a->api->free(device, imported);
    if (!step && ((code = a->api->copy_d2h(device, NULL, buffer, 0, dst, n)) != SES_DRV_OK ||
                  memcmp(src, dst, n) != 0))
        step = "the allocated buffer after freeing the imported one";
    a->api->free(device, buffer);
    if (step)
        ses_conf_add(a->r, "memory", "buffer_native and import_native", SES_CONF_FAIL, "%s: %s %s",
                     step, code ? code_name(code) : "wrong",
                     code && ses_conf_host_message() ? ses_conf_host_message() : "");
    else
        ses_conf_add(a->r, "memory", "buffer_native and import_native", SES_CONF_PASS, "%s", "");

    imported = NULL;
    ses_conf_host_reset();
    code = a->api->import_native(device, NULL, 64, &imported);
    if (code == SES_DRV_OK)
        a->api->free(device, imported);
    expect(a, "memory", "import_native refuses a NULL address", code, SES_DRV_INVALID_ARGUMENT);
    imported = NULL;
    ses_conf_host_reset();
    code = a->api->import_native(device, src, 0, &imported);
    if (code == SES_DRV_OK)
        a->api->free(device, imported);
    expect(a, "memory", "import_native refuses 0 bytes", code, SES_DRV_INVALID_ARGUMENT);
}

/*
 * DRV-16: the table is shared by every device, the capability bits are per device. An entry
 * present on a device whose bit is clear is never called by the host; if called anyway it must
 * refuse with UNIMPLEMENTED and a message, never half work.
 */
static void check_entries_without_caps(abi_t *a, ses_drv_device_t *device,
                                       const ses_drv_device_desc_t *d) {
    const ses_drv_api_t *api = a->api;
    int checked = 0;
    int32_t code;

    if (api->map && !(d->caps & SES_DRV_CAP_MAP)) {
        ses_drv_buffer_t *buffer = NULL;
        void *p = NULL;
        checked = 1;
        ses_conf_host_reset();
        if (api->alloc(device, 64, SES_DRV_MEM_DEVICE, &buffer) == SES_DRV_OK) {
            ses_conf_host_reset();
            code = api->map(device, buffer, 0, 64, SES_DRV_MAP_READ, &p);
            if (code == SES_DRV_OK && api->unmap)
                api->unmap(device, buffer, p);
            expect(a, "memory", "map without CAP_MAP is refused as UNIMPLEMENTED", code,
                   SES_DRV_UNIMPLEMENTED);
            api->free(device, buffer);
        }
    }
    if (api->import_host_ptr && !(d->caps & SES_DRV_CAP_HOST_IMPORT)) {
        size_t align = d->alignment < sizeof(void *) ? sizeof(void *) : d->alignment;
        size_t bytes = (4096 + align - 1) / align * align;
        void *host = aligned_alloc(align, bytes);
        ses_drv_buffer_t *buffer = NULL;
        checked = 1;
        if (host) {
            ses_conf_host_reset();
            code = api->import_host_ptr(device, host, bytes, &buffer);
            if (code == SES_DRV_OK)
                api->free(device, buffer);
            expect(a, "memory",
                   "import_host_ptr without CAP_HOST_IMPORT is refused as UNIMPLEMENTED", code,
                   SES_DRV_UNIMPLEMENTED);
            free(host);
        }
    }
    if (api->stream_create && !(d->caps & SES_DRV_CAP_STREAMS)) {
        ses_drv_stream_t *s = NULL;
        checked = 1;
        ses_conf_host_reset();
        code = api->stream_create(device, &s);
        if (code == SES_DRV_OK && api->stream_destroy)
            api->stream_destroy(device, s);
        expect(a, "stream", "stream_create without CAP_STREAMS is refused as UNIMPLEMENTED", code,
               SES_DRV_UNIMPLEMENTED);
    }
    if (api->event_create && !(d->caps & SES_DRV_CAP_EVENTS)) {
        ses_drv_event_t *e = NULL;
        checked = 1;
        ses_conf_host_reset();
        code = api->event_create(device, &e);
        if (code == SES_DRV_OK && api->event_destroy)
            api->event_destroy(device, e);
        expect(a, "event", "event_create without CAP_EVENTS is refused as UNIMPLEMENTED", code,
               SES_DRV_UNIMPLEMENTED);
    }
    if (has_graph_entries(a) && api->capture_begin && !(d->caps & SES_DRV_CAP_GRAPHS) &&
        (d->caps & SES_DRV_CAP_STREAMS) && api->stream_create) {
        ses_drv_stream_t *s = NULL;
        checked = 1;
        ses_conf_host_reset();
        if (api->stream_create(device, &s) == SES_DRV_OK) {
            ses_conf_host_reset();
            code = api->capture_begin(device, s);
            if (code == SES_DRV_OK && api->capture_end)
                api->capture_end(device, s, NULL);
            expect(a, "graph", "capture_begin without CAP_GRAPHS is refused as UNIMPLEMENTED",
                   code, SES_DRV_UNIMPLEMENTED);
            api->stream_destroy(device, s);
        }
    }
    if (has_native_entries(a) && api->import_native && !(d->caps & SES_DRV_CAP_NATIVE)) {
        ses_drv_buffer_t *buffer = NULL;
        unsigned char bytes[64];
        checked = 1;
        ses_conf_host_reset();
        code = api->import_native(device, bytes, sizeof bytes, &buffer);
        if (code == SES_DRV_OK)
            api->free(device, buffer);
        expect(a, "memory", "import_native without CAP_NATIVE is refused as UNIMPLEMENTED", code,
               SES_DRV_UNIMPLEMENTED);
    }
    if (!checked)
        ses_conf_add(a->r, "device", "optional entries without their capability bit",
                     SES_CONF_PASS, "none: every optional entry present has its bit");
}

/* ---- streams and events ------------------------------------------------------------------ */

static void check_streams(abi_t *a, ses_drv_device_t *device, const ses_drv_device_desc_t *d) {
    const ses_drv_api_t *api = a->api;
    ses_drv_stream_t *s1 = NULL, *s2 = NULL;
    ses_drv_event_t *event = NULL;
    ses_drv_buffer_t *buffer = NULL;
    enum { N = 65536 };
    unsigned char *src = malloc(N), *dst = malloc(N);

    if (!(d->caps & SES_DRV_CAP_STREAMS) || !api->stream_create) {
        ses_conf_add(a->r, "stream", "streams", SES_CONF_SKIP, "not offered (no CAP_STREAMS)");
        ses_conf_add(a->r, "event", "events", SES_CONF_SKIP, "not offered (no CAP_EVENTS)");
        goto done;
    }
    if (!src || !dst) {
        ses_conf_add(a->r, "stream", "streams", SES_CONF_FAIL, "out of memory");
        goto done;
    }
    fill_pattern(src, N, 5);
    memset(dst, 0, N);
    ses_conf_host_reset();
    if (!step_ok(a, "stream", "stream_create", api->stream_create(device, &s1)) ||
        !step_ok(a, "stream", "alloc", api->alloc(device, N, SES_DRV_MEM_DEVICE, &buffer)))
        goto done;
    if (d->caps & SES_DRV_CAP_ASYNC_COPY) {
        if (!step_ok(a, "stream", "copy_h2d on a stream",
                     api->copy_h2d(device, s1, src, buffer, 0, N)) ||
            !step_ok(a, "stream", "copy_d2h on a stream",
                     api->copy_d2h(device, s1, buffer, 0, dst, N)) ||
            !step_ok(a, "stream", "stream_synchronize", api->stream_synchronize(device, s1)))
            goto done;
        ses_conf_add(a->r, "stream", "async copies in order",
                     memcmp(src, dst, N) ? SES_CONF_FAIL : SES_CONF_PASS, "%s",
                     memcmp(src, dst, N) ? "the bytes read back differ" : "");
    } else {
        ses_conf_add(a->r, "stream", "async copies in order", SES_CONF_SKIP,
                     "not offered (no CAP_ASYNC_COPY)");
        if (!step_ok(a, "stream", "stream_synchronize", api->stream_synchronize(device, s1)))
            goto done;
        ses_conf_add(a->r, "stream", "stream_synchronize", SES_CONF_PASS, "%s", "");
    }

    if (!(d->caps & SES_DRV_CAP_EVENTS) || !api->event_create) {
        ses_conf_add(a->r, "event", "events", SES_CONF_SKIP, "not offered (no CAP_EVENTS)");
        goto done;
    }
    memset(dst, 0, N);
    fill_pattern(src, N, 6);
    if (!step_ok(a, "event", "stream_create", api->stream_create(device, &s2)) ||
        !step_ok(a, "event", "event_create", api->event_create(device, &event)))
        goto done;
    if (d->caps & SES_DRV_CAP_ASYNC_COPY) {
        /* Work on s2 that waits for an event recorded on s1 sees s1's writes. */
        if (!step_ok(a, "event", "copy_h2d on stream 1",
                     api->copy_h2d(device, s1, src, buffer, 0, N)) ||
            !step_ok(a, "event", "event_record", api->event_record(device, event, s1)) ||
            !step_ok(a, "event", "stream_wait_event", api->stream_wait_event(device, s2, event)) ||
            !step_ok(a, "event", "copy_d2h on stream 2",
                     api->copy_d2h(device, s2, buffer, 0, dst, N)) ||
            !step_ok(a, "event", "stream_synchronize", api->stream_synchronize(device, s2)) ||
            !step_ok(a, "event", "event_synchronize", api->event_synchronize(device, event)))
            goto done;
        ses_conf_add(a->r, "event", "an event orders two streams",
                     memcmp(src, dst, N) ? SES_CONF_FAIL : SES_CONF_PASS, "%s",
                     memcmp(src, dst, N) ? "stream 2 read the buffer before stream 1 wrote it"
                                         : "");
    } else {
        if (!step_ok(a, "event", "event_record", api->event_record(device, event, s1)) ||
            !step_ok(a, "event", "event_synchronize", api->event_synchronize(device, event)))
            goto done;
        ses_conf_add(a->r, "event", "record and synchronize", SES_CONF_PASS, "%s", "");
    }

done:
    if (event)
        api->event_destroy(device, event);
    if (s2)
        api->stream_destroy(device, s2);
    if (s1)
        api->stream_destroy(device, s1);
    if (buffer)
        api->free(device, buffer);
    free(src);
    free(dst);
}

/* ---- graphs (ABI 1.1) ---------------------------------------------------------------------- */

/*
 * Capture, instantiate, replay and abandon on an empty recording: what the host does around a
 * segment of kernels (DRV-78, DRV-80). Kernels under capture are checked by the kernel checks,
 * whose one-node plans are captured on devices that record graphs.
 */
static void check_graphs(abi_t *a, ses_drv_device_t *device, const ses_drv_device_desc_t *d) {
    const ses_drv_api_t *api = a->api;
    ses_drv_stream_t *s = NULL;
    ses_drv_graph_t *graph = NULL;

    if (!(d->caps & SES_DRV_CAP_GRAPHS) || !has_graph_entries(a) || !api->capture_begin ||
        !api->stream_create) {
        ses_conf_add(a->r, "graph", "graphs", SES_CONF_SKIP,
                     a->minor < 1 ? "not offered (ABI 1.0)" : "not offered (no CAP_GRAPHS)");
        return;
    }
    ses_conf_host_reset();
    if (!step_ok(a, "graph", "stream_create", api->stream_create(device, &s)))
        return;
    if (step_ok(a, "graph", "capture_begin", api->capture_begin(device, s)) &&
        step_ok(a, "graph", "capture_end", api->capture_end(device, s, &graph))) {
        if (!graph) {
            ses_conf_add(a->r, "graph", "capture_end", SES_CONF_FAIL, "returned OK and no graph");
        } else if (step_ok(a, "graph", "graph_launch", api->graph_launch(device, graph, s)) &&
                   step_ok(a, "graph", "graph_launch again", api->graph_launch(device, graph, s)) &&
                   step_ok(a, "graph", "stream_synchronize", api->stream_synchronize(device, s))) {
            ses_conf_add(a->r, "graph", "capture, launch twice, synchronize", SES_CONF_PASS, "%s",
                         "");
        }
        api->graph_destroy(device, graph);
        api->graph_destroy(device, NULL);
    }
    /* Abandoning a capture leaves the stream usable. */
    if (step_ok(a, "graph", "capture_begin", api->capture_begin(device, s)) &&
        step_ok(a, "graph", "capture_end(NULL) abandons", api->capture_end(device, s, NULL)) &&
        step_ok(a, "graph", "stream_synchronize after abandoning",
                api->stream_synchronize(device, s)))
        ses_conf_add(a->r, "graph", "abandon a capture", SES_CONF_PASS, "%s", "");
    api->stream_destroy(device, s);
}

/* ---- options as an argument (ABI 1.5) ------------------------------------------------------ */

/* Whether the table has ABI 1.5's open_device_with_options (negotiated minor, size, set). */
static int has_options_entry(const abi_t *a) {
    return a->minor >= 5 &&
           a->api->struct_size >=
               offsetof(ses_drv_api_t, open_device_with_options) + sizeof(void *) &&
           a->api->open_device_with_options;
}

/*
 * Opens device @p i as libsession would: through open_device_with_options with the run's
 * options when the driver has it (DRV-87), else open_device. With @p extra_key set the options
 * also carry that key (the check of an unknown option).
 */
static int32_t open_like_the_host(abi_t *a, uint32_t i, const char *extra_key,
                                  ses_drv_device_t **out_device) {
    ses_conf_options_arg_t o;
    int32_t st;

    if (!has_options_entry(a))
        return a->api->open_device(a->driver, i, out_device);
    if (ses_conf_options_make(&o, &a->ctx, ses_driver_name(a->o->driver), extra_key, "1") != 0)
        st = SES_DRV_OUT_OF_MEMORY;
    else
        st = a->api->open_device_with_options(a->driver, i, &o.pub, out_device);
    ses_conf_options_free(&o);
    return st;
}

/* A key of the driver's own name that no driver reads should be refused, with a message. */
static void check_unknown_option(abi_t *a, uint32_t i) {
    char key[160];
    ses_drv_device_t *device = NULL;

    if (!has_options_entry(a))
        return;
    snprintf(key, sizeof key, "driver.%s.no_such_option_of_session_driver_test",
             ses_driver_name(a->o->driver));
    ses_conf_host_reset();
    int32_t st = open_like_the_host(a, i, key, &device);
    if (st == SES_DRV_OK) {
        a->api->close_device(device);
        ses_conf_add(a->r, "device", "open_device_with_options refuses an unknown option",
                     SES_CONF_SKIP, "it accepted %s; DRV-87 recommends refusing it", key);
        return;
    }
    expect(a, "device", "open_device_with_options refuses an unknown option", st,
           SES_DRV_INVALID_ARGUMENT);
}

/* ---- the run ----------------------------------------------------------------------------- */

void ses_conf_run_abi(const ses_conf_options_t *o, ses_conf_report_t *r, char ***out_kernels,
                      size_t *out_n_kernels) {
    abi_t a;

    *out_kernels = NULL;
    *out_n_kernels = 0;
    memset(&a, 0, sizeof a);
    a.o = o;
    a.r = r;
    a.ctx.driver = o->driver;
    a.ctx.options = o->driver_options;
    a.ctx.n_options = o->n_driver_options;
    a.ctx.log_level = getenv("SESSION_LOADER_DEBUG") &&
                              !strcmp(getenv("SESSION_LOADER_DEBUG"), "debug")
                          ? SES_DRV_LOG_DEBUG
                          : SES_DRV_LOG_ERROR;

    if (!load_library(&a) || !check_negotiation(&a) || !check_table(&a) ||
        !check_open_and_enumerate(&a))
        goto done;

    for (uint32_t i = 0; i < a.n_devices; i++) {
        ses_drv_device_t *device = NULL;
        char name[96];

        snprintf(name, sizeof name, "open_device %s:%" PRIu32, ses_driver_name(o->driver), i);
        ses_conf_host_reset();
        if (!expect(&a, "device", name, open_like_the_host(&a, i, NULL, &device), SES_DRV_OK))
            continue;
        check_unknown_option(&a, i);
        check_kernel_table(&a, device, i, out_kernels, out_n_kernels);
        check_alloc(&a, device, &a.descs[i]);
        check_copies(&a, device, &a.descs[i]);
        check_map_and_import(&a, device, &a.descs[i]);
        check_entries_without_caps(&a, device, &a.descs[i]);
        check_native(&a, device, &a.descs[i]);
        check_streams(&a, device, &a.descs[i]);
        check_graphs(&a, device, &a.descs[i]);
        a.api->close_device(device);
    }
    if (o->device >= a.n_devices)
        ses_conf_add(r, "device", "the device to compare kernels on", SES_CONF_FAIL,
                     "device %" PRIu32 " does not exist; the driver has %" PRIu32, o->device,
                     a.n_devices);

done:
    if (a.driver)
        a.api->close(a.driver);
    free(a.descs);
    /* The library stays loaded: the sessions of the kernel checks use it too, and a driver
     * that is not unloadable must never be closed. */
}

void ses_conf_free_strings(char **strings, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(strings[i]);
    free(strings);
}
