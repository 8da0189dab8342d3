// attention.cu — attention forward, O = softmax(Q·Kᵀ / √d) · V, BF16 in and out, FP32 inside.
//
// Q, K, V and O are [B·H][N][d] row-major: one head's N × d matrix after another. `causal` = 1
// masks key j > query i. BF16 values travel as raw 16-bit patterns (`bf16_t`; NVRTC here ships
// no cuda_bf16.h), converted with PTX cvt.
//
// The ladder:
//   naive       three of the book's own simple kernels: S = Q·Kᵀ·scale in FP32 (a shared-memory
//               tiled SIMT product), a row softmax in place, then P·V. S is B·H·N² floats: it is
//               the whole cost, and it runs out of memory first.
//   standard    (the baseline) cuBLAS gemm_ex for Q·Kᵀ (FP32 out) and for P·V (BF16 P), around
//               attn_softmax_bf16 below: the library's tensor cores, but S still round-trips
//               through device memory (S written, read, P written, read).
//   flash_simt  FlashAttention's tiling on the CUDA cores: a block keeps 32 queries, streams
//               32-key tiles of K and V through shared memory and keeps the softmax running
//               (max, sum) and the output rescaled as it goes — S never leaves the chip.
//   flash_tc    the same on the tensor cores, FlashAttention-2 style: each warp owns 16 query
//               rows with Q in registers, mma.sync m16n8k16 computes S and P·V, the online
//               softmax runs on the mma accumulators in registers, and the P fragments feed the
//               second product without touching shared memory.

typedef unsigned short bf16_t;

#define NEG_INF (__int_as_float(0xff800000))
#define LOG2E 1.4426950408889634f

__device__ __forceinline__ float bf2f(bf16_t h)
{
    return __uint_as_float(((unsigned)h) << 16);
}
__device__ __forceinline__ bf16_t f2bf(float f)
{
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
#include "attention_common.cuh"  // pack_bf16, fast_exp2, smem_u32 (shared with attention_hopper.cu)

// Block-wide max and sum of one value per thread (blockDim.x a multiple of 32, at most 1024).
__device__ float block_max(float v, float* scratch)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();  // scratch may still be read from the previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = NEG_INF;
    for (int w = 0; w < nw; ++w) v = fmaxf(v, scratch[w]);
    return v;
}
__device__ float block_sum(float v, float* scratch)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = 0.0f;
    for (int w = 0; w < nw; ++w) v += scratch[w];
    return v;
}

// ---- naive: S in FP32, the book's simple kernels --------------------------------------------

// S[bh][i][j] = scale · Σ_c Q[bh][i][c]·K[bh][j][c]. Launch: block (32, 32), grid (n/32, n/32,
// B·H). A 32 × 32 tile of S per block; Q and K tiles of 32 × 32 go through shared memory (the
// sgemm_smem rung of the SGEMM ladder), padded so the transposed K read has no bank conflicts.
extern "C" __global__ void attn_naive_scores(const bf16_t* __restrict__ Q,
                                             const bf16_t* __restrict__ K, float* __restrict__ S,
                                             int n, int d, float scale)
{
    __shared__ float Qs[32][33];
    __shared__ float Ks[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    size_t head = (size_t)blockIdx.z * n;
    int qi = blockIdx.y * 32 + ty;
    int kj0 = blockIdx.x * 32;
    float acc = 0.0f;
    for (int c0 = 0; c0 < d; c0 += 32) {
        Qs[ty][tx] = bf2f(Q[(head + qi) * d + c0 + tx]);
        Ks[ty][tx] = bf2f(K[(head + kj0 + ty) * d + c0 + tx]);
        __syncthreads();
#pragma unroll
        for (int c = 0; c < 32; ++c) acc += Qs[ty][c] * Ks[tx][c];
        __syncthreads();
    }
    S[(head + qi) * n + kj0 + tx] = acc * scale;
}

// Row softmax of S in place, masked entries (causal, j > i) become 0. Launch: 256 threads, one
// block per row (B·H·n blocks). Three passes over the row: max, sum of exponentials, write.
extern "C" __global__ void attn_naive_softmax(float* __restrict__ S, int n, int causal)
{
    __shared__ float scratch[32];
    size_t row = blockIdx.x;
    int i = (int)(row % n);
    int valid = causal ? i + 1 : n;
    float* s = S + row * n;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) m = fmaxf(m, s[j]);
    m = block_max(m, scratch);
    float l = 0.0f;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) l += expf(s[j] - m);
    l = block_sum(l, scratch);
    float inv = 1.0f / l;
    for (int j = threadIdx.x; j < n; j += blockDim.x) s[j] = j < valid ? expf(s[j] - m) * inv : 0.0f;
}

