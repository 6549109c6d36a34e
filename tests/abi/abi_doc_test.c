/*
 * Checks that sdk/DRIVER_ABI.md, the written contract for driver vendors, names everything the
 * header sdk/include/session/driver.h declares, so the two cannot drift apart silently.
 *
 * Both files are read at run time (meson passes their absolute paths as ABI_DOC_HEADER and
 * ABI_DOC_MARKDOWN). A small scanner reads the header with its comments removed:
 *   - every `typedef struct <tag> { ... } <name>;` gives a struct name (opaque
 *     `typedef struct <tag> <name>;` handles are not structs and are skipped);
 *   - every field of the form `<type> (*<field>)(...)` inside such a struct gives a function
 *     pointer, named `<name>.<field>`, e.g. `ses_drv_api_t.alloc`;
 *   - every `#define SES_DRV_<...>` gives a constant name.
 *
 * The rule for a mention: the document must contain the name exactly as above, struct names and
 * constants as themselves and function pointers always qualified as `<struct>_t.<field>`
 * (backticks optional), with no identifier character directly before or after it. So
 * `ses_drv_api_t.close_device` does not count as a mention of `ses_drv_api_t.close`, and
 * `SES_DRV_DTYPE_I16` does not count for `SES_DRV_DTYPE_I1`. Each check lists every missing name
 * at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef ABI_DOC_HEADER
#error "ABI_DOC_HEADER must be the absolute path of sdk/include/session/driver.h"
#endif
#ifndef ABI_DOC_MARKDOWN
#error "ABI_DOC_MARKDOWN must be the absolute path of sdk/DRIVER_ABI.md"
#endif

/* -- small string lists ----------------------------------------------------------------------- */

typedef struct name_list {
    char **items;
    size_t count;
    size_t capacity;
} name_list_t;

static int list_contains(const name_list_t *list, const char *name) {
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i], name) == 0)
            return 1;
    return 0;
}

/* Appends a copy of @p length bytes of @p name unless the list has it already. */
static void list_add(name_list_t *list, const char *name, size_t length) {
    char *copy = malloc(length + 1);

    assert_non_null(copy);
    memcpy(copy, name, length);
    copy[length] = '\0';
    if (list_contains(list, copy)) {
        free(copy);
        return;
    }
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 32;
        char **items = realloc(list->items, capacity * sizeof *items);
        assert_non_null(items);
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = copy;
}

static void list_free(name_list_t *list) {
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

/* -- reading files ---------------------------------------------------------------------------- */

/* The whole file, NUL-terminated, or NULL (with the reason printed). */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t size = 0, got;
    char chunk[4096];

    if (!f) {
        print_error("cannot open %s\n", path);
        return NULL;
    }
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *grown = realloc(text, size + got + 1);
        if (!grown) {
            free(text);
            fclose(f);
            return NULL;
        }
        text = grown;
        memcpy(text + size, chunk, got);
        size += got;
    }
    fclose(f);
    if (!text)
        text = calloc(1, 1);
    else
        text[size] = '\0';
    return text;
}

/* -- the header scanner ----------------------------------------------------------------------- */

static int is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(char c) {
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
        p++;
    return p;
}

/* Length of the identifier at @p p, 0 if there is none. */
static size_t ident_length(const char *p) {
    size_t n = 0;

    if (!is_ident_start(*p))
        return 0;
    while (is_ident_char(p[n]))
        n++;
    return n;
}

/* Whether the word @p word stands at @p p (not as part of a longer identifier). */
static int word_at(const char *p, const char *word) {
    size_t n = strlen(word);
    return strncmp(p, word, n) == 0 && !is_ident_char(p[n]);
}

/*
 * A copy of C source @p text with every comment replaced by spaces (newlines kept, so lines stay
 * lines). String and character literals are copied as they are, so a "/" "*" inside one does not
 * start a comment.
 */
