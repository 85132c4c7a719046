// DP-SGD's element-wise work on the GPU, compiled at run time by NVRTC (see gpu/mod.rs).
// The products are cuBLAS's. Layout: R runs side by side; run r's rows live at
// (r*Bcap + i), i < Bs (the step's padded lot), each `width` floats wide; a padded row has
// label -1 and contributes nothing. Every sum is taken in a fixed order (no atomics), so a
// run is reproducible on the same device.

typedef unsigned int u32;
typedef unsigned long long u64;

// Philox4x32-10 (Salmon et al. 2011), the same function as `crate::rng::philox4x32`.
__device__ __forceinline__ void philox(u32 c[4], u32 k0, u32 k1) {
    for (int round = 0; round < 10; ++round) {
        u32 hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        u32 hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        u32 n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
}

// Coordinate j's standard normal under `key`: Box–Muller on two 53-bit uniforms from the
// block j/2 (cosine for even j, sine for odd), as `crate::rng::philox_normal`.
__device__ double normal(u64 key, long long j) {
    u64 block = (u64)j >> 1;
    u32 c[4] = {(u32)block, (u32)(block >> 32), 0u, 0u};
    philox(c, (u32)key, (u32)(key >> 32));
    u64 a = ((u64)c[0] << 21) ^ (u64)(c[1] >> 11);
    u64 b = ((u64)c[2] << 21) ^ (u64)(c[3] >> 11);
    double u = ((double)a + 0.5) * 1.1102230246251565e-16;  // (0, 1)
    double v = (double)b * 1.1102230246251565e-16;          // [0, 1)
    double radius = sqrt(-2.0 * log(u));
    double s, co;
    sincospi(2.0 * v, &s, &co);
    return radius * ((j & 1) ? s : co);
}

extern "C" __global__ void normals(u64 key, long long count, float* out) {
    long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j < count) out[j] = (float)normal(key, j);
}

// One block per padded row: copies the lot's rows of X (and their squared norms and labels).
// A lot of all n rows is not stored: its row i is row i of X.
extern "C" __global__ void gather(const float* x, const double* xn2, const int* labels,
                                  const int* lots, const int* sizes, int n, int lot_stride,
                                  int bs, int bcap, int d, float* xb, double* xn2b, int* yb) {
    int row = blockIdx.x;
    int r = row / bs, i = row - r * bs;
    long long dst = (long long)r * bcap + i;
    if (i < sizes[r]) {
        long long src = sizes[r] == n ? i : lots[(long long)r * lot_stride + i];
        for (int j = threadIdx.x; j < d; j += blockDim.x) xb[dst * d + j] = x[src * d + j];
        if (threadIdx.x == 0) { xn2b[dst] = xn2[src]; yb[dst] = labels[src]; }
    } else {
        for (int j = threadIdx.x; j < d; j += blockDim.x) xb[dst * d + j] = 0.0f;
        if (threadIdx.x == 0) { xn2b[dst] = 0.0; yb[dst] = -1; }
    }
}

// z += bias, then the activation (0: none, 1: ReLU, 2: tanh).
extern "C" __global__ void bias_act(float* z, const float* params, long long p, long long bias_at,
                                    int width, int bs, int bcap, int runs, int act) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long per_run = (long long)bs * width;
    if (idx >= per_run * runs) return;
    int r = (int)(idx / per_run);
    long long rest = idx - r * per_run;
    int i = (int)(rest / width), k = (int)(rest - (long long)i * width);
    long long at = ((long long)r * bcap + i) * width + k;
    float v = z[at] + params[r * p + bias_at + k];
    if (act == 1) v = fmaxf(v, 0.0f);
    else if (act == 2) v = tanhf(v);
    z[at] = v;
}

