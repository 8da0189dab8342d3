// transpose.cu — out = inᵀ for a rows × cols row-major matrix of floats.
//
// A transpose does no arithmetic: it is pure data movement, but one of the two sides is always
// read or written down a column. The ladder shows how shared memory turns that strided side into
// contiguous accesses, and how one padding word removes the shared-memory bank conflicts.
//
// All three kernels use 32 × 8 thread blocks; each thread moves TILE / ROWS = 4 elements of a
// 32 × 32 tile. Launch with grid (ceil(cols / 32), ceil(rows / 32)).

// ANCHOR: tile_shape
#define TILE 32
#define ROWS 8
// ANCHOR_END: tile_shape

// Rung 1: read a row of the tile (coalesced), write it straight into a column of the output.
// The writes of one warp land 4·rows bytes apart: 32 separate memory transactions per store.
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;  // column in `in`
    int y = blockIdx.y * TILE + threadIdx.y;  // row in `in`
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows)
            out[(size_t)x * rows + (y + j)] = in[(size_t)(y + j) * cols + x];
}

// Rung 2: stage the tile in shared memory. Read rows of `in` coalesced, then write rows of
// `out` coalesced by reading the tile down a column. That column read is the catch: the 32
// words of a tile column are 32 words apart, all in the same shared-memory bank, so one warp's
// read is served one word at a time (a 32-way bank conflict).
extern "C" __global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    // The block now writes the transposed tile: block (bx, by) of `in` goes to (by, bx) of `out`.
    x = blockIdx.y * TILE + threadIdx.x;  // column in `out`
    y = blockIdx.x * TILE + threadIdx.y;  // row in `out`
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Rung 3: the same, with one padding column. A row of the tile is now 33 words long, so the 32
// words of a column fall into 32 different banks and the column read is conflict-free.
extern "C" __global__ void transpose_padded(const float* __restrict__ in, float* __restrict__ out,
                                            int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
