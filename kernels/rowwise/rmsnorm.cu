// rmsnorm.cu — RMSNorm forward: y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]²) + eps) * w[c].
//
// Like softmax, a row-wise operation whose arithmetic is cheap: the cost is the trip through
// device memory. The naive kernel gives a whole row to one thread; neighbouring threads then
// read addresses a row (16 KB) apart, and each row is read twice. The block-per-row kernel reads
// the row once, coalesced and 16 bytes at a time, and keeps it in registers.

#define FULL_MASK 0xffffffffu

// Rung 1: one thread per row. Loop over the row to sum the squares, then loop again to scale.
// A warp's 32 loads go to 32 different rows: uncoalesced, and few threads in total.
extern "C" __global__ void rmsnorm_naive(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int rows, int cols, float eps)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    float ss = 0.0f;
    for (int c = 0; c < cols; ++c) ss += row[c] * row[c];
    float scale = rsqrtf(ss / cols + eps);
    float* out = y + (size_t)r * cols;
    for (int c = 0; c < cols; ++c) out[c] = row[c] * scale * w[c];
}

// Rung 2: one block per row, float4 loads, the row held in registers (up to MAX_VEC float4 per
// thread: cols <= 4 * MAX_VEC * blockDim.x, cols divisible by 4). Sum of squares: warp shuffles,
// then the warp sums through shared memory.
#define MAX_VEC 8
extern "C" __global__ void rmsnorm_block_vec4(const float* __restrict__ x,
                                              const float* __restrict__ w, float* __restrict__ y,
                                              int rows, int cols, float eps)
{
    __shared__ float warp_sums[32];
    __shared__ float total;
    const float4* row = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* out = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * cols);
    int n4 = cols / 4;
    float4 r[MAX_VEC];
    float ss = 0.0f;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v] = row[i];
            ss += r[v].x * r[v].x + r[v].y * r[v].y + r[v].z * r[v].z + r[v].w * r[v].w;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
        if (lane == 0) total = ss;
    }
    __syncthreads();
    float scale = rsqrtf(total / cols + eps);
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            float4 g = w4[i];
            out[i] = make_float4(r[v].x * scale * g.x, r[v].y * scale * g.y, r[v].z * scale * g.z,
                                 r[v].w * scale * g.w);
        }
    }
}

// ---- Backward ------------------------------------------------------------------------------
// Given x, w and the upstream gradient dy (rows × cols), with s = 1 / sqrt(mean(x²) + eps):
//   dx[r][c] = s·w[c]·dy[r][c] − x[r][c] · s³ / cols · Σ_k w[k]·dy[r][k]·x[r][k]
//   dw[c]    = Σ_r dy[r][c]·x[r][c]·s_r
// dx is row-wise like the forward pass (two block sums per row: Σx² and Σ w·dy·x). dw is a
// reduction over all rows into one vector: the part that needs thought.

// Sum of two values over the block, result in every thread. `buf` holds 2 × 32 floats per
// parity; alternating the parity between calls means one barrier per call suffices.
__device__ __forceinline__ float2 block_sum2(float a, float b, float* buf, int parity)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(FULL_MASK, a, o);
        b += __shfl_xor_sync(FULL_MASK, b, o);
    }
    float* s = buf + parity * 64;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        s[warp] = a;
        s[32 + warp] = b;
    }
    __syncthreads();
    a = 0.0f;
    b = 0.0f;
    for (int k = 0; k < (int)(blockDim.x / 32); ++k) {
        a += s[k];
        b += s[32 + k];
    }
    return make_float2(a, b);
}

