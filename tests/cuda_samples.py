"""Small CUDA C++ programs the toolchain and runtime tests compile (test inputs, not shipped kernels).

Each one exists to make a check able to fail: the mma.sync kernel must show
HMMA, the wgmma probe HGMMA, and the local-array kernel must be caught
touching local memory.
"""

# c[i] = a[i] + b[i] for i < n
VECADD = r'''
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
'''

# The smallest launchable kernel, for launch-overhead measurements.
TINY = r'''
extern "C" __global__ void tiny(float* x, int n) {
  if (threadIdx.x < n) x[threadIdx.x] += 1.0f;
}
'''

# One warp: D(16x8 f32) = A(16x16 bf16, row-major) @ B(16x8 bf16, row-major k x n) + C(16x8 f32),
# through mma.sync.m16n8k16 with fragments gathered per the PTX ISA lane layout
# (g = lane / 4 is the row group, t = lane % 4 the column pair).
MMA = r'''
typedef unsigned short bf16_t;
__device__ __forceinline__ unsigned pack2(bf16_t lo, bf16_t hi) { return (unsigned)lo | ((unsigned)hi << 16); }
extern "C" __global__ void mma_16x8x16(const bf16_t* A, const bf16_t* B, const float* C, float* D) {
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  unsigned a0 = pack2(A[g * 16 + t * 2],           A[g * 16 + t * 2 + 1]);
  unsigned a1 = pack2(A[(g + 8) * 16 + t * 2],     A[(g + 8) * 16 + t * 2 + 1]);
  unsigned a2 = pack2(A[g * 16 + t * 2 + 8],       A[g * 16 + t * 2 + 9]);
  unsigned a3 = pack2(A[(g + 8) * 16 + t * 2 + 8], A[(g + 8) * 16 + t * 2 + 9]);
  unsigned b0 = pack2(B[(t * 2) * 8 + g],     B[(t * 2 + 1) * 8 + g]);
  unsigned b1 = pack2(B[(t * 2 + 8) * 8 + g], B[(t * 2 + 9) * 8 + g]);
  float d0 = C[g * 8 + t * 2], d1 = C[g * 8 + t * 2 + 1];
  float d2 = C[(g + 8) * 8 + t * 2], d3 = C[(g + 8) * 8 + t * 2 + 1];
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  D[g * 8 + t * 2] = d0;       D[g * 8 + t * 2 + 1] = d1;
  D[(g + 8) * 8 + t * 2] = d2; D[(g + 8) * 8 + t * 2 + 1] = d3;
}
'''

# A 256-float per-thread array indexed with run-time values cannot live in
# registers: ptxas puts it on the stack (STL/LDL, STACK:1024).
LOCAL_ARRAY = r'''
extern "C" __global__ void local_array(const float* src, const int* idx, float* out) {
  float buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = src[i * blockDim.x + threadIdx.x];
  buf[idx[threadIdx.x] & 255] += 1.0f;
  out[threadIdx.x] = buf[idx[threadIdx.x + blockDim.x] & 255];
}
'''

# sm_90a only: setmaxnreg and one wgmma.mma_async m64n8k16 whose shared-memory
# descriptors come in as kernel arguments (compile-only: nothing launches it).
WGMMA = r'''
extern "C" __global__ void __launch_bounds__(128) wgmma_probe(float* out, unsigned long long desc_a,
                                                              unsigned long long desc_b) {
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(desc_a), "l"(desc_b), "r"(0));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  int i = threadIdx.x * 4;
  out[i] = d0; out[i + 1] = d1; out[i + 2] = d2; out[i + 3] = d3;
}
'''

# A template kernel reached through a name expression.
TEMPLATE = r'''
template <int N> __global__ void fill(float* x) { x[threadIdx.x] = (float)N; }
'''

# A dynamic-shared-memory kernel: out[0] = sum over the smem buffer of 1.0f (nbytes / 4 floats).
DYNAMIC_SMEM = r'''
extern "C" __global__ void smem_count(float* out, int nfloats) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < nfloats; i += blockDim.x) s[i] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) { float acc = 0.f; for (int i = 0; i < nfloats; ++i) acc += s[i]; out[0] = acc; }
}
'''

# Writes through a null pointer: an execution fault (used only in a subprocess).
FAULT = r'''
extern "C" __global__ void fault(float* x) { volatile float* p = (volatile float*)0x10; p[threadIdx.x] = x[0]; }
'''
