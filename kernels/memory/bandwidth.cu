// bandwidth.cu — how fast can a kernel move bytes through device memory?
//
// The ladder: one element per thread, then a grid-stride loop, then 16-byte (float4) accesses,
// then several 16-byte loads in flight per thread before the first store. Each rung changes one
// thing. Vector add (c = a + b) closes the family: two streams in, one out.
//
// Every kernel is `extern "C"` so the harness can look it up by name, and takes the element count
// as a 64-bit integer so that 2^28 elements (1 GiB) index without overflow. The float4 kernels
// need n divisible by 4 and 16-byte aligned pointers (cuMemAlloc returns 256-byte alignment).

// Rung 1: one thread per element. Simple and coalesced: thread i of a warp touches word i,
// so a warp reads 128 contiguous bytes. One 4-byte load in flight per thread.
extern "C" __global__ void copy_naive(const float* __restrict__ in, float* __restrict__ out,
                                      unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// Rung 2: a fixed grid (a few blocks per SM) walks the array in strides of the whole grid.
// Fewer blocks to schedule, but still one 4-byte load per iteration.
extern "C" __global__ void copy_grid_stride(const float* __restrict__ in, float* __restrict__ out,
                                            unsigned long long n)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = in[i];
}

// Rung 3: 16-byte accesses. One float4 per thread: a warp moves 512 bytes per instruction,
// four times the bytes per load instruction of rung 1.
extern "C" __global__ void copy_vec4(const float4* __restrict__ in, float4* __restrict__ out,
                                     unsigned long long n4)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = in[i];
}

// ANCHOR: copy_ilp
// Rung 4: each thread issues UNROLL independent 16-byte loads before its first store, so more
// bytes are in flight per thread while the memory system answers (Little's law: bandwidth =
// bytes in flight / latency). Consecutive threads still touch consecutive float4s.
#define COPY_UNROLL 4
extern "C" __global__ void copy_vec4_ilp(const float4* __restrict__ in, float4* __restrict__ out,
                                         unsigned long long n4)
{
    unsigned long long base =
        (unsigned long long)blockIdx.x * blockDim.x * COPY_UNROLL + threadIdx.x;
    float4 r[COPY_UNROLL];
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; ++u) {
        unsigned long long i = base + (unsigned long long)u * blockDim.x;
        if (i < n4) r[u] = in[i];
    }
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; ++u) {
        unsigned long long i = base + (unsigned long long)u * blockDim.x;
        if (i < n4) out[i] = r[u];
    }
}
// ANCHOR_END: copy_ilp

// The first kernel of the book: vector add c = a + b, one element per thread. The CPU loop
// `for (i = 0; i < n; ++i) c[i] = a[i] + b[i];` becomes one thread per iteration; the index is
// the thread's global position in the grid, and the `if` guards the last, partial block.
extern "C" __global__ void vector_add_naive(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, unsigned long long n)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Vector add c = a + b with float4 accesses and two float4 pairs in flight per thread:
// 12 bytes move for every FLOP, so this is a bandwidth benchmark too.
#define ADD_UNROLL 2
extern "C" __global__ void vector_add_vec4(const float4* __restrict__ a,
                                           const float4* __restrict__ b,
                                           float4* __restrict__ c, unsigned long long n4)
{
    unsigned long long base =
        (unsigned long long)blockIdx.x * blockDim.x * ADD_UNROLL + threadIdx.x;
    float4 x[ADD_UNROLL], y[ADD_UNROLL];
#pragma unroll
    for (int u = 0; u < ADD_UNROLL; ++u) {
        unsigned long long i = base + (unsigned long long)u * blockDim.x;
        if (i < n4) {
            x[u] = a[i];
            y[u] = b[i];
        }
    }
#pragma unroll
    for (int u = 0; u < ADD_UNROLL; ++u) {
        unsigned long long i = base + (unsigned long long)u * blockDim.x;
        if (i < n4)
            c[i] = make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w);
    }
}