// Backward rung 1: one block per row (as rmsnorm_block_vec4), dw by atomicAdd. Every block adds
// its row's cols contributions into the same cols floats of dw (zeroed before the launch), so
// rows·cols atomics land on only cols addresses and queue up behind each other in L2.
// Launch: 256 threads, rows blocks; cols divisible by 4 and at most 8192.
extern "C" __global__ void rmsnorm_bwd_atomic(const float* __restrict__ x,
                                              const float* __restrict__ w,
                                              const float* __restrict__ dy,
                                              float* __restrict__ dx, float* __restrict__ dw,
                                              int rows, int cols, float eps)
{
    __shared__ float buf[128];
    size_t off = (size_t)blockIdx.x * cols;
    const float4* x4 = reinterpret_cast<const float4*>(x + off);
    const float4* dy4 = reinterpret_cast<const float4*>(dy + off);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* dx4 = reinterpret_cast<float4*>(dx + off);
    int n4 = cols / 4;
    float4 xr[MAX_VEC], gr[MAX_VEC];
    float ss = 0.0f, dot = 0.0f;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            xr[v] = x4[i];
            gr[v] = dy4[i];
            float4 g = w4[i];
            ss += xr[v].x * xr[v].x + xr[v].y * xr[v].y + xr[v].z * xr[v].z + xr[v].w * xr[v].w;
            dot += g.x * gr[v].x * xr[v].x + g.y * gr[v].y * xr[v].y + g.z * gr[v].z * xr[v].z +
                   g.w * gr[v].w * xr[v].w;
        }
    }
    float2 t = block_sum2(ss, dot, buf, 0);
    float s = rsqrtf(t.x / cols + eps);
    float k = s * s * s * t.y / cols;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            float4 g = w4[i];
            dx4[i] = make_float4(s * g.x * gr[v].x - k * xr[v].x, s * g.y * gr[v].y - k * xr[v].y,
                                 s * g.z * gr[v].z - k * xr[v].z, s * g.w * gr[v].w - k * xr[v].w);
            float* d = dw + 4 * i;
            atomicAdd(d + 0, gr[v].x * xr[v].x * s);
            atomicAdd(d + 1, gr[v].y * xr[v].y * s);
            atomicAdd(d + 2, gr[v].z * xr[v].z * s);
            atomicAdd(d + 3, gr[v].w * xr[v].w * s);
        }
    }
}

// Backward rung 2: a grid of a few blocks per SM walks the rows (block b takes rows b, b + grid,
// …); each thread keeps its columns' dw sums in registers across all its rows, and the block
// writes one partial row at the end: grid × cols floats instead of rows × cols atomics. A second
// small kernel (rmsnorm_bwd_dw_reduce) adds the grid partial rows into dw.
// Launch: any block size and grid; cols divisible by 4, at most 4 · MAX_VEC · blockDim.x. The
// harness uses 128 threads and 4 blocks per SM (126 registers a thread): four independent
// blocks per SM overlap one row's loads with another's block sums better than two of 256
// threads did (2.50 against 2.42 TB/s on the H100).
extern "C" __global__ void rmsnorm_bwd(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ dy, float* __restrict__ dx,
                                       float* __restrict__ dw_partial, int rows, int cols,
                                       float eps)
{
    __shared__ float buf[128];
    const float4* w4 = reinterpret_cast<const float4*>(w);
    int n4 = cols / 4;
    float4 acc[MAX_VEC];
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) acc[v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    int parity = 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x, parity ^= 1) {
        size_t off = (size_t)r * cols;
        const float4* x4 = reinterpret_cast<const float4*>(x + off);
        const float4* dy4 = reinterpret_cast<const float4*>(dy + off);
        float4* dx4 = reinterpret_cast<float4*>(dx + off);
        float4 xr[MAX_VEC], gr[MAX_VEC];
        float ss = 0.0f, dot = 0.0f;
#pragma unroll
        for (int v = 0; v < MAX_VEC; ++v) {
            int i = v * blockDim.x + threadIdx.x;
            if (i < n4) {
                xr[v] = x4[i];
                gr[v] = dy4[i];
                float4 g = w4[i];
                ss += xr[v].x * xr[v].x + xr[v].y * xr[v].y + xr[v].z * xr[v].z +
                      xr[v].w * xr[v].w;
                dot += g.x * gr[v].x * xr[v].x + g.y * gr[v].y * xr[v].y +
                       g.z * gr[v].z * xr[v].z + g.w * gr[v].w * xr[v].w;
            }
        }
        float2 t = block_sum2(ss, dot, buf, parity);
        float s = rsqrtf(t.x / cols + eps);
        float k = s * s * s * t.y / cols;
#pragma unroll
        for (int v = 0; v < MAX_VEC; ++v) {
            int i = v * blockDim.x + threadIdx.x;
            if (i < n4) {
                float4 g = w4[i];
                dx4[i] = make_float4(s * g.x * gr[v].x - k * xr[v].x,
                                     s * g.y * gr[v].y - k * xr[v].y,
                                     s * g.z * gr[v].z - k * xr[v].z,
                                     s * g.w * gr[v].w - k * xr[v].w);
                acc[v].x += gr[v].x * xr[v].x * s;
                acc[v].y += gr[v].y * xr[v].y * s;
                acc[v].z += gr[v].z * xr[v].z * s;
                acc[v].w += gr[v].w * xr[v].w * s;
            }
        }
    }
    float4* out = reinterpret_cast<float4*>(dw_partial + (size_t)blockIdx.x * cols);
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) out[i] = acc[v];
    }
}

