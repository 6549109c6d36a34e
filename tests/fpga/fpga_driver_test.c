/*
 * The FPGA driver (ses_xrt.so, driver "xrt") on a machine without an FPGA: in hardware mode it
 * loads and reports no devices with the reason; with XRT's environment wrong it says so instead
 * of letting XRT abort the process; under XCL_EMULATION_MODE=noop, with xclbins this file
 * writes (xclbin_writer.c), sessions on fpga:0 place nodes on the device and drive XRT through
 * the whole flow (load, kernel open, buffer objects, sync, arguments, start, wait), and
 * session-driver-test's table, memory and copy checks pass. noop computes nothing, so the
 * tests check XRT calls, sizes and placement, never values.
 *
 * XRT reads its environment once per process, so every scenario runs in a child process: this
 * program itself with `--child <scenario>`, or the tools. The XRT calls are read from the
 * driver's debug log (SESSION_LOADER_DEBUG=debug), one line per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../integration/run_util.h"
#include "xclbin_writer.h"

#include <session/session.h>
#include <xclbin.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* The folder for this run: the XILINX_XRT stand-in (lib -> the system's library folder) and
 * the xclbins. */
static char work_dir[] = "/tmp/ses-fpga-test-XXXXXX";
static char xilinx_xrt[512], good_xclbin[512], mixed_xclbin[512], damaged_xclbin[512];
static const char *self_path;

/* ---------------------------------------------------------------------------------------------
 * Child scenarios: a session on fpga:0.
 * ------------------------------------------------------------------------------------------- */