static char *strip_comments(const char *text) {
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    size_t i = 0;

    assert_non_null(out);
    while (i < n) {
        if (text[i] == '/' && text[i + 1] == '*') {
            out[i] = out[i + 1] = ' ';
            i += 2;
            while (i < n && !(text[i] == '*' && text[i + 1] == '/')) {
                out[i] = text[i] == '\n' ? '\n' : ' ';
                i++;
            }
            if (i < n) {
                out[i] = out[i + 1] = ' ';
                i += 2;
            }
        } else if (text[i] == '/' && text[i + 1] == '/') {
            while (i < n && text[i] != '\n')
                out[i++] = ' ';
        } else if (text[i] == '"' || text[i] == '\'') {
            char quote = text[i];
            out[i] = text[i];
            i++;
            while (i < n && text[i] != quote && text[i] != '\n') {
                if (text[i] == '\\' && i + 1 < n) {
                    out[i] = text[i];
                    i++;
                }
                out[i] = text[i];
                i++;
            }
            if (i < n) {
                out[i] = text[i];
                i++;
            }
        } else {
            out[i] = text[i];
            i++;
        }
    }
    out[n] = '\0';
    return out;
}

typedef struct scan {
    name_list_t structs;   /* "ses_drv_api_t" */
    name_list_t functions; /* "ses_drv_api_t.alloc" */
    name_list_t constants; /* "SES_DRV_OK" */
} scan_t;

static void scan_free(scan_t *s) {
    list_free(&s->structs);
    list_free(&s->functions);
    list_free(&s->constants);
}

/* Every `#define SES_DRV_*` at the start of a line (spaces allowed around the '#'). */
static void scan_constants(const char *code, scan_t *out) {
    const char *line = code;

    while (*line) {
        const char *p = line;
        const char *end = strchr(line, '\n');

        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (word_at(p, "define")) {
                size_t n;
                p += strlen("define");
                while (*p == ' ' || *p == '\t')
                    p++;
                n = ident_length(p);
                if (n > strlen("SES_DRV_") && strncmp(p, "SES_DRV_", strlen("SES_DRV_")) == 0)
                    list_add(&out->constants, p, n);
            }
        }
        if (!end)
            break;
        line = end + 1;
    }
}

/*
 * Every `(*<field>)(` in [body, body_end) outside parentheses: a function-pointer field of struct
 * @p name. (A function-pointer parameter of such a field is inside its parentheses.)
 */
static void scan_function_pointers(const char *body, const char *body_end, const char *name,
                                   size_t name_length, scan_t *out) {
    int depth = 0;

    for (const char *p = body; p < body_end; p++) {
        const char *q;
        size_t n;
        char qualified[256];

        if (*p == ')' && depth > 0)
            depth--;
        if (*p != '(' || depth++ > 0)
            continue;
        q = skip_space(p + 1);
        if (*q != '*')
            continue;
        q = skip_space(q + 1);
        n = ident_length(q);
        if (!n || q + n >= body_end)
            continue;
        {
            const char *after = skip_space(q + n);
            if (*after != ')')
                continue;
            after = skip_space(after + 1);
            if (*after != '(')
                continue;
        }
        assert_true(name_length + 1 + n < sizeof qualified);
        memcpy(qualified, name, name_length);
        qualified[name_length] = '.';
        memcpy(qualified + name_length + 1, q, n);
        list_add(&out->functions, qualified, name_length + 1 + n);
    }
}

/* Every `typedef struct [tag] { ... } name;` and the function pointers inside it. */
static void scan_structs(const char *code, scan_t *out) {
    for (const char *p = code; (p = strstr(p, "typedef")) != NULL; p++) {
        const char *q, *body, *close;
        size_t n;
        int depth = 0;

        if ((p > code && is_ident_char(p[-1])) || !word_at(p, "typedef"))
            continue;
        q = skip_space(p + strlen("typedef"));
        if (!word_at(q, "struct"))
            continue;
        q = skip_space(q + strlen("struct"));
        q = skip_space(q + ident_length(q)); /* the tag, if any */
        if (*q != '{')
            continue; /* an opaque handle: typedef struct tag name; */
        body = q + 1;
        for (close = q; *close; close++) {
            if (*close == '{')
                depth++;
            else if (*close == '}' && --depth == 0)
                break;
        }
        if (!*close)
            return; /* unbalanced: nothing more to find */
        q = skip_space(close + 1);
        n = ident_length(q);
        if (!n || *skip_space(q + n) != ';')
            continue;
        list_add(&out->structs, q, n);
        scan_function_pointers(body, close, q, n, out);
        p = close;
    }
}

