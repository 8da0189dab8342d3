// quant_gemv_mma.cu — the int4 weight-only GEMV (Y[m][n] = Σ_k X[m][k] · W[n][k], W as 4-bit
// codes with one FP32 scale per group of 128 k, as in quant_gemv.cu) on the tensor cores, and
// the same kernel for INT8 and FP8 codes with per-row scales (below the int4 decode).
//
// Why tensor cores at batch 1, where there is almost nothing to multiply: the CUDA-core int4
// rungs spend four or five instructions per weight (unpack the nibble, make it a float,
// subtract, multiply-add), so at 0.6 bytes per weight the SMs run out of issue slots before
// HBM runs out of bytes. Here every instruction serves many weights:
//   * a 32-bit word of 8 codes becomes four half2 registers in 9 instructions (the LOP3 trick:
//     (q & 0x000f000f) | 0x64006400 is the half2 (1024 + q_lo, 1024 + q_hi), and one HSUB2 of
//     1024 + 8 leaves q − 8; the codes one nibble up are taken as 16·q and fixed by one HFMA2);
//   * those registers are directly the A fragment of mma.m16n8k16 (16 rows × 16 k), because the
//     host stored the codes in that order (repack_int4_mma in qgemv_layout.rs), so one MMA does
//     256 weights against 8 tokens of X — at batch 1 seven of the eight columns are wasted,
//     which costs nothing: the tensor cores are idle anyway;
//   * the MMA accumulates in FP32, one group (128 k, 8 MMAs) at a time, and the group's sum is
//     multiplied by its FP32 scale: the products are exact (FP16 codes − 8 times FP16 X), so
//     the result is as accurate as the FP32 CUDA-core rungs.
// X (FP32 in memory) is rounded to FP16 for the MMA; its values are BF16, which FP16 holds
// exactly from 2^−14 to 65504.
//
// Keeping HBM busy: a block owns one tile of 16 rows and its 8 warps split K (each warp a
// contiguous run of groups); the warps' sums meet in shared memory at the end. Each warp streams
// its codes and scales — and, at one token, the X values they multiply — with cp.async into
// its own ring of NST one-group stages in shared memory, so several KB per warp are in flight
// without holding registers, and a lane reads back exactly the 32 bytes of codes it copied (no
// barrier; the scales and X, copied by other lanes, need a __syncwarp). The weight copies carry
// an L2 evict-first hint (see evict_first_policy).
//
// The stored layout (bytes): the 1 KB block of 16-row tile T and group j at (T · k/128 + j) ·
// 1024; in it, lane l's 32-bit word for k-step s (16 k) at (s / 4) · 512 + l · 16 + (s mod 4) ·
// 4, so every copy is a coalesced 512-byte warp transfer. With g = l / 4 and t = l mod 4, nibble
// i of that word holds row 16T + g + 8·(i mod 2), column 128j + 16s + 4t + 2·((i / 2) mod 2) +
// i / 4: the k order inside a k-step is renumbered (a sum does not care) so that the four X
// values of a lane's B fragment are one float4.

#define FULL_MASK 0xffffffffu

// Shape of the tensor-core GEMV: rows per tile (the MMA's M).
#define MMA_ROWS 16

