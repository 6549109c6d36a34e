/*
 * Installing: `meson install` into a fresh prefix, then the installed session-info must find the
 * installed CPU driver through the installed manifest with no SESSION_* variable set; the
 * installed session-driver.pc must be all a driver needs to build; `--tags driver-cpu` must
 * install the CPU driver alone; and the installed SDK template must build out of tree against
 * the installed prefix alone, load in the installed session-info, and run Add in a real session
 * next to the CPU driver. When this build has the Python package, the installed copy has it too,
 * in the prefix's Python folder, and the system's python3 imports it from there and evaluates a
 * graph on the installed CPU driver.
 *
 * It configures and builds a second copy of the project (without tests, and without the
 * optional drivers: it is about the core, the CPU driver and the SDK), so it is the slowest
 * test of the suite.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
    char prefix[128];
    char build[128];
} fixture_t;

/* Runs a shell command; on failure prints it and its output and fails the test. */
static void must_run(const char *command) {
    run_result_t r = run_command(command);

    if (r.exit_code != 0)
        fail_msg("command failed (exit %d): %s\n%s", r.exit_code, command, r.output);
    free(r.output);
}

static int setup(void **state) {
    static fixture_t f;
    char command[4 * PATH_MAX];

    snprintf(f.dir, sizeof f.dir, "/tmp/ses-install-XXXXXX");
    if (!mkdtemp(f.dir))
        return -1;
    snprintf(f.prefix, sizeof f.prefix, "%s/prefix", f.dir);
    snprintf(f.build, sizeof f.build, "%s/build", f.dir);
    snprintf(command, sizeof command,
             "'%s' setup '%s' '%s' --prefix='%s' --libdir=lib -Dtests=false -Dcuda=disabled "
             "-Dopencl=disabled -Dfpga=disabled -Dmpi=disabled -Donnx=disabled "
             "-Dbuildtype=debugoptimized -Dpython=%s && '%s' install -C '%s' --quiet",
             MESON, f.build, SOURCE_ROOT, f.prefix, PYTHON3[0] ? "enabled" : "disabled", MESON,
             f.build);
    must_run(command);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    char command[PATH_MAX + 16];

    snprintf(command, sizeof command, "rm -rf '%s'", f->dir);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    return 0;
}

/* The installed tool, its library and its manifest find each other with a bare environment. */
static void the_installed_session_info_finds_the_installed_cpu_driver(void **state) {
    fixture_t *f = *state;
    char command[2 * PATH_MAX], expected[PATH_MAX + 64];
    run_result_t r;

    snprintf(command, sizeof command, "env -i PATH=/usr/bin:/bin HOME='%s' '%s/bin/session-info'",
             f->dir, f->prefix);
    r = run_command(command);
    if (r.exit_code != 0 || !strstr(r.output, "cpu:0"))
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    snprintf(expected, sizeof expected, "manifest: %s/share/session/drivers.d/cpu.json", f->prefix);
    assert_non_null(strstr(r.output, expected));
    snprintf(expected, sizeof expected, "library:  %s/lib/session/drivers/ses_cpu.so", f->prefix);
    assert_non_null(strstr(r.output, expected));
    /* With a bare environment, every folder searched is a default one. */
    assert_non_null(strstr(r.output, "\n  default "));
    assert_null(strstr(r.output, "SESSION_DRIVER_FILES"));
    free(r.output);
}

/* The installed Python package, with the installed libsession and CPU driver: a bare environment
 * but for PYTHONPATH at the prefix's Python folder (where `meson install` put session/). */
static void the_installed_python_package_evals_a_graph(void **state) {
    fixture_t *f = *state;
    char command[4 * PATH_MAX], expected[PATH_MAX + 64];
    run_result_t r;

    if (!PYTHON3[0])
        skip(); /* this build has no Python package (python3-dev or NumPy missing) */
    /* Exactly one session package in the prefix; its folder is the one PYTHONPATH names. */
    snprintf(
        command, sizeof command,
        "init=$(find '%s' -path '*/session/__init__.py') && test $(echo \"$init\" | wc -l) = 1 "
        "&& env -i PATH=/usr/bin:/bin HOME='%s' PYTHONPATH=\"$(dirname \"$(dirname "
        "\"$init\")\")\" PYTHONDONTWRITEBYTECODE=1 '%s' -c '"
        "import numpy as np, session as ses\n"
        "g = ses.Graph()\n"
        "a = g.placeholder(\"a\", np.float32, [None, 3])\n"
        "c = g.op(\"Mul\", [a, g.constant(\"b\", np.full(3, 2, np.float32))], name=\"c\")\n"
        "with ses.Session(g, devices=[\"cpu:0\"]) as s:\n"
        "    r = s.eval(c, {a: np.arange(6, dtype=np.float32).reshape(2, 3)})\n"
        "assert r.tolist() == [[0, 2, 4], [6, 8, 10]], r\n"
        "d = [x for x in ses.drivers() if x[\"name\"] == \"cpu\"][0]\n"
        "print(\"package:\", ses.__file__)\n"
        "print(\"manifest:\", d[\"manifest\"])\n"
        "print(\"result:\", r.tolist())'",
        f->prefix, f->dir, PYTHON3);
    r = run_command(command);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    /* The package and the driver are the installed ones, and nothing was warned about. */
    snprintf(expected, sizeof expected, "package: %s/", f->prefix);
    if (!strstr(r.output, expected))
        fail_msg("the package is not the installed one:\n%s", r.output);
    snprintf(expected, sizeof expected, "manifest: %s/share/session/drivers.d/cpu.json", f->prefix);
    if (!strstr(r.output, expected))
        fail_msg("the CPU driver is not the installed one:\n%s", r.output);
    assert_non_null(strstr(r.output, "result: [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]"));
    if (strstr(r.output, "warn"))
        fail_msg("a warning:\n%s", r.output);
    free(r.output);
}

