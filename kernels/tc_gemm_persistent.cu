// tc_gemm_persistent.cu — rung 5 of the tensor-core GEMM ladder (after tc_wgmma in tc_gemm.cu):
// the same 128 × 256 × 64 WGMMA + TMA pipeline, made persistent, with an asynchronous epilogue.
//
// Why a new rung: tc_wgmma launches one block per output tile. Its last act is the epilogue
// (64 rows × 256 FP32 columns per consumer warpgroup straight from the accumulators to global
// memory), and the next block on that SM starts only after it, with an empty ring, so the tensor
// cores also idle through that block's first TMA round trip. The blocks of a wave start together,
// finish together, and their stores all meet the memory system at once.
//
// Here the grid is one block per SM, and each block walks the tiles blockIdx.x, + gridDim.x, …
// in the grouped order of tile_of. Two changes overlap the epilogue with the tensor cores:
// - The producer does not stop at a tile boundary: while the consumers store tile i it already
//   fills the ring with tile i + 1's first slices. The ring and its mbarrier phases run on across
//   tiles (a slice counter g that never resets).
// - The consumers do not store to global memory themselves. They write each 128 × 32 FP32 box of
//   the tile into one of two 16 KiB staging buffers in shared memory, and one thread hands the
//   box to the TMA engine (a bulk tensor store), which streams it to C while the warpgroups fill
//   the other buffer and then return to the tensor cores.
// (Measured alongside in a standalone harness and not kept: float2 stores straight from the
// registers, as tc_wgmma, with the persistent loop; 16-byte stores after a lane-pair shuffle;
// 2-block clusters with the Bt slice multicast to both blocks. None beat this rung on the H100.)
//
// Launch: 384 threads = 3 warpgroups (producer + 2 consumers, as tc_wgmma), PW_SMEM bytes of
// dynamic shared memory, a 1-D grid of min(SMs, tiles) blocks. Tensor maps: A (M × K) in boxes of
// 128 rows × 64 columns and Bt (N × K) in boxes of 256 × 64, BF16 with 128-byte swizzle (as
// tc_wgmma); C (M × N, FP32) in boxes of 128 rows × 32 columns with 128-byte swizzle. Needs
// M % 128, N % 256, K % 64.

typedef unsigned short bf16_t;

// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDesc {
    unsigned long long opaque[16];
};

#define PW_BM 128
#define PW_BN 256
#define PW_BK 64
#define PW_STAGES 4
#define PW_A_BYTES (PW_BM * PW_BK * 2)
#define PW_B_BYTES (PW_BN * PW_BK * 2)
#define PW_BOX_BYTES (PW_BM * 32 * 4)  // one epilogue box: 128 rows × 32 FP32 columns, 16 KiB
// Stages, two epilogue boxes, 1 KiB for aligning to the 1024-byte swizzle pattern, the barriers.
#define PW_SMEM (PW_STAGES * (PW_A_BYTES + PW_B_BYTES) + 2 * PW_BOX_BYTES + 1024 + 2 * PW_STAGES * 8)

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

#include "wgmma_gemm.cuh"  // tile order and wgmma helpers, shared with tc_wgmma

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper_sync.cuh"  // mbarriers and TMA, shared with the other Hopper kernels
#include "tma_store_epilogue.cuh"  // the epilogue (store_tile_tma), shared with rung 6

__device__ __forceinline__ void persistent_gemm(int M, int N, int K, const TmaDesc* tmA,
                                                const TmaDesc* tmB, const TmaDesc* tmC)
{
    extern __shared__ unsigned char pw_smem[];
    unsigned base = (smem_u32(pw_smem) + 1023) & ~1023u;
    unsigned sA = base;                            // [STAGES][128 rows × 128 B]
    unsigned sB = base + PW_STAGES * PW_A_BYTES;    // [STAGES][256 rows × 128 B]
    unsigned stage = sB + PW_STAGES * PW_B_BYTES;  // [2][128 rows × 128 B] epilogue boxes
    unsigned full = stage + 2 * PW_BOX_BYTES;      // [STAGES] mbarriers (8 B each)
    unsigned empty = full + PW_STAGES * 8;         // [STAGES]
    int tiles_m = M / PW_BM, tiles_n = N / PW_BN, tiles = tiles_m * tiles_n;
    int KT = K / PW_BK;
    int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < PW_STAGES; ++s) {
            mbar_init(full + 8 * s, 1);   // the producer's arrive + the TMA bytes
            mbar_init(empty + 8 * s, 8);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: the warpgroup gives registers back; one thread issues every copy.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int g = 0;  // slices issued so far, over all tiles: stage g % STAGES, round g / STAGES
            for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
                int tm, tn;
                tile_of(u, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < KT; ++kt, ++g) {
                    int s = g % PW_STAGES;
                    if (g >= PW_STAGES) mbar_wait(empty + 8 * s, ((g / PW_STAGES) - 1) & 1);
                    mbar_expect_tx(full + 8 * s, PW_A_BYTES + PW_B_BYTES);
                    tma_load_2d(sA + s * PW_A_BYTES, tmA, full + 8 * s, kt * PW_BK, tm * PW_BM);
                    tma_load_2d(sB + s * PW_B_BYTES, tmB, full + 8 * s, kt * PW_BK, tn * PW_BN);
                }
            }
        }
    } else {
        // Consumer warpgroup c = wg − 1: rows c·64 .. c·64 + 63 of every tile.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int c = wg - 1;
        bool warp_leader = threadIdx.x % 32 == 0;
        float d[128];
        int g = 0;       // slices consumed so far, over all tiles
        unsigned q = 0;  // epilogue boxes sent so far
        for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
            int tm, tn;
            tile_of(u, tiles_m, tiles_n, tm, tn);
            // Each tile's first slice runs with scale-d = 0 (D = A·B): no ordinary zeroing of the
            // accumulators inside the asynchronous pipeline (see tc_wgmma).
            for (int kt = 0; kt < KT; ++kt, ++g) {
                int s = g % PW_STAGES;
                mbar_wait(full + 8 * s, (g / PW_STAGES) & 1);
                fence_acc(d);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                unsigned a = sA + s * PW_A_BYTES + c * 64 * 128;
                unsigned b = sB + s * PW_B_BYTES;
#pragma unroll
                for (int kk = 0; kk < PW_BK / 16; ++kk)
                    wgmma_m64n256k16(d, wgmma_desc(a + 32 * kk), wgmma_desc(b + 32 * kk),
                                     (kt > 0 || kk > 0) ? 1 : 0);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                // Keep this slice in flight; wait for the previous one and free its stage.
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                fence_acc(d);
                if (kt > 0 && warp_leader) mbar_arrive(empty + 8 * ((g - 1) % PW_STAGES));
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            fence_acc(d);
            // The tile's last slice: the producer is already filling the next tile's.
            if (warp_leader) mbar_arrive(empty + 8 * ((g - 1) % PW_STAGES));
            store_tile_tma(tmC, stage, tm, tn, c, d, q);
        }
        // C is complete only when the copy engine has written the last boxes.
        if (threadIdx.x == 128) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

extern "C" __global__ void __launch_bounds__(384, 1)
    tc_wgmma_persistent(int M, int N, int K, const __grid_constant__ TmaDesc tmA,
                        const __grid_constant__ TmaDesc tmB, const __grid_constant__ TmaDesc tmC)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    persistent_gemm(M, N, K, &tmA, &tmB, &tmC);
#endif
    // Built without sm_90a the kernel writes nothing: C keeps its NaN poison and verification
    // fails, so the figure shows the rung as failed instead of a wrong number.
}
