// decode_attention.cu — one decode step of attention: each sequence has ONE new query token and a
// KV cache of `ctx` earlier tokens; o = softmax(q·Kᵀ / √d) · V per query head, d = 128.
//
// Layouts (row-major, BF16 as raw 16-bit patterns — NVRTC ships no cuda_bf16.h):
//   Q, O   [b][hq][128]               one token per sequence
//   K, V   [b][hkv][ctx][128]         contiguous cache
//   paged  K, V pool [blocks][hkv][16][128] and a block table [b][ctx/16] of pool block ids
//   int8 / fp8 caches: [b][hkv][ctx][128] bytes, one FP32 scale per (b, kv head, token) for K
//   and one for V, dequantized in registers (value = code · scale).
// hq query heads share each of the hkv KV heads in groups of G = hq / hkv (MHA G = 1, GQA G = 4,
// MQA G = 32 with hq = 32).
//
// Why it is memory-bound: every K and V element is used by G query heads only, so one step reads
// the whole cache for about 4·G FLOPs per 4 bytes. The kernels differ in how much of the cache
// they read, how often, and how many SMs they keep busy while reading it.
//
//   naive     one warp per query head walks the keys one at a time (a dot product reduced with
//             shuffles per key, the online softmax in registers). K/V are read G times (once per
//             query head of the group) and only b·hq warps exist.
//   gqa       one CTA per (sequence, KV head) serves all G query heads: 32-key tiles of K and V
//             go to shared memory once and every query head of the group uses them.
//   split_kv  Flash-Decoding: the same CTA body over a chunk of the context, many CTAs per
//             sequence; each writes an unnormalized partial (m, l, acc) and decode_combine merges
//             them. Small batches at long context then fill the GPU.
//   paged     split_kv reading K/V through a block table (block size 16) from a pool whose
//             blocks are shuffled, as a paged KV cache leaves them.
//   kv_int8, kv_fp8   split_kv over a quantized cache (per-token scales).
//
// All accumulate in FP32; scores are kept in the log2 domain (q pre-scaled by log2(e)/√d).

typedef unsigned short bf16_t;

#define D 128
#define TILE 32
#define THREADS 128
#define NEG_INF (__int_as_float(0xff800000))
#define FULL_MASK 0xffffffffu

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
// FP8 E4M3 → float without the FP8 headers: the 4 exponent and 3 mantissa bits moved to the top
// of an FP32 exponent/mantissa give 2^(e−127)·(1 + m/8); scaling by 2^120 makes it 2^(e−7)·(…),
// and exponent 0 lands on FP32 subnormals that become E4M3's subnormals m/8 · 2^−6 the same way.
__device__ __forceinline__ float e4m3_to_f(unsigned b)
{
    return __uint_as_float(((b & 0x7fu) << 20) | ((b & 0x80u) << 24)) * 0x1p120f;
}

// ---------------------------------------------------------------------------------------------
// Rung 1: one warp per (sequence, query head), key by key.
extern "C" __global__ void decode_naive(const bf16_t* __restrict__ Q, const bf16_t* __restrict__ K,
                                        const bf16_t* __restrict__ V, bf16_t* __restrict__ O,
                                        int b, int hq, int hkv, int ctx, float scale_log2)
{
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (w >= b * hq) return;
    int seq = w / hq, qh = w % hq, kvh = qh / (hq / hkv);
    const bf16_t* q = Q + (size_t)w * D + lane * 4;
    float qv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) qv[i] = bf2f(q[i]) * scale_log2;
    size_t base = ((size_t)seq * hkv + kvh) * ctx * D + lane * 4;
    float m = NEG_INF, l = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int t = 0; t < ctx; ++t) {
        const bf16_t* k = K + base + (size_t)t * D;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) s += qv[i] * bf2f(k[i]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
        float mn = fmaxf(m, s);
        float alpha = exp2f(m - mn), p = exp2f(s - mn);
        l = l * alpha + p;
        const bf16_t* v = V + base + (size_t)t * D;
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i] = acc[i] * alpha + p * bf2f(v[i]);
        m = mn;
    }
    bf16_t* o = O + (size_t)w * D + lane * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) o[i] = f2bf(acc[i] / l);
}

