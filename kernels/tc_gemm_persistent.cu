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

// Group-ordered tile walk (as in tc_gemm.cu): consecutive work units sweep GROUP tile-rows before
// moving right, so the blocks running at one moment share A and Bt panels in L2.
__device__ __forceinline__ void tile_of(int pid, int tiles_m, int tiles_n, int& tm, int& tn)
{
    const int GROUP = 8;
    int group = pid / (GROUP * tiles_n);
    int first = group * GROUP;
    int size = min(tiles_m - first, GROUP);
    tm = first + (pid % size);
    tn = (pid % (GROUP * tiles_n)) / size;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper_sync.cuh"  // mbarriers and TMA, shared with the other Hopper kernels

// Shared-memory matrix descriptor for a K-major tile in the 128-byte swizzle layout: rows of
// 128 bytes (64 BF16), 8-row groups 1024 bytes apart (the "stride byte offset").
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr)
{
    unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);
    d |= (unsigned long long)(16 >> 4) << 16;    // leading byte offset (unused with swizzle)
    d |= (unsigned long long)(1024 >> 4) << 32;  // stride byte offset
    d |= 1ull << 62;                             // 128-byte swizzle
    return d;
}
// Keep the compiler from moving accumulator reads/writes across the asynchronous wgmma.
__device__ __forceinline__ void fence_acc(float* d)
{
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// D (64 × 256, FP32, 128 registers per thread) = A·B + (scale_d ? D : 0), A 64 × 16 and B
// 256 × 16 read from shared memory through their descriptors.
__device__ __forceinline__ void wgmma_m64n256k16(float* d, unsigned long long da,
                                                 unsigned long long db, int scale_d)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

// The epilogue: the block tile leaves in 8 boxes of 128 rows × 32 columns. Warp w of consumer
// warpgroup c holds rows c·64 + 16w + lane/4 (and + 8); per 8-column group j, columns
// 8j + 2·(lane%4) (+1). Both consumer warpgroups write a box into one of two 16 KiB staging halves in the 128-byte-swizzled layout (16-byte chunk
// index XOR row % 8: the 8 rows one float2 store touches fall in 8 different chunks, no bank
// conflicts), then one thread hands it to the TMA engine, which streams it to C while the
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
        unsigned half = stage + (q & 1) * PW_BOX_BYTES;
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
                         "r"(tn * PW_BN + 32 * box), "r"(tm * PW_BM), "r"(half)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}

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
