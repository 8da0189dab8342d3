#!/usr/bin/env bash
# Runs on the device machine: tools/gpu/qgemv_sweep.cu at several shapes of the int4 tensor-core
# GEMV (warps per block, tiles per block, groups per stage, ring stages, blocks per SM), then
# Nsight Compute's summary of the shipped shape at each projection. Output: $OUT/sweep.txt.
set -u
OUT=${OUT:?}
FILE=${KERNEL_FILE:-quant_gemv_mma.cu}
CONFIGS=${CONFIGS:-"8,1,1,2,2 8,1,1,4,2 8,1,1,3,2 4,1,1,4,2 8,2,1,2,2"}
mkdir -p /tmp/sweep
for c in $CONFIGS; do
  IFS=, read s tw u nst mb <<< "$c"
  nvcc -O3 -arch=sm_90a -DKERNEL_FILE="\"$FILE\"" -DMMA_S=$s -DMMA_TW=$tw -DMMA_U=$u -DMMA_NST=$nst -DMMA_NST1=$nst \
    -DMMA_MIN_BLOCKS=$mb -I kernels/inference tools/gpu/qgemv_sweep.cu -o /tmp/sweep/c_${c//,/_} 2>&1 | grep -v Warning &
done
wait
for c in $CONFIGS; do /tmp/sweep/c_${c//,/_} || echo "config $c failed"; done > "$OUT/sweep.txt" 2>&1
first=${CONFIGS%% *}
timeout 120 ncu --clock-control none -k regex:qgemv_int4 -c 4 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  /tmp/sweep/c_${first//,/_} > "$OUT/ncu.txt" 2>&1
cat "$OUT/sweep.txt"
grep -E "qgemv|Memory Throughput|DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Stall|Waves Per SM|Block Limit" "$OUT/ncu.txt" | head -80
