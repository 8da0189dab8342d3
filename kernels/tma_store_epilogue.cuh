// tma_store_epilogue.cuh — the TMA-store epilogue of the persistent WGMMA GEMM rungs (rung 5,
// tc_gemm_persistent.cu, and rung 6, tc_gemm_streamk.cu): a 128 × 256 FP32 block tile leaves
// through shared memory as TMA bulk tensor stores. Embedded by the harness and handed to NVRTC
// with every program; only the files that include it fold it into their source hash.
//
// Needs hopper_sync.cuh's context (sm_90a, inside __CUDA_ARCH_FEAT_SM90_ALL) and TmaDesc.

#define EPI_BM 128
#define EPI_BN 256
#define EPI_BOX_BYTES (EPI_BM * 32 * 4)  // one box: 128 rows × 32 FP32 columns, 16 KiB

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
        unsigned half = stage + (q & 1) * EPI_BOX_BYTES;
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
                         "r"(tn * EPI_BN + 32 * box), "r"(tm * EPI_BM), "r"(half)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