// The loss head, one thread per row: overwrites the outputs with dℓ/d(output) and writes ℓ.
// kind 0: softmax cross-entropy; 1: sigmoid cross-entropy (class 1 positive); 2: hinge
// alpha·max(0, 1 − y·z), subgradient 0 at margin 1.
// With `fuse` (a model of one layer, whose norm needs nothing else) it also clips: ‖∇ℓ_i‖² =
// (‖x_i‖² + 1)·‖δ_i‖², from the input norms `an2`, as norm_acc and clip_rows would.
extern "C" __global__ void head(float* z, const int* yb, int width, int bs, int bcap, int runs,
                                int kind, float alpha, float* loss, int fuse, const double* an2,
                                const float* clip, double margin) {
    long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (row >= (long long)bs * runs) return;
    int r = (int)(row / bs), i = (int)(row - (long long)r * bs);
    long long at = (long long)r * bcap + i;
    float* out = z + at * width;
    int y = yb[at];
    if (y < 0) {
        for (int k = 0; k < width; ++k) out[k] = 0.0f;
        loss[at] = 0.0f;
        return;
    }
    if (kind == 0) {
        float m = out[0];
        for (int k = 1; k < width; ++k) m = fmaxf(m, out[k]);
        float s = 0.0f;
        for (int k = 0; k < width; ++k) s += expf(out[k] - m);
        float lse = m + logf(s);
        loss[at] = lse - out[y];
        for (int k = 0; k < width; ++k) out[k] = expf(out[k] - lse) - (k == y ? 1.0f : 0.0f);
    } else if (kind == 1) {
        float v = out[0], t = (y == 1) ? 1.0f : 0.0f;
        float e = expf(-fabsf(v));
        loss[at] = fmaxf(v, 0.0f) - t * v + log1pf(e);
        float sig = v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        out[0] = sig - t;
    } else {
        float t = (y == 1) ? 1.0f : -1.0f, m = t * out[0];
        loss[at] = alpha * fmaxf(1.0f - m, 0.0f);
        out[0] = m < 1.0f ? -alpha * t : 0.0f;
    }
    if (fuse) {
        double c = clip[r];
        if (isinf(c)) return;
        double g2 = 0.0;
        for (int k = 0; k < width; ++k) g2 += (double)out[k] * (double)out[k];
        double norm = sqrt((an2[at] + 1.0) * g2) * (1.0 + margin);
        if (norm > c)
            for (int k = 0; k < width; ++k) out[k] = (float)((double)out[k] * (c / norm));
    }
}

// δ ← δ ⊙ activation′, from the activation's output a (1: ReLU, 2: tanh).
extern "C" __global__ void act_back(float* delta, const float* a, int width, int bs, int bcap,
                                    int runs, int act) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long per_run = (long long)bs * width;
    if (idx >= per_run * runs) return;
    int r = (int)(idx / per_run);
    long long at = (long long)r * bcap * width + (idx - r * per_run);
    float v = a[at];
    if (act == 1) delta[at] = v > 0.0f ? delta[at] : 0.0f;
    else delta[at] *= 1.0f - v * v;
}

// One warp per row: nrm (+)= (‖a‖² + 1)·‖δ‖², a layer's share of ‖∇ℓ_i‖² (bias folded in as
// a constant-1 input), summed in double. ‖a‖² comes from `an2` when `use_an2` is set (the
// input layer's norms, computed once).
extern "C" __global__ void norm_acc(const float* a, const double* an2, int use_an2,
                                    const float* delta, int in, int out, int bs, int bcap, int runs, int first,
                                    double* nrm) {
    long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= (long long)bs * runs) return;
    int r = (int)(warp / bs), i = (int)(warp - (long long)r * bs);
    long long at = (long long)r * bcap + i;
    double a2 = 0.0, g2 = 0.0;
    if (use_an2) {
        if (lane == 0) a2 = an2[at];
    } else {
        for (int k = lane; k < in; k += 32) { double v = a[at * in + k]; a2 += v * v; }
    }
    for (int k = lane; k < out; k += 32) { double v = delta[at * out + k]; g2 += v * v; }
    for (int o = 16; o > 0; o >>= 1) {
        a2 += __shfl_down_sync(0xffffffffu, a2, o);
        g2 += __shfl_down_sync(0xffffffffu, g2, o);
    }
    if (lane == 0) {
        double v = (a2 + 1.0) * g2;
        nrm[at] = first ? v : nrm[at] + v;
    }
}

