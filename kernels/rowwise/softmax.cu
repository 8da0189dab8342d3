// softmax.cu — row softmax: y[r][c] = exp(x[r][c] - m_r) / Σ_c exp(x[r][c] - m_r),
// with m_r = max_c x[r][c] subtracted so that exp never overflows.
//
// The arithmetic is cheap; what costs is how often the matrix travels through device memory.
// Rung 1 reads it three times and writes it once, rung 2 reads it twice (the online softmax
// merges max and sum into one pass), rung 3 reads it once: the whole row stays in registers.
//
// One block per row, 256 threads per block (the kernels assume blockDim.x == 256).

#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)  // -infinity (NVRTC has no <cmath> macros)

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Block-wide max and sum: warps reduce with shuffles, then warp 0 reduces the warp results and
// every thread reads the answer back. `scratch` holds 33 floats; the closing barrier lets the
// caller reuse it straight away.
__device__ __forceinline__ float block_max(float v, float* scratch)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_max(lane < warps ? scratch[lane] : NEG_INF);
        if (lane == 0) scratch[32] = v;
    }
    __syncthreads();
    v = scratch[32];
    __syncthreads();
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < warps ? scratch[lane] : 0.0f);
        if (lane == 0) scratch[32] = v;
    }
    __syncthreads();
    v = scratch[32];
    __syncthreads();
    return v;
}

// ---- Rung 1: three passes, three kernels ---------------------------------------------------

// Pass 1: m_r = max of the row.
extern "C" __global__ void softmax3_max(const float* __restrict__ x, float* __restrict__ row_max,
                                        int cols)
{
    __shared__ float scratch[33];
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_max(m, scratch);
    if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}

// Pass 2: s_r = Σ exp(x - m_r), reading the row again.
extern "C" __global__ void softmax3_sum(const float* __restrict__ x,
                                        const float* __restrict__ row_max,
                                        float* __restrict__ row_sum, int cols)
{
    __shared__ float scratch[33];
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = row_max[blockIdx.x], s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) row_sum[blockIdx.x] = s;
}

// Pass 3: y = exp(x - m_r) / s_r, reading the row a third time and writing it once.
extern "C" __global__ void softmax_normalize(const float* __restrict__ x,
                                             const float* __restrict__ row_max,
                                             const float* __restrict__ row_sum,
                                             float* __restrict__ y, int cols)
{
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = row_max[blockIdx.x], inv = 1.0f / row_sum[blockIdx.x];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

// ---- Rung 2: online softmax, two passes ------------------------------------------------------

// Merge two (max, sum) pairs: the sum with the smaller max is rescaled to the larger one.
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2)
{
    float mn = fmaxf(m, m2);
    if (mn == NEG_INF) return;  // both empty
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

// Pass 1: max and sum in one read. Each thread keeps a running max m and a sum s relative to it;
// when a larger element arrives, s is rescaled by exp(m_old - m_new). The pairs are then merged
// across the warp with shuffles and across warps in shared memory.
extern "C" __global__ void softmax_online_stats(const float* __restrict__ x,
                                                float* __restrict__ row_max,
                                                float* __restrict__ row_sum, int cols)
{
    __shared__ float sm[32], ss[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = NEG_INF, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = row[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        online_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        bool live = lane < (int)(blockDim.x / 32);
        m = live ? sm[lane] : NEG_INF;
        s = live ? ss[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            online_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
        if (lane == 0) {
            row_max[blockIdx.x] = m;
            row_sum[blockIdx.x] = s;
        }
    }
}
// Pass 2 is softmax_normalize above.

// ---- Rung 3: one pass, the row in registers --------------------------------------------------

// Each thread loads its share of the row (float4, up to MAX_VEC of them) into registers once,
// then the block finds the max, the sum of exponentials, and writes the result: the matrix
// crosses device memory exactly once each way. The loops over v are unrolled, so r[] stays in
// registers. Needs cols divisible by 4 and cols <= 4 * MAX_VEC * blockDim.x (8192 for 256
// threads).
#define MAX_VEC 8
extern "C" __global__ void softmax_fused(const float* __restrict__ x, float* __restrict__ y,
                                         int cols)
{
    __shared__ float scratch[33];
    const float4* row = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    float4* out = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * cols);
    int n4 = cols / 4;
    float4 r[MAX_VEC];
    float m = NEG_INF;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v] = row[i];
            m = fmaxf(m, fmaxf(fmaxf(r[v].x, r[v].y), fmaxf(r[v].z, r[v].w)));
        }
    }
    m = block_max(m, scratch);
    float s = 0.0f;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v].x = expf(r[v].x - m);
            r[v].y = expf(r[v].y - m);
            r[v].z = expf(r[v].z - m);
            r[v].w = expf(r[v].w - m);
            s += (r[v].x + r[v].y) + (r[v].z + r[v].w);
        }
    }
    float inv = 1.0f / block_sum(s, scratch);
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) out[i] = make_float4(r[v].x * inv, r[v].y * inv, r[v].z * inv, r[v].w * inv);
    }
}

