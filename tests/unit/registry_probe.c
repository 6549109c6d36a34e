/*
 * Prints what a registry made from the environment finds: its search path and origin, each
 * driver's name and manifest, and each note. tests/unit/elevated_test.c runs a setuid copy.
 */
#include <stdio.h>

#include <session/registry.h>

int main(void) {
    ses_registry_t *reg = NULL;

    if (ses_registry_create(&reg) != SES_OK) {
        printf("error: %s\n", ses_last_error());
        return 1;
    }
    printf("search: %s\norigin: %s\n", ses_registry_search_path(reg),
           ses_registry_search_origin(reg));
    for (size_t i = 0; i < ses_registry_driver_count(reg); i++)
        printf("driver: %s %s\n", ses_driver_name(ses_registry_driver(reg, i)),
               ses_driver_manifest_path(ses_registry_driver(reg, i)));
    for (size_t i = 0; i < ses_registry_note_count(reg); i++)
        printf("note: %s\n", ses_registry_note(reg, i));
    ses_registry_destroy(reg);
    return 0;
}
