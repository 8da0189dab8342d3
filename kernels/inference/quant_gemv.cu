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
// One warp per two output rows (R). Lane l reads 16-byte chunks l, l + 32, … of each row (a
// warp-wide load is 512 consecutive bytes), two chunks per row in flight; every X value loaded
// serves both rows; the partial sums per lane are reduced with shuffles at the end.

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

// Rows of W per warp. Two rows share every load of X, halving the L1 traffic of X per weight
// byte (at batch 1 an int4 chunk of 16 bytes needs 128 bytes of FP32 X).
#define R 2

// Chunk c of rows row0 .. row0 + R − 1 (codes `code[r]`) against MT tokens of X.
template <int MT, int QT>
__device__ __forceinline__ void process_chunk(const uint4* code, int c, const float* __restrict__ X,
                                              const float* __restrict__ scales, int row0, int k,
                                              float* acc)
{
    constexpr int V = Chunk<QT>::V;
    float w[R][V];
    float gs[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        dequant<QT>(code[r], w[r]);
        gs[r] = QT == W_INT4 ? scales[(size_t)(row0 + r) * (k / 128) + (c * V) / 128] : 1.0f;
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
        const float4* x4 = reinterpret_cast<const float4*>(X + (size_t)m * k + (size_t)c * V);
        float p[R];
#pragma unroll
        for (int r = 0; r < R; ++r) p[r] = 0.0f;
#pragma unroll
        for (int i = 0; i < V / 4; ++i) {
            float4 xv = x4[i];
#pragma unroll
            for (int r = 0; r < R; ++r)
                p[r] += w[r][4 * i] * xv.x + w[r][4 * i + 1] * xv.y + w[r][4 * i + 2] * xv.z +
                        w[r][4 * i + 3] * xv.w;
        }
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r * MT + m] += QT == W_INT4 ? p[r] * gs[r] : p[r];
    }
}

// R rows of W per warp. The batch is handled in tiles of MT tokens (R·MT accumulators per
// lane); a batch larger than the tile (64 with MT = 16) streams the rows again per tile — from
// L2 more than from HBM, since the warp's rows (16 KB each in BF16, 4 KB in int4) were just read.
template <int MT, int QT>
__device__ __forceinline__ void qgemv(const uint4* __restrict__ W, const float* __restrict__ scales,
                                      const float* __restrict__ X, float* __restrict__ Y, int M,
                                      int n, int k)
{
    int row0 = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * R, lane = threadIdx.x % 32;
    if (row0 >= n) return;  // whole warps leave together; n is a multiple of R
    const int chunks = k / Chunk<QT>::V;
    const uint4* w = W + (size_t)row0 * chunks;
#pragma unroll 1
    for (int m0 = 0; m0 < M; m0 += MT) {
        const float* x = X + (size_t)m0 * k;
        float acc[R * MT];
#pragma unroll
        for (int i = 0; i < R * MT; ++i) acc[i] = 0.0f;
        int c = lane;
        for (; c + 32 < chunks; c += 64) {  // two chunks of each row in flight per lane
            uint4 u0[R], u1[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                u0[r] = w[(size_t)r * chunks + c];
                u1[r] = w[(size_t)r * chunks + c + 32];
            }
            process_chunk<MT, QT>(u0, c, x, scales, row0, k, acc);
            process_chunk<MT, QT>(u1, c + 32, x, scales, row0, k, acc);
        }
        for (; c < chunks; c += 32) {
            uint4 u[R];
#pragma unroll
            for (int r = 0; r < R; ++r) u[r] = w[(size_t)r * chunks + c];
            process_chunk<MT, QT>(u, c, x, scales, row0, k, acc);
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float cs = (QT == W_INT8 || QT == W_FP8) ? scales[row0 + r] : 1.0f;
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                float s = acc[r * MT + m];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
                if (lane == (r * MT + m) % 32) Y[(size_t)(m0 + m) * n + row0 + r] = s * cs;
            }
        }
    }
}

// Entry points qgemv_<format>_t<MT>: (W codes, scales or null, X [M][k] FP32, Y [M][n] FP32,
// M, n, k) with M a multiple of MT, n of R and k of 128; launch n / R warps (blocks of 256
// threads).
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