#define CHILD_CHECK(call)                                              \
    do {                                                               \
        if ((call) != SES_OK) {                                        \
            printf("child: %s failed: %s\n", #call, ses_last_error()); \
            goto done;                                                 \
        }                                                              \
    } while (0)

/*
 * y = MatMul(x[2,3], w[3,4]); z = Add(y, b[2,4]); r = Relu(z); q = Add(r, c[4]) (broadcast).
 * Runs the plan twice and prints where each node ran and the result's shape.
 */
static int child_session(const char *xclbin) {
    const int64_t x_dims[] = {2, 3}, w_dims[] = {3, 4}, b_dims[] = {2, 4}, c_dims[] = {4};
    float x_data[6] = {1, 2, 3, 4, 5, 6}, w_data[12] = {0}, b_data[8] = {0}, c_data[4] = {0};
    ses_graph_t *g = NULL;
    ses_session_t *s = NULL;
    ses_plan_t *plan = NULL;
    ses_tensor_t *x = NULL, *w = NULL, *b = NULL, *c = NULL, *out = NULL;
    ses_edge_t xe, we, be, ce, y, z, r, q;
    ses_session_options_t options;
    char option[600];
    const char *driver_options[1] = {option};
    const char *device = "fpga:0";
    int rc = 1;

    CHILD_CHECK(ses_graph_create(&g));
    CHILD_CHECK(ses_graph_placeholder(g, "x", SES_F32, 2, x_dims, &xe));
    CHILD_CHECK(ses_tensor_create_from(SES_F32, 2, w_dims, w_data, sizeof w_data, &w));
    CHILD_CHECK(ses_tensor_create_from(SES_F32, 2, b_dims, b_data, sizeof b_data, &b));
    CHILD_CHECK(ses_tensor_create_from(SES_F32, 1, c_dims, c_data, sizeof c_data, &c));
    CHILD_CHECK(ses_graph_constant(g, "w", w, &we));
    CHILD_CHECK(ses_graph_constant(g, "b", b, &be));
    CHILD_CHECK(ses_graph_constant(g, "c", c, &ce));
    CHILD_CHECK(ses_graph_op(g, "MatMul", "y", (ses_edge_t[]){xe, we}, 2, NULL, 0, &y));
    CHILD_CHECK(ses_graph_op(g, "Add", "z", (ses_edge_t[]){y, be}, 2, NULL, 0, &z));
    CHILD_CHECK(ses_graph_op(g, "Relu", "r", (ses_edge_t[]){z}, 1, NULL, 0, &r));
    CHILD_CHECK(ses_graph_op(g, "Add", "q", (ses_edge_t[]){r, ce}, 2, NULL, 0, &q));

    ses_session_options_init(&options);
    options.fallback = SES_FALLBACK_ALLOW;
    if (xclbin) {
        /* The session option, the first of the three places the driver looks. */
        snprintf(option, sizeof option, "driver.xrt.xclbin=%s", xclbin);
        options.driver_options = driver_options;
        options.n_driver_options = 1;
    }
    CHILD_CHECK(ses_session_open(g, &device, 1, &options, &s));
    CHILD_CHECK(ses_tensor_create_from(SES_F32, 2, x_dims, x_data, sizeof x_data, &x));
    CHILD_CHECK(ses_session_compile(s, &q, 1, &xe, 1, NULL, 0, &plan));
    CHILD_CHECK(ses_plan_run(plan, &x, 1, &out));
    ses_tensor_release(out);
    out = NULL;
    CHILD_CHECK(ses_plan_run(plan, &x, 1, &out));
    printf("placed: MatMul y on %s\n", ses_plan_node_device(plan, y.node));
    printf("placed: Add z on %s\n", ses_plan_node_device(plan, z.node));
    printf("placed: Relu r on %s\n", ses_plan_node_device(plan, r.node));
    printf("placed: Add q on %s\n", ses_plan_node_device(plan, q.node));
    printf("placement summary:\n%s\n", ses_plan_placement(plan));
    printf("result: rank %zu, %zu elements\n", ses_tensor_rank(out), ses_tensor_count(out));
    rc = 0;

done:
    ses_tensor_release(out);
    /* Close before exit: XRT's noop shim crashes freeing buffer objects left at exit. */
    ses_plan_destroy(plan);
    ses_session_destroy(s);
    ses_tensor_release(x);
    ses_tensor_release(w);
    ses_tensor_release(b);
    ses_tensor_release(c);
    ses_graph_release(g);
    fflush(stdout);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Helpers for the parent.
 * ------------------------------------------------------------------------------------------- */

/* Runs @p command with XRT's environment: @p mode ("" hardware, NULL leaves it unset) and
 * @p xrt_root (NULL leaves XILINX_XRT unset). */
static run_result_t run_with(const char *mode, const char *xrt_root, const char *extra_env,
                             const char *command) {
    char full[4096];

    snprintf(full, sizeof full, "env -u XCL_EMULATION_MODE -u XILINX_XRT %s%s%s %s%s%s %s %s",
             mode ? "XCL_EMULATION_MODE='" : "", mode ? mode : "", mode ? "'" : "",
             xrt_root ? "XILINX_XRT='" : "", xrt_root ? xrt_root : "", xrt_root ? "'" : "",
             extra_env ? extra_env : "", command);
    return run_command(full);
}

/* How many times @p needle occurs in @p text. */
static int count_of(const char *text, const char *needle) {
    int n = 0;

    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

#define ASSERT_HAS(output, needle)                                             \
    do {                                                                       \
        if (!strstr((output), (needle)))                                       \
            fail_msg("missing \"%s\" in the output:\n%s", (needle), (output)); \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------------------------- */

/* This machine has no FPGA: hardware mode must give "no-devices" with the reason, exit 0. */
static void hardware_mode_without_an_fpga_reports_no_devices_and_why(void **state) {
    (void)state;
    run_result_t r = run_with(NULL, xilinx_xrt, "", "'" SESSION_INFO "'");

    if (r.exit_code != 0)
        fail_msg("session-info exited %d:\n%s", r.exit_code, r.output);
    ASSERT_HAS(r.output, "no-devices");
    ASSERT_HAS(r.output, "no FPGA: XRT found no device in hardware mode");
    /* The driver prints nothing itself, and XRT's console log is off. */
    assert_null(strstr(r.output, "[XRT]"));
    assert_null(strstr(r.output, "xrt:0"));
    free(r.output);
}

/* Without XILINX_XRT, XRT would abort the process; the driver says what to set instead. */
static void without_xilinx_xrt_the_driver_says_so_instead_of_aborting(void **state) {
    (void)state;
    run_result_t r = run_with("noop", NULL, "", "'" SESSION_INFO "'");

    if (r.exit_code != 0)
        fail_msg("session-info exited %d (XRT aborted?):\n%s", r.exit_code, r.output);
    ASSERT_HAS(r.output, "no-devices");
    ASSERT_HAS(r.output,
               "XILINX_XRT is not set: XRT loads its libxrt_noop.so.2 from "
               "$XILINX_XRT/lib and aborts the process without it");
    free(r.output);

    /* In hardware mode too. */
    r = run_with(NULL, NULL, "", "'" SESSION_INFO "'");
    assert_int_equal(r.exit_code, 0);
    ASSERT_HAS(r.output, "XILINX_XRT is not set: XRT loads its libxrt_core.so.2");
    free(r.output);
}

/* XILINX_XRT=/usr and an empty XCL_EMULATION_MODE both abort inside XRT: refused first. */
static void other_environments_that_make_xrt_abort_are_refused(void **state) {
    (void)state;
    run_result_t r = run_with("noop", "/usr", "", "'" SESSION_INFO "'");

    assert_int_equal(r.exit_code, 0);
    ASSERT_HAS(r.output, "XILINX_XRT=/usr has no lib/libxrt_noop.so.2");
    free(r.output);

    r = run_with("", xilinx_xrt, "", "'" SESSION_INFO "'");
    assert_int_equal(r.exit_code, 0);
    ASSERT_HAS(r.output, "XCL_EMULATION_MODE is set but empty");
    free(r.output);

    r = run_with("hw", xilinx_xrt, "", "'" SESSION_INFO "'");
    assert_int_equal(r.exit_code, 0);
    ASSERT_HAS(r.output, "XCL_EMULATION_MODE=hw is not an XRT mode");
    free(r.output);
}

/* Under noop the emulated card is xrt:0, an fpga, and with no xclbin it has no kernels. */
static void noop_emulation_offers_one_fpga(void **state) {
    (void)state;
    run_result_t r = run_with("noop", xilinx_xrt, "", "'" SESSION_INFO "'");

    assert_int_equal(r.exit_code, 0);
    ASSERT_HAS(r.output, "xrt:0");
    ASSERT_HAS(r.output, "fpga");
    ASSERT_HAS(r.output, "Xilinx FPGA (XRT noop emulation)");
    assert_null(strstr(r.output, "xrt:1"));
    free(r.output);
}

/*
 * The whole flow on fpga:0: MatMul, the equal-shape Add and Relu run on the FPGA through XRT;
 * the broadcasting Add falls back to the CPU with the kernel's reason.
 */
static void a_session_on_fpga_0_runs_matmul_through_xrt(void **state) {
    char command[1024], line[1024];
    (void)state;

    snprintf(command, sizeof command, "'%s' --child session '%s'", self_path, good_xclbin);
    run_result_t r = run_with("noop", xilinx_xrt, "SESSION_LOADER_DEBUG=debug", command);
    if (r.exit_code != 0)
        fail_msg("child exited %d:\n%s", r.exit_code, r.output);

    /* Placement. */
    ASSERT_HAS(r.output, "placed: MatMul y on xrt:0");
    ASSERT_HAS(r.output, "placed: Add z on xrt:0");
    ASSERT_HAS(r.output, "placed: Relu r on xrt:0");
    ASSERT_HAS(r.output, "placed: Add q on cpu:0");
    ASSERT_HAS(r.output, "the FPGA kernel ses_add_f32 needs equal shapes (no broadcasting)");
    ASSERT_HAS(r.output, "result: rank 2, 8 elements");

    /* Loading: the xclbin, its kernels and their memory bank. */
    snprintf(line, sizeof line, "xrtDeviceLoadXclbinFile(0, %s) -> 0", good_xclbin);
    ASSERT_HAS(r.output, line);
    ASSERT_HAS(r.output, "xrtDeviceGetXclbinUUID(0) -> 0");
    ASSERT_HAS(r.output, "xrtPLKernelOpen(ses_matmul_f32) -> ok");
    ASSERT_HAS(r.output, "xrtPLKernelOpen(ses_add_f32) -> ok");
    ASSERT_HAS(r.output, "xrtPLKernelOpen(ses_relu_f32) -> ok");
    ASSERT_HAS(r.output, "xrtKernelArgGroupId(ses_matmul_f32, 2) -> 0");
    ASSERT_HAS(r.output, "kernel ses_matmul_f32 runs MatMul f32,f32->f32");
    ASSERT_HAS(r.output, "kernel ses_relu_f32 runs Relu f32->f32");
    /* Memory: buffer objects in group 0, mapped; inputs synced to the device (x is 24 bytes,
     * w 48, b 32) and the Relu result (32 bytes) synced back. */
    ASSERT_HAS(r.output, "flags 0, group 0) -> buffer");
    ASSERT_HAS(r.output, "xrtBOMap(buffer");
    ASSERT_HAS(r.output, ", to device, 24 bytes");
    ASSERT_HAS(r.output, ", to device, 48 bytes");
    ASSERT_HAS(r.output, ", to device, 32 bytes");
    ASSERT_HAS(r.output, ", from device, 32 bytes");
    /* The run: one run handle per node, arguments per the convention, start, wait. */
    assert_int_equal(count_of(r.output, "xrtRunOpen(ses_matmul_f32) -> ok"), 1);
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 0, A = buffer ");
    ASSERT_HAS(r.output, ", 24 bytes at offset ");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 1, B = buffer ");
    ASSERT_HAS(r.output, ", 48 bytes at offset ");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 2, C = buffer ");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 3, M = 2) -> 0");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 4, K = 3) -> 0");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_matmul_f32, 5, N = 4) -> 0");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_add_f32, 3, n = 8) -> 0");
    ASSERT_HAS(r.output, "xrtRunSetArg(ses_relu_f32, 2, n = 8) -> 0");
    /* Two runs of the plan: two starts and waits per kernel, sub-buffers made once. */
    assert_int_equal(count_of(r.output, "xrtRunStart(ses_matmul_f32) -> 0"), 2);
    assert_int_equal(count_of(r.output, "xrtRunWait(ses_matmul_f32) -> COMPLETED"), 2);
    assert_int_equal(count_of(r.output, "xrtRunWait(ses_relu_f32) -> COMPLETED"), 2);
    assert_int_equal(count_of(r.output, "argument A of ses_matmul_f32"), 1);
    /* Closing frees what was made. */
    ASSERT_HAS(r.output, "xrtRunClose(ses_matmul_f32) -> 0");
    ASSERT_HAS(r.output, "xrtKernelClose(ses_matmul_f32) -> 0");
    ASSERT_HAS(r.output, "xrtBOFree(buffer");
    free(r.output);
}