// ---------------------------------------------------------------------------------------------
// The shared CTA body of gqa, split_kv, paged and the quantized rungs.
//
// Grid (splits, hkv, b); 128 threads. The CTA owns keys [split·chunk, (split+1)·chunk) of one
// (sequence, KV head) and all G query heads of that KV head. Per 32-key tile:
//   1. store the K and V tile fetched during the previous tile, converted (or dequantized) to
//      FP32, in shared memory, and start fetching the next one into registers;
//   2. scores S[g][t]: lane t of each warp takes key t, warps share out the query heads;
//   3. per query head, the tile max and the online-softmax rescale factor (one warp per head);
//   4. P·V: thread j owns output dimension j for all G heads (G accumulators in registers).
// With splits == 1 the CTA writes O; otherwise the unnormalized partial for decode_combine.

enum { KV_BF16 = 0, KV_INT8 = 1, KV_FP8 = 2 };

struct DecodeArgs {
    const bf16_t* q;
    const void* k;
    const void* v;
    const float* k_scale;  // quantized caches: [b][hkv][ctx]
    const float* v_scale;
    const int* table;      // paged: [b][ctx/16]
    bf16_t* o;             // splits == 1
    float* part_acc;       // splits > 1: [b·hq][splits][128]
    float* part_ml;        // splits > 1: [b·hq][splits][2] (max, sum)
    int hq, hkv, ctx, chunk;
    float scale_log2;
};

// Element offset of (token t, dim 0) of (seq, kvh) in the cache.
template <bool PAGED>
__device__ __forceinline__ size_t kv_row(const DecodeArgs& a, int seq, int kvh, int t)
{
    if (PAGED) {
        int blk = a.table[(size_t)seq * (a.ctx / 16) + t / 16];
        return (((size_t)blk * a.hkv + kvh) * 16 + (t % 16)) * D;
    }
    return (((size_t)seq * a.hkv + kvh) * a.ctx + t) * D;
}

// One thread's share of a 32-key tile of a cache (K or V), held in registers between the global
// load and the shared-memory store, so that the next tile's loads are in flight while the CTA
// computes on the current one. BF16: 32 rows × 256 B = 512 chunks of 16 B, 4 per thread;
// 8-bit codes: 32 rows × 128 B = 256 chunks, 2 per thread, with their rows' scales.
template <int KV>
struct Raw {
    static constexpr int CHUNKS = KV == KV_BF16 ? 4 : 2;
    uint4 w[CHUNKS];
    float s[CHUNKS];
};

template <int KV, bool PAGED>
__device__ __forceinline__ void fetch_tile(const DecodeArgs& a, const void* src, const float* scale,
                                           int seq, int kvh, int t0, Raw<KV>& r)
{
#pragma unroll
    for (int i = 0; i < Raw<KV>::CHUNKS; ++i) {
        int c = threadIdx.x + i * THREADS;
        if (KV == KV_BF16) {
            int t = c / 16, j = (c % 16) * 8;
            r.w[i] = *reinterpret_cast<const uint4*>(static_cast<const bf16_t*>(src) +
                                                     kv_row<PAGED>(a, seq, kvh, t0 + t) + j);
        } else {
            int t = c / 8, j = (c % 8) * 16;
            size_t row = (((size_t)seq * a.hkv + kvh) * a.ctx + t0 + t);
            r.w[i] = *reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(src) +
                                                     row * D + j);
            r.s[i] = scale[row];
        }
    }
}

