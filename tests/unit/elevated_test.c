/*
 * The registry in an elevated process (README "Security model"): a setuid-root copy of
 * registry_probe, run as the unprivileged user nobody (setpriv), ignores SESSION_DRIVER_FILES
 * and SESSION_ADD_DRIVER_FILES and skips the user's manifest folder, saying so in notes; the
 * same program run normally finds the drivers those name. Needs root (to make a setuid file);
 * skipped otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/run_util.h"

static void write_manifest(const char *folder, const char *name) {
    char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.json", folder, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"file_format_version\": \"1.0.0\", \"name\": \"%s\", \"library_path\": "
               "\"ses_%s.so\", \"abi_major\": 1}\n", name, name);
    fclose(f);
}

static void make_folder(const char *path) {
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static void an_elevated_process_ignores_user_paths(void **state) {
    char root[] = "/tmp/ses-elevated-XXXXXX", probe[600], env_folder[600], add_folder[600];
    char home[600], user_folder[700], command[4096];
    run_result_t normal, elevated;

    (void)state;
    if (geteuid() != 0)
        skip(); /* only root can make a setuid-root file */
    assert_non_null(mkdtemp(root));
    assert_int_equal(chmod(root, 0755), 0);
    snprintf(probe, sizeof probe, "%s/registry_probe", root);
    snprintf(command, sizeof command, "cp '%s' '%s' && chown root:root '%s' && chmod 04755 '%s'",
             REGISTRY_PROBE, probe, probe, probe);
    assert_int_equal(system(command), 0);
    snprintf(env_folder, sizeof env_folder, "%s/env", root);
    snprintf(add_folder, sizeof add_folder, "%s/add", root);
    snprintf(home, sizeof home, "%s/home", root);
    make_folder(env_folder);
    make_folder(add_folder);
    make_folder(home);
    snprintf(user_folder, sizeof user_folder, "%s/.config", home);
    make_folder(user_folder);
    snprintf(user_folder, sizeof user_folder, "%s/.config/session", home);
    make_folder(user_folder);
    snprintf(user_folder, sizeof user_folder, "%s/.config/session/drivers.d", home);
    make_folder(user_folder);
    write_manifest(env_folder, "fromenv");
    write_manifest(add_folder, "fromadd");
    write_manifest(user_folder, "fromhome");

    /* Not elevated (root running the program): the variables count. */
    snprintf(command, sizeof command,
             "env -u XDG_CONFIG_HOME SESSION_DRIVER_FILES='%s' SESSION_ADD_DRIVER_FILES='%s' "
             "HOME='%s' ASAN_OPTIONS=detect_leaks=0 '%s' 2>&1",
             env_folder, add_folder, home, probe);
    normal = run_command(command);
    assert_int_equal(normal.exit_code, 0);
    assert_non_null(strstr(normal.output, "driver: fromenv"));
    assert_non_null(strstr(normal.output, "driver: fromadd"));
    /* And without SESSION_DRIVER_FILES, the user's folder. */
    free(normal.output);
    snprintf(command, sizeof command,
             "env -u XDG_CONFIG_HOME -u SESSION_DRIVER_FILES -u SESSION_ADD_DRIVER_FILES "
             "HOME='%s' ASAN_OPTIONS=detect_leaks=0 '%s' 2>&1",
             home, probe);
    normal = run_command(command);
    assert_int_equal(normal.exit_code, 0);
    if (!strstr(normal.output, "driver: fromhome"))
        fail_msg("the user folder was not searched:\n%s", normal.output);

    /* Elevated: the same environment, run as nobody through the setuid bit. */
    snprintf(command, sizeof command,
             "env -u XDG_CONFIG_HOME SESSION_DRIVER_FILES='%s' SESSION_ADD_DRIVER_FILES='%s' "
             "HOME='%s' setpriv --reuid=65534 --regid=65534 --clear-groups '%s' 2>&1",
             env_folder, add_folder, home, probe);
    elevated = run_command(command);
    if (elevated.exit_code != 0)
        fail_msg("elevated probe: exit %d:\n%s", elevated.exit_code, elevated.output);
    assert_null(strstr(elevated.output, "driver: fromenv"));
    assert_null(strstr(elevated.output, "driver: fromadd"));
    assert_null(strstr(elevated.output, "driver: fromhome"));
    assert_non_null(strstr(elevated.output, "SESSION_DRIVER_FILES ignored"));
    assert_non_null(strstr(elevated.output, "SESSION_ADD_DRIVER_FILES ignored"));
    assert_non_null(strstr(elevated.output, "user manifest folder skipped"));
    assert_non_null(strstr(elevated.output, "origin: default"));
    free(normal.output);
    free(elevated.output);
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    assert_int_equal(system(command), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_elevated_process_ignores_user_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