/* No xclbin set: the device opens with no kernels and everything runs on the CPU. */
static void without_an_xclbin_every_node_falls_back(void **state) {
    char command[1024];
    (void)state;

    snprintf(command, sizeof command, "'%s' --child session", self_path);
    run_result_t r = run_with("noop", xilinx_xrt, "SESSION_LOADER_DEBUG=info", command);
    if (r.exit_code != 0)
        fail_msg("child exited %d:\n%s", r.exit_code, r.output);
    ASSERT_HAS(r.output, "xrt:0 has no kernels: no xclbin is set");
    ASSERT_HAS(r.output, "placed: MatMul y on cpu:0");
    ASSERT_HAS(r.output, "placed: Relu r on cpu:0");
    free(r.output);
}

/* The environment variable is the second place the option is read from. */
static void the_xclbin_option_is_read_from_the_environment(void **state) {
    char env[700];
    (void)state;

    snprintf(env, sizeof env, "SESSION_DRIVER_XRT_XCLBIN='%s'", good_xclbin);
    run_result_t r = run_with("noop", xilinx_xrt, env, "'" SESSION_DRIVER_TEST "' --abi-only xrt");
    if (r.exit_code != 0)
        fail_msg("session-driver-test exited %d:\n%s", r.exit_code, r.output);
    ASSERT_HAS(r.output, "PASS  device  kernel table: 3 entries");
    free(r.output);
}

