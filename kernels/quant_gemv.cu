// quant_gemv.cu — weight-only quantized GEMV / skinny GEMM: Y[m][n] = Σ_k X[m][k] · W[n][k]
// for a batch of M tokens (M = 1, 4, 16, 64) against a Linear weight W of N × K (K contiguous),
// the shape of a decode step's projections.
//
// At small M the product is memory-bound on W: each weight is used M times, so the time is
// roughly W's bytes over the memory bandwidth, and storing W in fewer bits makes it faster in
// proportion — as long as turning the codes back into numbers (in registers, never in memory)
// costs less than the bytes it saves. As M grows each weight does more work and the kernel turns
// compute-bound; there cuBLAS (tensor cores) wins.
//
// Weight formats (all dequantized in registers, math in FP32):
//   bf16   W as BF16 (the unquantized reference rung)
//   int8   W as int8 codes, one FP32 scale per output channel n (w = code · scale[n])
//   int4   W as 4-bit codes (value + 8 stored in a nibble; two per byte, the even k in the low
//          nibble), one FP32 scale per group of 128 consecutive k of a row (w = (code − 8) · s)
//   fp8    W as FP8 E4M3 codes, one FP32 scale per output channel
// X comes in FP32 (its BF16 values converted once: X is 16 KB at M = 1 against W's hundreds of
// MB) and Y is FP32.
//
// One warp per output row n. Lane l reads 16-byte chunks l, l + 32, … of the row (a warp-wide
// load is 512 consecutive bytes), two chunks in flight per lane; the M partial sums per lane
// are reduced with shuffles at the end.

#define FULL_MASK 0xffffffffu

enum { W_BF16 = 0, W_INT8 = 1, W_INT4 = 2, W_FP8 = 3 };

// Values in one 16-byte chunk of each format.
template <int QT>
struct Chunk {
    static constexpr int V = QT == W_BF16 ? 8 : (QT == W_INT4 ? 32 : 16);
};

__device__ __forceinline__ float e4m3_to_f(unsigned b)
{
    // See decode_attention.cu: the E4M3 fields moved into FP32's, then scaled by 2^120.
    return __uint_as_float(((b & 0x7fu) << 20) | ((b & 0x80u) << 24)) * 0x1p120f;
}

// Decode the codes of one chunk into FP32 values (before any scale).
template <int QT>
__device__ __forceinline__ void dequant(uint4 c, float* w)
{
    unsigned u[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        if (QT == W_BF16) {
            w[2 * e] = __uint_as_float(u[e] << 16);
            w[2 * e + 1] = __uint_as_float(u[e] & 0xffff0000u);
        } else if (QT == W_INT4) {
            // 0x4b000000 | q is the float 2^23 + q exactly; subtracting 2^23 + 8 leaves q − 8.
#pragma unroll
            for (int i = 0; i < 8; ++i)
                w[8 * e + i] = __uint_as_float(((u[e] >> (4 * i)) & 0xfu) | 0x4b000000u) - 8388616.0f;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                unsigned byte = (u[e] >> (8 * i)) & 0xffu;
                w[4 * e + i] = QT == W_INT8 ? (float)(signed char)byte : e4m3_to_f(byte);
            }
        }
    }
}

template <int M, int QT>
__device__ __forceinline__ void process_chunk(uint4 code, int c, const float* __restrict__ X,
                                              const float* __restrict__ scales, int row, int k,
                                              float* acc)
{
    constexpr int V = Chunk<QT>::V;
    float w[V];
    dequant<QT>(code, w);
    float gs = 1.0f;
    if (QT == W_INT4) gs = scales[(size_t)row * (k / 128) + (c * V) / 128];
#pragma unroll
    for (int m = 0; m < M; ++m) {
        const float4* x4 = reinterpret_cast<const float4*>(X + (size_t)m * k + (size_t)c * V);
        float p = 0.0f;
#pragma unroll
        for (int i = 0; i < V / 4; ++i) {
            float4 xv = x4[i];
            p += w[4 * i] * xv.x + w[4 * i + 1] * xv.y + w[4 * i + 2] * xv.z + w[4 * i + 3] * xv.w;
        }
        acc[m] += QT == W_INT4 ? p * gs : p;
    }
}

// Rows of W per warp: one. The batch is handled in tiles of MT tokens (MT accumulators per
// lane); a batch larger than the tile (64 with MT = 16) streams the row again per tile — from L2
// more than from HBM, since a warp's row (16 KB in BF16, 4 KB in int4) was just read.
template <int MT, int QT>
__device__ __forceinline__ void qgemv(const uint4* __restrict__ W, const float* __restrict__ scales,
                                      const float* __restrict__ X, float* __restrict__ Y, int M,
                                      int n, int k)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (row >= n) return;  // whole warps leave together
    const int chunks = k / Chunk<QT>::V;
    const uint4* w = W + (size_t)row * chunks;
    const float cs = (QT == W_INT8 || QT == W_FP8) ? scales[row] : 1.0f;
#pragma unroll 1
    for (int m0 = 0; m0 < M; m0 += MT) {
        const float* x = X + (size_t)m0 * k;
        float acc[MT];
#pragma unroll
        for (int m = 0; m < MT; ++m) acc[m] = 0.0f;
        int c = lane;
        for (; c + 32 < chunks; c += 64) {  // two chunks in flight per lane
            uint4 u0 = w[c], u1 = w[c + 32];
            process_chunk<MT, QT>(u0, c, x, scales, row, k, acc);
            process_chunk<MT, QT>(u1, c + 32, x, scales, row, k, acc);
        }
        for (; c < chunks; c += 32) process_chunk<MT, QT>(w[c], c, x, scales, row, k, acc);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            float s = acc[m];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
            if (lane == m % 32) Y[(size_t)(m0 + m) * n + row] = s * cs;
        }
    }
}

// Entry points qgemv_<format>_t<MT>: (W codes, scales or null, X [M][k] FP32, Y [M][n] FP32,
// M, n, k) with M a multiple of MT and k of 128; launch n warps (blocks of 256 threads).
#define QGEMV(fmt, QT, MT)                                                                   \
    extern "C" __global__ void __launch_bounds__(256) qgemv_##fmt##_t##MT(                   \
        const uint4* W, const float* scales, const float* X, float* Y, int M, int n, int k)  \
    {                                                                                        \
        qgemv<MT, QT>(W, scales, X, Y, M, n, k);                                             \
    }
#define QGEMV_TILES(fmt, QT) QGEMV(fmt, QT, 1) QGEMV(fmt, QT, 4) QGEMV(fmt, QT, 16)

QGEMV_TILES(bf16, W_BF16)
QGEMV_TILES(int8, W_INT8)
QGEMV_TILES(int4, W_INT4)
QGEMV_TILES(fp8, W_FP8)
