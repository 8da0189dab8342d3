// tc_gemm_streamk.cu — rung 6 of the tensor-core GEMM ladder (after tc_wgmma_persistent in
// tc_gemm_persistent.cu): the same persistent 128 × 256 × 64 WGMMA + TMA pipeline, with the last
// partial wave of tiles spread over every SM by splitting the tiles along K ("stream-K").
//
// Why a new rung: a persistent GEMM with T output tiles on P SMs runs ceil(T / P) rounds of
// whole tiles, and in the last round only T mod P SMs work. At 4096³ that is 512 tiles on 132
// SMs: 3 full rounds and one of 116 tiles, so 16 SMs idle for a quarter of the run.
//
// Schedule (CUTLASS's "data-parallel + stream-K" hybrid). The host picks `sk_tiles`, the tiles
// whose k-blocks are shared out: the remainder T mod P plus one full round when there is one
// (then every block's share is at least one tile's worth of k-blocks and a tile is cut in at
// most two pieces); or none (sk_tiles = 0: rung 5's schedule) when the last round is too full for the
// split to win back its fix-up, which costs a 128 KiB partial tile written to L2 and read back
// per block (see stream_k_tiles in the tc_gemm family). Lay the k-blocks of those tiles end
// to end (n = sk_tiles · K/64 of them) and give block b the contiguous range [b·n/P,
// (b+1)·n/P) of that line: every block gets the same number of k-blocks give or take one. The
// tiles after them are whole (data-parallel) tiles, b + sk_tiles, + P, … as in rung 5. A block
// runs its stream-K range first, then its whole tiles; the producer runs on across all of it
// (the ring never drains between pieces).
//
// Fix-up. A range cuts at most two tiles: it may start inside one (a piece that ends that tile
// but misses its first k-blocks) and end inside another (a piece with that tile's first
// k-blocks but not its last), or lie inside one tile. The block holding a tile's last k-block
// finishes the tile; every other piece is a partial sum:
// - A piece that stops short of its tile's last k-block (at most one per block: the one at the
//   end of its range, which the block computes first, see Walk) goes to the block's own
//   workspace slot (slot b, so the workspace is P · 128 KiB of FP32 partial tiles) in the
//   registers' own order (thread i's float4 number v at v·256 + i, so every warp store covers
//   512 contiguous bytes, through L2 only), then the block sets its flag (release, GPU scope).
// - The block holding the tile's last k-block computes that piece last in its range, so the
//   blocks before it (b − 1, …, whose ranges reach into the tile) finished theirs long before,
//   or at the same time for a range inside the tile. It waits on each flag (acquire), clears
//   it, adds the slot into its accumulators and stores the tile with rung 5's TMA epilogue.
// Flags are reset by the block that consumed them, so every launch leaves them all zero as it
// found them: the workspace is zeroed once when it is allocated and needs no memset per launch.
// Every block must be resident at once (a finishing block waits on others): the grid is at most
// one block per SM, and this kernel's shared memory allows one block per SM.
//
// Launch: 384 threads, PG_SMEM bytes of dynamic shared memory, a 1-D grid of P ≤ SMs blocks,
// tensor maps as rung 5 (A: 128 × 64 boxes, Bt: 256 × 64, C FP32: 128 × 32, 128-byte swizzle),
// `ws`: P · SK_SLOT floats then P flags (u32), zero before the first launch (unused when
// sk_tiles = 0). Needs M % 128, N % 256, K % 64.

typedef unsigned short bf16_t;

// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDesc {
    unsigned long long opaque[16];
};

#define SK_SLOT (128 * 256)  // floats of one partial 128 × 256 tile in the workspace

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

#include "wgmma_gemm.cuh"  // tile order and wgmma helpers, shared with rungs 4 and 5