static void session_driver_pc_gives_the_include_path_and_no_library(void **state) {
    fixture_t *f = *state;
    char command[2 * PATH_MAX], expected[PATH_MAX + 8];
    run_result_t r;

    snprintf(command, sizeof command,
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags session-driver", f->prefix);
    r = run_command(command);
    assert_int_equal(r.exit_code, 0);
    snprintf(expected, sizeof expected, "-I%s/include", f->prefix);
    assert_non_null(strstr(r.output, expected));
    free(r.output);

    snprintf(command, sizeof command,
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --libs session-driver", f->prefix);
    r = run_command(command);
    assert_int_equal(r.exit_code, 0);
    assert_null(strstr(r.output, "-l"));
    free(r.output);
}

/* A driver built from the installed header alone, outside the tree, loads in the installed
 * libsession. */
static void a_driver_builds_from_the_installed_header_alone_and_loads(void **state) {
    fixture_t *f = *state;
    char command[4 * PATH_MAX];
    run_result_t r;

    snprintf(command, sizeof command,
             "cd '%s' && cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden "
             "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags session-driver) "
             "-DFAKE_MODE_GOOD -DFAKE_NAME='\"outside\"' -DFAKE_FEATURES='\"\"' "
             "'%s/tests/fakes/fake_driver.c' -o ses_outside.so && "
             "printf '{\"file_format_version\": \"1.0.0\", \"name\": \"outside\", "
             "\"library_path\": \"ses_outside.so\", \"abi_major\": 1}' > outside.json",
             f->dir, f->prefix, SOURCE_ROOT);
    /* The include path must not reach into the source tree: only the installed header. */
    assert_null(strstr(SOURCE_ROOT "/", f->prefix));
    must_run(command);
    snprintf(command, sizeof command,
             "env -i PATH=/usr/bin:/bin HOME='%s' SESSION_ADD_DRIVER_FILES='%s/outside.json' "
             "'%s/bin/session-info'",
             f->dir, f->dir, f->prefix);
    r = run_command(command);
    if (r.exit_code != 0 || !strstr(r.output, "outside:0") || !strstr(r.output, "cpu:0"))
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    free(r.output);
}

static void the_driver_cpu_tag_installs_the_cpu_driver_alone(void **state) {
    fixture_t *f = *state;
    char command[4 * PATH_MAX], expected[PATH_MAX * 2];
    run_result_t r;

    snprintf(command, sizeof command, "'%s' install -C '%s' --quiet --tags driver-cpu --destdir '%s/dest'",
             MESON, f->build, f->dir);
    must_run(command);
    snprintf(command, sizeof command, "cd '%s/dest' && find . -type f | sort", f->dir);
    r = run_command(command);
    assert_int_equal(r.exit_code, 0);
    snprintf(expected, sizeof expected,
             ".%s/lib/session/drivers/ses_cpu.so\n.%s/share/session/drivers.d/cpu.json\n",
             f->prefix, f->prefix);
    assert_string_equal(r.output, expected);
    free(r.output);
}

/*
 * What a vendor does with the SDK, as CI: copy the installed template, build it against the
 * installed session-driver.pc alone (pkg-config sees nothing else), show its device in the
 * installed session-info from the build folder, run a session that mixes it with the CPU, and
 * install it where the .pc says. Installing it into the prefix is last, since later steps
 * would see it; keep this test last in main().
 */
static void the_installed_template_builds_out_of_tree_and_runs_add_next_to_the_cpu(void **state) {
    fixture_t *f = *state;
    char src[128], build[128], manifest[160], line[1024];
    char command[4 * PATH_MAX], expected[2 * PATH_MAX];
    run_result_t r;

    snprintf(src, sizeof src, "%s/acme-src", f->dir);
    snprintf(build, sizeof build, "%s/acme-build", f->dir);
    snprintf(manifest, sizeof manifest, "%s/acme.json", build);

    /* 1. The installed copy of sdk/template, built out of tree with -Werror. PKG_CONFIG_LIBDIR
     *    replaces pkg-config's default folders, so nothing outside the prefix can help. */
    snprintf(command, sizeof command,
             "cp -R '%s/share/session/sdk/template' '%s' && cd '%s' && "
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' PKG_CONFIG_LIBDIR='%s/lib/pkgconfig' "
             "'%s' setup --werror '%s' '%s' && '%s' -C '%s'",
             f->prefix, src, f->dir, f->prefix, f->prefix, MESON, build, src, NINJA, build);
    must_run(command);

    /* Only the entry point is exported (hidden visibility). */
    snprintf(command, sizeof command, "nm -D --defined-only '%s/ses_acme.so' | awk '{print $3}'",
             build);
    r = run_command(command);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.output, "ses_drv_negotiate\n");
    free(r.output);

    /* 2. The installed session-info finds it through the build folder's manifest. */
    snprintf(command, sizeof command,
             "env -i PATH=/usr/bin:/bin HOME='%s' SESSION_ADD_DRIVER_FILES='%s' "
             "'%s/bin/session-info'",
             f->dir, manifest, f->prefix);
    r = run_command(command);
    if (r.exit_code != 0 || !strstr(r.output, "acme:0") || !strstr(r.output, "cpu:0") ||
        !line_containing(r.output, "  acme ", line, sizeof line) || !strstr(line, "ready"))
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    free(r.output);

    /* 3. A session on acme:0: Add runs there; MatMul, which acme lacks, falls back to cpu:0. */
    snprintf(command, sizeof command,
             "SESSION_DRIVER_FILES='%s' SESSION_ADD_DRIVER_FILES='%s' '%s' acme:0", CPU_MANIFEST,
             manifest, VENDOR_DEVICE);
    r = run_command(command);
    if (r.exit_code != 0 || !line_containing(r.output, "placed: Add", line, sizeof line) ||
        !strstr(line, "acme:0"))
        fail_msg("Add should run on acme:0; exit %d:\n%s", r.exit_code, r.output);
    if (!line_containing(r.output, "placed: MatMul", line, sizeof line) || !strstr(line, "cpu:0"))
        fail_msg("MatMul should fall back to cpu:0:\n%s", r.output);
    free(r.output);

    /* 4. The installed session-driver-test proves the template and the CPU driver: every ABI
     *    check passes and every kernel matches the CPU driver's results. */
    {
        static const char *const drivers[] = {"acme", "cpu"};
        for (size_t i = 0; i < 2; i++) {
            snprintf(command, sizeof command,
                     "env -i PATH=/usr/bin:/bin HOME='%s' SESSION_ADD_DRIVER_FILES='%s' "
                     "'%s/bin/session-driver-test' %s 2>&1",
                     f->dir, manifest, f->prefix, drivers[i]);
            r = run_command(command);
            if (r.exit_code != 0 || !strstr(r.output, "PASSED: 0 of ") ||
                !line_containing(r.output, "kernels: ", line, sizeof line) ||
                !strstr(line, " 0 failed"))
                fail_msg("session-driver-test %s: exit %d:\n%s", drivers[i], r.exit_code,
                         r.output);
            if (i == 0 && (!strstr(r.output, "PASS  kernel  Add f32,f32->f32") ||
                           !strstr(r.output, "PASS  kernel  Relu f32->f32")))
                fail_msg("acme's Add and Relu should be compared and pass:\n%s", r.output);
            free(r.output);
        }
    }

    /* 5. `meson install` puts the module and a manifest with its absolute path where the
     *    installed .pc says, and the installed session-info then finds it with no variable. */
    snprintf(command, sizeof command, "'%s' install -C '%s' --quiet", MESON, build);
    must_run(command);
    snprintf(command, sizeof command, "env -i PATH=/usr/bin:/bin HOME='%s' '%s/bin/session-info'",
             f->dir, f->prefix);
    r = run_command(command);
    if (r.exit_code != 0 || !strstr(r.output, "acme:0"))
        fail_msg("exit %d:\n%s", r.exit_code, r.output);
    snprintf(expected, sizeof expected, "manifest: %s/share/session/drivers.d/acme.json",
             f->prefix);
    assert_non_null(strstr(r.output, expected));
    snprintf(expected, sizeof expected, "library:  %s/lib/session/drivers/ses_acme.so", f->prefix);
    assert_non_null(strstr(r.output, expected));
    free(r.output);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_installed_session_info_finds_the_installed_cpu_driver),
        cmocka_unit_test(the_installed_python_package_evals_a_graph),
        cmocka_unit_test(session_driver_pc_gives_the_include_path_and_no_library),
        cmocka_unit_test(a_driver_builds_from_the_installed_header_alone_and_loads),
        cmocka_unit_test(the_driver_cpu_tag_installs_the_cpu_driver_alone),
        /* Last: it installs a driver into the shared prefix. */
        cmocka_unit_test(the_installed_template_builds_out_of_tree_and_runs_add_next_to_the_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
