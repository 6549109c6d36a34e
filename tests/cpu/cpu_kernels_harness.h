/*
 * The harness of the cpu_kernels test (cpu_kernels_test.c and cpu_kernels_*_test.c): the CPU
 * driver module loaded through the ABI as the host loads it, a node run on one kernel with
 * tensors and attributes given inline, and value comparisons. Defined in cpu_kernels_harness.c.
 */
#ifndef SES_TESTS_CPU_KERNELS_HARNESS_H
#define SES_TESTS_CPU_KERNELS_HARNESS_H

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <session/driver.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#ifndef SES_CPU_DRIVER_PATH
#error "compile with -DSES_CPU_DRIVER_PATH=\"/path/to/ses_cpu.so\""
#endif

#include "../support/test_host.h"

#define F32 SES_DRV_DTYPE_F32
#define F64 SES_DRV_DTYPE_F64
#define I32 SES_DRV_DTYPE_I32
#define I64 SES_DRV_DTYPE_I64
#define U8 SES_DRV_DTYPE_U8
#define BOOL SES_DRV_DTYPE_BOOL
#define I8 SES_DRV_DTYPE_I8
#define U64 SES_DRV_DTYPE_U64

/* ---------------------------------------------------------------------------------------------
 * A host whose get_option answers driver.cpu.threads, to size the device's pool.
 * ------------------------------------------------------------------------------------------- */

typedef struct kernel_host_ctx {
    struct ses_drv_host_ctx base; /* first: the test host's error entry writes here */
    const char *threads;          /* the value of driver.cpu.threads; NULL when unset */
    const char *gemm;             /* the value of driver.cpu.gemm; NULL when unset */
    const char *spin_us;          /* the value of driver.cpu.spin_us; NULL when unset */
    int abort;                    /* what should_abort answers */
} kernel_host_ctx_t;

/* A host whose get_option answers from a kernel_host_ctx_t. */
extern const ses_drv_host_t option_host;

/* ---------------------------------------------------------------------------------------------
 * Fixture: the module loaded and negotiated, one driver instance and its device open.
 * ------------------------------------------------------------------------------------------- */

typedef struct fixture {
    void *lib;
    const ses_drv_api_t *api;
    kernel_host_ctx_t ctx;
    ses_drv_driver_t *driver;
    ses_drv_device_t *device;
    const char *name; /* the name of the nodes run() builds */
    int prepare;      /* non-zero: run() calls create first, as a plan does (compute_as_host) */
} fixture_t;

int teardown(void **state);

int setup(void **state);

/* The same tests with per-node state: every kernel that has a create is prepared first. */
int setup_prepared(void **state);

/* Fails with both the message and the expected fragment printed. */
#define assert_message_contains(f, fragment)                                                \
    do {                                                                                    \
        if (!strstr((f)->ctx.base.message, (fragment)))                                     \
            fail_msg("error message \"%s\" does not contain \"%s\"", (f)->ctx.base.message, \
                     (fragment));                                                           \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Finding kernels
 * ------------------------------------------------------------------------------------------- */

const ses_drv_kernel_t *kernel_at(const ses_drv_kernel_t *table, uint32_t stride, uint32_t i);

const ses_drv_kernel_t *find_kernel_on(const ses_drv_api_t *api, ses_drv_device_t *device,
                                       const char *op, const char *signature);

/*
 * Computes @p launch as a host does. With @p prepare, a kernel that has a create gets one made
 * from the launch's own node, as a plan's compile makes it, computes with it and destroys it;
 * otherwise it computes with no state. Returns create's status when that fails.
 */
/* When set, compute_as_host keeps the kernel's state in *kept_state across calls (made at the
 * first, destroyed by the test), as a plan's node keeps it across runs. */
extern void **kept_state;

int32_t compute_as_host(const ses_drv_kernel_t *k, ses_drv_device_t *dev, int prepare,
                        const ses_drv_launch_t *launch);

/* ---------------------------------------------------------------------------------------------
 * Attributes: a small table behind the node's attr callback.
 * ------------------------------------------------------------------------------------------- */

typedef struct test_attr {
    const char *name; /* NULL ends a table */
    uint32_t type;    /* SES_DRV_ATTR_INT, FLOAT or INTS */
    int64_t i;
    double f;
    const int64_t *ints;
    uint64_t n_ints;
} test_attr_t;

/* clang-format off */
#define A_INT(key, value) {.name = (key), .type = SES_DRV_ATTR_INT, .i = (value)}
#define A_FLOAT(key, value) {.name = (key), .type = SES_DRV_ATTR_FLOAT, .f = (value)}
#define A_INTS(key, ...)                                                                   \
    {.name = (key), .type = SES_DRV_ATTR_INTS, .ints = (const int64_t[]){__VA_ARGS__},     \
     .n_ints = sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)}