// The work of one block, piece by piece: its stream-K range, then its whole tiles. A piece is
// k-blocks [k0, k1) of tile number `tile` (in tile_of's grouped order), computed from k-block ks
// up to k1 − 1 and then from k0 up to ks − 1 (a sum: any order gives the tile).
//
// Why the order matters: blocks that share an A or Bt panel should read each k-slice of it at
// about the same time, while it is in L2. Taken in the plain order, the ranges start at every
// k offset, so at any moment the blocks read as many different slices of a panel as there are
// blocks on it, and the stream-K part runs from DRAM. So a block takes the pieces of its range
// in reverse: first the piece that holds a tile's first k-blocks (k = 0, 1, … at times 0, 1,
// …), then its whole tiles, rotated to keep k = time mod K/64, and last the piece that ends a
// tile (k = time − n mod K/64, n = the range's length). At any moment every block then reads
// one of two k-slices of its panels, k ≡ time or k ≡ time − n (mod K/64).
struct Walk {
    int s, e;     // this block's stream-K range, in k-blocks of the SK tiles laid end to end
    int t, t_lo;  // the next stream-K tile (counting down) and the range's first tile
    int u, u_end; // the next whole tile and the end of the whole tiles
    int KT;       // k-blocks per tile

    __device__ Walk(int sk_tiles, int tiles, int KT_) : KT(KT_)
    {
        int n = sk_tiles * KT;
        s = (int)((long long)n * blockIdx.x / gridDim.x);
        e = (int)((long long)n * (blockIdx.x + 1) / gridDim.x);
        t_lo = s / KT;
        t = s < e ? (e - 1) / KT : t_lo - 1;
        u = sk_tiles + blockIdx.x;
        u_end = tiles;
    }
    __device__ bool next(int& tile, int& k0, int& k1, int& ks)
    {
        if (t >= t_lo) {
            int lo = t * KT;
            k0 = s > lo ? s - lo : 0;
            k1 = e < lo + KT ? e - lo : KT;
            if (k0 == 0 && k1 == KT) {
                ks = (e - lo - KT) % KT;  // a whole tile: start at k = time mod K/64
            } else if (k0 > 0 && k1 < KT) {
                // The range lies inside one tile: start at k = K/64 − n, the tail pieces' phase.
                ks = KT - (e - s);
                if (ks < k0 || ks >= k1) ks = k0;
            } else {
                ks = k0;  // the piece with k = 0 (taken first), or the one that ends a tile (last)
            }
            tile = t--;
            return true;
        }
        if (u < u_end) {
            tile = u;
            k0 = ks = 0;
            k1 = KT;
            u += gridDim.x;
            return true;
        }
        return false;
    }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "hopper_sync.cuh"  // mbarriers and TMA, shared with the other Hopper kernels
#include "persistent_gemm.cuh"  // rung 5's sizes, ring, producer step, consumer loop, epilogue

// A partial tile to workspace slot `slot` in the registers' order (see the header), bypassing
// L1: another SM reads it.
__device__ __forceinline__ void store_partial(float* slot, const float* d)
{
    float* p = slot + 4 * (threadIdx.x - 128);
#pragma unroll
    for (int v = 0; v < 32; ++v)
        asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p + 1024 * v),
                     "f"(d[4 * v]), "f"(d[4 * v + 1]), "f"(d[4 * v + 2]), "f"(d[4 * v + 3])
                     : "memory");
}
// The loads go in batches of 8 float4 ahead of their adds, so that 8 L2 round trips overlap
// whatever order the instruction scheduler keeps.
__device__ __forceinline__ void add_partial(const float* slot, float* d)
{
    const float* p = slot + 4 * (threadIdx.x - 128);
#pragma unroll
    for (int v0 = 0; v0 < 32; v0 += 8) {
        float x[8][4];
#pragma unroll
        for (int v = 0; v < 8; ++v)
            asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(x[v][0]), "=f"(x[v][1]), "=f"(x[v][2]), "=f"(x[v][3])
                         : "l"(p + 1024 * (v0 + v))
                         : "memory");
#pragma unroll
        for (int v = 0; v < 8; ++v)
#pragma unroll
            for (int j = 0; j < 4; ++j) d[4 * (v0 + v) + j] += x[v][j];
    }
}
// Publish this block's partial: every consumer thread's stores are ordered before the flag by
// the named barrier and one GPU-scope fence (as CUTLASS's generic barrier does).
__device__ __forceinline__ void flag_release(unsigned* f)
{
    asm volatile("fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.u32 [%0], 1;" ::"l"(f) : "memory");
}
// Wait until block `f`'s partial is published, then clear its flag for the next launch. A wait
// of a second means a schedule bug (or blocks that are not all resident): trap.
__device__ __forceinline__ void flag_acquire_and_clear(unsigned* f)
{
    unsigned v = 0;
    unsigned long long start = 0;
    for (;;) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
        if (v) break;
        asm volatile("nanosleep.u32 100;");
        if (start == 0) start = global_ns();
        else if (global_ns() - start > 1000000000ull) __trap();
    }
    asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(f) : "memory");
}

