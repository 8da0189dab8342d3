// qgemv_sweep.cu — a tuning harness for the int4 tensor-core GEMV, not part of the book's
// measurements (those come from `hdlc bench`, verified first). It times the weight products of
// one Llama-3-8B decode step at batch 1 the way the quant_decode lab runs them: 32 layers × the
// fused QKV, O, fused gate/up and down projections, every layer with its own weights (so L2 holds
// nothing from the last layer), back to back on one stream. Compile once per kernel shape:
//   nvcc -O3 -arch=sm_90a -DMMA_S=8 -DMMA_TW=1 -DMMA_U=1 -DMMA_NST=4 -DMMA_NST1=2 -DMMA_MIN_BLOCKS=2 \
//        -I kernels/inference tools/gpu/qgemv_sweep.cu -o /tmp/sweep
// and read the floor ratio it prints (bytes at the same run's device-to-device copy bandwidth).
// KERNEL_FILE picks the .cu file whose qgemv_int4_mma_t1 is timed (default quant_gemv_mma.cu).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>

#ifndef KERNEL_FILE
#define KERNEL_FILE "quant_gemv_mma.cu"
#endif
#include KERNEL_FILE

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e = (x);                                                        \
        if (e != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

struct Mat {
    int n, k;
    void* w;
    float* s;
};

// Random bytes for the codes and scales in (0.5, 1.5) / 16, from a hash of the index.
__global__ void fill(unsigned* w, size_t words, float* sc, size_t ns, float* x, int nx)
{
    const size_t end = words > (size_t)nx ? words : (size_t)nx;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < end; i += gridDim.x * (size_t)blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u;
        h ^= h >> 15;
        if (i < words) w[i] = h * 2246822519u;
        if (i < ns) sc[i] = (0.5f + (float)((h >> 8) & 1023) / 1024.0f) / 16.0f;
        if (i < (size_t)nx) x[i] = (float)((int)((i * 37) % 17) - 8) / 8.0f;  // exact in FP16
    }
}