// Convert (or dequantize) the fetched share to FP32 in shared memory, rows `stride` floats.
template <int KV>
__device__ __forceinline__ void store_tile(const Raw<KV>& r, float* dst, int stride)
{
#pragma unroll
    for (int i = 0; i < Raw<KV>::CHUNKS; ++i) {
        int c = threadIdx.x + i * THREADS;
        unsigned u[4] = {r.w[i].x, r.w[i].y, r.w[i].z, r.w[i].w};
        if (KV == KV_BF16) {
            float* d = dst + (c / 16) * stride + (c % 16) * 8;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                d[2 * e] = __uint_as_float(u[e] << 16);
                d[2 * e + 1] = __uint_as_float(u[e] & 0xffff0000u);
            }
        } else {
            float* d = dst + (c / 8) * stride + (c % 8) * 16;
#pragma unroll
            for (int e = 0; e < 16; ++e) {
                unsigned byte = (u[e / 4] >> (8 * (e % 4))) & 0xffu;
                float x = KV == KV_INT8 ? (float)(signed char)byte : e4m3_to_f(byte);
                d[e] = x * r.s[i];
            }
        }
    }
}

template <int G, int KV, bool PAGED>
__device__ __forceinline__ void decode_cta(const DecodeArgs& a)
{
    constexpr int KS = D + 1;  // K rows padded: lane t reads row t without bank conflicts
    extern __shared__ float4 decode_smem[];  // DECODE_SMEM(G) bytes, set by the host
    float* sk = reinterpret_cast<float*>(decode_smem);
    float* sv = sk + TILE * KS;
    float* sq = sv + TILE * D;
    float* ss = sq + G * D;
    __shared__ float s_alpha[G];
    __shared__ float s_m[G], s_l[G];
    const int split = blockIdx.x, kvh = blockIdx.y, seq = blockIdx.z;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int qh0 = kvh * G;  // first query head of the group
    for (int i = threadIdx.x; i < G * D; i += THREADS)
        sq[i] = bf2f(a.q[((size_t)seq * a.hq + qh0) * D + i]) * a.scale_log2;
    if (threadIdx.x < G) {
        s_m[threadIdx.x] = NEG_INF;
        s_l[threadIdx.x] = 0.0f;
    }
    float acc[G];
#pragma unroll
    for (int g = 0; g < G; ++g) acc[g] = 0.0f;
    const int begin = split * a.chunk, end = begin + a.chunk;
    Raw<KV> rk, rv;
    fetch_tile<KV, PAGED>(a, a.k, a.k_scale, seq, kvh, begin, rk);
    fetch_tile<KV, PAGED>(a, a.v, a.v_scale, seq, kvh, begin, rv);
    for (int t0 = begin; t0 < end; t0 += TILE) {
        __syncthreads();  // the previous tile is consumed (and sq, s_m are ready the first time)
        store_tile<KV>(rk, sk, KS);
        store_tile<KV>(rv, sv, D);
        if (t0 + TILE < end) {  // the next tile's loads fly while this one is computed
            fetch_tile<KV, PAGED>(a, a.k, a.k_scale, seq, kvh, t0 + TILE, rk);
            fetch_tile<KV, PAGED>(a, a.v, a.v_scale, seq, kvh, t0 + TILE, rv);
        }
        __syncthreads();
        // 2. scores
        for (int g = warp; g < G; g += THREADS / 32) {
            const float* k = sk + lane * KS;
            const float4* q4 = reinterpret_cast<const float4*>(sq + g * D);
            float s = 0.0f;
#pragma unroll 8
            for (int j = 0; j < D / 4; ++j) {
                float4 q = q4[j];
                s += q.x * k[4 * j] + q.y * k[4 * j + 1] + q.z * k[4 * j + 2] + q.w * k[4 * j + 3];
            }
            // 3. online softmax for head g over this tile (the whole warp holds its 32 scores)
            float mt = s;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(FULL_MASK, mt, o));
            float m_old = s_m[g], mn = fmaxf(m_old, mt);
            float p = exp2f(s - mn), lt = p;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) lt += __shfl_xor_sync(FULL_MASK, lt, o);
            ss[g * TILE + lane] = p;
            __syncwarp();
            if (lane == 0) {
                float alpha = exp2f(m_old - mn);
                s_alpha[g] = alpha;
                s_l[g] = s_l[g] * alpha + lt;
                s_m[g] = mn;
            }
        }
        __syncthreads();
        // 4. P·V: thread j owns dimension j of every head of the group
        const int j = threadIdx.x;
