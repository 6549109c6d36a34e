/* Scopes: lookups up the tree, shadowing, removal, order, the destroy rule and threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <session/session.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define NOT_NULL_TENSOR ((ses_tensor_t *)(uintptr_t)0x1)
#define NOT_NULL_SCOPE ((ses_scope_t *)(uintptr_t)0x1)

static void assert_error_mentions(const char *needle) {
    if (!strstr(ses_last_error(), needle))
        fail_msg("expected \"%s\" in the message \"%s\"", needle, ses_last_error());
}

/* A new i32 scalar holding @p value, owned by the caller. */
static ses_tensor_t *scalar(int32_t value) {
    ses_tensor_t *t = NULL;

    assert_int_equal(ses_tensor_create_from(SES_I32, 0, NULL, &value, sizeof value, &t), SES_OK);
    return t;
}

static int32_t value_of(const ses_tensor_t *t) {
    return *(const int32_t *)ses_tensor_data((ses_tensor_t *)t);
}

/* Finds @p name from @p scope and returns its value; fails the test when it is missing. */
static int32_t find_value(const ses_scope_t *scope, const char *name) {
    ses_tensor_t *t = NULL;
    int32_t v;

    if (ses_scope_find(scope, name, &t) != SES_OK)
        fail_msg("find \"%s\": %s", name, ses_last_error());
    v = value_of(t);
    ses_tensor_release(t);
    return v;
}

/* Sets @p name to a new scalar and drops the test's own reference. */
static void set_value(ses_scope_t *scope, const char *name, int32_t value) {
    ses_tensor_t *t = scalar(value);

    assert_int_equal(ses_scope_set(scope, name, t), SES_OK);
    ses_tensor_release(t);
}

/* Deleter that counts: shows when the scope lets go of a wrapped tensor. */
static void count_deleter(void *data, void *user) {
    (void)data;
    atomic_fetch_add((_Atomic int *)user, 1);
}

static ses_tensor_t *counted_scalar(int32_t *storage, _Atomic int *deletes) {
    ses_tensor_t *t = NULL;

    assert_int_equal(ses_tensor_wrap(SES_I32, 0, NULL, storage, count_deleter, deletes, &t),
                     SES_OK);
    return t;
}

/* ---- basics ---- */