__device__ __forceinline__ unsigned lop_and_or(unsigned a, unsigned b, unsigned c)
{
    unsigned d;  // (a & b) | c
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ unsigned hsub2(unsigned a, unsigned b)
{
    unsigned d;
    asm("sub.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
__device__ __forceinline__ unsigned hfma2(unsigned a, unsigned b, unsigned c)
{
    unsigned d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
// half2 with `lo` in the low half.
__device__ __forceinline__ unsigned pack_half2(float lo, float hi)
{
    unsigned d;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// The 8 codes of one word → the A fragment (a0..a3) of one k-step, values q − 8 in FP16.
__device__ __forceinline__ void dequant_a(unsigned u, unsigned* a)
{
    const unsigned magic = 0x64006400u;  // half2 (1024, 1024)
    const unsigned u2 = u >> 8;
    a[0] = hsub2(lop_and_or(u, 0x000f000fu, magic), 0x64086408u);   // − (1024 + 8)
    a[2] = hsub2(lop_and_or(u2, 0x000f000fu, magic), 0x64086408u);
    // (1024 + 16q) · 1/16 − 72 = q − 8
    a[1] = hfma2(lop_and_or(u, 0x00f000f0u, magic), 0x2c002c00u, 0xd480d480u);
    a[3] = hfma2(lop_and_or(u2, 0x00f000f0u, magic), 0x2c002c00u, 0xd480d480u);
}

__device__ __forceinline__ void mma_f16(float* d, const unsigned* a, unsigned b0, unsigned b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned word_of(const uint4& v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// ---------------------------------------------------------------------------------------------
// The same kernel for 8-bit weights (INT8 or FP8 E4M3 codes, one FP32 scale per output row).
// The CUDA-core 8-bit rungs in quant_gemv.cu do an FMA per weight per token, so from a few
// tokens on they are bound by FMAs, not bytes; here a code becomes an FP16 operand of the same
// MMA, exactly (INT8 −128..127 and every E4M3 value are FP16 numbers), and the row's scale is
// applied once, to the finished sum. Layout (repack_w8_mma in qgemv_layout.rs): the 2 KB block
// of tile T and group j at (T · k/128 + j) · 2048; in it, lane l's 8 bytes for k-step s at
// (s / 2) · 512 + l · 16 + (s mod 2) · 8: bytes 0–3 are row 16T + g, columns
// 128j + 16s + 4t + 0..3, bytes 4–7 the same columns of row 16T + g + 8 — the int4 layout's
// k order, so the B fragment (one float4 of X) is the same.
enum { Q4 = 0, Q8 = 1, QFP8 = 2 };

__device__ __forceinline__ unsigned e4m3x2_to_half2(unsigned v)
{
    unsigned d;  // the low byte becomes the low half
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"((unsigned short)v));
    return d;
}

// Two words (rows g and g + 8, four consecutive k each) → the A fragment, in FP16.
template <int QF>
__device__ __forceinline__ void dequant8(unsigned w0, unsigned w1, unsigned* a)
{
    if constexpr (QF == Q8) {
        // code c: byte c + 128 under 0x64 is the FP16 number 1024 + c + 128; minus 1152 is c.
        const unsigned hi = 0x64646464u, bias = 0x64806480u, x0 = w0 ^ 0x80808080u,
                       x1 = w1 ^ 0x80808080u;
        a[0] = hsub2(__byte_perm(x0, hi, 0x4140), bias);
        a[2] = hsub2(__byte_perm(x0, hi, 0x4342), bias);
        a[1] = hsub2(__byte_perm(x1, hi, 0x4140), bias);
        a[3] = hsub2(__byte_perm(x1, hi, 0x4342), bias);
    } else {
        a[0] = e4m3x2_to_half2(w0 & 0xffffu);
        a[2] = e4m3x2_to_half2(w0 >> 16);
        a[1] = e4m3x2_to_half2(w1 & 0xffffu);
        a[3] = e4m3x2_to_half2(w1 >> 16);
    }
}

// X's share of a ring stage: the XT tokens' 128 FP32 values of each of U groups (512 bytes per
// token and group), or nothing (XT = 0: the t4 and t16 entries read X through L1, since four
// or sixteen tokens' X would double or multiply the ring's shared memory).
template <int U, int XT>
struct XSlot {
    float4 x[U][XT][32];
};
template <int U>
struct XSlot<U, 0> {
};

// One stage of a warp's ring in shared memory: for each of TW tiles and U groups, the 1 KB of
// int4 codes (lane l's two 16-byte pieces at l and 32 + l, as in global memory) or 2 KB of
// 8-bit codes (four pieces), the 16 rows' group scales (int4 only; group-major: [u][row]); and,
// with XT > 0, the slice of X those groups multiply.
template <int TW, int U, int XT, int QF>
struct Ring : XSlot<U, XT> {
    uint4 w[TW][U][QF == Q4 ? 64 : 128];
    float s[TW][U][MMA_ROWS];
};

// An L2 policy that marks lines evict-first: each weight byte is read once, so the codes should
// recycle their own L2 lines instead of pushing out everything else (in the benchmark that is
// the dirty flush buffer, whose write-back would otherwise share HBM with the weight stream).
__device__ __forceinline__ unsigned long long evict_first_policy()
{
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, unsigned long long policy)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
                 "l"(policy));
}
__device__ __forceinline__ void cp_async16_keep(void* dst, const void* src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// Start copying the codes and scales of groups j … j + U − 1 into a ring slot. Each lane copies
// the 32 bytes of codes per group that it will read itself; lanes 0–15 copy the scales; with
// XT > 0 lane l also copies float4 l of each token's 128 X values of the group (X is read by
// every block, so it keeps the default L2 policy). Why X goes through the ring at all: read
// with plain loads, a group's X comes from L2 only when the warp starts on that group, and the
// MMAs wait on it — Nsight Compute showed warps stalled on those loads half the time and DRAM
// at under half its bandwidth at the down projection's shape. In the ring it arrives NST
// stages early, with the codes.
template <int TW, int U, int XT, int QF>
__device__ __forceinline__ void issue_stage(const uint4* __restrict__ W,
                                           const float* __restrict__ scales,
                                           const float* __restrict__ X, int tok0, int k,
                                           int tile0, int groups, int j, int lane,
                                           unsigned long long policy, Ring<TW, U, XT, QF>& slot)
{
    constexpr int CH = QF == Q4 ? 64 : 128;  // 16-byte pieces per tile and group
    if constexpr (XT > 0) {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int tt = 0; tt < XT; ++tt)
                cp_async16_keep(&slot.x[u][tt][lane], X + (size_t)(tok0 + tt) * k + 128 * (j + u) + 4 * lane);
    }
#pragma unroll
    for (int tw = 0; tw < TW; ++tw) {
        const uint4* blk = W + ((size_t)(tile0 + tw) * groups + j) * CH + lane;
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int c = 0; c < CH / 32; ++c)
                cp_async16(&slot.w[tw][u][lane + 32 * c], blk + CH * u + 32 * c, policy);
        if (QF == Q4 && lane < MMA_ROWS) {
            const float* sr = scales + ((size_t)(tile0 + tw) * MMA_ROWS + lane) * groups + j;
#pragma unroll
            for (int u = 0; u < U; ++u) cp_async4(&slot.s[tw][u][lane], sr + u);
        }
    }
}

// NB n-blocks of 8 tokens per MMA column set; TOK tokens are real per pass (1, 4 or 8·NB: the
// lanes of token columns ≥ TOK load the last real token and their sums are dropped). X comes
// from the slot (XT > 0, NB = 1: this lane's token is xt) or through L1 from xr.
template <int NB, int TW, int U, int XT, int QF>
__device__ __forceinline__ void compute_stage(const Ring<TW, U, XT, QF>& st,
                                              const float* const* xr, int xt, int j, int lane,
                                              float (*acc)[NB][4])
{
    const int g = lane >> 2;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        float c[TW][NB][4];
#pragma unroll
        for (int tw = 0; tw < TW; ++tw)
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) c[tw][nb][e] = 0.0f;
#pragma unroll
        for (int s = 0; s < 8; ++s) {
            unsigned b[NB][2];
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
                float4 x;
                if constexpr (XT > 0)
                    x = st.x[u][xt][4 * s + (lane & 3)];
                else
                    x = __ldg(reinterpret_cast<const float4*>(xr[nb] + 128 * (j + u) + 16 * s));
                b[nb][0] = pack_half2(x.x, x.y);
                b[nb][1] = pack_half2(x.z, x.w);
            }
#pragma unroll
            for (int tw = 0; tw < TW; ++tw) {
                unsigned a[4];
                if constexpr (QF == Q4) {
                    dequant_a(word_of(st.w[tw][u][lane + 32 * (s / 4)], s % 4), a);
                } else {
                    const uint4 v = st.w[tw][u][lane + 32 * (s / 2)];
                    dequant8<QF>(s % 2 ? v.z : v.x, s % 2 ? v.w : v.y, a);
                }
#pragma unroll
                for (int nb = 0; nb < NB; ++nb) mma_f16(c[tw][nb], a, b[nb][0], b[nb][1]);
            }
        }
#pragma unroll
        for (int tw = 0; tw < TW; ++tw)
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
                // int4: the group's scale; 8-bit: the row's, applied at the end
                const float s0 = QF == Q4 ? st.s[tw][u][g] : 1.0f;
                const float s1 = QF == Q4 ? st.s[tw][u][g + 8] : 1.0f;
                acc[tw][nb][0] += s0 * c[tw][nb][0];
                acc[tw][nb][1] += s0 * c[tw][nb][1];
                acc[tw][nb][2] += s1 * c[tw][nb][2];
                acc[tw][nb][3] += s1 * c[tw][nb][3];
            }
    }
}

