// attention_common.cuh — the three small device helpers both attention files use (attention.cu
// for the SIMT and mma.sync rungs, attention_hopper.cu for the WGMMA rungs). Embedded by the
// harness and handed to NVRTC with every program; only the files that include it fold it into
// their source hash.

// Two floats → two BF16 in one register, `lo` in the low half (the lower address).
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// 2^x in one SFU instruction (inputs are already scaled by log2 e).
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// A generic pointer into shared memory as the 32-bit address PTX's shared-space operands take.
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