// O[bh][i][c] = Σ_j P[bh][i][j]·V[bh][j][c], P in FP32. Launch: block (32, 32), grid (d/32, n/32,
// B·H). The same shared-memory tiling as attn_naive_scores.
extern "C" __global__ void attn_naive_pv(const float* __restrict__ P, const bf16_t* __restrict__ V,
                                         bf16_t* __restrict__ O, int n, int d)
{
    __shared__ float Ps[32][33];
    __shared__ float Vs[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    size_t head = (size_t)blockIdx.z * n;
    int qi = blockIdx.y * 32 + ty;
    int c = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int j0 = 0; j0 < n; j0 += 32) {
        Ps[ty][tx] = P[(head + qi) * n + j0 + tx];
        Vs[ty][tx] = bf2f(V[(head + j0 + ty) * d + c]);
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 32; ++j) acc += Ps[ty][j] * Vs[j][tx];
        __syncthreads();
    }
    O[(head + qi) * d + c] = f2bf(acc);
}

// ---- standard: the softmax between the two cuBLAS products ---------------------------------

// P (BF16) = softmax of each row of S (FP32, already scaled), masked entries 0. Launch: 256
// threads, one block per row; n divisible by 4. Pass 1 keeps a running (max, sum) per thread
// over float4 loads and merges them; pass 2 re-reads the row (now in L2) and writes P.
extern "C" __global__ void attn_softmax_bf16(const float* __restrict__ S, bf16_t* __restrict__ P,
                                             int n, int causal)
{
    __shared__ float scratch[32];
    size_t row = blockIdx.x;
    int i = (int)(row % n);
    int valid = causal ? i + 1 : n;
    const float4* s4 = reinterpret_cast<const float4*>(S + row * n);
    float m = NEG_INF, l = 0.0f;
    for (int q = threadIdx.x; q < n / 4; q += blockDim.x) {
        float4 v = s4[q];
        float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (4 * q + k < valid) {
                float mn = fmaxf(m, e[k]);
                l = l * fast_exp2((m - mn) * LOG2E) + fast_exp2((e[k] - mn) * LOG2E);
                m = mn;
            }
        }
    }
    float gm = block_max(m, scratch);
    l = m == NEG_INF ? 0.0f : l * fast_exp2((m - gm) * LOG2E);
    float inv = 1.0f / block_sum(l, scratch);
    uint2* p2 = reinterpret_cast<uint2*>(P + row * n);
    for (int q = threadIdx.x; q < n / 4; q += blockDim.x) {
        float4 v = s4[q];
        float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) e[k] = 4 * q + k < valid ? fast_exp2((e[k] - gm) * LOG2E) * inv : 0.0f;
        p2[q] = make_uint2(pack_bf16(e[0], e[1]), pack_bf16(e[2], e[3]));
    }
}

