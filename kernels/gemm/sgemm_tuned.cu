// sgemm_tuned.cu — rung 8 of the SGEMM ladder: sgemm_warptile (sgemm.cu) with register double
// buffering, in a template whose tile shape was swept on an H100 against cuBLAS.
//
// Row-major FP32, C = A·B, A is M × K, B is K × N, CUDA cores only (no tensor cores).
//
// What changes against sgemm_warptile: the values of A and B that the FMAs of step k need are read
// from shared memory during step k − 1 (two register slots, a[2][TM] and b[2][TN]), across the
// tile boundary too, so an FMA never waits on the shared load just before it.
//
// The sweep (standalone harness, cuBLAS timed in the same process, 4096 and 8192): block tiles
// 128 × 128, 128 × 256 and 256 × 128 (8 × 8, 8 × 16 and 16 × 8 results per thread), K steps 8 and
// 16, two blocks per SM or one, block-order swizzling for L2, FMA loop order, and a cp.async
// multi-stage ring in place of the register-staged copy. The instance below, 128 × 128, K step 8,
// two blocks per SM, no swizzle, was the fastest at both sizes, so one shape serves both. The
// shape is a template argument, so a re-sweep on another GPU changes one line.
//
// Where the rest of the gap to cuBLAS is: in an Nsight Compute profile both run the same share of
// FMAs among their instructions, and neither loses time to bank conflicts (cuBLAS shows none;
// this layout has none by construction). But cuBLAS (sm80_xmma 256 × 128 × 8, 3 cp.async stages,
// 254 registers, one block per SM) issues an instruction in more of its scheduler cycles with
// half as many warps: instruction scheduling and register allocation at the SASS level, which
// CUDA C does not control.
//
// Sizes: M, N multiples of 128, K a multiple of 8.

// ---- register-staged, double-buffered, register-prefetched ---------------------------------
// 256 threads = WARPS_M × WARPS_N warps. A warp owns a WTM × WTN sub-tile of C; its 32 lanes are
// 4 rows × 8 columns, lane (lr, lc) computing rows {16·i + 4·lr .. +3} and columns
// {32·j + 4·lc .. +3} of that sub-tile. For one k, the 8 lanes of a quarter-warp read one float4 of
// A (a broadcast) and 8 consecutive float4s of B: no shared-memory bank conflicts.
template <int BM, int BN, int BK, int WARPS_M>
__device__ __forceinline__ void sgemm_rp_body(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C)
{
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int TM = WTM / 4, TN = WTN / 8;  // results per thread: TM × TN
    constexpr int AS = BM + 4;                 // +4 floats: transposed stores are conflict-free
    constexpr int A_LOADS = BM * BK / 4 / 256, B_LOADS = BK * BN / 4 / 256;
    __shared__ __align__(16) float As[2][BK][AS];  // A tile transposed: As[buf][k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int bx = blockIdx.x, by = blockIdx.y;
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN;
    const int tm = (lane / 8) * 4, tn = (lane % 8) * 4;
    const float* Ab = A + (size_t)by * BM * K;
    const float* Bb = B + (size_t)bx * BN;

    float4 ra[A_LOADS], rb[B_LOADS];
    auto load_tiles = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = t + l * 256;
            ra[l] = *reinterpret_cast<const float4*>(
                &Ab[(size_t)(idx / (BK / 4)) * K + k0 + (idx % (BK / 4)) * 4]);
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = t + l * 256;
            rb[l] = *reinterpret_cast<const float4*>(
                &Bb[(size_t)(k0 + idx / (BN / 4)) * N + (idx % (BN / 4)) * 4]);
        }
    };
    auto store_tiles = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = t + l * 256, m = idx / (BK / 4), k = (idx % (BK / 4)) * 4;
            As[buf][k + 0][m] = ra[l].x;
            As[buf][k + 1][m] = ra[l].y;
            As[buf][k + 2][m] = ra[l].z;
            As[buf][k + 3][m] = ra[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = t + l * 256;
            *reinterpret_cast<float4*>(&Bs[buf][idx / (BN / 4)][(idx % (BN / 4)) * 4]) = rb[l];
        }
    };

    float acc[TM][TN] = {};
    float a[2][TM], b[2][TN];
    auto load_frags = [&](int slot, int buf, int k) {
#pragma unroll
        for (int i = 0; i < TM / 4; ++i)
            *reinterpret_cast<float4*>(&a[slot][4 * i]) =
                *reinterpret_cast<const float4*>(&As[buf][k][wm + 16 * i + tm]);
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4*>(&b[slot][4 * j]) =
                *reinterpret_cast<const float4*>(&Bs[buf][k][wn + 32 * j + tn]);
    };

    load_tiles(0);
    store_tiles(0);
    __syncthreads();
    load_frags(0, 0, 0);
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tiles(k0 + BK);  // global loads in flight during this step's FMAs
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1 && more) {
                // buf ^ 1 was last read before the previous step's barrier: safe to overwrite.
                store_tiles(buf ^ 1);
                __syncthreads();
                buf ^= 1;
            }
            // Fragments for the next k (k = 0 of the next tile on the last k; a harmless
            // re-read when there is no next tile).
            load_frags((k + 1) % 2, buf, (k + 1) % BK);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[k % 2][i], b[k % 2][j], acc[i][j]);
        }
    }

    float* Cb = C + (size_t)(by * BM + wm + tm) * N + bx * BN + wn + tn;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* c = Cb + (size_t)(16 * (i / 4) + i % 4) * N;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4*>(c + 32 * j) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    }
}

// ---- the instance the ladder runs ----------------------------------------------------------
// Launch: 256 threads, grid (N / 128, M / 128). 2 blocks per SM: at most 128 registers a thread.
extern "C" __global__ void __launch_bounds__(256, 2)
    sgemm_tuned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C)
{
    sgemm_rp_body<128, 128, 8, 4>(M, N, K, A, B, C);
}
