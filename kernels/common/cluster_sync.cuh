// cluster_sync.cuh — thread-block cluster building blocks (Hopper, PTX ISA 7.8) shared by the
// row kernels that split one row over a cluster (softmax_cluster in softmax.cu, rmsnorm_cluster
// in rmsnorm.cu): this block's rank in its cluster, the cluster's size, and a cluster-wide
// barrier split into arrive and wait. Handed to NVRTC as a header (see hopper_sync.cuh); each
// file keeps its own distributed-shared-memory load, since they load different types.

__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned cluster_size()
{
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
