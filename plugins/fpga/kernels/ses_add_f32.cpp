// ses_add_f32: Add f32,f32->f32 for libsession's FPGA driver (driver "xrt").
//
// Argument convention (plugins/fpga/README.md): (A, B, C, n): C[i] = A[i] + B[i] for n
// elements. Equal shapes only: the driver refuses broadcasting Adds (supports_node), so they
// run on another device. C may be the same buffer as A or B (each element is read before it
// is written). One AXI bundle: all pointers in one memory bank.
extern "C" void ses_add_f32(const float *A, const float *B, float *C, unsigned int n) {
#pragma HLS INTERFACE m_axi port = A offset = slave bundle = gmem max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = B offset = slave bundle = gmem max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = C offset = slave bundle = gmem max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = A
#pragma HLS INTERFACE s_axilite port = B
#pragma HLS INTERFACE s_axilite port = C
#pragma HLS INTERFACE s_axilite port = n
#pragma HLS INTERFACE s_axilite port = return

elements:
    for (unsigned i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        C[i] = A[i] + B[i];
    }
}
