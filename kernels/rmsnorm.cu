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