// dw[c] = Σ_p partial[p][c]: one thread per column, neighbouring threads read neighbouring
// columns. Launch: ceil(cols / 256) blocks of 256.
extern "C" __global__ void rmsnorm_bwd_dw_reduce(const float* __restrict__ partial,
                                                 float* __restrict__ dw, int parts, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int p = 0; p < parts; ++p) s += partial[(size_t)p * cols + c];
    dw[c] = s;
}

// ---- Forward width sweep: a warp per short row, a thread-block cluster per long row ----------
// rmsnorm_block_vec4 holds at most 8192 floats of a row (32 per thread of 256); longer rows
// need more registers than one block may have, shorter ones spend two barriers on a few loads.

// A warp per row (blockDim.x / 32 rows per block), no barriers. Needs cols divisible by 4 and
// cols <= 4 * 32 * WARP_VEC (2048).
#define WARP_VEC 16
extern "C" __global__ void rmsnorm_warp(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, int rows, int cols, float eps)
{
    int lane = threadIdx.x % 32;
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= rows) return;
    const float4* row = reinterpret_cast<const float4*>(x + (size_t)r * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* out = reinterpret_cast<float4*>(y + (size_t)r * cols);
    int n4 = cols / 4;
    float4 v4[WARP_VEC];
    float ss = 0.0f;
#pragma unroll
    for (int v = 0; v < WARP_VEC; ++v) {
        int i = v * 32 + lane;
        if (i < n4) {
            v4[v] = row[i];
            ss += v4[v].x * v4[v].x + v4[v].y * v4[v].y + v4[v].z * v4[v].z + v4[v].w * v4[v].w;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
    float scale = rsqrtf(ss / cols + eps);
#pragma unroll
    for (int v = 0; v < WARP_VEC; ++v) {
        int i = v * 32 + lane;
        if (i < n4) {
            float4 g = w4[i];
            out[i] = make_float4(v4[v].x * scale * g.x, v4[v].y * scale * g.y,
                                 v4[v].z * scale * g.z, v4[v].w * scale * g.w);
        }
    }
}

#include "cluster_sync.cuh"  // cluster rank, size and barrier, shared with softmax.cu

// A float load from another block's shared memory (distributed shared memory).
__device__ __forceinline__ float dsmem_load(const float* local, unsigned rank)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(local), remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

// A cluster of C blocks per row (C = the launch's cluster size, 1 to 8): block `rank` holds
// columns [rank·cols/C, (rank+1)·cols/C) in registers and publishes its sum of squares in shared
// memory; after one cluster barrier each warp adds the C partial sums read through distributed
// shared memory, and every block scales its part. The row is read once and written once.
// Launch: grid = rows · C blocks along x, cluster (C, 1, 1); cols divisible by 4 · C;
// cols / C <= 4 * MAX_VEC * blockDim.x.
extern "C" __global__ void rmsnorm_cluster(const float* __restrict__ x,
                                           const float* __restrict__ w, float* __restrict__ y,
                                           int rows, int cols, float eps)
{
    __shared__ float warp_sums[32];
    __shared__ float part_sum;
    unsigned rank = cluster_rank(), parts = cluster_size();
    int chunk = cols / parts;
    size_t off = (size_t)(blockIdx.x / parts) * cols + (size_t)rank * chunk;
    const float4* row = reinterpret_cast<const float4*>(x + off);
    const float4* w4 = reinterpret_cast<const float4*>(w + (size_t)rank * chunk);
    float4* out = reinterpret_cast<float4*>(y + off);
    int n4 = chunk / 4;
    float4 r[MAX_VEC];
    float ss = 0.0f;
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            r[v] = row[i];
            ss += r[v].x * r[v].x + r[v].y * r[v].y + r[v].z * r[v].z + r[v].w * r[v].w;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
        if (lane == 0) part_sum = ss;
    }
    cluster_arrive();
    cluster_wait();
    // Lane k of every warp fetches block k's partial sum; the warp adds them with shuffles.
    ss = lane < (int)parts ? dsmem_load(&part_sum, lane) : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, o);
    // Done reading the others' shared memory; wait only before exiting (see softmax_cluster).
    cluster_arrive();
    float scale = rsqrtf(ss / cols + eps);
#pragma unroll
    for (int v = 0; v < MAX_VEC; ++v) {
        int i = v * blockDim.x + threadIdx.x;
        if (i < n4) {
            float4 g = w4[i];
            out[i] = make_float4(r[v].x * scale * g.x, r[v].y * scale * g.y,
                                 r[v].z * scale * g.z, r[v].w * scale * g.w);
        }
    }
    cluster_wait();
}