static void scan_header(const char *header_text, scan_t *out) {
    char *code = strip_comments(header_text);

    memset(out, 0, sizeof *out);
    scan_constants(code, out);
    scan_structs(code, out);
    free(code);
}

/* -- mentions in the document ----------------------------------------------------------------- */

/* Whether @p doc contains @p name with no identifier character right before or after it. */
static int mentions(const char *doc, const char *name) {
    size_t n = strlen(name);

    for (const char *p = doc; (p = strstr(p, name)) != NULL; p++) {
        if ((p == doc || !is_ident_char(p[-1])) && !is_ident_char(p[n]))
            return 1;
    }
    return 0;
}

/* Fails listing every name of @p names that @p doc does not mention. */
static void check_all_mentioned(const char *doc, const name_list_t *names, const char *what) {
    size_t missing = 0, used = 0, size = 256;
    char *report = malloc(size);

    assert_non_null(report);
    report[0] = '\0';
    for (size_t i = 0; i < names->count; i++) {
        size_t need;
        if (mentions(doc, names->items[i]))
            continue;
        missing++;
        need = strlen(names->items[i]) + 8;
        if (used + need >= size) {
            char *grown;
            size = (used + need) * 2;
            grown = realloc(report, size);
            assert_non_null(grown);
            report = grown;
        }
        used += (size_t)snprintf(report + used, size - used, "\n    %s", names->items[i]);
    }
    if (missing) {
        print_error("%s: %zu of the %zu %s of %s are not mentioned:%s\n", ABI_DOC_MARKDOWN,
                    missing, names->count, what, ABI_DOC_HEADER, report);
        free(report);
        fail_msg("add the %zu missing %s to DRIVER_ABI.md (listed above)", missing, what);
    }
    free(report);
}

/* -- fixture ---------------------------------------------------------------------------------- */

typedef struct fixture {
    char *header;
    char *doc;
    scan_t scan;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    f->header = read_text(ABI_DOC_HEADER);
    f->doc = read_text(ABI_DOC_MARKDOWN);
    if (!f->header || !f->doc) {
        free(f->header);
        free(f->doc);
        free(f);
        return -1;
    }
    scan_header(f->header, &f->scan);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;

    if (f) {
        scan_free(&f->scan);
        free(f->header);
        free(f->doc);
        free(f);
    }
    return 0;
}

/* -- tests ------------------------------------------------------------------------------------ */

/* The scanner itself, on a sample that holds each trap it must step around. */
static void scanner_reads_structs_function_pointers_and_constants_and_skips_the_rest(void **state) {
    static const char sample[] =
        "#define SES_DRV_ONE 1\n"
        "  #  define SES_DRV_MACRO(x) (x)\n"
        "#define OTHER_CONSTANT 2\n"
        "#define SES_DRV_TEXT \"not /* a comment\"\n"
        "#define SES_DRV_AFTER_TEXT 3\n"
        "/* #define SES_DRV_IN_COMMENT 4 */\n"
        "// #define SES_DRV_IN_LINE_COMMENT 5\n"
        "typedef struct opaque opaque_t;\n"
        "typedef int32_t (*free_standing_fn)(int x);\n"
        "typedef struct sample {\n"
        "    uint32_t struct_size;\n"
        "    /* int (*in_comment)(void); */\n"
        "    int32_t (*first)(const struct other *o, int (*callback)(int));\n"
        "    void ( * spaced ) (void)\n"
        "#if defined(__GNUC__)\n"
        "        __attribute__((format(printf, 1, 2)))\n"
        "#endif\n"
        "        ;\n"
        "    const char *(name);\n"
        "} sample_t;\n"
        "typedef struct { int (*untagged)(void); } untagged_t;\n";
    scan_t s;

    (void)state;
    scan_header(sample, &s);

    assert_int_equal(s.constants.count, 4);
    assert_true(list_contains(&s.constants, "SES_DRV_ONE"));
    assert_true(list_contains(&s.constants, "SES_DRV_MACRO"));
    assert_true(list_contains(&s.constants, "SES_DRV_TEXT"));
    assert_true(list_contains(&s.constants, "SES_DRV_AFTER_TEXT"));

    assert_int_equal(s.structs.count, 2);
    assert_true(list_contains(&s.structs, "sample_t"));
    assert_true(list_contains(&s.structs, "untagged_t"));
    assert_false(list_contains(&s.structs, "opaque_t"));

    assert_true(list_contains(&s.functions, "sample_t.first"));
    assert_true(list_contains(&s.functions, "sample_t.spaced"));
    assert_true(list_contains(&s.functions, "untagged_t.untagged"));
    assert_int_equal(s.functions.count, 3);
    assert_false(list_contains(&s.functions, "sample_t.callback")); /* a parameter */
    assert_false(list_contains(&s.functions, "sample_t.in_comment"));
    assert_false(list_contains(&s.functions, "sample_t.name"));
    scan_free(&s);
}