static void a_new_root_is_empty_and_has_no_parent(void **state) {
    ses_scope_t *root = NOT_NULL_SCOPE;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_non_null(root);
    assert_null(ses_scope_parent(root));
    assert_int_equal(ses_scope_count(root), 0);
    assert_null(ses_scope_name_at(root, 0));
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void set_then_find_returns_a_new_reference(void **state) {
    ses_scope_t *root = NULL;
    int32_t storage = 42;
    _Atomic int deletes = 0;
    ses_tensor_t *t = NULL, *found = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    t = counted_scalar(&storage, &deletes);
    assert_int_equal(ses_scope_set(root, "x", t), SES_OK);
    ses_tensor_release(t); /* the scope holds its own reference */
    assert_int_equal(atomic_load(&deletes), 0);

    assert_int_equal(ses_scope_find(root, "x", &found), SES_OK);
    assert_ptr_equal(found, t);
    assert_int_equal(value_of(found), 42);
    assert_true(ses_scope_has_local(root, "x"));

    /* The found reference outlives the scope. */
    assert_int_equal(ses_scope_destroy(root), SES_OK);
    assert_int_equal(atomic_load(&deletes), 0);
    ses_tensor_release(found);
    assert_int_equal(atomic_load(&deletes), 1);
}

static void names_are_copied(void **state) {
    ses_scope_t *root = NULL;
    char name[8] = "weight";

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    set_value(root, name, 5);
    strcpy(name, "other");
    assert_string_equal(ses_scope_name_at(root, 0), "weight");
    assert_int_equal(find_value(root, "weight"), 5);
    assert_false(ses_scope_has_local(root, "other"));
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void find_of_a_missing_name_fails_with_not_found_naming_it(void **state) {
    ses_scope_t *root = NULL, *child = NULL;
    ses_tensor_t *t = NOT_NULL_TENSOR;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &child), SES_OK);
    assert_int_equal(ses_scope_find(child, "missing_w", &t), SES_NOT_FOUND);
    assert_null(t);
    assert_error_mentions("ses_scope_find");
    assert_error_mentions("\"missing_w\"");
    assert_int_equal(ses_scope_destroy(child), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

/* ---- the tree ---- */

static void find_walks_up_to_the_nearest_ancestor_that_has_the_name(void **state) {
    ses_scope_t *root = NULL, *mid = NULL, *leaf = NULL;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &mid), SES_OK);
    assert_int_equal(ses_scope_create_child(mid, &leaf), SES_OK);
    assert_ptr_equal(ses_scope_parent(leaf), mid);
    assert_ptr_equal(ses_scope_parent(mid), root);

    set_value(root, "a", 1);
    set_value(root, "b", 2);
    set_value(mid, "b", 20);

    assert_int_equal(find_value(leaf, "a"), 1);
    assert_int_equal(find_value(leaf, "b"), 20);
    assert_int_equal(find_value(root, "b"), 2);
    assert_false(ses_scope_has_local(leaf, "a"));
    assert_int_equal(ses_scope_count(leaf), 0);

    assert_int_equal(ses_scope_destroy(leaf), SES_OK);
    assert_int_equal(ses_scope_destroy(mid), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void set_in_a_child_shadows_the_parent_without_touching_it(void **state) {
    ses_scope_t *root = NULL, *child = NULL;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &child), SES_OK);
    set_value(root, "x", 1);
    set_value(child, "x", 2);

    assert_int_equal(find_value(child, "x"), 2);
    assert_int_equal(find_value(root, "x"), 1);
    assert_int_equal(ses_scope_count(root), 1);
    assert_int_equal(ses_scope_count(child), 1);

    /* Removing the shadow uncovers the parent's entry again. */
    assert_int_equal(ses_scope_remove(child, "x"), SES_OK);
    assert_int_equal(find_value(child, "x"), 1);
    assert_int_equal(ses_scope_remove(child, "x"), SES_NOT_FOUND);
    assert_int_equal(find_value(root, "x"), 1);

    assert_int_equal(ses_scope_destroy(child), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void set_replaces_a_local_entry_in_place_and_releases_the_old_value(void **state) {
    ses_scope_t *root = NULL;
    int32_t first = 1, second = 2;
    _Atomic int deletes = 0;
    ses_tensor_t *t;
    const char *name_before;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    set_value(root, "a", 0);
    t = counted_scalar(&first, &deletes);
    assert_int_equal(ses_scope_set(root, "b", t), SES_OK);
    ses_tensor_release(t);
    set_value(root, "c", 0);
    name_before = ses_scope_name_at(root, 1);

    t = counted_scalar(&second, &deletes);
    assert_int_equal(ses_scope_set(root, "b", t), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&deletes), 1); /* the first value went with its entry */

    assert_int_equal(ses_scope_count(root), 3);
    assert_string_equal(ses_scope_name_at(root, 1), "b");
    assert_ptr_equal(ses_scope_name_at(root, 1), name_before);
    assert_int_equal(find_value(root, "b"), 2);

    /* Setting the value an entry already holds keeps it alive. */
    assert_int_equal(ses_scope_find(root, "b", &t), SES_OK);
    assert_int_equal(ses_scope_set(root, "b", t), SES_OK);
    ses_tensor_release(t);
    assert_int_equal(atomic_load(&deletes), 1);
    assert_int_equal(find_value(root, "b"), 2);

    assert_int_equal(ses_scope_destroy(root), SES_OK);
    assert_int_equal(atomic_load(&deletes), 2);
}

static void entries_keep_insertion_order_through_removals(void **state) {
    ses_scope_t *root = NULL;
    const char *names[] = {"w0", "b0", "w1", "b1", "w2"};

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    for (int i = 0; i < 5; i++)
        set_value(root, names[i], i);
    assert_int_equal(ses_scope_count(root), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(ses_scope_name_at(root, i), names[i]);
    assert_null(ses_scope_name_at(root, 5));

    assert_int_equal(ses_scope_remove(root, "b0"), SES_OK);
    assert_int_equal(ses_scope_count(root), 4);
    assert_string_equal(ses_scope_name_at(root, 0), "w0");
    assert_string_equal(ses_scope_name_at(root, 1), "w1");
    assert_string_equal(ses_scope_name_at(root, 2), "b1");
    assert_string_equal(ses_scope_name_at(root, 3), "w2");
    assert_false(ses_scope_has_local(root, "b0"));
    assert_int_equal(find_value(root, "b1"), 3);
    assert_int_equal(find_value(root, "w2"), 4);

    /* A name set again after removal goes to the end. */
    set_value(root, "b0", 10);
    assert_string_equal(ses_scope_name_at(root, 4), "b0");
    assert_int_equal(find_value(root, "b0"), 10);

    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

/* Enough entries to grow the array and the index several times, with removals in between. */
static void many_entries_are_all_found_after_growth_and_removals(void **state) {
    ses_scope_t *root = NULL;
    char name[32];
    enum { N = 1000 };

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "layer%d.weight", i);
        set_value(root, name, i);
    }
    for (int i = 0; i < N; i += 3) {
        snprintf(name, sizeof name, "layer%d.weight", i);
        assert_int_equal(ses_scope_remove(root, name), SES_OK);
    }
    assert_int_equal(ses_scope_count(root), N - (N + 2) / 3);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "layer%d.weight", i);
        assert_int_equal(ses_scope_has_local(root, name), i % 3 != 0);
        if (i % 3 != 0)
            assert_int_equal(find_value(root, name), i);
    }
    assert_string_equal(ses_scope_name_at(root, 0), "layer1.weight");
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void remove_is_local_and_fails_with_not_found_naming_the_name(void **state) {
    ses_scope_t *root = NULL, *child = NULL;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &child), SES_OK);
    set_value(root, "p", 1);
    assert_int_equal(ses_scope_remove(child, "p"), SES_NOT_FOUND);
    assert_error_mentions("ses_scope_remove");
    assert_error_mentions("\"p\"");
    assert_int_equal(find_value(child, "p"), 1);
    assert_int_equal(ses_scope_destroy(child), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

/* ---- destroy ---- */

static void destroy_fails_while_children_exist_and_destroys_nothing(void **state) {
    ses_scope_t *root = NULL, *a = NULL, *b = NULL;
    int32_t storage = 7;
    _Atomic int deletes = 0;
    ses_tensor_t *t;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &a), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &b), SES_OK);
    t = counted_scalar(&storage, &deletes);
    assert_int_equal(ses_scope_set(root, "v", t), SES_OK);
    ses_tensor_release(t);

    assert_int_equal(ses_scope_destroy(root), SES_FAILED_PRECONDITION);
    assert_error_mentions("ses_scope_destroy");
    assert_error_mentions("2 child scopes");
    /* Nothing was destroyed: the root and its entries still work. */
    assert_int_equal(atomic_load(&deletes), 0);
    assert_int_equal(find_value(a, "v"), 7);

    assert_int_equal(ses_scope_destroy(a), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_FAILED_PRECONDITION);
    assert_error_mentions("1 child scope;");
    assert_int_equal(ses_scope_destroy(b), SES_OK);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
    assert_int_equal(atomic_load(&deletes), 1);
}