/* A missing xclbin named on purpose fails the device open, naming the file. */
static void a_missing_xclbin_fails_the_session_naming_the_file(void **state) {
    char command[1024];
    (void)state;

    snprintf(command, sizeof command, "'%s' --child session /nonexistent/a.xclbin", self_path);
    run_result_t r = run_with("noop", xilinx_xrt, "", command);
    assert_int_not_equal(r.exit_code, 0);
    ASSERT_HAS(r.output,
               "the xclbin /nonexistent/a.xclbin (option driver.xrt.xclbin) cannot be "
               "read: No such file or directory");
    free(r.output);
}

/* Kernels that break the rule or the convention are skipped, each with its reason. */
static void kernels_that_break_the_convention_are_skipped_with_the_reason(void **state) {
    char env[700];
    (void)state;

    /* session-driver-test shows driver log lines at debug only. */
    snprintf(env, sizeof env, "SESSION_DRIVER_XRT_XCLBIN='%s' SESSION_LOADER_DEBUG=debug",
             mixed_xclbin);
    run_result_t r = run_with("noop", xilinx_xrt, env, "'" SESSION_DRIVER_TEST "' --abi-only xrt");
    if (r.exit_code != 0)
        fail_msg("session-driver-test exited %d:\n%s", r.exit_code, r.output);
    ASSERT_HAS(r.output,
               "kernel ses_mul_f32 skipped: it has 3 arguments; the convention for Mul "
               "is (A, B, C, n)");
    ASSERT_HAS(r.output,
               "kernel ses_sub_f32 skipped: its buffers are in memory group 1, the "
               "other kernels' in group 0");
    ASSERT_HAS(r.output, "kernel ses_frobnicate_f32 skipped: \"frobnicate\" is not an op");
    ASSERT_HAS(r.output, "kernel ses_div_i32 skipped: Div does not take dtype \"i32\"");
    ASSERT_HAS(r.output,
               "kernel ses_neg_f32 skipped: argument 2 (n of (X, Y, n)) must be a 4- or "
               "8-byte unsigned integer scalar");
    /* A kernel outside the rule is not an error, only noted at debug level. */
    ASSERT_HAS(r.output, "kernel vadd is not named ses_<op>_<dtype>; not used");
    assert_null(strstr(r.output, "kernel vadd skipped"));
    /* ses_add_f32 and ses_exp_f64 (with a 64-bit n) remain. */
    ASSERT_HAS(r.output, "PASS  device  kernel table: 2 entries");
    free(r.output);
}

