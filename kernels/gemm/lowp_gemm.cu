// lowp_gemm.cu — 8-bit GEMMs on Hopper's tensor cores: FP8 E4M3 (W8A8 FP8) and INT8 (W8A8 INT8),
// built on the persistent BF16 rung (tc_gemm_persistent.cu) with the inputs narrowed to one byte.
//
// What changes from BF16, and why so little does:
// - A k-slice of the ring is 128 one-byte values per row instead of 64 BF16: still one 128-byte
//   swizzled row, so the TMA boxes, the ring's bytes and the wgmma descriptors are the BF16
//   rung's (persistent_gemm.cuh's ring is reused as is). Each slice carries twice the K.
// - The instruction is wgmma m64n256k32 (lowp_wgmma.cuh): twice the multiply-adds per issue, which
//   is where 8-bit's 2× tensor throughput comes from. Both operands must be K-major.
// - Accumulators: FP32 for FP8, INT32 for INT8 (exact).
// - The epilogue scales. W8A8 stores codes q with scales s (x ≈ s·q): a product of two quantized
//   matrices is (s_a · s_b) · Σ q_a q_b, so the tensor cores multiply codes and the scales are
//   applied once per output element on the way out. FP8 takes either one scale per tensor
//   (`rowwise` = 0: sa[0] · sb[0], what cuBLASLt's A/B scale pointers mean) or one per row of A
//   (a token) times one per row of Bᵀ (an output channel) (`rowwise` = 1). Its output is BF16, as
//   an inference layer writes it. INT8 writes the raw INT32 sums (cuBLASLt's INT8 output, so the
//   two do the same work); its scaling is the same epilogue arithmetic.
//
// Layout: A is M × K row-major, Bᵀ is N × K row-major (a Linear layer's weight), C is M × N
// row-major. Launch: 384 threads (a producer warpgroup + 2 consumer warpgroups), PG_SMEM bytes of
// dynamic shared memory, a 1-D grid of min(SMs, tiles) blocks. Tensor maps: A in boxes of 128 rows
// × 128 bytes, Bᵀ in 256 × 128, 128-byte swizzle; C in boxes of 128 rows × 128 bytes (64 BF16 or
// 32 INT32 columns), 128-byte swizzle. Needs M % 128, N % 256, K % 128.

typedef unsigned short bf16_t;

// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDesc {
    unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

#include "wgmma_gemm.cuh"  // tile order, smem descriptor, FP32 accumulator fence

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper_sync.cuh"      // mbarriers and TMA
#include "persistent_gemm.cuh"  // the ring (sizes, layout, barriers), shared with the BF16 rungs
#include "lowp_wgmma.cuh"       // the FP8 and INT8 wgmma

// One-byte values per k-slice: one 128-byte swizzled row (BF16's PG_BK = 64 fills the same row).
#define LP_BK 128

extern __shared__ unsigned char lp_smem[];

// The producer's step for slice g (as pg_load, with TMA coordinates counted in one-byte values).
__device__ __forceinline__ void lp_load(const PgRing& r, int g, int kt, int tm, int tn,
                                        const TmaDesc* tmA, const TmaDesc* tmB)
{
    int s = g % PG_STAGES;
    if (g >= PG_STAGES) mbar_wait(r.empty + 8 * s, ((g / PG_STAGES) - 1) & 1);
    mbar_expect_tx(r.full + 8 * s, PG_A_BYTES + PG_B_BYTES);
    tma_load_2d(r.sA + s * PG_A_BYTES, tmA, r.full + 8 * s, kt * LP_BK, tm * PG_BM);
    tma_load_2d(r.sB + s * PG_B_BYTES, tmB, r.full + 8 * s, kt * LP_BK, tn * PG_BN);
}