// ---------------------------------------------------------------------------------------------
// int4_fast: the same int4 codes and group scales, built for memory bandwidth.
//
// Reading the int4 rung above on the H100: it issues as many X loads per second as the BF16
// rung but moves a quarter of the weight bytes per X load, and each of those loads is
// scattered (lane l reads 128 contiguous bytes of X, 32 lanes 32 different cache lines).
// Two changes remove that:
//   1. The codes are reordered once on the host (as Marlin- or AWQ-style kernels repack their
//      weights offline): in each 512-byte block of a row (1024 k), nibble i of 32-bit word e of
//      lane l's 16 bytes holds k = 128·j + 4·l + t with j = 2e + i / 4 and t = i mod 4. For a
//      fixed j the warp's X reads are then 512 consecutive bytes (one coalesced float4 load),
//      and each float4 of X lies in a single scale group (group = block·8 + j).
//   2. Four rows per warp (RF) share every X load, loads go through the read-only path
//      (__ldg of uint4), and the next block of every row is loaded before the current one is
//      computed, so 2 × RF × 16 bytes per lane are in flight.
// The batch is tiled as above: MT tokens' accumulators live in registers, so each weight is
// read once per tile of MT tokens.
// ---------------------------------------------------------------------------------------------

// Rows of W per warp in int4_fast.
#define RF 4

template <int MT>
__device__ __forceinline__ void int4_fast_block(const uint4* u, const float4* s, const float* x,
                                                int k, int kb, int lane, float* acc)
{
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        float w[RF][4];
#pragma unroll
        for (int r = 0; r < RF; ++r) {
            const unsigned word = j / 2 == 0 ? u[r].x : j / 2 == 1 ? u[r].y : j / 2 == 2 ? u[r].z : u[r].w;
#pragma unroll
            for (int t = 0; t < 4; ++t)
                w[r][t] = __uint_as_float(((word >> (4 * (4 * (j % 2) + t))) & 0xfu) | 0x4b000000u) -
                          8388616.0f;
        }
        float sc[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) {
            const float4 s4 = s[2 * r + j / 4];
            const int q = j % 4;
            sc[r] = q == 0 ? s4.x : q == 1 ? s4.y : q == 2 ? s4.z : s4.w;
        }
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            const float4 xv =
                __ldg(reinterpret_cast<const float4*>(x + (size_t)m * k + kb + 128 * j + 4 * lane));
#pragma unroll
            for (int r = 0; r < RF; ++r)
                acc[r * MT + m] +=
                    sc[r] * (w[r][0] * xv.x + w[r][1] * xv.y + w[r][2] * xv.z + w[r][3] * xv.w);
        }
    }
}

template <int MT>
__device__ __forceinline__ void int4_fast(const uint4* __restrict__ W,
                                          const float* __restrict__ scales,
                                          const float* __restrict__ X, float* __restrict__ Y,
                                          int M, int n, int k)
{
    int row0 = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * RF, lane = threadIdx.x % 32;
    if (row0 >= n) return;  // whole warps leave together; n is a multiple of RF
    const int chunks = k / 32, groups = k / 128;  // 16-byte chunks and scale groups per row
    const uint4* w = W + (size_t)row0 * chunks + lane;
#pragma unroll 1
    for (int m0 = 0; m0 < M; m0 += MT) {
        const float* x = X + (size_t)m0 * k;
        float acc[RF * MT];
#pragma unroll
        for (int i = 0; i < RF * MT; ++i) acc[i] = 0.0f;
        uint4 cur[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) cur[r] = __ldg(w + (size_t)r * chunks);
#pragma unroll 1
        for (int b = 0; b < chunks; b += 32) {  // one 512-byte block (1024 k) of each row per step
            uint4 nxt[RF];
            const int bn = b + 32 < chunks ? b + 32 : b;  // the last step reloads its own block
#pragma unroll
            for (int r = 0; r < RF; ++r) nxt[r] = __ldg(w + (size_t)r * chunks + bn);
            float4 s[2 * RF];  // the 8 group scales of this block, per row (32-byte aligned)
#pragma unroll
            for (int r = 0; r < RF; ++r) {
                const float4* s4 =
                    reinterpret_cast<const float4*>(scales + (size_t)(row0 + r) * groups + b / 4);
                s[2 * r] = __ldg(s4);
                s[2 * r + 1] = __ldg(s4 + 1);
            }
            int4_fast_block<MT>(cur, s, x, k, 32 * b, lane, acc);
#pragma unroll
            for (int r = 0; r < RF; ++r) cur[r] = nxt[r];
        }
#pragma unroll
        for (int r = 0; r < RF; ++r) {
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                float v = acc[r * MT + m];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
                if (lane == (r * MT + m) % 32) Y[(size_t)(m0 + m) * n + row0 + r] = v;
            }
        }
    }
}

