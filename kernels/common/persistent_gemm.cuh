// persistent_gemm.cuh — what the persistent WGMMA GEMM rungs share (rung 5, tc_gemm_persistent.cu,
// and rung 6, tc_gemm_streamk.cu): the tile and ring sizes, the shared-memory layout and its
// mbarriers, one producer step, the consumers' slice loop and the TMA-store epilogue. The two
// rungs differ only in which (tile, k-range) pieces a block walks. Embedded by the harness and
// handed to NVRTC with every program; only the files that include it fold it into their hash.
//
// Needs hopper_sync.cuh and wgmma_gemm.cuh (sm_90a, inside __CUDA_ARCH_FEAT_SM90_ALL), TmaDesc
// and smem_u32.

#define PG_BM 128
#define PG_BN 256
#define PG_BK 64
#define PG_STAGES 4
#define PG_A_BYTES (PG_BM * PG_BK * 2)
#define PG_B_BYTES (PG_BN * PG_BK * 2)
#define PG_BOX_BYTES (PG_BM * 32 * 4)  // one epilogue box: 128 rows × 32 FP32 columns, 16 KiB
// Stages, two epilogue boxes, 1 KiB for aligning to the 1024-byte swizzle pattern, the barriers.
#define PG_SMEM (PG_STAGES * (PG_A_BYTES + PG_B_BYTES) + 2 * PG_BOX_BYTES + 1024 + 2 * PG_STAGES * 8)

// Shared-memory addresses of the ring, the epilogue boxes and the barriers.
struct PgRing {
    unsigned sA;     // [STAGES][128 rows × 128 B]
    unsigned sB;     // [STAGES][256 rows × 128 B]
    unsigned stage;  // [2][128 rows × 128 B] epilogue boxes
    unsigned full;   // [STAGES] mbarriers (8 B each)
    unsigned empty;  // [STAGES]
};

// Lay the ring out in the dynamic shared memory `smem` (aligned to the 1024-byte swizzle
// pattern) and initialise its barriers; every thread of the block must call it.
__device__ __forceinline__ PgRing pg_ring(unsigned char* smem)
{
    PgRing r;
    r.sA = (smem_u32(smem) + 1023) & ~1023u;
    r.sB = r.sA + PG_STAGES * PG_A_BYTES;
    r.stage = r.sB + PG_STAGES * PG_B_BYTES;
    r.full = r.stage + 2 * PG_BOX_BYTES;
    r.empty = r.full + PG_STAGES * 8;
    if (threadIdx.x == 0) {
        for (int s = 0; s < PG_STAGES; ++s) {
            mbar_init(r.full + 8 * s, 1);   // the producer's arrive + the TMA bytes
            mbar_init(r.empty + 8 * s, 8);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    return r;
}

// The producer's step for slice number g (counted over the block's whole walk: stage g % STAGES,
// round g / STAGES): wait until the stage is free, then load k-block kt of A's row tile tm and
// Bt's row tile tn into it.
__device__ __forceinline__ void pg_load(const PgRing& r, int g, int kt, int tm, int tn,
                                        const TmaDesc* tmA, const TmaDesc* tmB)
{
    int s = g % PG_STAGES;
    if (g >= PG_STAGES) mbar_wait(r.empty + 8 * s, ((g / PG_STAGES) - 1) & 1);
    mbar_expect_tx(r.full + 8 * s, PG_A_BYTES + PG_B_BYTES);
    tma_load_2d(r.sA + s * PG_A_BYTES, tmA, r.full + 8 * s, kt * PG_BK, tm * PG_BM);
    tma_load_2d(r.sB + s * PG_B_BYTES, tmB, r.full + 8 * s, kt * PG_BK, tn * PG_BN);
}

// Consumer warpgroup c (rows c·64 .. c·64 + 63 of the tile): accumulate the next n slices of the
// ring into d, starting from zero, and give every stage back. g counts slices consumed over the
// block's whole walk. The first slice runs with scale-d = 0 (D = A·B): no ordinary zeroing of
// the accumulators inside the asynchronous pipeline (see tc_wgmma).
__device__ __forceinline__ void pg_consume(const PgRing& r, float* d, int n, int& g, int c,
                                           bool warp_leader)
{
    for (int i = 0; i < n; ++i, ++g) {
        int s = g % PG_STAGES;
        mbar_wait(r.full + 8 * s, (g / PG_STAGES) & 1);
        fence_acc(d);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        unsigned a = r.sA + s * PG_A_BYTES + c * 64 * 128;
        unsigned b = r.sB + s * PG_B_BYTES;
#pragma unroll
        for (int kk = 0; kk < PG_BK / 16; ++kk)
            wgmma_m64n256k16(d, wgmma_desc(a + 32 * kk), wgmma_desc(b + 32 * kk),
                             (i > 0 || kk > 0) ? 1 : 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        // Keep this slice in flight; wait for the previous one and free its stage.
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        fence_acc(d);
        if (i > 0 && warp_leader) mbar_arrive(r.empty + 8 * ((g - 1) % PG_STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    fence_acc(d);
    // The last slice: the producer is already filling the next piece's.
    if (warp_leader) mbar_arrive(r.empty + 8 * ((g - 1) % PG_STAGES));
}

// The epilogue: the block tile leaves in 8 boxes of 128 rows × 32 columns. Warp w of consumer
// warpgroup c holds rows c·64 + 16w + lane/4 (and + 8); per 8-column group j, columns
// 8j + 2·(lane%4) (+1). Both consumer warpgroups write a box into one of two 16 KiB staging
// halves in the 128-byte-swizzled layout (16-byte chunk index XOR row % 8: the 8 rows one
// float2 store touches fall in 8 different chunks, no bank conflicts), then one thread hands it to the TMA engine, which streams it to C while the
// warpgroups fill the other half and go on to the next tile. `q`: boxes stored so far (the half
// and the bulk-group accounting run on across tiles).
__device__ __forceinline__ void store_tile_tma(const TmaDesc* tmC, unsigned stage, int tm, int tn,
                                               int c, const float* d, unsigned& q)
{
    int w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, t = lane % 4;
    bool leader = threadIdx.x == 128;
    int r0 = c * 64 + w * 16 + lane / 4;  // this thread's rows r0 and r0 + 8 of the box
#pragma unroll
    for (int box = 0; box < 8; ++box, ++q) {
        unsigned half = stage + (q & 1) * PG_BOX_BYTES;
        // The store issued two boxes ago read this half; wait until it has.
        if (leader) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        asm volatile("bar.sync 1, 256;" ::: "memory");
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            int j = 4 * box + jj;
            unsigned chunk = 2 * jj + t / 2, within = (t % 2) * 8;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = r0 + 8 * h;
                unsigned addr = half + r * 128 + ((chunk ^ (r % 8)) * 16) + within;
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(d[4 * j + 2 * h]),
                             "f"(d[4 * j + 2 * h + 1])
                             : "memory");
            }
        }
        // Make the ordinary shared-memory stores visible to the copy engine, then let one
        // thread send the box.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync 1, 256;" ::: "memory");
        if (leader) {
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                         ::"l"(reinterpret_cast<unsigned long long>(tmC)),
                         "r"(tn * PG_BN + 32 * box), "r"(tm * PG_BM), "r"(half)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