#define A_END {.name = NULL}
/* clang-format on */

/* As the host does: count then fill, NOT_FOUND when absent, INVALID_ARGUMENT on another type. */
int32_t test_attr_read(const ses_drv_node_t *node, const char *name, uint32_t type,
                       uint64_t *inout_count, void *values);

/* ---------------------------------------------------------------------------------------------
 * Running one node
 * ------------------------------------------------------------------------------------------- */

#define MAX_RANK 8
#define MAX_IN 6

/* A tensor argument: dtype, shape and (for inputs) the host values; NULL data reads as zeros. */
typedef struct targ {
    uint32_t dtype;
    uint32_t rank;
    int64_t dims[MAX_RANK];
    const void *data;
} targ_t;

/* tensor(F32, values, rank, dim0, dim1, ...) */
targ_t tensor(uint32_t dtype, const void *data, uint32_t rank, ...);

size_t dtype_size(uint32_t dtype);

size_t targ_bytes(const targ_t *t);

/*
 * Runs kernel (op, sig) of device @p dev over @p n_in inputs and one output, and copies the
 * output into @p out_host when it succeeds. Each argument gets its own buffer (at least one
 * byte, as alloc wants); the output's is prefilled with 0xab so a write past a zero-size output
 * would show. Returns the kernel's status.
 */
int32_t run_on(const ses_drv_api_t *api, ses_drv_device_t *dev, int prepare, const char *name,
               const char *op, const char *sig, const test_attr_t *attrs, uint32_t n_in,
               const targ_t *in, targ_t out, void *out_host);

int32_t run(fixture_t *f, const char *op, const char *sig, const test_attr_t *attrs, uint32_t n_in,
            const targ_t *in, targ_t out, void *out_host);

