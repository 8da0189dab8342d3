// decode_attention_v2.cu — split_kv_v2: the Flash-Decoding step of decode_attention.cu rebuilt so
// that the SMs only move bytes (same layouts as decode_attention.cu; d = 128, G = hq / hkv ≤ 8).
//
// What the split_kv rung spends its time on: every K and V element goes global → registers →
// FP32 in shared memory → registers, with a __syncthreads between the steps, and the dot
// products run on CUDA cores. Here each warp streams its keys with bulk copies (no tensor map)
// into a ring of its own in shared memory, 16 keys (8 KB of K and V, one page when paged) per
// step, and reads them once from there into the operand registers of the tensor cores:
//   * S = Q·Kᵀ with mma.m16n8k16 (BF16 in, FP32 out): A = Q (rows = the G query heads of the KV
//     head, zero-padded to 16), B = Kᵀ (16 dims × 8 keys). A dot product does not care in which
//     order its dims are summed, so the dims are renumbered to make each lane's B fragment one
//     16-byte load: lane (g = l/4, t = l%4) reads key g, dims 32p + 8t … 32p + 8t + 7 (p = 0..3),
//     and takes Q's dims in the same order.
//   * The scores land in the C fragment as (head g, keys 2t, 2t + 1), which is exactly the B
//     fragment of the next product, Oᵀ = Vᵀ·Pᵀ (A = Vᵀ: 16 dims × 16 keys, B = Pᵀ: 16 keys × 8
//     heads): the probabilities never leave the registers. For Vᵀ a lane needs two keys' values
//     of one dim in one register; it loads dims 8g … 8g + 7 and 64 + 8g … 64 + 8g + 7 of keys 2t,
//     2t + 1, 2t + 8, 2t + 9 (16-byte loads) and pairs them with PRMT. The output dims are
//     renumbered to match (rows g and g + 8 of m-block i are dims 8g + i and 64 + 8g + i) and
//     written back in place at the end.
//   * The online softmax works on the C fragment: row maxima with two shuffles, exp2 in FP32,
//     P rounded to BF16 for the MMA (the sums l stay in FP32).
//   * Lane 0 keeps V2_STAGES steps of its warp in flight (an mbarrier per ring slot counts the
//     bytes), refilling a slot as soon as the warp's MMAs have read it; the copies carry an L2
//     evict-first hint: K and V are read once per decode step. The K/V pairs no longer wait in
//     registers, which frees them for the ring's second slot.
//   * The W warps' (m, l, O) merge in shared memory (in the ring's space); with several splits
//     per sequence each CTA writes its partial and the last CTA to finish (an atomic ticket per
//     (sequence, KV head)) merges them, so no second kernel launch is paid. That merge is the
//     tail every other SM idles through, so it issues all the loads of 16 splits at once.
// MQA (G = 32) does not fit one 16-row MMA tile of heads; it stays on the split_kv rung.

typedef unsigned short bf16_t;

#define D 128
#define KT 16  // keys per warp step
#define NEG_INF (__int_as_float(0xff800000))
#define FULL_MASK 0xffffffffu
// Warps per CTA, ring stages per warp (8 KB each: the CTA's dynamic shared memory is
// V2_WARPS · V2_STAGES · 8 KB) and the CTAs per SM the register allocation must allow (guarded
// so that a standalone harness can compile other shapes), and the most splits per sequence.
#ifndef V2_WARPS
#define V2_WARPS 8
#define V2_STAGES 2
#define V2_MIN_BLOCKS 1
#endif
#define V2_MAX_SPLITS 64

struct DecodeArgsV2 {
    const bf16_t* q;
    const bf16_t* k;
    const bf16_t* v;
    const int* table;  // paged: [b][ctx/16]
    bf16_t* o;
    float* part_acc;   // splits > 1: [b·hq][splits][128]
    float* part_ml;    // splits > 1: [b·hq][splits][2] (max, sum)
    int* tickets;      // splits > 1: [b·hkv], zero before the first launch (left zero after)
    int hq, hkv, ctx;
    float scale_log2;
};

__device__ __forceinline__ void mma_bf16(float* d, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel)
{
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}
// K and V are streamed once per step: their copies carry an L2 evict-first policy so that they
// recycle their own lines instead of evicting the rest of L2 (see quant_gemv_mma.cu).
__device__ __forceinline__ unsigned long long evict_first_policy()
{
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ unsigned word4(const uint4& v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ bf16_t to_bf16(float f)
{
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

// ---- the per-warp ring: one mbarrier per stage, filled by bulk copies (no tensor map) --------
__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
#include "hopper_sync.cuh"  // mbarriers (the ring counts its bytes on them)
// `bytes` contiguous bytes global → shared, counted on `bar`.
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes,
                                          unsigned bar, unsigned long long policy)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1], %2, [%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "l"(policy)
                 : "memory");
}

