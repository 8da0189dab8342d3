// sgemm.cu — C = A·B in FP32 on the CUDA cores (no tensor cores), row-major:
// A is M × K, B is K × N, C is M × N.
//
// The ladder follows the well-known path from a naive kernel to one within reach of cuBLAS.
// Each rung removes the bottleneck of the one before:
//   1 naive            each thread computes one C element; a warp's loads of A are uncoalesced
//   2 coalesced        swap the thread → element mapping so a warp reads contiguous memory
//   3 shared memory    32 × 32 tiles of A and B staged in shared memory, reused 32 times
//   4 1D blocktiling   each thread computes 8 C elements of a column: fewer shared loads per FMA
//   5 2D blocktiling   each thread computes an 8 × 8 block of C from registers
//   6 vectorized       float4 global loads, the A tile stored transposed, float4 shared loads
//   7 warptiling       each warp owns a 32 × 64 sub-tile laid out so shared-memory reads are
//                      conflict-free broadcasts; the next tiles load while this one computes
//   8 tuned            in sgemm_tuned.cu: rung 7 with register prefetch, tile shape swept
//
// Sizes: rungs 1-3 need M, N, K divisible by 32, rung 4 by 64, rungs 5-7 by 128 (the harness
// only runs square multiples of 1024).

// ---- 1. naive: threadIdx.x → row of C ------------------------------------------------------
// Launch: block (32, 32), grid (M / 32, N / 32). Neighbouring threads of a warp own neighbouring
// rows, so on each step they read A a whole row apart, and they write C a whole row apart.
extern "C" __global__ void sgemm_naive(int M, int N, int K, const float* __restrict__ A,
                                       const float* __restrict__ B, float* __restrict__ C)
{
    int row = blockIdx.x * 32 + threadIdx.x;
    int col = blockIdx.y * 32 + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// ---- 2. coalesced: threadIdx.x → column of C -----------------------------------------------
// Launch: block (32, 32), grid (N / 32, M / 32). A warp now shares one row of A (a broadcast)
// and reads 32 consecutive floats of B and writes 32 consecutive floats of C.
extern "C" __global__ void sgemm_coalesced(int M, int N, int K, const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ C)
{
    int col = blockIdx.x * 32 + threadIdx.x;
    int row = blockIdx.y * 32 + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// ---- 3. shared-memory tiling ---------------------------------------------------------------
// Launch: block (32, 32), grid (N / 32, M / 32). The block loads a 32 × 32 tile of A and of B
// (one element per thread, coalesced), then every element in shared memory is used 32 times.
extern "C" __global__ void sgemm_smem(int M, int N, int K, const float* __restrict__ A,
                                      const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * 32 + tx;
    int row = blockIdx.y * 32 + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[ty][tx] = A[(size_t)row * K + k0 + tx];
        Bs[ty][tx] = B[(size_t)(k0 + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(size_t)row * N + col] = acc;
}

// ---- 4. 1D blocktiling: 8 results per thread -----------------------------------------------
// Launch: 512 threads, grid (N / 64, M / 64). Block tile 64 × 64, K step 8. Thread t computes
// rows 8·(t / 64) .. +7 of column t % 64: each B value read from shared memory feeds 8 FMAs.
extern "C" __global__ void sgemm_blocktile_1d(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C)
{
    constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;
    const int tcol = t % BN, trow = t / BN;          // trow 0..7: 8 rows each
    const int a_row = t / BK, a_col = t % BK;        // 512 threads load the 64 × 8 A tile
    const int b_row = t / BN, b_col = t % BN;        // ... and the 8 × 64 B tile
    A += (size_t)blockIdx.y * BM * K;
    B += (size_t)blockIdx.x * BN;
    float acc[TM] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_row * BK + a_col] = A[(size_t)a_row * K + k0 + a_col];
        Bs[b_row * BN + b_col] = B[(size_t)(k0 + b_row) * N + b_col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float b = Bs[k * BN + tcol];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
        }
        __syncthreads();
    }
    float* Cb = C + (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i) Cb[(size_t)(trow * TM + i) * N + tcol] = acc[i];
}

// ---- 5. 2D blocktiling: an 8 × 8 block of C per thread -------------------------------------
// Launch: 256 threads, grid (N / 128, M / 128). Block tile 128 × 128, K step 8. Per k, a thread
// loads 8 values of A and 8 of B into registers and does 64 FMAs: 4 FMAs per shared load.
extern "C" __global__ void sgemm_blocktile_2d(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C)
{
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int t = threadIdx.x;
    const int tcol = t % (BN / TN), trow = t / (BN / TN);  // 16 × 16 threads
    const int a_row = t / BK, a_col = t % BK;              // 32 rows of A per pass, 4 passes
    const int b_row = t / BN, b_col = t % BN;              // 2 rows of B per pass, 4 passes
    A += (size_t)blockIdx.y * BM * K;
    B += (size_t)blockIdx.x * BN;
    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int r = 0; r < BM; r += 256 / BK) As[(a_row + r) * BK + a_col] = A[(size_t)(a_row + r) * K + k0 + a_col];
#pragma unroll
        for (int r = 0; r < BK; r += 256 / BN) Bs[(b_row + r) * BN + b_col] = B[(size_t)(k0 + b_row + r) * N + b_col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[(trow * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[k * BN + tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
    float* Cb = C + (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) Cb[(size_t)(trow * TM + i) * N + tcol * TN + j] = acc[i][j];
}

// ---- 6. vectorized: float4 everywhere, A tile transposed -----------------------------------
// Launch: 256 threads, grid (N / 128, M / 128). Same tiling as rung 5. Each thread loads one
// float4 of A and one of B per K step (16-byte global loads), and stores the A values transposed
// (As[k][m]) so that the 8 A values a thread needs for one k are contiguous: two 16-byte shared
// loads instead of eight 4-byte ones. C is written with float4 stores.
extern "C" __global__ void sgemm_vectorized(int M, int N, int K, const float* __restrict__ A,
                                            const float* __restrict__ B, float* __restrict__ C)
{
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    __shared__ __align__(16) float As[BK * BM];  // transposed: As[k * BM + m]
    __shared__ __align__(16) float Bs[BK * BN];
    const int t = threadIdx.x;
    const int tcol = t % (BN / TN), trow = t / (BN / TN);
    const int a_row = t / (BK / 4), a_k = (t % (BK / 4)) * 4;  // 128 rows × 2 float4
    const int b_row = t / (BN / 4), b_col = (t % (BN / 4)) * 4;  // 8 rows × 32 float4
    A += (size_t)blockIdx.y * BM * K;
    B += (size_t)blockIdx.x * BN;
    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        float4 a4 = *reinterpret_cast<const float4*>(&A[(size_t)a_row * K + k0 + a_k]);
        As[(a_k + 0) * BM + a_row] = a4.x;
        As[(a_k + 1) * BM + a_row] = a4.y;
        As[(a_k + 2) * BM + a_row] = a4.z;
        As[(a_k + 3) * BM + a_row] = a4.w;
        *reinterpret_cast<float4*>(&Bs[b_row * BN + b_col]) =
            *reinterpret_cast<const float4*>(&B[(size_t)(k0 + b_row) * N + b_col]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            *reinterpret_cast<float4*>(&ra[0]) = *reinterpret_cast<const float4*>(&As[k * BM + trow * TM]);
            *reinterpret_cast<float4*>(&ra[4]) = *reinterpret_cast<const float4*>(&As[k * BM + trow * TM + 4]);
            *reinterpret_cast<float4*>(&rb[0]) = *reinterpret_cast<const float4*>(&Bs[k * BN + tcol * TN]);
            *reinterpret_cast<float4*>(&rb[4]) = *reinterpret_cast<const float4*>(&Bs[k * BN + tcol * TN + 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
    float* Cb = C + (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* c = &Cb[(size_t)(trow * TM + i) * N + tcol * TN];
        *reinterpret_cast<float4*>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(c + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

// ---- 7. warptiling with double buffering ---------------------------------------------------
// Launch: 256 threads (8 warps), grid (N / 128, M / 128). Block tile 128 × 128, K step 8
// (measured on an H100: K step 8 ran about 8% faster than 16 with this layout).
//
// Warps: 4 × 2, each owns a 32 × 64 sub-tile of C. Lanes: 4 × 8; lane (lr, lc) computes the
// rows {lr·4 .. +3, 16 + lr·4 .. +3} and columns {lc·4 .. +3, 32 + lc·4 .. +3} of the warp's
// sub-tile: 8 × 8 results as four 4 × 4 blocks. Why split them: for one k, the 8 lanes of a
// quarter-warp read the same float4 of A (a broadcast) and 8 consecutive float4s of B (128
// contiguous bytes), so no shared-memory read conflicts.
//
// Double buffering: two copies of the shared tiles. While the block computes on one, each thread
// already holds the next tile's global loads in registers, and stores them into the other copy
// afterwards: one barrier per K step, and global latency hidden behind BK × 64 FMAs.
template <int BM, int BN, int BK>
__device__ __forceinline__ void sgemm_warptile_body(int M, int N, int K,
                                                    const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    float* __restrict__ C)
{
    constexpr int AS = BM + 4;  // As row stride: +4 floats keeps float4 alignment and, with
                                // BK = 8, makes the transposed stores conflict-free
    __shared__ __align__(16) float As[2][BK][AS];  // A tile transposed: As[buf][k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];
    constexpr int A_LOADS = BM * BK / 4 / 256;  // float4 loads per thread per tile (1 for BK = 8)
    constexpr int B_LOADS = BK * BN / 4 / 256;  // (1 for BK = 8)
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;
    const int tm = (lane / 8) * 4, tn = (lane % 8) * 4;
    // Global → shared mapping: A rows of BK floats as BK/4 float4s; B rows of BN floats.
    const int a_row = t / (BK / 4), a_k = (t % (BK / 4)) * 4;
    const int b_row = t / (BN / 4), b_col = (t % (BN / 4)) * 4;
    constexpr int A_ROW_STEP = 256 / (BK / 4), B_ROW_STEP = 256 / (BN / 4);
    const float* Ab = A + (size_t)blockIdx.y * BM * K;
    const float* Bb = B + (size_t)blockIdx.x * BN;

    float4 ra[A_LOADS], rb[B_LOADS];
    float acc[8][8] = {};

    // Load a K-step's tiles from global memory into registers...
    auto load_tiles = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l)
            ra[l] = *reinterpret_cast<const float4*>(&Ab[(size_t)(a_row + l * A_ROW_STEP) * K + k0 + a_k]);
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            rb[l] = *reinterpret_cast<const float4*>(&Bb[(size_t)(k0 + b_row + l * B_ROW_STEP) * N + b_col]);
    };
    // ... and from registers into shared buffer `buf` (A transposed).
    auto store_tiles = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            int m = a_row + l * A_ROW_STEP;
            As[buf][a_k + 0][m] = ra[l].x;
            As[buf][a_k + 1][m] = ra[l].y;
            As[buf][a_k + 2][m] = ra[l].z;
            As[buf][a_k + 3][m] = ra[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            *reinterpret_cast<float4*>(&Bs[buf][b_row + l * B_ROW_STEP][b_col]) = rb[l];
    };

    load_tiles(0);
    store_tiles(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tiles(k0 + BK);  // in flight during the FMAs below
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[8], b[8];
            *reinterpret_cast<float4*>(&a[0]) = *reinterpret_cast<const float4*>(&As[buf][k][wm + tm]);
            *reinterpret_cast<float4*>(&a[4]) = *reinterpret_cast<const float4*>(&As[buf][k][wm + tm + 16]);
            *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[buf][k][wn + tn]);
            *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[buf][k][wn + tn + 32]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            store_tiles(buf ^ 1);  // nobody reads buf ^ 1 now: it was last read before the
            __syncthreads();       // barrier that ended the previous step
            buf ^= 1;
        }
    }
    float* Cb = C + (size_t)(blockIdx.y * BM + wm) * N + blockIdx.x * BN + wn;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = tm + (i < 4 ? i : 12 + i);  // rows tm..tm+3, then tm+16..tm+19
        float* c = Cb + (size_t)r * N;
        *reinterpret_cast<float4*>(c + tn) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(c + tn + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
    sgemm_warptile(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C)
{
    sgemm_warptile_body<128, 128, 8>(M, N, K, A, B, C);
}