// Consumer warpgroup c: accumulate the next n slices into d (FP32 or INT32: lowp_mma picks the
// instruction by the accumulator type), one slice kept in flight, every stage given back.
template <typename Acc>
__device__ __forceinline__ void lp_consume(const PgRing& r, Acc* d, int n, int& g, int c,
                                           bool warp_leader)
{
    for (int i = 0; i < n; ++i, ++g) {
        int s = g % PG_STAGES;
        mbar_wait(r.full + 8 * s, (g / PG_STAGES) & 1);
        fence_acc(d);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        unsigned a = r.sA + s * PG_A_BYTES + c * 64 * 128;
        unsigned b = r.sB + s * PG_B_BYTES;
#pragma unroll
        for (int kk = 0; kk < LP_BK / 32; ++kk)  // 4 instructions of K = 32, 32 bytes apart
            lowp_mma(d, wgmma_desc(a + 32 * kk), wgmma_desc(b + 32 * kk), (i > 0 || kk > 0) ? 1 : 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        fence_acc(d);
        if (i > 0 && warp_leader) mbar_arrive(r.empty + 8 * ((g - 1) % PG_STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    fence_acc(d);
    if (warp_leader) mbar_arrive(r.empty + 8 * ((g - 1) % PG_STAGES));
}

// Two floats to a BF16 pair, round to nearest even; `lo` lands at the lower address.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi)
{
    unsigned p;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    return p;
}

// Send staging half `half` (128 rows × 128 bytes) to C at (row0, col0) through the TMA engine.
// Every consumer thread calls it after writing its part; one thread issues the copy.
__device__ __forceinline__ void lp_send(const TmaDesc* tmC, unsigned half, int col0, int row0)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 256;" ::: "memory");
    if (threadIdx.x == 128) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(reinterpret_cast<unsigned long long>(tmC)), "r"(col0), "r"(row0),
                     "r"(half)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}

// Wait until the staging half used two boxes ago has been read by the copy engine.
__device__ __forceinline__ unsigned lp_half(unsigned stage, unsigned q)
{
    if (threadIdx.x == 128) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    asm volatile("bar.sync 1, 256;" ::: "memory");
    return stage + (q & 1) * PG_BOX_BYTES;
}

// FP8 epilogue: scale, round to BF16 and store the tile in 4 boxes of 128 rows × 64 columns.
// Thread layout as store_tile_tma (persistent_gemm.cuh): rows r0 and r0 + 8, and per 8-column
// group j the columns 8j + 2t and + 1. In a box row (128 bytes) the pair sits in 16-byte chunk
// j % 8 at byte 4t; the chunk index is XORed with row % 8 (the 128-byte swizzle), so the 8 rows
// a warp's store touches fall in 8 different chunks: no bank conflicts.
__device__ __forceinline__ void lp_store(const TmaDesc* tmC, unsigned stage, int tm, int tn, int c,
                                         const float* d, unsigned& q, const float* sa,
                                         const float* sb, int rowwise)
{
    int w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, t = lane % 4;
    int r0 = c * 64 + w * 16 + lane / 4;
    float row_s[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) row_s[h] = rowwise ? sa[tm * PG_BM + r0 + 8 * h] : sa[0] * sb[0];
#pragma unroll
    for (int box = 0; box < 4; ++box, ++q) {
        unsigned half = lp_half(stage, q);
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) {
            int j = 8 * box + jj, col = tn * PG_BN + 8 * j + 2 * t;
            float c0 = rowwise ? sb[col] : 1.0f, c1 = rowwise ? sb[col + 1] : 1.0f;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = r0 + 8 * h;
                unsigned addr = half + r * 128 + ((jj ^ (r % 8)) * 16) + 4 * t;
                unsigned v = pack_bf16(d[4 * j + 2 * h] * row_s[h] * c0,
                                       d[4 * j + 2 * h + 1] * row_s[h] * c1);
                asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
            }
        }
        lp_send(tmC, half, tn * PG_BN + 64 * box, tm * PG_BM);
    }
}

// INT8 epilogue: the raw INT32 sums in 8 boxes of 128 rows × 32 columns (the FP32 rung's
// epilogue with integer registers; the scales are not applied, as cuBLASLt's INT32 output).
__device__ __forceinline__ void lp_store(const TmaDesc* tmC, unsigned stage, int tm, int tn, int c,
                                         const int* d, unsigned& q, const float*, const float*, int)
{
    int w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, t = lane % 4;
    int r0 = c * 64 + w * 16 + lane / 4;
#pragma unroll
    for (int box = 0; box < 8; ++box, ++q) {
        unsigned half = lp_half(stage, q);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            int j = 4 * box + jj;
            unsigned chunk = 2 * jj + t / 2, within = (t % 2) * 8;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = r0 + 8 * h;
                unsigned addr = half + r * 128 + ((chunk ^ (r % 8)) * 16) + within;
                asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(d[4 * j + 2 * h]),
                             "r"(d[4 * j + 2 * h + 1])
                             : "memory");
            }
        }
        lp_send(tmC, half, tn * PG_BN + 32 * box, tm * PG_BM);
    }
}

// The persistent loop of tc_gemm_persistent.cu with 8-bit slices: the producer walks every tile
// of this block and fills the ring across tile boundaries, the consumers accumulate and store.
template <typename Acc>
__device__ __forceinline__ void lowp_gemm(int M, int N, int K, const TmaDesc* tmA,
                                          const TmaDesc* tmB, const TmaDesc* tmC, const float* sa,
                                          const float* sb, int rowwise)
{
    PgRing ring = pg_ring(lp_smem);
    int tiles_m = M / PG_BM, tiles_n = N / PG_BN, tiles = tiles_m * tiles_n;
    int KT = K / LP_BK;
    int wg = threadIdx.x / 128;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int g = 0;
            for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
                int tm, tn;
                tile_of(u, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < KT; ++kt, ++g) lp_load(ring, g, kt, tm, tn, tmA, tmB);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int c = wg - 1;
        bool warp_leader = threadIdx.x % 32 == 0;
        Acc d[128];
        int g = 0;
        unsigned q = 0;
        for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
            int tm, tn;
            tile_of(u, tiles_m, tiles_n, tm, tn);
            lp_consume(ring, d, KT, g, c, warp_leader);
            lp_store(tmC, ring.stage, tm, tn, c, d, q, sa, sb, rowwise);
        }
        if (threadIdx.x == 128) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// FP8 E4M3 codes in, BF16 out: C = scale ⊙ (A_q · B_qᵀ), FP32 accumulation on the tensor cores.
// sa, sb: one FP32 scale each (rowwise = 0) or M and N of them (rowwise = 1).
extern "C" __global__ void __launch_bounds__(384, 1)
    fp8_wgmma(int M, int N, int K, const __grid_constant__ TmaDesc tmA,
              const __grid_constant__ TmaDesc tmB, const __grid_constant__ TmaDesc tmC,
              const float* sa, const float* sb, int rowwise)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    lowp_gemm<float>(M, N, K, &tmA, &tmB, &tmC, sa, sb, rowwise);
#endif
    // Built without sm_90a the kernel writes nothing: C keeps its NaN poison and fails its check.
}

// INT8 codes in, INT32 sums out: C = A_q · B_qᵀ, exact.
extern "C" __global__ void __launch_bounds__(384, 1)
    int8_wgmma(int M, int N, int K, const __grid_constant__ TmaDesc tmA,
               const __grid_constant__ TmaDesc tmB, const __grid_constant__ TmaDesc tmC)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    lowp_gemm<int>(M, N, K, &tmA, &tmB, &tmC, nullptr, nullptr, 0);
#endif
}