// δ ← c_i·δ with the clip factor c_i = min(1, C/‖∇ℓ_i‖), the norm inflated by `margin`
// against rounding (clip[r] = +inf: no clipping).
extern "C" __global__ void clip_rows(float* delta, const double* nrm, const float* clip,
                                     double margin, int width, int bs, int bcap, int runs) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long per_run = (long long)bs * width;
    if (idx >= per_run * runs) return;
    int r = (int)(idx / per_run);
    long long rest = idx - r * per_run;
    int i = (int)(rest / width);
    double c = clip[r];
    if (isinf(c)) return;
    double norm = sqrt(nrm[(long long)r * bcap + i]) * (1.0 + margin);
    if (norm > c) {
        long long at = (long long)r * bcap * width + rest;
        delta[at] = (float)((double)delta[at] * (c / norm));
    }
}

// Per run and block of `rows` rows: Σ ℓ_i over the block, in a fixed order.
extern "C" __global__ void loss_partial(const float* loss, int bs, int bcap, int rows,
                                        double* parts) {
    __shared__ double part[256];
    int block = blockIdx.x, r = blockIdx.y;
    int start = block * rows, end = min(bs, start + rows);
    double acc = 0.0;
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) acc += loss[(long long)r * bcap + i];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) parts[(long long)r * gridDim.x + block] = part[0];
}

// Per run: the blocks' sums in block order, over the divisor.
extern "C" __global__ void loss_total(const double* parts, int blocks, const float* divisor,
                                      int runs, float* out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= runs) return;
    double s = 0.0;
    for (int b = 0; b < blocks; ++b) s += parts[(long long)r * blocks + b];
    out[r] = (float)(s / divisor[r]);
}

// The step's update of every run's parameters: g = (sum + sd·z)/divisor, then SGD or Adam.
// z is the host's (`host_noise` when `use_host`, test mode) or Philox's under the run's key for the step.
// Runs that are stopped (active = 0) or take no step (size < 0) are left alone; a run whose
// new parameters are not finite is flagged in `bad` (its old ones are kept in `prev`).
extern "C" __global__ void update(float* params, float* prev, const float* grad,
                                  const float* host_noise, int use_host, const u64* keys, const int* sizes,
                                  const float* divisor, const float* noise_sd, const float* lr,
                                  const int* adam, const float* beta1, const float* beta2,
                                  const float* kappa, float* m, float* v, int t,
                                  const int* active, int* bad, long long p, int runs) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= p * runs) return;
    int r = (int)(idx / p);
    if (!active[r] || sizes[r] < 0) return;
    long long j = idx - r * p;
    double g = grad[idx];
    double sd = noise_sd[r];
    if (sd > 0.0) g += sd * (use_host ? (double)host_noise[idx] : normal(keys[r], j));
    g /= divisor[r];
    double w = params[idx];
    prev[idx] = (float)w;
    if (adam[r]) {
        double b1 = beta1[r], b2 = beta2[r];
        double mm = b1 * m[idx] + (1.0 - b1) * g;
        double vv = b2 * v[idx] + (1.0 - b2) * g * g;
        m[idx] = (float)mm;
        v[idx] = (float)vv;
        double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
        w -= lr[r] * (mm / c1) / (sqrt(vv / c2) + kappa[r]);
    } else {
        w -= lr[r] * g;
    }
    float out = (float)w;
    params[idx] = out;
    if (!isfinite(out)) bad[r] = 1;
}

// A run flagged this step gets its previous parameters back (it stops there).
extern "C" __global__ void revert(float* params, const float* prev, const int* active,
                                  const int* bad, long long p, int runs) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= p * runs) return;
    int r = (int)(idx / p);
    if (active[r] && bad[r]) params[idx] = prev[idx];
}

// After `revert`: a flagged run stops at `step`.
extern "C" __global__ void deactivate(int* active, int* bad, int* stopped, int step, int runs) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= runs) return;
    if (active[r] && bad[r]) { active[r] = 0; stopped[r] = step; }
    bad[r] = 0;
}