// Entry points qgemv_int4_fast_t<MT>: as above, with the codes in the reordered layout, M a
// multiple of MT, n of RF and k of 1024; launch n / RF warps (blocks of 256 threads).
#define QGEMV_FAST(MT)                                                                       \
    extern "C" __global__ void __launch_bounds__(256) qgemv_int4_fast_t##MT(                 \
        const uint4* W, const float* scales, const float* X, float* Y, int M, int n, int k)  \
    {                                                                                        \
        int4_fast<MT>(W, scales, X, Y, M, n, k);                                             \
    }
QGEMV_FAST(1)
QGEMV_FAST(4)
QGEMV_FAST(16)

// int8_fast: the same reordering for the int8 codes (per-channel scale). In each 512-byte block
// of a row (512 k), byte t of 32-bit word e of lane l's 16 bytes holds k = 128·e + 4·l + t, so
// the X float4 of word e is again one coalesced warp load. Four rows per warp, next block
// prefetched; the codes become floats with the magic-number trick (no int-to-float
// conversions, which issue at a fraction of the FMA rate); M a multiple of MT, n of RF and k
// of 512; launch n / RF warps.
template <int MT>
__device__ __forceinline__ void int8_fast(const uint4* __restrict__ W,
                                          const float* __restrict__ scales,
                                          const float* __restrict__ X, float* __restrict__ Y,
                                          int M, int n, int k)
{
    int row0 = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * RF, lane = threadIdx.x % 32;
    if (row0 >= n) return;  // whole warps leave together; n is a multiple of RF
    const int chunks = k / 16;  // 16-byte chunks per row
    const uint4* w = W + (size_t)row0 * chunks + lane;
#pragma unroll 1
    for (int m0 = 0; m0 < M; m0 += MT) {
        const float* x = X + (size_t)m0 * k;
        float acc[RF * MT];
#pragma unroll
        for (int i = 0; i < RF * MT; ++i) acc[i] = 0.0f;
        uint4 cur[RF];
#pragma unroll
        for (int r = 0; r < RF; ++r) cur[r] = __ldg(w + (size_t)r * chunks);
#pragma unroll 1
        for (int b = 0; b < chunks; b += 32) {  // one 512-byte block (512 k) of each row per step
            uint4 nxt[RF];
            const int bn = b + 32 < chunks ? b + 32 : b;
#pragma unroll
            for (int r = 0; r < RF; ++r) nxt[r] = __ldg(w + (size_t)r * chunks + bn);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float wv[RF][4];
#pragma unroll
                for (int r = 0; r < RF; ++r) {
                    const unsigned word = e == 0 ? cur[r].x : e == 1 ? cur[r].y : e == 2 ? cur[r].z : cur[r].w;
#pragma unroll
                    for (int t = 0; t < 4; ++t)  // int8 c: 2^23 + (c + 128) exactly, minus 2^23 + 128
                        wv[r][t] = __uint_as_float((((word >> (8 * t)) & 0xffu) ^ 0x80u) | 0x4b000000u) -
                                   8388736.0f;
                }
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    const float4 xv = __ldg(
                        reinterpret_cast<const float4*>(x + (size_t)m * k + 16 * b + 128 * e + 4 * lane));
#pragma unroll
                    for (int r = 0; r < RF; ++r)
                        acc[r * MT + m] += wv[r][0] * xv.x + wv[r][1] * xv.y + wv[r][2] * xv.z + wv[r][3] * xv.w;
                }
            }
#pragma unroll
            for (int r = 0; r < RF; ++r) cur[r] = nxt[r];
        }
#pragma unroll
        for (int r = 0; r < RF; ++r) {
            const float cs = scales[row0 + r];
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                float v = acc[r * MT + m];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
                if (lane == (r * MT + m) % 32) Y[(size_t)(m0 + m) * n + row0 + r] = v * cs;
            }
        }
    }
}

#define QGEMV_FAST8(MT)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) qgemv_int8_fast_t##MT(                 \
        const uint4* W, const float* scales, const float* X, float* Y, int M, int n, int k)  \
    {                                                                                        \
        int8_fast<MT>(W, scales, X, Y, M, n, k);                                             \
    }
QGEMV_FAST8(1)
QGEMV_FAST8(4)
QGEMV_FAST8(16)