#pragma unroll
        for (int g = 0; g < G; ++g) acc[g] *= s_alpha[g];
        for (int t = 0; t < TILE; ++t) {
            float vj = sv[t * D + j];
#pragma unroll
            for (int g = 0; g < G; ++g) acc[g] += ss[g * TILE + t] * vj;
        }
    }
    __syncthreads();
    const int j = threadIdx.x;
    const int splits = gridDim.x;
#pragma unroll
    for (int g = 0; g < G; ++g) {
        size_t row = (size_t)seq * a.hq + qh0 + g;
        if (splits == 1) {
            a.o[row * D + j] = f2bf(acc[g] / s_l[g]);
        } else {
            a.part_acc[(row * splits + split) * D + j] = acc[g];
            if (j == 0) {
                a.part_ml[(row * splits + split) * 2] = s_m[g];
                a.part_ml[(row * splits + split) * 2 + 1] = s_l[g];
            }
        }
    }
}

// Merge the split partials of one (sequence, query head): weights 2^(m_s − max m).
// Grid b·hq blocks of 128 threads.
extern "C" __global__ void decode_combine(const float* __restrict__ part_acc,
                                          const float* __restrict__ part_ml, bf16_t* __restrict__ O,
                                          int splits)
{
    size_t row = blockIdx.x;
    const float* ml = part_ml + row * splits * 2;
    float m = NEG_INF;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, ml[2 * s]);
    float l = 0.0f, acc = 0.0f;
    for (int s = 0; s < splits; ++s) {
        float w = exp2f(ml[2 * s] - m);
        l += ml[2 * s + 1] * w;
        acc += part_acc[(row * splits + s) * D + threadIdx.x] * w;
    }
    O[row * D + threadIdx.x] = f2bf(acc / l);
}

// One entry point per (rung, group size), all with the same flat argument list (unused
// pointers are null). Dynamic shared memory: (32·129 + 32·128 + G·128 + G·32) floats.
#define DECODE_KERNEL(name, G, KV, PAGED)                                                  \
    extern "C" __global__ void __launch_bounds__(THREADS)                                  \
        name(const bf16_t* q, const void* k, const void* v, const float* k_scale,          \
             const float* v_scale, const int* table, bf16_t* o, float* part_acc,           \
             float* part_ml, int hq, int hkv, int ctx, int chunk, float scale_log2)        \
    {                                                                                      \
        DecodeArgs a = {q,  k,        v,       k_scale, v_scale, table, o,                 \
                        part_acc, part_ml, hq, hkv,     ctx,     chunk, scale_log2};       \
        decode_cta<G, KV, PAGED>(a);                                                       \
    }
#define DECODE_GROUPS(prefix, KV, PAGED)                                                   \
    DECODE_KERNEL(prefix##_g1, 1, KV, PAGED)                                               \
    DECODE_KERNEL(prefix##_g4, 4, KV, PAGED)                                               \
    DECODE_KERNEL(prefix##_g32, 32, KV, PAGED)

DECODE_GROUPS(decode_split_bf16, KV_BF16, false)
DECODE_GROUPS(decode_split_paged, KV_BF16, true)
DECODE_GROUPS(decode_split_int8, KV_INT8, false)
DECODE_GROUPS(decode_split_fp8, KV_FP8, false)