template <int QF, int NB, int TOK, int S, int TW, int U, int NST>
__device__ __forceinline__ void mma_gemv(const uint4* __restrict__ W,
                                         const float* __restrict__ scales,
                                         const float* __restrict__ X, float* __restrict__ Y,
                                         int M, int n, int k)
{
    constexpr int COLS = 8 * NB, XT = TOK == 1 ? 1 : 0;  // X in the ring at one token
    __shared__ Ring<TW, U, XT, QF> ring[S][NST];
    __shared__ float red[S][TW * MMA_ROWS][COLS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int groups = k / 128, per = groups / S, j0 = warp * per, stages = per / U;
    const int tile0 = blockIdx.x * TW;
    Ring<TW, U, XT, QF>* my = ring[warp];
    const int xt = g < TOK ? g : TOK - 1;  // this lane's token in the slot (XT > 0)
    const unsigned long long policy = evict_first_policy();
#pragma unroll 1
    for (int m0 = 0; m0 < M; m0 += TOK) {
        const float* xr[NB];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
            const int tok = 8 * nb + g < TOK ? 8 * nb + g : TOK - 1;
            xr[nb] = X + (size_t)(m0 + tok) * k + 4 * t;
        }
        float acc[TW][NB][4];
#pragma unroll
        for (int tw = 0; tw < TW; ++tw)
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[tw][nb][e] = 0.0f;
        // NST stages in flight per warp; a group is committed per stage even when empty, so
        // that wait_group<NST − 1> always means "stage i has landed".
#pragma unroll
        for (int i = 0; i < NST; ++i) {
            if (i < stages)
                issue_stage<TW, U, XT, QF>(W, scales, X, m0, k, tile0, groups, j0 + i * U,
                                           lane, policy, my[i]);
            cp_async_commit();
        }
#pragma unroll 1
        for (int i = 0; i < stages; ++i) {
            cp_async_wait<NST - 1>();
            __syncwarp();  // the scales were copied by other lanes
            const int slot = i % NST;
            compute_stage<NB, TW, U, XT, QF>(my[slot], xr, xt, j0 + i * U, lane, acc);
            __syncwarp();  // every lane is done with the slot before it is refilled
            if (i + NST < stages)
                issue_stage<TW, U, XT, QF>(W, scales, X, m0, k, tile0, groups,
                                           j0 + (i + NST) * U, lane, policy, my[slot]);
            cp_async_commit();
        }
        // The S warps' sums of each (row, token) meet in shared memory.
#pragma unroll
        for (int tw = 0; tw < TW; ++tw)
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
                float* r = &red[warp][tw * MMA_ROWS + g][8 * nb + 2 * t];
                r[0] = acc[tw][nb][0];
                r[1] = acc[tw][nb][1];
                r[8 * COLS] = acc[tw][nb][2];
                r[8 * COLS + 1] = acc[tw][nb][3];
            }
        __syncthreads();
        for (int i = threadIdx.x; i < TW * MMA_ROWS * TOK; i += S * 32) {
            const int row = i / TOK, tok = i % TOK;
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < S; ++w) v += red[w][row][tok];
            const size_t r = (size_t)tile0 * MMA_ROWS + row;
            Y[(size_t)(m0 + tok) * n + r] = QF == Q4 ? v : v * scales[r];
        }
        __syncthreads();
    }
}

