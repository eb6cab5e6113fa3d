// Kernels for the emulator's fiber stacks: how many mappings a library's
// stacks take, and what a thread that overflows its stack gets.

extern "C" __global__ void touch(int* out)
{
    out[threadIdx.x] = threadIdx.x;
    __syncthreads();
}

// A local array past the 256 KiB stack each fiber has: a GPU would need this
// much local memory per thread; on the emulator it runs into the red zone
// below the stack. (Thread 0's stack sits on the PROT_NONE zone: it faults.)
__device__ __noinline__ int deep(int seed)
{
    volatile char big[272 * 1024];
    for (unsigned i = 0; i < sizeof(big); i += 512) big[i] = (char)(i + seed);
    return big[seed * 512];
}

extern "C" __global__ void overflow(int* out)
{
    out[threadIdx.x] = threadIdx.x == 1 ? deep(threadIdx.x) : 0;
}
