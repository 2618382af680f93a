"""gpu_check step `illegal_memory`: a CuPy kernel (compiled by NVRTC) writes 4 TiB past the end of
its 1 KiB buffer. Expected: cudaErrorIllegalAddress at the next synchronisation, uncaught."""

import cupy as cp

SOURCE = r"""
extern "C" __global__ void write_far(float* x, long long past_end) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    x[i + past_end] = 1.0f;
}
"""

x = cp.zeros(256, dtype=cp.float32)
kernel = cp.RawKernel(SOURCE, "write_far")
print(f"gpu_check illegal_memory: CuPy {cp.__version__}, writing 2**40 floats past a 256-float buffer", flush=True)
kernel((1,), (256,), (x, cp.int64(1 << 40)))
cp.cuda.runtime.deviceSynchronize()
print("gpu_check illegal_memory: the kernel ran without a fault: nothing to record")
