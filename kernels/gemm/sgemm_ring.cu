// sgemm_ring.cu — rung 9 of the SGEMM ladder: the tile configuration of cuBLAS's own FP32 kernel
// on the H100, written in CUDA C.
//
// Row-major FP32, C = A·B, A is M × K, B is K × N, CUDA cores only (no tensor cores).
//
// Why this shape: cuBLAS answers a 4096 or 8192 SGEMM on the H100 with
// sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma: a 256 × 128
// block tile (256 along N here: cuBLAS is column-major, so its M is our N), K step 8, a ring of
// three shared-memory stages filled by cp.async, 4 × 2 warps of 64 × 64, one block per SM. The
// rungs before this one (sgemm_tuned) fill shared memory through registers and give each thread
// 8 × 8 results; here each thread holds 16 × 8 = 128 results, so one k step is 128 FFMAs for
// 6 shared loads (LDS.128) instead of 64 for 4: fewer non-FFMA instructions per FFMA, which is
// what a scheduler with only two warps needs.
//
// Per thread and K tile: 4 four-byte cp.async for A (transposed into As[k][m] on the way), 2
// sixteen-byte cp.async for B, 48 LDS.128, 1024 FFMA, one barrier.
//
// Sizes: M a multiple of BM, N of BN, K of BK (the family checks multiples of 128 and 256).

__device__ __forceinline__ unsigned ring_smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void ring_cp4(unsigned dst, const void* src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ring_cp16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ring_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void ring_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// 256 threads = WARPS_M × WARPS_N warps, each owning a WTM × WTN sub-tile of C. A warp's 32 lanes
// are LM rows × LN columns (4 × 8 in the instance below); lane (lr, lc) computes rows
// {4·LM·i + 4·lr .. +3} and columns {4·LN·j + 4·lc .. +3} of the warp's sub-tile, so every
// fragment read is an LDS.128 and the lanes of one read touch 16·LM (A) or 16·LN (B) consecutive
// bytes: no bank conflicts.
//
// A's tile is stored transposed, As[k][m], with rows padded to BM + 4 floats: the 32 lanes of one
// cp.async cover 4 rows × 8 k of A (four 32-byte sectors of global memory), and the padding spreads
// those 32 four-byte stores over 32 different banks.
template <int BM, int BN, int BK, int WARPS_M, int STAGES, int LM = 4>
__device__ __forceinline__ void sgemm_ring_body(int M, int N, int K, const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C)
{
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int LN = 32 / LM;
    constexpr int TM = WTM / LM, TN = WTN / LN;  // results per thread: TM × TN
    constexpr int AS = BM + 4;
    constexpr int A_CP = BM * BK / 256;       // four-byte copies of A per thread and tile
    constexpr int B_CP = BK * BN / 4 / 256;   // sixteen-byte copies of B per thread and tile
    static_assert(BK == 8 && 256 % BK == 0, "the A copy maps 8 k of 4 rows onto a warp");
    __shared__ __align__(16) float As[STAGES][BK][AS];
    __shared__ __align__(16) float Bs[STAGES][BK][BN];

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN;
    const int tm = (lane / LN) * 4, tn = (lane % LN) * 4;
    const int KT = K / BK;

    // Copy sources advance by BK along K per tile; destinations are fixed offsets in a stage.
    const int a_k = t % BK, a_m = t / BK;  // copy l covers row a_m + l · (256 / BK), column a_k
    const float* a_src = A + (size_t)(blockIdx.y * BM + a_m) * K + a_k;
    const int b_k = t / (BN / 4), b_n = (t % (BN / 4)) * 4;  // copy l: row b_k + l · (1024 / BN)
    const float* b_src = B + (size_t)b_k * N + blockIdx.x * BN + b_n;
    const unsigned a_dst = ring_smem_u32(&As[0][a_k][a_m]);
    const unsigned b_dst = ring_smem_u32(&Bs[0][b_k][b_n]);
    constexpr unsigned A_STAGE = BK * AS * 4, B_STAGE = BK * BN * 4;  // bytes

    auto load_tile = [&](int stage, int kt) {
        const float* as = a_src + (size_t)kt * BK;
        const float* bs = b_src + (size_t)kt * BK * N;
#pragma unroll
        for (int l = 0; l < A_CP; ++l)
            ring_cp4(a_dst + stage * A_STAGE + l * (256 / BK) * 4, as + (size_t)l * (256 / BK) * K);
#pragma unroll
        for (int l = 0; l < B_CP; ++l)
            ring_cp16(b_dst + stage * B_STAGE + l * (1024 / BN) * BN * 4,
                      bs + (size_t)l * (1024 / BN) * N);
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    float a[2][TM], b[2][TN];
    const float* a_rd = &As[0][0][wm + tm];
    const float* b_rd = &Bs[0][0][wn + tn];
    auto load_frags = [&](int slot, int stage, int k) {
        const float* ap = a_rd + stage * (BK * AS) + k * AS;
        const float* bp = b_rd + stage * (BK * BN) + k * BN;
#pragma unroll
        for (int i = 0; i < TM / 4; ++i)
            *reinterpret_cast<float4*>(&a[slot][4 * i]) = *reinterpret_cast<const float4*>(ap + 4 * LM * i);
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4*>(&b[slot][4 * j]) = *reinterpret_cast<const float4*>(bp + 4 * LN * j);
    };

    // Prologue: tiles 0 .. STAGES − 2 in flight, tile 0 landed and visible.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        ring_commit();
    }
    ring_wait<STAGES - 2>();
    __syncthreads();
    load_frags(0, 0, 0);

    int rs = 0, ws = STAGES - 1;  // stage read from, stage written to
    for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == 0) {
                // ws held tile kt − 1, whose last reads came before the previous tile's barrier.
                if (kt + STAGES - 1 < KT) load_tile(ws, kt + STAGES - 1);
                ring_commit();  // an empty group near the end keeps the count uniform
                ws = ws + 1 == STAGES ? 0 : ws + 1;
            }
            if (k == BK - 1) {
                // Tile kt + 1 landed for this thread; the barrier makes it landed for all.
                ring_wait<STAGES - 2>();
                __syncthreads();
                rs = rs + 1 == STAGES ? 0 : rs + 1;
            }
            // Fragments of the next k (k = 0 of the next tile on the last k; past the last tile
            // that is a harmless read of a stale stage).
            load_frags((k + 1) % 2, rs, (k + 1) % BK);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[k % 2][i], b[k % 2][j], acc[i][j]);
        }
    }

    float* Cb = C + (size_t)(blockIdx.y * BM + wm + tm) * N + blockIdx.x * BN + wn + tn;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* c = Cb + (size_t)(4 * LM * (i / 4) + i % 4) * N;
#pragma unroll
        for (int j = 0; j < TN / 4; ++j)
            *reinterpret_cast<float4*>(c + 4 * LN * j) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    }
}

// ---- the instance the ladder runs ----------------------------------------------------------
// Launch: 256 threads, grid (N / 256, M / 128). One block per SM: up to 255 registers a thread.
extern "C" __global__ void __launch_bounds__(256, 1)
    sgemm_ring(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C)
{
    sgemm_ring_body<128, 256, 8, 2, 3>(M, N, K, A, B, C);
}