/*
 * Writes good.xclbin with the first int32 of section @p kind (its entry count) set to @p count,
 * or, for CONNECTIVITY, the first connection's memory bank set to @p count.
 */
static void write_damaged(uint32_t kind, int32_t count) {
    FILE *f = fopen(good_xclbin, "rb");
    unsigned char bytes[16384];
    size_t n;

    assert_non_null(f);
    n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    const struct axlf *top = (const struct axlf *)(const void *)bytes;
    int done = 0;
    for (uint32_t i = 0; i < top->m_header.m_numSections; i++) {
        const struct axlf_section_header *h = &top->m_sections[i];
        if (h->m_sectionKind != kind)
            continue;
        size_t at = (size_t)h->m_sectionOffset;
        if (kind == CONNECTIVITY)
            at += offsetof(struct connectivity, m_connection) +
                  offsetof(struct connection, mem_data_index);
        memcpy(bytes + at, &count, sizeof count);
        done = 1;
    }
    assert_true(done);
    f = fopen(damaged_xclbin, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* XRT trusts an xclbin's counts and indices and crashes on damaged ones: the driver checks
 * them first and refuses the file, naming the section. */
static void a_damaged_xclbin_is_refused_before_xrt_reads_it(void **state) {
    char env[700];
    (void)state;

    snprintf(env, sizeof env, "SESSION_DRIVER_XRT_XCLBIN='%s'", damaged_xclbin);
    write_damaged(IP_LAYOUT, 100000);
    run_result_t r = run_with("noop", xilinx_xrt, env, "'" SESSION_DRIVER_TEST "' --abi-only xrt");
    assert_int_equal(r.exit_code, 1); /* a failed check, not a crash */
    ASSERT_HAS(r.output, "(kind 8, 248 bytes) is damaged: its entry count does not fit in it");
    free(r.output);

    write_damaged(CONNECTIVITY, 7);
    r = run_with("noop", xilinx_xrt, env, "'" SESSION_DRIVER_TEST "' --abi-only xrt");
    assert_int_equal(r.exit_code, 1);
    ASSERT_HAS(r.output,
               "connection 0 names compute unit 0 and memory bank 7; the file has 3 "
               "and 2");
    free(r.output);
    unlink(damaged_xclbin);
}

/* DRV-75: the conformance tool's table, memory and copy checks, under noop. */
static void session_driver_test_abi_checks_pass_under_noop(void **state) {
    char env[700], line[1024];
    (void)state;

    snprintf(env, sizeof env, "SESSION_DRIVER_XRT_XCLBIN='%s'", good_xclbin);
    run_result_t r = run_with("noop", xilinx_xrt, env, "'" SESSION_DRIVER_TEST "' --abi-only xrt");
    if (r.exit_code != 0)
        fail_msg("session-driver-test exited %d:\n%s", r.exit_code, r.output);
    assert_null(strstr(r.output, "\nFAIL "));
    ASSERT_HAS(r.output, "PASS  device  open_device xrt:0");
    ASSERT_HAS(r.output, "PASS  memory  alloc and free");
    ASSERT_HAS(r.output, "PASS  copy    round trip h2d, d2d, d2h: 4099 bytes at offset 5");
    ASSERT_HAS(r.output, "PASS  copy    copy_d2d with an offset that wraps is refused");
    ASSERT_HAS(r.output, "PASS  memory  map and unmap");
    assert_true(line_containing(r.output, "checks: ", line, sizeof line));
    assert_non_null(strstr(line, " 0 failed"));
    free(r.output);
}

/* ---------------------------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------------------------- */

static int write_xclbins(void) {
    xclbin_kernel_t good[3], mixed[8];

    xclbin_convention(&good[0], "ses_matmul_f32", "matmul");
    xclbin_convention(&good[1], "ses_add_f32", "binary");
    xclbin_convention(&good[2], "ses_relu_f32", "unary");
    if (xclbin_write(good_xclbin, good, 3) != 0)
        return -1;

    xclbin_convention(&mixed[0], "ses_add_f32", "binary");
    xclbin_convention(&mixed[1], "ses_mul_f32", "unary"); /* 3 arguments for a binary op */
    xclbin_convention(&mixed[2], "ses_sub_f32", "binary");
    mixed[2].bank = 1;
    xclbin_convention(&mixed[3], "ses_frobnicate_f32", "unary");
    xclbin_convention(&mixed[4], "ses_div_i32", "binary");
    xclbin_convention(&mixed[5], "ses_neg_f32", "unary");
    mixed[5].args[2].host_size = 2; /* a 16-bit n */
    xclbin_convention(&mixed[6], "ses_exp_f64", "unary");
    mixed[6].args[2].host_size = 8; /* a 64-bit n is fine */
    xclbin_convention(&mixed[7], "vadd", "binary");
    return xclbin_write(mixed_xclbin, mixed, 8);
}

int main(int argc, char **argv) {
    char lib[600];
    int failed;

    if (argc >= 3 && !strcmp(argv[1], "--child") && !strcmp(argv[2], "session"))
        return child_session(argc > 3 ? argv[3] : NULL);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hardware_mode_without_an_fpga_reports_no_devices_and_why),
        cmocka_unit_test(without_xilinx_xrt_the_driver_says_so_instead_of_aborting),
        cmocka_unit_test(other_environments_that_make_xrt_abort_are_refused),
        cmocka_unit_test(noop_emulation_offers_one_fpga),
        cmocka_unit_test(a_session_on_fpga_0_runs_matmul_through_xrt),
        cmocka_unit_test(without_an_xclbin_every_node_falls_back),
        cmocka_unit_test(the_xclbin_option_is_read_from_the_environment),
        cmocka_unit_test(a_missing_xclbin_fails_the_session_naming_the_file),
        cmocka_unit_test(kernels_that_break_the_convention_are_skipped_with_the_reason),
        cmocka_unit_test(a_damaged_xclbin_is_refused_before_xrt_reads_it),
        cmocka_unit_test(session_driver_test_abi_checks_pass_under_noop),
    };
    self_path = argv[0];
    if (!mkdtemp(work_dir)) {
        perror("mkdtemp");
        return 1;
    }
    /* Debian's libxrt lives in /usr/lib/<triplet>; XRT looks for its shims in
     * $XILINX_XRT/lib, so XILINX_XRT names a folder whose lib is a link to the real one. */
    snprintf(xilinx_xrt, sizeof xilinx_xrt, "%s/xrt", work_dir);
    snprintf(lib, sizeof lib, "%s/lib", xilinx_xrt);
    snprintf(good_xclbin, sizeof good_xclbin, "%s/good.xclbin", work_dir);
    snprintf(mixed_xclbin, sizeof mixed_xclbin, "%s/mixed.xclbin", work_dir);
    snprintf(damaged_xclbin, sizeof damaged_xclbin, "%s/damaged.xclbin", work_dir);
    if (mkdir(xilinx_xrt, 0700) != 0 || symlink(XRT_LIBDIR, lib) != 0 || write_xclbins() != 0) {
        perror("setting up the XILINX_XRT folder and the xclbins");
        return 1;
    }
    setenv("SESSION_ADD_DRIVER_FILES", XRT_MANIFEST, 1);
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(good_xclbin);
    unlink(mixed_xclbin);
    unlink(damaged_xclbin);
    unlink(lib);
    rmdir(xilinx_xrt);
    rmdir(work_dir);
    return failed;
}