static void destroy_releases_every_value(void **state) {
    ses_scope_t *root = NULL, *child = NULL;
    int32_t storage[3] = {0};
    _Atomic int deletes = 0;

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(root, &child), SES_OK);
    for (int i = 0; i < 3; i++) {
        ses_tensor_t *t = counted_scalar(&storage[i], &deletes);
        char name[4] = {'t', (char)('0' + i), 0, 0};
        assert_int_equal(ses_scope_set(i == 0 ? root : child, name, t), SES_OK);
        ses_tensor_release(t);
    }
    assert_int_equal(ses_scope_destroy(child), SES_OK);
    assert_int_equal(atomic_load(&deletes), 2);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
    assert_int_equal(atomic_load(&deletes), 3);
}

static void destroy_accepts_null(void **state) {
    (void)state;
    assert_int_equal(ses_scope_destroy(NULL), SES_OK);
}

/* ---- bad arguments ---- */

static void null_arguments_fail_with_invalid_argument_and_a_message(void **state) {
    ses_scope_t *root = NULL, *child = NOT_NULL_SCOPE;
    ses_tensor_t *t = NOT_NULL_TENSOR, *value = scalar(1);

    (void)state;
    assert_int_equal(ses_scope_create(NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_create: out_scope");

    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_int_equal(ses_scope_create_child(NULL, &child), SES_INVALID_ARGUMENT);
    assert_null(child);
    assert_error_mentions("ses_scope_create_child: parent");
    assert_int_equal(ses_scope_create_child(root, NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_create_child: out_scope");

    assert_int_equal(ses_scope_find(NULL, "x", &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_scope_find: scope");
    t = NOT_NULL_TENSOR;
    assert_int_equal(ses_scope_find(root, NULL, &t), SES_INVALID_ARGUMENT);
    assert_null(t);
    assert_error_mentions("ses_scope_find: name");
    assert_int_equal(ses_scope_find(root, "x", NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_find: out_value");

    assert_int_equal(ses_scope_set(NULL, "x", value), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_set: scope");
    assert_int_equal(ses_scope_set(root, NULL, value), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_set: name");
    assert_int_equal(ses_scope_set(root, "x", NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_set: value for \"x\"");

    assert_int_equal(ses_scope_remove(NULL, "x"), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_remove: scope");
    assert_int_equal(ses_scope_remove(root, NULL), SES_INVALID_ARGUMENT);
    assert_error_mentions("ses_scope_remove: name");

    assert_int_equal(ses_scope_count(root), 0);
    ses_tensor_release(value);
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

static void queries_tolerate_null(void **state) {
    ses_scope_t *root = NULL;

    (void)state;
    assert_null(ses_scope_parent(NULL));
    assert_int_equal(ses_scope_count(NULL), 0);
    assert_null(ses_scope_name_at(NULL, 0));
    assert_false(ses_scope_has_local(NULL, "x"));
    assert_int_equal(ses_scope_create(&root), SES_OK);
    assert_false(ses_scope_has_local(root, NULL));
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

/* ---- threads ---- */

#define SCOPE_THREADS 8
#define SCOPE_ROUNDS 2000

typedef struct worker {
    ses_scope_t *own;    /* this thread's child of the root */
    ses_scope_t *root;
    int id;
    int failures;
} worker_t;

/* cmocka's assertions jump back to the test and must not run on other threads, so the
 * workers count failures and the test checks the counts after joining. */
static ses_tensor_t *scalar_in_thread(int32_t value) {
    ses_tensor_t *t = NULL;

    if (ses_tensor_create_from(SES_I32, 0, NULL, &value, sizeof value, &t) != SES_OK)
        abort();
    return t;
}

/* Each thread writes a shared name in the root and private names in its own child, and reads
 * both through the child: a find must always see a whole value some thread set. */
static void *scope_worker(void *arg) {
    worker_t *w = arg;
    char name[32];

    for (int i = 0; i < SCOPE_ROUNDS; i++) {
        ses_tensor_t *t = scalar_in_thread(w->id * 100000 + i), *found = NULL;

        snprintf(name, sizeof name, "own%d", i % 16);
        if (ses_scope_set(w->own, name, t) != SES_OK)
            w->failures++;
        if (ses_scope_set(w->root, "shared", t) != SES_OK)
            w->failures++;
        ses_tensor_release(t);

        if (ses_scope_find(w->own, name, &found) != SES_OK ||
            value_of(found) != w->id * 100000 + i)
            w->failures++;
        ses_tensor_release(found);

        found = NULL;
        if (ses_scope_find(w->own, "shared", &found) != SES_OK)
            w->failures++;
        else if (value_of(found) % 100000 >= SCOPE_ROUNDS)
            w->failures++;
        ses_tensor_release(found);

        if (i % 4 == 3 && ses_scope_remove(w->own, name) != SES_OK)
            w->failures++;

        /* Names of this thread's own in the shared root make the root's array and index grow,
         * shrink and be rebuilt while the other threads search through it. */
        snprintf(name, sizeof name, "root%d_%d", w->id, i % 64);
        t = scalar_in_thread(i);
        if (ses_scope_set(w->root, name, t) != SES_OK)
            w->failures++;
        ses_tensor_release(t);
        found = NULL;
        if (ses_scope_find(w->own, name, &found) != SES_OK || value_of(found) != i)
            w->failures++;
        ses_tensor_release(found);
        if (i % 64 == 63) {
            for (int k = 0; k < 64; k++) {
                snprintf(name, sizeof name, "root%d_%d", w->id, k);
                if (ses_scope_remove(w->root, name) != SES_OK)
                    w->failures++;
            }
        }
        (void)ses_scope_count(w->root);
        (void)ses_scope_has_local(w->root, "shared");
    }
    return NULL;
}

static void set_and_find_from_many_threads_on_one_tree_stay_consistent(void **state) {
    ses_scope_t *root = NULL;
    pthread_t threads[SCOPE_THREADS];
    worker_t workers[SCOPE_THREADS];

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    set_value(root, "shared", 0);
    for (int i = 0; i < SCOPE_THREADS; i++) {
        workers[i] = (worker_t){.root = root, .id = i};
        assert_int_equal(ses_scope_create_child(root, &workers[i].own), SES_OK);
    }
    for (int i = 0; i < SCOPE_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, scope_worker, &workers[i]), 0);
    for (int i = 0; i < SCOPE_THREADS; i++)
        pthread_join(threads[i], NULL);

    /* "shared", and the root names of each thread's last, unfinished block of 64. */
    assert_int_equal(ses_scope_count(root), 1 + SCOPE_THREADS * (SCOPE_ROUNDS % 64));
    for (int i = 0; i < SCOPE_THREADS; i++) {
        assert_int_equal(workers[i].failures, 0);
        /* Of the 16 names, own3, own7, own11 and own15 are removed right after each set. */
        assert_int_equal(ses_scope_count(workers[i].own), 12);
        assert_int_equal(ses_scope_destroy(workers[i].own), SES_OK);
    }
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

/* Children created and destroyed from many threads keep the parent's child count right. */
static void *churn_children(void *arg) {
    ses_scope_t *root = arg;

    for (int i = 0; i < SCOPE_ROUNDS; i++) {
        ses_scope_t *child = NULL;
        ses_tensor_t *t = scalar_in_thread(i), *found = NULL;
        int ok = ses_scope_create_child(root, &child) == SES_OK &&
                 ses_scope_set(child, "local", t) == SES_OK &&
                 ses_scope_find(child, "base", &found) == SES_OK && value_of(found) == 9;

        ses_tensor_release(t);
        ses_tensor_release(found);
        if (ses_scope_destroy(child) != SES_OK || !ok)
            return (void *)1;
    }
    return NULL;
}

static void children_created_and_destroyed_from_many_threads_keep_the_count(void **state) {
    ses_scope_t *root = NULL;
    pthread_t threads[SCOPE_THREADS];

    (void)state;
    assert_int_equal(ses_scope_create(&root), SES_OK);
    set_value(root, "base", 9);
    for (int i = 0; i < SCOPE_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, churn_children, root), 0);
    for (int i = 0; i < SCOPE_THREADS; i++) {
        void *result = NULL;
        pthread_join(threads[i], &result);
        assert_null(result);
    }
    assert_int_equal(ses_scope_destroy(root), SES_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_new_root_is_empty_and_has_no_parent),
        cmocka_unit_test(set_then_find_returns_a_new_reference),
        cmocka_unit_test(names_are_copied),
        cmocka_unit_test(find_of_a_missing_name_fails_with_not_found_naming_it),
        cmocka_unit_test(find_walks_up_to_the_nearest_ancestor_that_has_the_name),
        cmocka_unit_test(set_in_a_child_shadows_the_parent_without_touching_it),
        cmocka_unit_test(set_replaces_a_local_entry_in_place_and_releases_the_old_value),
        cmocka_unit_test(entries_keep_insertion_order_through_removals),
        cmocka_unit_test(many_entries_are_all_found_after_growth_and_removals),
        cmocka_unit_test(remove_is_local_and_fails_with_not_found_naming_the_name),
        cmocka_unit_test(destroy_fails_while_children_exist_and_destroys_nothing),
        cmocka_unit_test(destroy_releases_every_value),
        cmocka_unit_test(destroy_accepts_null),
        cmocka_unit_test(null_arguments_fail_with_invalid_argument_and_a_message),
        cmocka_unit_test(queries_tolerate_null),
        cmocka_unit_test(set_and_find_from_many_threads_on_one_tree_stay_consistent),
        cmocka_unit_test(children_created_and_destroyed_from_many_threads_keep_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