// ---- flash_simt: tiling + online softmax on the CUDA cores ---------------------------------
// Launch: 128 threads, grid (n/32, B·H), dynamic shared memory flash_simt_smem(D). Thread t owns
// query row t/4 of the block's 32 and a quarter of the work on it: 8 of the 32 scores of a key
// tile (keys t%4, t%4 + 4, …) and D/4 output columns (t%4, t%4 + 4, …, interleaved so the four
// threads of a row read different banks). The four threads of a row are neighbouring lanes, so
// the row max and sum are two shuffles. Per key tile, for each query row:
//   m_new = max(m, max_j s_j);  p_j = 2^(s_j − m_new);  l = l·2^(m − m_new) + Σ p_j;
//   o = o·2^(m − m_new) + Σ_j p_j·v_j
// with s already multiplied by log2(e)/√d, so exp becomes the hardware's exp2.
template <int D>
__device__ __forceinline__ void flash_simt_impl(const bf16_t* __restrict__ Q,
                                                const bf16_t* __restrict__ K,
                                                const bf16_t* __restrict__ V,
                                                bf16_t* __restrict__ O, int n, float scale_log2,
                                                int causal)
{
    constexpr int BR = 32, BC = 32, LD = D + 1;
    extern __shared__ float fs_smem[];
    float* Qs = fs_smem;            // [BR][D + 1]
    float* Ks = Qs + BR * LD;       // [BC][D + 1]
    float* Vs = Ks + BC * LD;       // [BC][D]
    float* Ps = Vs + BC * D;        // [BR][BC + 1]
    int tid = threadIdx.x, r = tid / 4, part = tid % 4;
    // ANCHOR: flash_simt_causal
    // Causal blocks differ in work: start the longest (last query tiles) first.
    int qt = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    int q0 = qt * BR;
    size_t head = (size_t)blockIdx.y * n;
    for (int e = tid; e < BR * D; e += 128) Qs[(e / D) * LD + e % D] = bf2f(Q[(head + q0) * D + e]);
    float o[D / 4];
#pragma unroll
    for (int x = 0; x < D / 4; ++x) o[x] = 0.0f;
    float m = NEG_INF, l = 0.0f;  // l: this thread's part of the row sum
    int q = q0 + r;
    int kend = causal ? q0 + BR : n;
    for (int j0 = 0; j0 < kend; j0 += BC) {
        // ANCHOR_END: flash_simt_causal
        __syncthreads();  // the previous tile is no longer read
        for (int e = tid; e < BC * D; e += 128) {
            Ks[(e / D) * LD + e % D] = bf2f(K[(head + j0) * D + e]);
            Vs[e] = bf2f(V[(head + j0) * D + e]);
        }
        __syncthreads();
        float s[BC / 4];
        float mx = NEG_INF;
#pragma unroll
        for (int jj = 0; jj < BC / 4; ++jj) {
            int c = part + 4 * jj;
            float acc = 0.0f;
#pragma unroll 16
            for (int x = 0; x < D; ++x) acc += Qs[r * LD + x] * Ks[c * LD + x];
            acc *= scale_log2;
            if (causal && j0 + c > q) acc = NEG_INF;
            s[jj] = acc;
            mx = fmaxf(mx, acc);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float mn = fmaxf(m, mx);  // finite: key j0 ≤ q is in every tile this row reads
        float alpha = fast_exp2(m - mn);
        m = mn;
        float sum = 0.0f;
#pragma unroll
        for (int jj = 0; jj < BC / 4; ++jj) {
            float p = fast_exp2(s[jj] - mn);
            sum += p;
            Ps[r * (BC + 1) + part + 4 * jj] = p;
        }
        l = l * alpha + sum;
        __syncwarp();  // a row's P is written and read by the same four lanes of one warp
#pragma unroll
        for (int x = 0; x < D / 4; ++x) o[x] *= alpha;
        for (int c = 0; c < BC; ++c) {
            float p = Ps[r * (BC + 1) + c];
#pragma unroll
            for (int x = 0; x < D / 4; ++x) o[x] += p * Vs[c * D + part + 4 * x];
        }
    }
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    float inv = 1.0f / l;
#pragma unroll
    for (int x = 0; x < D / 4; ++x) O[(head + q) * D + part + 4 * x] = f2bf(o[x] * inv);
}
extern "C" __global__ void __launch_bounds__(128) flash_simt_d64(const bf16_t* Q, const bf16_t* K,
                                                                const bf16_t* V, bf16_t* O, int n,
                                                                float scale_log2, int causal)
{
    flash_simt_impl<64>(Q, K, V, O, n, scale_log2, causal);
}
extern "C" __global__ void __launch_bounds__(128) flash_simt_d128(const bf16_t* Q, const bf16_t* K,
                                                                 const bf16_t* V, bf16_t* O, int n,
                                                                 float scale_log2, int causal)
{
    flash_simt_impl<128>(Q, K, V, O, n, scale_log2, causal);
}

// ---- flash_tc: FlashAttention-2 on the tensor cores ----------------------------------------

// ANCHOR: flash_tc_helpers
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// c (16 × 8, FP32) += a (16 × 16, BF16) · b (16 × 8, BF16). Lane l holds c rows l/4 and l/4 + 8,
// columns 2·(l%4) and 2·(l%4) + 1; a rows l/4 (+8), k 2·(l%4) (+1, +8, +9); b k 2·(l%4) (+1, +8,
// +9), column l/4.
__device__ __forceinline__ void mma_16816(float* c, const unsigned* a, unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// ANCHOR_END: flash_tc_helpers

// ANCHOR: flash_tc_setup
// Launch: 256 threads (8 warps), grid (n/128, B·H), dynamic shared memory flash_tc_smem(D) =
// Q (128 × D) + K and V tiles (64 × D each) twice: 96 KiB for D = 128. Rows of D BF16 are kept
// in 16-byte chunks whose index is XOR-ed with (row % 8), so the 8 rows an ldmatrix reads at one
// column hit 8 different banks (no padding needed).
// Per 64-key tile, each warp (16 query rows):
//   S (16 × 64)  = Q_w · K_tileᵀ     D/16 × 8 mma, K fragments by ldmatrix
//   online softmax on the S accumulators: row max over 4 lanes (2 shuffles), rescale O
//   P (BF16)     = the S accumulators packed in place: the m16n8 accumulator layout of two
//                  neighbouring tiles is exactly the A-operand layout of m16n8k16
//   O (16 × D)  += P · V_tile        4 × D/8 mma, V fragments by ldmatrix.trans
// while the next K/V tile streams in with cp.async.
template <int D>
__device__ __forceinline__ void flash_tc_impl(const bf16_t* __restrict__ Q,
                                              const bf16_t* __restrict__ K,
                                              const bf16_t* __restrict__ V,
                                              bf16_t* __restrict__ O, int n, float scale_log2,
                                              int causal)
{
    constexpr int BR = 128, BC = 64, CH = D / 8;  // CH: 16-byte chunks per row
    extern __shared__ __align__(128) unsigned char ft_smem[];
    bf16_t* sQ = reinterpret_cast<bf16_t*>(ft_smem);  // [BR][D]
    bf16_t* sK = sQ + BR * D;                          // [2][BC][D]
    bf16_t* sV = sK + 2 * BC * D;                      // [2][BC][D]
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int qt = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    int q0 = qt * BR;
    size_t head = (size_t)blockIdx.y * n;
    const bf16_t* Qg = Q + (head + q0) * D;
    const bf16_t* Kg = K + head * D;
    const bf16_t* Vg = V + head * D;
    // Element offset of chunk c of row r in a swizzled tile.
    auto off = [](int r, int c) { return r * D + ((c ^ (r & 7)) << 3); };

    for (int i = tid; i < BR * CH; i += 256)
        cp_async16(smem_u32(sQ + off(i / CH, i % CH)), Qg + (size_t)(i / CH) * D + (i % CH) * 8);
    cp_async_commit();
    // ANCHOR: flash_tc_causal_end
    int kend = causal ? q0 + BR : n;
    int ntiles = kend / BC;
    // ANCHOR_END: flash_tc_causal_end
    auto load_kv = [&](int stage, int j0) {
        bf16_t* ks = sK + stage * BC * D;
        bf16_t* vs = sV + stage * BC * D;
        for (int i = tid; i < BC * CH; i += 256) {
            int r = i / CH, c = i % CH;
            cp_async16(smem_u32(ks + off(r, c)), Kg + (size_t)(j0 + r) * D + c * 8);
            cp_async16(smem_u32(vs + off(r, c)), Vg + (size_t)(j0 + r) * D + c * 8);
        }
        cp_async_commit();
    };
    load_kv(0, 0);
    cp_async_wait<1>();  // Q has landed
    __syncthreads();
    unsigned qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
        ldmatrix_x4(qf[kk], smem_u32(sQ + off(warp * 16 + lane % 16, 2 * kk + lane / 16)));

    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;
    float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.0f, l1 = 0.0f;  // rows lane/4 and lane/4 + 8
    int row0 = q0 + warp * 16 + lane / 4, row1 = row0 + 8;
    int warp_last = q0 + warp * 16 + 15;
    // ANCHOR_END: flash_tc_setup

    // ANCHOR: flash_tc_scores
    // ANCHOR: flash_tc_causal_skip
    for (int jt = 0; jt < ntiles; ++jt) {
        cp_async_wait<0>();  // tile jt has landed ...
        __syncthreads();     // ... for everyone, and tile jt − 1's buffers are free
        if (jt + 1 < ntiles) load_kv((jt + 1) & 1, (jt + 1) * BC);
        int j0 = jt * BC;
        if (causal && j0 > warp_last) continue;  // every key of this tile is masked for this warp
        // ANCHOR_END: flash_tc_causal_skip
        const bf16_t* ks = sK + (jt & 1) * BC * D;
        const bf16_t* vs = sV + (jt & 1) * BC * D;

        float s[BC / 8][4];
#pragma unroll
        for (int j = 0; j < BC / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int np = 0; np < BC / 16; ++np) {
                unsigned b[4];
                ldmatrix_x4(b, smem_u32(ks + off(np * 16 + lane % 8 + (lane / 16) * 8,
                                                 2 * kk + (lane / 8) % 2)));
                mma_16816(s[2 * np], qf[kk], b[0], b[1]);
                mma_16816(s[2 * np + 1], qf[kk], b[2], b[3]);
            }
        }
        // ANCHOR_END: flash_tc_scores
        // ANCHOR: flash_tc_softmax
        // ANCHOR: flash_tc_causal_mask
        bool mask = causal && j0 + BC - 1 > q0 + warp * 16;
        float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
        for (int j = 0; j < BC / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float v = s[j][e] * scale_log2;
                if (mask) {
                    int col = j0 + j * 8 + 2 * (lane % 4) + (e & 1);
                    if (col > (e < 2 ? row0 : row1)) v = NEG_INF;
                }
                s[j][e] = v;
            }
            // ANCHOR_END: flash_tc_causal_mask
            mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
            mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);  // finite: key 0 is never masked
        float a0 = fast_exp2(m0 - mn0), a1 = fast_exp2(m1 - mn1);
        m0 = mn0;
        m1 = mn1;
        float sum0 = 0.0f, sum1 = 0.0f;
        unsigned pf[BC / 16][4];
#pragma unroll
        for (int j = 0; j < BC / 8; ++j) {
            float p0 = fast_exp2(s[j][0] - mn0), p1 = fast_exp2(s[j][1] - mn0);
            float p2 = fast_exp2(s[j][2] - mn1), p3 = fast_exp2(s[j][3] - mn1);
            sum0 += p0 + p1;
            sum1 += p2 + p3;
            // Tile j is k-columns 8·(j%2).. of the 16-wide A fragment j/2.
            pf[j / 2][(j % 2) * 2] = pack_bf16(p0, p1);
            pf[j / 2][(j % 2) * 2 + 1] = pack_bf16(p2, p3);
        }
        l0 = l0 * a0 + sum0;
        l1 = l1 * a1 + sum1;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
            o[j][0] *= a0;
            o[j][1] *= a0;
            o[j][2] *= a1;
            o[j][3] *= a1;
        }
        // ANCHOR_END: flash_tc_softmax
        // ANCHOR: flash_tc_pv
#pragma unroll
        for (int kc = 0; kc < BC / 16; ++kc) {
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                unsigned b[4];
                ldmatrix_x4_trans(b, smem_u32(vs + off(kc * 16 + lane % 8 + ((lane / 8) % 2) * 8,
                                                       2 * dp + lane / 16)));
                mma_16816(o[2 * dp], pf[kc], b[0], b[1]);
                mma_16816(o[2 * dp + 1], pf[kc], b[2], b[3]);
            }
        }
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    unsigned* O0 = reinterpret_cast<unsigned*>(O + (head + row0) * D) + lane % 4;
    unsigned* O1 = reinterpret_cast<unsigned*>(O + (head + row1) * D) + lane % 4;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        O0[4 * j] = pack_bf16(o[j][0] * inv0, o[j][1] * inv0);
        O1[4 * j] = pack_bf16(o[j][2] * inv1, o[j][3] * inv1);
    }
}
// ANCHOR_END: flash_tc_pv
extern "C" __global__ void __launch_bounds__(256) flash_tc_d64(const bf16_t* Q, const bf16_t* K,
                                                              const bf16_t* V, bf16_t* O, int n,
                                                              float scale_log2, int causal)
{
    flash_tc_impl<64>(Q, K, V, O, n, scale_log2, causal);
}
extern "C" __global__ void __launch_bounds__(256) flash_tc_d128(const bf16_t* Q, const bf16_t* K,
                                                               const bf16_t* V, bf16_t* O, int n,
                                                               float scale_log2, int causal)
{
    flash_tc_impl<128>(Q, K, V, O, n, scale_log2, causal);
}
