// gpu_check step `arch`: built with `nvcc -gencode arch=compute_120,code=sm_120` (machine code for
// sm_120 only, no PTX the driver could compile for another GPU) and launched on this card.
// Expected on Hopper (sm_90): cudaErrorNoKernelImageForDevice, "no kernel image is available for
// execution on the device"; the error text is the CUDA runtime's own (cudaGetErrorString).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void touch(int* out) { out[threadIdx.x] = threadIdx.x; }

int main() {
    cudaDeviceProp props;
    cudaError_t err = cudaGetDeviceProperties(&props, 0);
    if (err == cudaSuccess) {
        printf("gpu_check arch: %s is sm_%d%d; this binary holds machine code for sm_120 only\n",
               props.name, props.major, props.minor);
        fflush(stdout);
    }
    int* out = nullptr;
    if (err == cudaSuccess) err = cudaMalloc(&out, 32 * sizeof(int));
    if (err == cudaSuccess) {
        touch<<<1, 32>>>(out);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        fprintf(stderr, "CUDA error: %s (%s)\n", cudaGetErrorString(err), cudaGetErrorName(err));
        return 1;
    }
    printf("gpu_check arch: the kernel ran: nothing to record\n");
    return 0;
}