__device__ __forceinline__ void streamk_gemm(int M, int N, int K, int sk_tiles, float* ws,
                                             const TmaDesc* tmA, const TmaDesc* tmB,
                                             const TmaDesc* tmC)
{
    extern __shared__ unsigned char sk_smem[];
    PgRing ring = pg_ring(sk_smem);
    int tiles_m = M / PG_BM, tiles_n = N / PG_BN, tiles = tiles_m * tiles_n;
    int KT = K / PG_BK;
    int wg = threadIdx.x / 128;
    Walk walk(sk_tiles, tiles, KT);
    int tile, k0, k1, ks;

    if (wg == 0) {
        // Producer: one thread issues every copy, across all pieces (slice counter g).
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int g = 0;
            while (walk.next(tile, k0, k1, ks)) {
                int tm, tn;
                tile_of(tile, tiles_m, tiles_n, tm, tn);
                for (int i = 0, kt = ks; i < k1 - k0; ++i, ++g, kt = kt + 1 == k1 ? k0 : kt + 1)
                    pg_load(ring, g, kt, tm, tn, tmA, tmB);
            }
        }
    } else {
        // Consumer warpgroup c = wg − 1: rows c·64 .. c·64 + 63 of every tile.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int c = wg - 1;
        bool warp_leader = threadIdx.x % 32 == 0, leader = threadIdx.x == 128;
        unsigned* flags = reinterpret_cast<unsigned*>(ws + (size_t)gridDim.x * SK_SLOT);
        int n_sk = sk_tiles * KT;
        float d[128];
        int g = 0;       // slices consumed so far, over all pieces
        unsigned q = 0;  // epilogue boxes sent so far
        while (walk.next(tile, k0, k1, ks)) {
            int tm, tn;
            tile_of(tile, tiles_m, tiles_n, tm, tn);
            // The slot of the ring does not depend on which k-block a slice holds, only on the
            // count g, so a piece is consumed like a whole tile of k1 − k0 slices.
            pg_consume(ring, d, k1 - k0, g, c, warp_leader);
            if (k1 < KT) {
                // Not the tile's last k-block: hand the partial sum to the block that has it.
                store_partial(ws + (size_t)blockIdx.x * SK_SLOT, d);
                asm volatile("bar.sync 1, 256;" ::: "memory");
                if (leader) flag_release(flags + blockIdx.x);
                continue;
            }
            if (k0 > 0) {
                // The tile's earlier k-blocks: the ranges of the blocks before this one that
                // reach into the tile (a block with an empty range wrote nothing: skipped).
                int tile_start = tile * KT;
                for (int o = (int)blockIdx.x - 1; o >= 0; --o) {
                    int o_start = (int)((long long)n_sk * o / gridDim.x);
                    int o_end = (int)((long long)n_sk * (o + 1) / gridDim.x);
                    if (o_end <= tile_start) break;
                    if (o_start == o_end) continue;
                    if (leader) flag_acquire_and_clear(flags + o);
                    asm volatile("bar.sync 1, 256;" ::: "memory");
                    add_partial(ws + (size_t)o * SK_SLOT, d);
                }
            }
            store_tile_tma(tmC, ring.stage, tm, tn, c, d, q);
        }
        // C is complete only when the copy engine has written the last boxes.
        if (leader) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

extern "C" __global__ void __launch_bounds__(384, 1)
    tc_wgmma_streamk(int M, int N, int K, int sk_tiles, float* ws,
                     const __grid_constant__ TmaDesc tmA, const __grid_constant__ TmaDesc tmB,
                     const __grid_constant__ TmaDesc tmC)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    streamk_gemm(M, N, K, sk_tiles, ws, &tmA, &tmB, &tmC);
#endif
    // Built without sm_90a the kernel writes nothing: C keeps its NaN poison and verification
    // fails, so the figure shows the rung as failed instead of a wrong number.
}