// ---- Width sweep: a warp per short row, a thread-block cluster per long row ------------------
// softmax_fused stops at 8192 columns: a block of 256 threads holds 32 floats per thread in
// registers, and a longer row in one block would need more registers than a thread may have.
// Short rows waste it the other way: a 1024-column row gives each of 256 threads one float4 and
// pays two block-wide barriers for it. Hence two kernels, chosen by width on the host.

// A warp per row (blockDim.x / 32 rows per block): no barriers at all, the reductions are warp
// shuffles. Needs cols divisible by 4 and cols <= 4 * 32 * WARP_VEC (2048).
#define WARP_VEC 16
extern "C" __global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y,
                                        int rows, int cols)
{
    int lane = threadIdx.x % 32;
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= rows) return;
    const float4* row = reinterpret_cast<const float4*>(x + (size_t)r * cols);
    float4* out = reinterpret_cast<float4*>(y + (size_t)r * cols);
    int n4 = cols / 4;
    float4 v4[WARP_VEC];
    float m = NEG_INF;
#pragma unroll
    for (int v = 0; v < WARP_VEC; ++v) {
        int i = v * 32 + lane;
        if (i < n4) {
            v4[v] = row[i];
            m = fmaxf(m, fmaxf(fmaxf(v4[v].x, v4[v].y), fmaxf(v4[v].z, v4[v].w)));
        }
    }
    m = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (int v = 0; v < WARP_VEC; ++v) {
        int i = v * 32 + lane;
        if (i < n4) {
            v4[v].x = expf(v4[v].x - m);
            v4[v].y = expf(v4[v].y - m);
            v4[v].z = expf(v4[v].z - m);
            v4[v].w = expf(v4[v].w - m);
            s += (v4[v].x + v4[v].y) + (v4[v].z + v4[v].w);
        }
    }
    float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int v = 0; v < WARP_VEC; ++v) {
        int i = v * 32 + lane;
        if (i < n4)
            out[i] = make_float4(v4[v].x * inv, v4[v].y * inv, v4[v].z * inv, v4[v].w * inv);
    }
}

#include "cluster_sync.cuh"  // cluster rank, size and barrier, shared with rmsnorm.cu

// A load from another block's shared memory (distributed shared memory: the address is mapped
// into the target block's window by mapa).
__device__ __forceinline__ float2 dsmem_load2(const float2* local, unsigned rank)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(local), remote;
    float2 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];"
                 : "=f"(v.x), "=f"(v.y)
                 : "r"(remote)
                 : "memory");
    return v;
}

// A cluster of C blocks per row (C = the launch's cluster size, 1 to 8): block `rank` holds
// columns [rank·cols/C, (rank+1)·cols/C) in registers, finds its own max and sum of exponentials
// as softmax_fused does, and publishes the pair in its shared memory. After one cluster barrier
// every warp reads the C pairs through distributed shared memory and merges them (online-softmax
// rule), then rescales its exponentials by exp(m_block - m_row) / s_row and writes: the row is
// read once and written once however long it is. Launch: grid = rows · C blocks along x,
// cluster (C, 1, 1); cols divisible by 4 · C; cols / C <= 4 * MAX_VEC * blockDim.x.
extern "C" __global__ void softmax_cluster(const float* __restrict__ x, float* __restrict__ y,
                                           int cols)
{
    __shared__ float scratch[33];
    __shared__ float2 stat;
    unsigned rank = cluster_rank(), parts = cluster_size();
    int chunk = cols / parts;
    size_t off = (size_t)(blockIdx.x / parts) * cols + (size_t)rank * chunk;
    const float4* row = reinterpret_cast<const float4*>(x + off);
    float4* out = reinterpret_cast<float4*>(y + off);
    int n4 = chunk / 4;
    float4 r[MAX_VEC];
    float m = NEG_INF;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v] = row[i];
            m = fmaxf(m, fmaxf(fmaxf(r[v].x, r[v].y), fmaxf(r[v].z, r[v].w)));
        }
    }
    m = block_max(m, scratch);
    float s = 0.0f;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v].x = expf(r[v].x - m);
            r[v].y = expf(r[v].y - m);
            r[v].z = expf(r[v].z - m);
            r[v].w = expf(r[v].w - m);
            s += (r[v].x + r[v].y) + (r[v].z + r[v].w);
        }
    }
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) stat = make_float2(m, s);
    cluster_arrive();
    cluster_wait();
    // Lane k of every warp fetches block k's pair; the warp merges them with shuffles.
    int lane = threadIdx.x % 32;
    float rm = NEG_INF, rs = 0.0f;
    if (lane < (int)parts) {
        float2 p = dsmem_load2(&stat, lane);
        rm = p.x;
        rs = p.y;
    }
    for (int o = 16; o > 0; o >>= 1)
        online_merge(rm, rs, __shfl_xor_sync(FULL_MASK, rm, o), __shfl_xor_sync(FULL_MASK, rs, o));
    // Done reading the others' shared memory: say so now, wait only before exiting, so that no
    // block's shared memory disappears while another still reads it.
    cluster_arrive();
    float k = expf(m - rm) / rs;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) out[i] = make_float4(r[v].x * k, r[v].y * k, r[v].z * k, r[v].w * k);
    }
    cluster_wait();
}
