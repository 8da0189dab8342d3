// reduction.cu — sum of n floats.
//
// Every rung is a two-pass reduction: pass 1 (the rung's own kernel) writes one partial sum per
// block, pass 2 (`sum_partials`, shared by all rungs) adds the partials in one block. Two passes
// keep the result deterministic and accurate: no float is ever added to a running total of
// 10^8 by 10^6 threads in an arbitrary order. What changes from rung to rung is how a block
// combines its own elements, and how many elements each thread reads.
//
// Launch pass 1 with 256 threads per block (the kernels assume blockDim.x == 256).

// ANCHOR: warp_block_sum
#define BLOCK 256
#define FULL_MASK 0xffffffffu

// Sum of v over the 32 lanes of a warp, in 5 shuffle steps; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL_MASK, v, offset);
    return v;
}

// Sum of v over a block: warps reduce with shuffles, warp 0 reduces the 32 warp sums.
// The result is valid in thread 0.
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float warp_sums[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}
// ANCHOR_END: warp_block_sum

// Rung 1: atomics. Every thread atomicAdds its element into one shared-memory float of its
// block: 256 additions to one address, done one after another by the hardware. One element per
// thread, n / 256 blocks.
extern "C" __global__ void reduce_atomic(const float* __restrict__ in, unsigned long long n,
                                         float* __restrict__ partials)
{
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.0f;
    __syncthreads();
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&total, in[i]);
    __syncthreads();
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Rung 2: a tree in shared memory. log2(256) = 8 halving steps, each followed by a barrier;
// in the last steps most threads of the block sit idle. One element per thread.
extern "C" __global__ void reduce_shared_tree(const float* __restrict__ in, unsigned long long n,
                                              float* __restrict__ partials)
{
    __shared__ float s[BLOCK];
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

// Rung 3: warp shuffles. Within a warp, registers are exchanged directly (no shared memory, no
// barrier); only the 8 warp sums go through shared memory. Still one element per thread.
extern "C" __global__ void reduce_warp_shuffle(const float* __restrict__ in, unsigned long long n,
                                               float* __restrict__ partials)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = block_sum(i < n ? in[i] : 0.0f);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// ANCHOR: reduce_vec4_rung
// Rung 4: many elements per thread. A fixed grid (a few blocks per SM) walks the array with
// float4 loads, UNROLL of them in flight per thread, each into its own accumulator; the block
// then reduces once. The block-level work is now amortised over thousands of elements, and the
// kernel streams memory like a copy that never writes. Needs n divisible by 4.
#define REDUCE_UNROLL 4
extern "C" __global__ void reduce_vec4(const float4* __restrict__ in, unsigned long long n4,
                                       float* __restrict__ partials)
{
    float acc[REDUCE_UNROLL] = {};
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * REDUCE_UNROLL;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x * REDUCE_UNROLL + threadIdx.x;
    for (; i + (REDUCE_UNROLL - 1) * blockDim.x < n4; i += stride) {
        float4 v[REDUCE_UNROLL];
#pragma unroll
        for (int u = 0; u < REDUCE_UNROLL; ++u) v[u] = in[i + (unsigned long long)u * blockDim.x];
#pragma unroll
        for (int u = 0; u < REDUCE_UNROLL; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    // Tail: at most REDUCE_UNROLL - 1 float4s per thread are left over.
    for (; i < n4; i += blockDim.x) {
        float4 v = in[i];
        acc[0] += (v.x + v.y) + (v.z + v.w);
    }
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < REDUCE_UNROLL; ++u) total += acc[u];
    total = block_sum(total);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}
// ANCHOR_END: reduce_vec4_rung

// Pass 2: one block of 1024 threads adds `count` partial sums and writes the result to out[0].
extern "C" __global__ void sum_partials(const float* __restrict__ partials, unsigned int count,
                                        float* __restrict__ out)
{
    float v = 0.0f;
    for (unsigned int i = threadIdx.x; i < count; i += blockDim.x) v += partials[i];
    v = block_sum(v);
    if (threadIdx.x == 0) out[0] = v;
}