// Element offset of (key `key`, dim 0) of (seq, kvh). Paged: one 16-key step is one page.
template <bool PAGED>
__device__ __forceinline__ size_t row_of(const DecodeArgsV2& a, int seq, int kvh, int key)
{
    if (PAGED) {
        const int blk = __ldg(a.table + (size_t)seq * (a.ctx / 16) + key / 16);
        return (((size_t)blk * a.hkv + kvh) * 16 + key % 16) * D;
    }
    return (((size_t)seq * a.hkv + kvh) * a.ctx + key) * D;
}

// One ring stage: the K and the V of 16 keys (a page when paged), 4 KB each, row-major.
struct Stage {
    uint4 k[KT * D / 8];
    uint4 v[KT * D / 8];
};
// Lane 0 starts the copies of the 16 keys from key0 into `st`, counted on `bar`.
template <bool PAGED>
__device__ __forceinline__ void issue_step(const DecodeArgsV2& a, int seq, int kvh, int key0,
                                           Stage& st, unsigned bar, unsigned long long pol)
{
    const size_t row = row_of<PAGED>(a, seq, kvh, key0);
    mbar_expect_tx(bar, 2 * KT * D * 2);
    bulk_copy(smem_addr(st.k), a.k + row, KT * D * 2, bar, pol);
    bulk_copy(smem_addr(st.v), a.v + row, KT * D * 2, bar, pol);
}

template <int G, bool PAGED>
__device__ __forceinline__ void decode_v2(const DecodeArgsV2& a)
{
    extern __shared__ __align__(128) Stage ring[];  // [V2_WARPS][V2_STAGES]
    __shared__ unsigned long long s_bar[V2_WARPS][V2_STAGES];
    __shared__ float s_ml[V2_WARPS][G][2];
    __shared__ int s_last;
    const int split = blockIdx.x, kvh = blockIdx.y, seq = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)seq * a.hq + (size_t)kvh * G;  // first query head (row of Q, O)

    // The 16-key steps of this (sequence, KV head) are dealt out round-robin over all its warps
    // (step split·V2_WARPS + warp + i·splits·V2_WARPS for i = 0, 1, …), so the head's CTAs
    // advance through the cache together. Lane 0 keeps the warp's next V2_STAGES steps in flight.
    const int splits = gridDim.x, total = a.ctx / KT;
    const int stride = splits * V2_WARPS, first = split * V2_WARPS + warp;
    const unsigned long long pol = evict_first_policy();
    Stage* my = ring + warp * V2_STAGES;
    const unsigned bar0 = smem_addr(&s_bar[warp][0]);
    unsigned valid = 0;  // lane 0: the ring slots with a copy in flight
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < V2_STAGES; ++i) mbar_init(bar0 + 8 * i, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#pragma unroll
        for (int i = 0; i < V2_STAGES; ++i)
            if (first + i * stride < total) {
                issue_step<PAGED>(a, seq, kvh, KT * (first + i * stride), my[i], bar0 + 8 * i, pol);
                valid |= 1u << i;
            }
    }
    __syncwarp();

    // Q of head g as A fragments (rows ≥ G are zero padding), in the renumbered dim order.
    uint4 qf[4];
#pragma unroll
    for (int p = 0; p < 4; ++p)
        qf[p] = g < G ? __ldg(reinterpret_cast<const uint4*>(a.q + (row0 + g) * D) + 4 * p + t)
                      : make_uint4(0, 0, 0, 0);

    float o[8][4];  // Oᵀ m-block i: (dim 8g + i | 64 + 8g + i, heads 2t, 2t + 1)
