// gemv.cu — y = A·x for a rows × cols row-major matrix A.
//
// Every element of A is used once: a matrix-vector product is memory-bound, and the question is
// only whether the kernel reads A at full bandwidth. x (64 KB for 16384 columns) is reused by
// every row and stays in the caches.

#define FULL_MASK 0xffffffffu

// Rung 1: one thread per row. Thread r walks row r; the 32 threads of a warp read 32 addresses a
// whole row apart on each step, so every load touches 32 different cache lines.
extern "C" __global__ void gemv_naive(const float* __restrict__ A, const float* __restrict__ x,
                                      float* __restrict__ y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* a = A + (size_t)r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += a[c] * x[c];
    y[r] = s;
}

// Rung 2: one warp per row. The 32 lanes read consecutive float4s of the row (512 bytes per
// warp-wide load), four loads in flight per lane, each into its own accumulator, then the lanes
// combine their partial sums with shuffles. Needs cols divisible by 4.
#define GEMV_UNROLL 4
extern "C" __global__ void gemv_warp_vec4(const float* __restrict__ A, const float* __restrict__ x,
                                          float* __restrict__ y, int rows, int cols)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;  // whole warps leave together
    const float4* a = reinterpret_cast<const float4*>(A + (size_t)r * cols);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    int n4 = cols / 4;
    float acc[GEMV_UNROLL] = {};
    int i = lane;
    for (; i + (GEMV_UNROLL - 1) * 32 < n4; i += GEMV_UNROLL * 32) {
        float4 av[GEMV_UNROLL];
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; ++u) av[u] = a[i + u * 32];
#pragma unroll
        for (int u = 0; u < GEMV_UNROLL; ++u) {
            float4 xv = x4[i + u * 32];
            acc[u] += av[u].x * xv.x + av[u].y * xv.y + av[u].z * xv.z + av[u].w * xv.w;
        }
    }
    for (; i < n4; i += 32) {  // tail
        float4 av = a[i], xv = x4[i];
        acc[0] += av.x * xv.x + av.y * xv.y + av.z * xv.z + av.w * xv.w;
    }
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < GEMV_UNROLL; ++u) s += acc[u];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
    if (lane == 0) y[r] = s;
}