/* A mention is the whole name: a longer identifier that starts with it does not count. */
static void a_mention_must_not_be_part_of_a_longer_identifier(void **state) {
    (void)state;
    assert_true(mentions("see `ses_drv_api_t.close`.", "ses_drv_api_t.close"));
    assert_true(mentions("ses_drv_api_t.close", "ses_drv_api_t.close"));
    assert_false(mentions("see `ses_drv_api_t.close_device`", "ses_drv_api_t.close"));
    assert_false(mentions("SES_DRV_DTYPE_I16", "SES_DRV_DTYPE_I1"));
    assert_false(mentions("XSES_DRV_OK", "SES_DRV_OK"));
    assert_false(mentions("", "SES_DRV_OK"));
}

/* Guards the checks below: an empty scan would pass them all without checking anything. */
static void scanner_finds_what_driver_h_declares(void **state) {
    const fixture_t *f = *state;
    const scan_t *s = &f->scan;

    print_message("driver.h: %zu structs, %zu function pointers, %zu SES_DRV_* constants\n",
                  s->structs.count, s->functions.count, s->constants.count);
    assert_true(s->structs.count >= 9);
    assert_true(s->functions.count >= 30);
    assert_true(s->constants.count >= 50);

    assert_true(list_contains(&s->structs, "ses_drv_api_t"));
    assert_true(list_contains(&s->structs, "ses_drv_negotiate_t"));
    assert_true(list_contains(&s->structs, "ses_drv_host_t"));
    assert_false(list_contains(&s->structs, "ses_drv_device_t")); /* an opaque handle */

    assert_true(list_contains(&s->functions, "ses_drv_api_t.alloc"));
    assert_true(list_contains(&s->functions, "ses_drv_api_t.event_synchronize"));
    assert_true(list_contains(&s->functions, "ses_drv_host_t.error")); /* carries an attribute */
    assert_true(list_contains(&s->functions, "ses_drv_node_t.attr"));
    assert_true(list_contains(&s->functions, "ses_drv_kernel_t.compute"));

    assert_true(list_contains(&s->constants, "SES_DRV_ABI_MAJOR"));
    assert_true(list_contains(&s->constants, "SES_DRV_OK"));
    assert_true(list_contains(&s->constants, "SES_DRV_CAP_CONCURRENT"));
    assert_true(list_contains(&s->constants, "SES_DRV_SIZEOF_1_0"));
}

static void every_struct_of_driver_h_is_named_in_driver_abi_md(void **state) {
    const fixture_t *f = *state;
    check_all_mentioned(f->doc, &f->scan.structs, "structs");
}

static void every_function_pointer_is_named_as_struct_dot_field_in_driver_abi_md(void **state) {
    const fixture_t *f = *state;
    check_all_mentioned(f->doc, &f->scan.functions, "function pointers (as <struct>_t.<field>)");
}

static void every_ses_drv_constant_is_named_in_driver_abi_md(void **state) {
    const fixture_t *f = *state;
    check_all_mentioned(f->doc, &f->scan.constants, "SES_DRV_* constants");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scanner_reads_structs_function_pointers_and_constants_and_skips_the_rest),
        cmocka_unit_test(a_mention_must_not_be_part_of_a_longer_identifier),
        cmocka_unit_test(scanner_finds_what_driver_h_declares),
        cmocka_unit_test(every_struct_of_driver_h_is_named_in_driver_abi_md),
        cmocka_unit_test(every_function_pointer_is_named_as_struct_dot_field_in_driver_abi_md),
        cmocka_unit_test(every_ses_drv_constant_is_named_in_driver_abi_md),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
