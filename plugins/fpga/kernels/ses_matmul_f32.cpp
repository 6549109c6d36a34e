// ses_matmul_f32: MatMul f32,f32->f32 for libsession's FPGA driver (driver "xrt").
//
// Argument convention (plugins/fpga/README.md): (A, B, C, M, K, N), all row-major:
//   A [M,K], B [K,N] in, C [M,N] out; M, K, N are 32-bit unsigned scalars (K > 0).
// Every pointer goes through one AXI bundle, so all three connect to one memory bank: the
// driver puts every tensor of a plan in one buffer object.
//
// C is computed one row and one tile of TILE columns at a time: the tile accumulates in local
// memory while k walks A's row, so the innermost loop (over the tile) has no loop-carried
// dependency and pipelines at II=1, and B is read in bursts along its rows. Any M, K, N work.
// Summation order per element is k = 0 .. K-1, as the CPU reference does it.
#include <cstdint>

namespace {
constexpr unsigned kTile = 256;
}

extern "C" void ses_matmul_f32(const float *A, const float *B, float *C, unsigned int M,
                               unsigned int K, unsigned int N) {
#pragma HLS INTERFACE m_axi port = A offset = slave bundle = gmem max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = B offset = slave bundle = gmem max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = C offset = slave bundle = gmem max_write_burst_length = 64
#pragma HLS INTERFACE s_axilite port = A
#pragma HLS INTERFACE s_axilite port = B
#pragma HLS INTERFACE s_axilite port = C
#pragma HLS INTERFACE s_axilite port = M
#pragma HLS INTERFACE s_axilite port = K
#pragma HLS INTERFACE s_axilite port = N
#pragma HLS INTERFACE s_axilite port = return

    float acc[kTile];

rows:
    for (unsigned i = 0; i < M; i++) {
    tiles:
        for (unsigned j0 = 0; j0 < N; j0 += kTile) {
            const unsigned width = N - j0 < kTile ? N - j0 : kTile;
        clear:
            for (unsigned jj = 0; jj < kTile; jj++) {
#pragma HLS PIPELINE II = 1
                acc[jj] = 0.0f;
            }
        inner:
            for (unsigned k = 0; k < K; k++) {
                const float a = A[(uint64_t)i * K + k];
            tile:
                for (unsigned jj = 0; jj < width; jj++) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 256
                    acc[jj] += a * B[(uint64_t)k * N + j0 + jj];
                }
            }
        store:
            for (unsigned jj = 0; jj < width; jj++) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 256
                C[(uint64_t)i * N + j0 + jj] = acc[jj];
            }
        }
    }
}