#pragma unroll
    for (int i = 0; i < 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m = NEG_INF, l = 0.0f;  // running max and (this lane's share of the) sum for head g

#pragma unroll 1
    for (int step = 0, slot = 0;; ++step) {
        if (!((__shfl_sync(FULL_MASK, valid, 0) >> slot) & 1)) break;  // no more steps
        mbar_wait(bar0 + 8 * slot, (step / V2_STAGES) & 1);
        const Stage& st = my[slot];
        // kf[j][p] = key 8j + g, dims 32p + 8t … + 7; vf[r][h] = key 2t + (r & 1) + 8·(r >> 1),
        // dims 64h + 8g … + 7.
        uint4 kf[2][4], vf[4][2];
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int p = 0; p < 4; ++p) kf[j][p] = st.k[(8 * j + g) * (D / 8) + 4 * p + t];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int key = 2 * t + (r & 1) + 8 * (r >> 1);
            vf[r][0] = st.v[key * (D / 8) + g];
            vf[r][1] = st.v[key * (D / 8) + 8 + g];
        }
        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                mma_bf16(s[j], qf[p].x, 0u, qf[p].y, 0u, kf[j][p].x, kf[j][p].y);
                mma_bf16(s[j], qf[p].z, 0u, qf[p].w, 0u, kf[j][p].z, kf[j][p].w);
            }

        // Online softmax of head g over keys 2t, 2t + 1, 8 + 2t, 9 + 2t (log2 domain).
        float x0 = s[0][0] * a.scale_log2, x1 = s[0][1] * a.scale_log2;
        float x2 = s[1][0] * a.scale_log2, x3 = s[1][1] * a.scale_log2;
        float mt = fmaxf(fmaxf(x0, x1), fmaxf(x2, x3));
        mt = fmaxf(mt, __shfl_xor_sync(FULL_MASK, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(FULL_MASK, mt, 2));
        const float mn = fmaxf(m, mt), alpha = exp2f(m - mn);
        x0 = exp2f(x0 - mn), x1 = exp2f(x1 - mn), x2 = exp2f(x2 - mn), x3 = exp2f(x3 - mn);
        l = l * alpha + (x0 + x1) + (x2 + x3);
        m = mn;
        const unsigned p0 = pack_bf16x2(x0, x1), p1 = pack_bf16x2(x2, x3);
        // O's columns are heads 2t and 2t + 1, whose alphas live in lanes 8t and 8t + 4.
        const float al0 = __shfl_sync(FULL_MASK, alpha, 8 * t);
        const float al1 = __shfl_sync(FULL_MASK, alpha, 8 * t + 4);

#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const unsigned sel = i % 2 ? 0x7632u : 0x5410u;
            const int w = i / 2;
            o[i][0] *= al0, o[i][1] *= al1, o[i][2] *= al0, o[i][3] *= al1;
            mma_bf16(o[i], prmt(word4(vf[0][0], w), word4(vf[1][0], w), sel),
                     prmt(word4(vf[0][1], w), word4(vf[1][1], w), sel),
                     prmt(word4(vf[2][0], w), word4(vf[3][0], w), sel),
                     prmt(word4(vf[2][1], w), word4(vf[3][1], w), sel), p0, p1);
        }
        // Every lane's MMAs have taken the slot's values, so its loads are complete: lane 0
        // refills the slot with the warp's step V2_STAGES further on.
        __syncwarp();
        if (lane == 0) {
            const int next = first + (step + V2_STAGES) * stride;
            if (next < total)
                issue_step<PAGED>(a, seq, kvh, KT * next, my[slot], bar0 + 8 * slot, pol);
            else
                valid &= ~(1u << slot);
        }
        if (++slot == V2_STAGES) slot = 0;
    }

    // Every copy has landed and been read: the ring's space now holds the warps' O.
    __syncthreads();
    float(*s_o)[G][D] = reinterpret_cast<float(*)[G][D]>(ring);
    // Merge the warps: (m, l) per head, O per head and dim, in shared memory.
    l += __shfl_xor_sync(FULL_MASK, l, 1);
    l += __shfl_xor_sync(FULL_MASK, l, 2);
    if (t == 0 && g < G) {
        s_ml[warp][g][0] = m;
        s_ml[warp][g][1] = l;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        if (2 * t < G) {
            s_o[warp][2 * t][8 * g + i] = o[i][0];
            s_o[warp][2 * t][64 + 8 * g + i] = o[i][2];
        }
        if (2 * t + 1 < G) {
            s_o[warp][2 * t + 1][8 * g + i] = o[i][1];
            s_o[warp][2 * t + 1][64 + 8 * g + i] = o[i][3];
        }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < G * D; idx += 32 * V2_WARPS) {
        const int h = idx / D, d = idx % D;
        float mx = NEG_INF;
#pragma unroll
        for (int w = 0; w < V2_WARPS; ++w) mx = fmaxf(mx, s_ml[w][h][0]);
        float lsum = 0.0f, acc = 0.0f;
#pragma unroll
        for (int w = 0; w < V2_WARPS; ++w) {
            const float wt = exp2f(s_ml[w][h][0] - mx);  // 0 for a warp that had no keys
            lsum += s_ml[w][h][1] * wt;
            acc += s_o[w][h][d] * wt;
        }
        if (splits == 1) {
            a.o[(row0 + h) * D + d] = to_bf16(acc / lsum);
        } else {
            a.part_acc[((row0 + h) * splits + split) * D + d] = acc;
            if (d == 0) {
                a.part_ml[((row0 + h) * splits + split) * 2] = mx;
                a.part_ml[((row0 + h) * splits + split) * 2 + 1] = lsum;
            }
        }
    }
    if (splits == 1) return;

    // Which CTA of this (sequence, KV head) finished last?
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const int ticket = atomicAdd(a.tickets + (size_t)seq * a.hkv + kvh, 1);
        s_last = ticket == splits - 1;
    }
    __syncthreads();
    if (!s_last) return;
    // The last CTA merges the splits' partials: a thread per 4 dims of a head loads the
    // partials of 16 splits at once (one L2 round trip per 16 splits: this is the tail every
    // other SM waits for) and folds them in with a running max.
    __threadfence();
    for (int qd = threadIdx.x; qd < G * D / 4; qd += 32 * V2_WARPS) {
        const int h = qd / (D / 4), d4 = qd % (D / 4);
        const float4* pa =
            reinterpret_cast<const float4*>(a.part_acc + (row0 + h) * splits * D) + d4;
        const float2* pm = reinterpret_cast<const float2*>(a.part_ml + (row0 + h) * splits * 2);
        float mx = NEG_INF, lsum = 0.0f;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int sp0 = 0; sp0 < splits; sp0 += 16) {
            float2 ml[16];
            float4 pv[16];
#pragma unroll
            for (int u = 0; u < 16; ++u) {
                const bool in = sp0 + u < splits;
                ml[u] = in ? __ldcg(pm + sp0 + u) : make_float2(NEG_INF, 0.0f);
                pv[u] = in ? __ldcg(pa + (size_t)(sp0 + u) * (D / 4))
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            float bm = mx;
#pragma unroll
            for (int u = 0; u < 16; ++u) bm = fmaxf(bm, ml[u].x);
            const float sc = exp2f(mx - bm);  // 0 before the first batch
            lsum *= sc, acc.x *= sc, acc.y *= sc, acc.z *= sc, acc.w *= sc;
#pragma unroll
            for (int u = 0; u < 16; ++u) {
                const float wt = exp2f(ml[u].x - bm);  // 0 for the padding
                lsum += ml[u].y * wt;
                acc.x += pv[u].x * wt, acc.y += pv[u].y * wt;
                acc.z += pv[u].z * wt, acc.w += pv[u].w * wt;
            }
            mx = bm;
        }
        const float inv = 1.0f / lsum;
        *reinterpret_cast<uint2*>(a.o + (row0 + h) * D + 4 * d4) = make_uint2(
            pack_bf16x2(acc.x * inv, acc.y * inv), pack_bf16x2(acc.z * inv, acc.w * inv));
    }
    if (threadIdx.x == 0) a.tickets[(size_t)seq * a.hkv + kvh] = 0;  // ready for the next launch
}

