// ses_relu_f32: Relu f32->f32 for libsession's FPGA driver (driver "xrt").
//
// Argument convention (plugins/fpga/README.md): (X, Y, n): Y[i] = max(X[i], 0) for n elements,
// written as `x < 0 ? 0 : x` so that NaN stays NaN, as the CPU driver computes it. One AXI
// bundle: both pointers in one memory bank.
extern "C" void ses_relu_f32(const float *X, float *Y, unsigned int n) {
#pragma HLS INTERFACE m_axi port = X offset = slave bundle = gmem max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = Y offset = slave bundle = gmem max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = X
#pragma HLS INTERFACE s_axilite port = Y
#pragma HLS INTERFACE s_axilite port = n
#pragma HLS INTERFACE s_axilite port = return

elements:
    for (unsigned i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        const float x = X[i];
        Y[i] = x < 0.0f ? 0.0f : x;
    }
}