/* run() that must succeed; prints the driver's message otherwise. */
#define RUN_OK(f, op, sig, attrs, n_in, in, out, out_host)                                   \
    do {                                                                                     \
        int32_t st_ = run((f), (op), (sig), (attrs), (n_in), (in), (out), (out_host));       \
        if (st_ != SES_DRV_OK)                                                               \
            fail_msg("%s %s returned %d: %s", (op), (sig), (int)st_, (f)->ctx.base.message); \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Comparing values
 * ------------------------------------------------------------------------------------------- */

void expect_f32(const float *want, const float *got, size_t n, double tol);

void expect_f64(const double *want, const double *got, size_t n, double tol);

void expect_i32(const int32_t *want, const int32_t *got, size_t n);

void expect_i64(const int64_t *want, const int64_t *got, size_t n);

void expect_u8(const uint8_t *want, const uint8_t *got, size_t n);

/* Runs a node whose arguments all lie in @p arena at the given byte offsets, as a plan's
 * memory planner lays them out; @p in and @p out give only dtypes and shapes. */
int32_t run_in_arena(fixture_t *f, ses_drv_buffer_t *arena, const char *op, const char *sig,
                     const test_attr_t *attrs, uint32_t n_in, const targ_t *in,
                     const uint64_t *in_off, targ_t out, uint64_t out_off);

/* ---- the tests, by file; cpu_kernels_test.c runs them ---- */
/* cpu_kernels_test.c */
void the_kernel_table_has_no_duplicate_op_and_signature_pairs(void **state);
void every_table_entry_is_well_formed(void **state);
void the_table_offers_every_op_of_the_contract_at_its_dtypes(void **state);
void a_launch_whose_dtypes_differ_from_the_entry_is_refused_naming_both(void **state);
void outputs_may_overlap_inputs_only_where_the_op_computes_through_it(void **state);
void the_flat_and_the_broadcasting_walk_give_the_same_bits(void **state);
void a_prepared_broadcasting_walk_gives_the_unprepared_result(void **state);
void a_prepared_node_launched_with_other_shapes_is_checked_from_scratch(void **state);
void a_prepared_launch_still_checks_ranges_alignment_and_overlap(void **state);
void create_gives_no_state_to_a_node_its_launches_would_refuse(void **state);
void a_state_made_for_another_entry_is_not_used(void **state);
void a_prepared_integer_division_still_refuses_a_zero_divisor(void **state);
/* cpu_kernels_elementwise_test.c */
void shape_only_ops_copy_the_bytes_unchanged_at_every_dtype(void **state);
void copies_handle_scalars_and_empty_tensors(void **state);
void reshape_refuses_an_output_with_another_element_count(void **state);
void arithmetic_on_equal_shapes_computes_elementwise_in_f32_and_f64(void **state);
void float_division_by_zero_gives_infinity_not_an_error(void **state);
void arithmetic_broadcasts_rows_columns_and_outer_products(void **state);
void arithmetic_works_on_scalars_and_zero_size_tensors(void **state);
void integer_arithmetic_wraps_and_division_truncates_toward_zero(void **state);
void integer_division_by_zero_is_refused_naming_the_node(void **state);
void arithmetic_refuses_shapes_that_do_not_broadcast_naming_all_of_them(void **state);
void comparisons_give_bools_with_broadcasting_and_nan_unequal(void **state);
void where_selects_with_three_way_broadcasting_at_each_width(void **state);
void unary_float_ops_match_libm_in_f32_and_f64(void **state);
void sigmoid_and_softplus_stay_finite_for_large_inputs(void **state);
void leaky_relu_reads_alpha_and_integer_unary_ops_wrap(void **state);
void sign_round_is_nan_and_is_inf_handle_zeros_halves_and_infinities(void **state);
void logic_ops_broadcast_and_read_any_nonzero_byte_as_true(void **state);
void mod_takes_the_divisors_sign_or_with_fmod_the_dividends(void **state);
void bit_shift_moves_bits_either_way_and_gives_zero_past_the_width(void **state);
void min_and_max_fold_any_number_of_inputs_with_broadcasting(void **state);
void unary_ops_handle_scalars_and_empty_tensors_and_refuse_other_shapes(void **state);
void cast_truncates_toward_zero_and_maps_bools_to_0_and_1(void **state);
void cast_refuses_a_to_attribute_that_disagrees_with_the_output(void **state);
/* cpu_kernels_matmul_reduce_test.c */
void matmul_multiplies_matrices_in_f32_and_f64(void **state);
void matmul_promotes_one_dimensional_operands_and_drops_the_added_dim(void **state);
void matmul_broadcasts_batch_dims_against_a_naive_loop(void **state);
void matmul_with_an_empty_inner_dim_gives_zeros_and_empty_outputs_are_no_ops(void **state);
void matmul_refuses_inner_dimensions_that_differ_naming_both_shapes(void **state);
void gemm_applies_transposes_alpha_beta_and_broadcasts_c(void **state);
void gemm_refuses_a_c_that_does_not_broadcast_to_the_output(void **state);
void reduce_sum_over_one_axis_with_and_without_keepdims(void **state);
void reduce_over_every_combination_of_axes_matches_a_naive_loop(void **state);
void reduce_max_propagates_nan_and_reduce_mean_divides_by_the_count(void **state);
void reducing_an_empty_axis_sums_to_zero_averages_to_nan_and_has_no_max(void **state);
void reductions_refuse_bad_axes_and_wrong_output_shapes(void **state);
void softmax_normalizes_along_the_axis_without_overflow(void **state);
void argmax_returns_the_first_or_last_index_of_the_largest(void **state);
void argmin_returns_the_first_or_last_index_of_the_smallest(void **state);
void the_other_reductions_match_their_definitions(void **state);
void reduce_log_sum_exp_is_stable_and_size_one_axes_still_map(void **state);
void the_other_reductions_of_an_empty_axis(void **state);
/* cpu_kernels_index_test.c */
void transpose_permutes_axes_at_every_element_width(void **state);
void transpose_of_large_batched_matrices_matches_index_arithmetic(void **state);
void transpose_refuses_a_perm_that_is_not_a_permutation(void **state);
void concat_joins_inputs_along_the_axis(void **state);
void slice_takes_forward_backward_and_strided_ranges(void **state);
void gather_picks_along_the_axis_with_negative_indices(void **state);
void gather_refuses_an_index_out_of_range_naming_node_index_and_dim(void **state);
void gather_and_scatter_elements_index_along_the_axis(void **state);
void gather_nd_and_scatter_nd_move_blocks(void **state);
void one_hot_trilu_cumsum_and_hardmax_compute_like_onnx(void **state);
void gradient_kernels_are_offered_at_their_dtypes(void **state);
void scalar_like_converts_its_value_as_cast_does(void **state);
void gradient_kernels_refuse_shapes_and_attributes_that_do_not_fit(void **state);
void gradient_kernels_refuse_an_output_over_their_input_but_scalar_like(void **state);
/* cpu_kernels_pool_test.c */
void f32_gemms_on_onednn_agree_with_openblas(void **state);
void conv_state_keeps_and_grows_its_scratch(void **state);
void the_pools_spin_time_is_an_option_that_changes_no_result(void **state);
void the_gemm_option_refuses_an_unknown_library(void **state);
void open_device_starts_its_pool_and_close_device_joins_it(void **state);
void open_device_refuses_a_thread_count_that_is_not_a_number(void **state);
void large_kernels_on_the_pool_give_the_inline_result(void **state);
void conv_by_images_on_the_pool_gives_the_inline_result(void **state);
void a_batched_matmul_stops_when_the_host_cancels(void **state);
void kernels_called_from_several_threads_at_once_all_compute_correctly(void **state);

#endif /* SES_TESTS_CPU_KERNELS_HARNESS_H */
