// hopper_sync.cuh — the mbarrier and TMA building blocks shared by the Hopper kernels
// (tc_gemm.cu, attention_hopper.cu, decode_attention_v2.cu). The generator hands this file to
// NVRTC as a header (each kernel file is still one program) and folds it into the source hash
// of every file that includes it, so editing it re-measures them all. All of it needs sm_90.

// ANCHOR: mbarrier_tma
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Arrive once and announce `bytes` of transaction (the TMA copies complete them).
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
// Wait until the phase with this parity has completed. A wait that lasts a second means a
// pipeline bug (a barrier nobody will complete): trap, so the harness records a failed launch
// instead of hanging.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0, polls = 0;
    unsigned long long start = 0;
    while (!done) {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
        if (!done && (++polls & 1023) == 0) {
            if (start == 0) start = global_ns();
            else if (global_ns() - start > 1000000000ull) __trap();
        }
    }
}
// One 2-D box of the tensor map `map` (a CUtensorMap passed as a __grid_constant__ kernel
// parameter) at coordinates (c0, c1) into shared memory at `dst`, counted on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* map, unsigned bar, int c0,
                                            int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
// ANCHOR_END: mbarrier_tma