// Warps per block (splitting K), 16-row tiles per block, groups per ring stage, stages per
// ring (MMA_NST1 at one token, where X rides in the ring too, MMA_NST else), and the blocks per
// SM the register allocation must allow. Stages: at one token, 2 deep was as fast as 3 or 4 on
// the H200 (tools/gpu/qgemv_sweep.cu) and keeps the static shared memory at 30 KB. (Guarded so
// that a standalone harness can compile other shapes of the same kernel; the generator uses
// these.)
#ifndef MMA_S
#define MMA_S 8
#define MMA_TW 1
#define MMA_U 1
#define MMA_NST 4
#define MMA_NST1 2
#define MMA_MIN_BLOCKS 2
#endif
// The 8-bit entries' ring depth at every token tile: their stages are 2 KB of codes, so 2 deep
// moves as many bytes as the int4 ring 4 deep and keeps static shared memory under 48 KB.
#ifndef MMA_NST8
#define MMA_NST8 2
#endif

// Entry points qgemv_<fmt>_mma_t<MT> (fmt int4, int8, fp8): (W codes in the layouts above,
// scales [n][k/128] for int4 or [n] for 8-bit, X [M][k] FP32, Y [M][n] FP32, M, n, k) with M a
// multiple of MT, n of 16·MMA_TW and k of 128·MMA_S·MMA_U; launch n / (16·MMA_TW) blocks of
// 32·MMA_S threads.
#define MMA_ARGS const uint4 *W, const float *s, const float *X, float *Y, int M, int n, int k
template <int NB, int TOK, int NST>
__device__ void int4_mma(MMA_ARGS) { mma_gemv<Q4, NB, TOK, MMA_S, MMA_TW, MMA_U, NST>(W, s, X, Y, M, n, k); }
template <int NB, int TOK, int NST>
__device__ void int8_mma(MMA_ARGS) { mma_gemv<Q8, NB, TOK, MMA_S, MMA_TW, MMA_U, NST>(W, s, X, Y, M, n, k); }
template <int NB, int TOK, int NST>
__device__ void fp8_mma(MMA_ARGS) { mma_gemv<QFP8, NB, TOK, MMA_S, MMA_TW, MMA_U, NST>(W, s, X, Y, M, n, k); }
#define QGEMV_MMA(FMT, MT, NB, NST)                                                          \
    extern "C" __global__ void __launch_bounds__(32 * MMA_S, MMA_MIN_BLOCKS)                \
        qgemv_##FMT##_mma_t##MT(MMA_ARGS) { FMT##_mma<NB, MT, NST>(W, s, X, Y, M, n, k); }
QGEMV_MMA(int4, 1, 1, MMA_NST1)
QGEMV_MMA(int4, 4, 1, MMA_NST)
QGEMV_MMA(int4, 16, 2, MMA_NST)
QGEMV_MMA(int8, 1, 1, MMA_NST8)
QGEMV_MMA(int8, 4, 1, MMA_NST8)
QGEMV_MMA(int8, 16, 2, MMA_NST8)
QGEMV_MMA(fp8, 1, 1, MMA_NST8)
QGEMV_MMA(fp8, 4, 1, MMA_NST8)
QGEMV_MMA(fp8, 16, 2, MMA_NST8)