// Entry points decode_v2_<cache>_g<G>: grid (splits, hkv, b), 32·V2_WARPS threads, V2_WARPS ·
// V2_STAGES · 8192 bytes of dynamic shared memory; ctx a multiple of 16 and splits · 16 ·
// V2_WARPS ≤ ctx (every warp gets at least one 16-key step), splits ≤ V2_MAX_SPLITS. Unused
// pointers may be null (table unless paged; the partials and tickets when splits == 1).
#define DECODE_V2(name, G, PAGED)                                                           \
    extern "C" __global__ void __launch_bounds__(32 * V2_WARPS, V2_MIN_BLOCKS)              \
        name(const bf16_t* q, const bf16_t* k, const bf16_t* v, const int* table, bf16_t* o, \
             float* part_acc, float* part_ml, int* tickets, int hq, int hkv, int ctx,        \
             float scale_log2)                                                              \
    {                                                                                       \
        DecodeArgsV2 a = {q,  k,   v,   table, o,     part_acc, part_ml, tickets,           \
                          hq, hkv, ctx, scale_log2};                                        \
        decode_v2<G, PAGED>(a);                                                             \
    }
DECODE_V2(decode_v2_bf16_g1, 1, false)
DECODE_V2(decode_v2_bf16_g4, 4, false)
DECODE_V2(decode_v2_paged_g1, 1, true)
DECODE_V2(decode_v2_paged_g4, 4, true)