// The reference: one thread per 32-bit word of the stored layout (see quant_gemv_mma.cu), its
// eight weights decoded from the layout's description and added into y in FP32.
__global__ void reference(const unsigned* w, const float* sc, const float* x, float* y, int n, int k)
{
    const int groups = k / 128;
    const size_t words = (size_t)n * k / 8;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += gridDim.x * (size_t)blockDim.x) {
        const size_t blk = i / 256;  // 1 KB blocks
        const int T = (int)(blk / groups), j = (int)(blk % groups), off = (int)(i % 256) * 4;
        const int half = off / 512, l = (off % 512) / 16, sm = (off % 16) / 4, s = half * 4 + sm;
        const int g = l / 4, t = l % 4;
        for (int e = 0; e < 8; ++e) {
            const int row = 16 * T + g + 8 * (e % 2);
            const int col = 128 * j + 16 * s + 4 * t + 2 * ((e / 2) % 2) + e / 4;
            const float q = (float)((w[i] >> (4 * e)) & 0xfu) - 8.0f;
            atomicAdd(&y[row], q * sc[(size_t)row * groups + j] * x[col]);
        }
    }
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    const int layers = 32, shapes[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
    std::vector<Mat> mats;
    double bytes = 0;
    for (int l = 0; l < layers; ++l)
        for (auto& sh : shapes) {
            Mat m{sh[0], sh[1], nullptr, nullptr};
            size_t wb = (size_t)m.n * m.k / 2, sb = (size_t)m.n * (m.k / 128) * 4;
            CK(cudaMalloc(&m.w, wb));
            CK(cudaMalloc(&m.s, sb));
            CK(cudaMemset(m.w, 0x37, wb));
            CK(cudaMemset(m.s, 0, sb));
            bytes += wb + sb;
            mats.push_back(m);
        }
    float *x, *y;
    CK(cudaMalloc(&x, 14336 * 4));
    CK(cudaMalloc(&y, 28672 * 4));
    CK(cudaMemset(x, 0, 14336 * 4));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    auto launch = [&](const Mat& m) {
        qgemv_int4_mma_t1<<<m.n / (16 * MMA_TW), 32 * MMA_S>>>((const uint4*)m.w, m.s, x, y, 1,
                                                               m.n, m.k);
    };
    // Check the kernel against the reference at each shape (layer 0's weights, random values).
    fill<<<1024, 256>>>((unsigned*)mats[0].w, 0, nullptr, 0, x, 14336);
    for (int si = 0; si < 4; ++si) {
        const Mat& m = mats[si];
        fill<<<1024, 256>>>((unsigned*)m.w, (size_t)m.n * m.k / 8, m.s, (size_t)m.n * (m.k / 128), x, 0);
        float* yr;
        CK(cudaMalloc(&yr, m.n * 4));
        CK(cudaMemset(yr, 0, m.n * 4));
        reference<<<1024, 256>>>((const unsigned*)m.w, m.s, x, yr, m.n, m.k);
        launch(m);
        CK(cudaDeviceSynchronize());
        std::vector<float> a(m.n), b(m.n);
        CK(cudaMemcpy(a.data(), y, m.n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), yr, m.n * 4, cudaMemcpyDeviceToHost));
        double num = 0, den = 0;
        for (int i = 0; i < m.n; ++i) num = std::max(num, (double)fabsf(a[i] - b[i])), den = std::max(den, (double)fabsf(b[i]));
        printf("  check %5d x %5d: max |y - ref| / max |ref| = %.2e\n", m.n, m.k, num / den);
        CK(cudaFree(yr));
    }
    // Copy bandwidth of the same run: 1 GiB device to device.
    size_t cb = 1ull << 30;
    void *c0, *c1;
    CK(cudaMalloc(&c0, cb));
    CK(cudaMalloc(&c1, cb));
    std::vector<float> copy;
    for (int r = 0; r < 12; ++r) {
        CK(cudaEventRecord(a));
        CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r > 1) copy.push_back(ms);
    }
    const double gbps = 2.0 * cb / (median(copy) * 1e-3) / 1e9;
    // Whole step, as a CUDA graph (the lab replays one), then each shape's 32 layers alone.
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (auto& m : mats)
        qgemv_int4_mma_t1<<<m.n / (16 * MMA_TW), 32 * MMA_S, 0, st>>>((const uint4*)m.w, m.s, x,
                                                                        y, 1, m.n, m.k);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> step;
    for (int r = 0; r < 12; ++r) {
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r > 1) step.push_back(ms);
    }
    CK(cudaGetLastError());
    const double floor_ms = bytes / (gbps * 1e9) * 1e3;
    printf("S=%d TW=%d U=%d NST1=%d MINB=%d  copy %.0f GB/s  step %.3f ms  floor %.3f ms  ratio %.2f\n",
           MMA_S, MMA_TW, MMA_U, MMA_NST1, MMA_MIN_BLOCKS, gbps, median(step), floor_ms,
           median(step) / floor_ms);
    for (int si = 0; si < 4; ++si) {
        std::vector<float> t;
        double sb = 0;
        for (int r = 0; r < 8; ++r) {
            CK(cudaEventRecord(a));
            for (int l = 0; l < layers; ++l) launch(mats[l * 4 + si]);
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (r > 1) t.push_back(ms);
        }
        const Mat& m = mats[si];
        sb = layers * ((double)m.n * m.k / 2 + (double)m.n * (m.k / 128) * 4);
        const double us = median(t) * 1e3 / layers;
        printf("  %5d x %5d  %6.1f us/launch  %5.0f GB/s  %.2f x floor\n", m.n, m.k, us,
               sb / layers / (us * 1e-6) / 1e9, us / (sb / layers / (gbps * 1e9) * 1e6));
    }
    CK(cudaGetLastError());
    return 0;
}
