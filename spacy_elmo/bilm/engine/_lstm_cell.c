/* The LSTM cell of one step in a single pass (AVX2 + FMA): the inference update,
 * and the training forward and backward passes (below).
 *
 * Eager PyTorch spends seven passes (and kernel launches) per step on the
 * gate and cell arithmetic; this does it in one pass over the gates, with
 * the gate sigmoids included, so the step's product can run without a fused
 * activation. The math is `lstm._cell_update`'s (the j gate's
 * pre-activation arrives doubled, the cell is carried doubled):
 *
 *     s = sigmoid(gates)            for i, f, o and j
 *     c2 = clip(s_f c2 + 4 s_i s_j - 2 s_i, +-clip2)
 *     m  = (sigmoid(c2) - 1/2) s_o
 *
 * Every element is computed by the same instructions whatever the number of
 * rows or threads (rows are split between threads, columns never), so a
 * row's result does not depend on its batch. Built as an optional extension:
 * without it (no compiler, not x86-64, no AVX2) `cell_kernel.available()` is
 * false and PyTorch's ops are used. OpenMP comes from the libgomp that
 * PyTorch already loaded (same soname), so no second thread pool appears.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_KERNEL 1
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

/* sigmoid(x) = 1 / (1 + e^-x); e^y as in Cephes' expf: y = n ln2 + r with
 * |r| <= ln2 / 2, e^r by a degree-6 polynomial (about 1 ulp), 2^n from the
 * exponent bits; y is clamped to [-88, 88], where sigmoid is 0 or 1 in float32.
 *
 * NaN goes through every clamp, as through PyTorch's: _mm256_max_ps(a, b) and
 * _mm256_min_ps(a, b) return b where either is NaN, so the value clamped is
 * always the second operand (clamp8), and the scalar clamp compares (clamp1);
 * C's fminf/fmaxf would return the bound. For finite values the order changes
 * nothing (the bounds are never zero, so not even the sign of a zero). */
#define EXP_LIMIT 88.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

#ifdef HAVE_X86_KERNEL
/* x clamped to [lo, hi], NaN kept (see above) */
__attribute__((target("avx2,fma"))) static inline __m256 clamp8(__m256 x, __m256 lo, __m256 hi) {
    return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
}

static inline float clamp1(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

__attribute__((target("avx2,fma"))) static inline __m256 sigmoid8(__m256 x) {
    __m256 y = _mm256_sub_ps(_mm256_setzero_ps(), x);
    y = clamp8(y, _mm256_set1_ps(-EXP_LIMIT), _mm256_set1_ps(EXP_LIMIT));
    __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(y, _mm256_set1_ps(LOG2E), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), y);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
    __m256 p = _mm256_set1_ps(P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P5));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
    return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* The same function for one float (the columns past the last multiple of 8):
 * the vector code run on a vector holding x, so both give the same bits. */
__attribute__((target("avx2,fma"))) static inline float sigmoid1(float x) {
    return _mm256_cvtss_f32(sigmoid8(_mm256_set1_ps(x)));
}

/* gates[k] (+ addend[k] where an addend row is given), the same rounding in both paths */
__attribute__((target("avx2,fma"))) static inline __m256 load_gate8(const float *g, const float *a, Py_ssize_t k) {
    __m256 x = _mm256_loadu_ps(g + k);
    return a ? _mm256_add_ps(x, _mm256_loadu_ps(a + k)) : x;
}

static inline float load_gate1(const float *g, const float *a, Py_ssize_t k) {
    return a ? g[k] + a[k] : g[k];
}

__attribute__((target("avx2,fma"))) static void cell_row(const float *g, const float *a, float *c, float *m, Py_ssize_t H, float clip2) {
    const __m256 lo = _mm256_set1_ps(-clip2), hi = _mm256_set1_ps(clip2);
    const __m256 four = _mm256_set1_ps(4.0f), minus_two = _mm256_set1_ps(-2.0f), half = _mm256_set1_ps(0.5f);
    Py_ssize_t k = 0;
    for (; k + 8 <= H; k += 8) {
        __m256 si = sigmoid8(load_gate8(g, a, k));
        __m256 sf = sigmoid8(load_gate8(g, a, H + k));
        __m256 so = sigmoid8(load_gate8(g, a, 2 * H + k));
        __m256 sj = sigmoid8(load_gate8(g, a, 3 * H + k));
        __m256 input = _mm256_fmadd_ps(_mm256_mul_ps(four, si), sj, _mm256_mul_ps(minus_two, si));
        __m256 cell = _mm256_fmadd_ps(sf, _mm256_loadu_ps(c + k), input);
        cell = clamp8(cell, lo, hi);
        _mm256_storeu_ps(c + k, cell);
        _mm256_storeu_ps(m + k, _mm256_mul_ps(_mm256_sub_ps(sigmoid8(cell), half), so));
    }
    for (; k < H; k++) {
        float si = sigmoid1(load_gate1(g, a, k)), sf = sigmoid1(load_gate1(g, a, H + k));
        float so = sigmoid1(load_gate1(g, a, 2 * H + k)), sj = sigmoid1(load_gate1(g, a, 3 * H + k));
        float cell = fmaf(sf, c[k], fmaf(4.0f * si, sj, -2.0f * si));
        cell = clamp1(cell, -clip2, clip2);
        c[k] = cell;
        m[k] = (sigmoid1(cell) - 0.5f) * so;
    }
}
#endif

static int kernel_available(void) {
#ifdef HAVE_X86_KERNEL
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* Sets a RuntimeError and returns 0 where this CPU cannot run the kernels. */
static int require_kernel(void) {
    if (kernel_available())
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "the LSTM cell kernel needs an x86-64 CPU with AVX2 and FMA");
    return 0;
}

/* Threads for a step of rows x hidden: a parallel region costs more than a small step's arithmetic. */
static inline int team_size(Py_ssize_t rows, Py_ssize_t hidden, int threads) {
    return (rows * hidden >= 16384 && threads > 1) ? threads : 1;
}

static PyObject *available(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(kernel_available());
}

/* update(gates, c2, m, rows, hidden, clip2, threads, addend, addend_rows, index):
 * addresses of C-contiguous float32 buffers, gates (rows, 4 hidden), c2 and m
 * (rows, hidden); clip2 is the doubled cell clip (+inf for none). With an
 * addend (address of (addend_rows, 4 hidden) float32; 0 for none), row b's
 * gates get addend row index[b] added first (index: address of rows int64).
 * The caller checks shapes and types; the row indices are checked here. */
static PyObject *update(PyObject *self, PyObject *args) {
    unsigned long long gates, c2, m, addend, index;
    Py_ssize_t rows, hidden, addend_rows;
    float clip2;
    int threads;
    if (!PyArg_ParseTuple(args, "KKKnnfiKnK", &gates, &c2, &m, &rows, &hidden, &clip2, &threads, &addend, &addend_rows, &index))
        return NULL;
    if (!require_kernel())
        return NULL;
    const int64_t *rows_index = (const int64_t *)(uintptr_t)index;
    if (addend) {
        for (Py_ssize_t b = 0; b < rows; b++) {
            if (rows_index[b] < 0 || rows_index[b] >= addend_rows) {
                PyErr_Format(PyExc_IndexError, "cell kernel: addend row %lld out of range [0, %zd)", (long long)rows_index[b], addend_rows);
                return NULL;
            }
        }
    }
#ifdef HAVE_X86_KERNEL
    const float *g = (const float *)(uintptr_t)gates, *add = (const float *)(uintptr_t)addend;
    float *c = (float *)(uintptr_t)c2, *out = (float *)(uintptr_t)m;
    Py_BEGIN_ALLOW_THREADS
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(team_size(rows, hidden, threads))
#endif
    for (Py_ssize_t b = 0; b < rows; b++) {
        const float *a = add ? add + rows_index[b] * 4 * hidden : NULL;
        cell_row(g + b * 4 * hidden, a, c + b * hidden, out + b * hidden, hidden, clip2);
    }
    Py_END_ALLOW_THREADS
#endif
    Py_RETURN_NONE;
}


/* ---- training: the cell of one step, forward and backward ------------------------
 *
 * Forward, per element, from the gates' pre-activations g (i, f, o, j):
 *     s_i, s_f, s_o = sigmoid(g_i, g_f, g_o);  j = tanh(g_j)
 *     c_raw = s_f c_prev + s_i j;  c = clip(c_raw);  m = s_o tanh(c)
 * The gates are overwritten by their activations (s_i, s_f, s_o, j), which the
 * backward pass reads; c_raw, tanh(c) and m are written to their own buffers.
 * Backward, from dm (the gradient reaching m) and dc (the cell gradient carried
 * from the next step), writing the gates' gradients to their own buffer and
 * overwriting dc with the gradient of c_prev:
 *     d = dm s_o (1 - tanh(c)^2) + dc, zero where |c_raw| > clip
 *     dg_i = d j s_i (1 - s_i);  dg_f = d c_prev s_f (1 - s_f)
 *     dg_o = dm tanh(c) s_o (1 - s_o);  dg_j = d s_i (1 - j^2);  dc = d s_f
 * c_prev is read clipped to +-prev_clip, so the previous step's c_raw serves as
 * it (the initial cell is read as given: prev_clip +inf). tanh(x)
 * is 2 sigmoid(2x) - 1. Columns past the last multiple of 8 are loaded and
 * stored with a mask: every column goes through the same arithmetic. */
#ifdef HAVE_X86_KERNEL
__attribute__((target("avx2,fma"))) static inline __m256i tail_mask(Py_ssize_t n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lanes);
}

/* full: all 8 columns exist and go through plain loads and stores; only a row's last,
 * shorter group uses the masked ones, which AMD CPUs run microcoded (with every
 * access masked the training kernels ran 2-3x slower on Zen 3). Same bits either way. */
__attribute__((target("avx2,fma"))) static inline __m256 ld(const float *p, __m256i mask, int full) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

__attribute__((target("avx2,fma"))) static inline void st(float *p, __m256i mask, __m256 x, int full) {
    if (full)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, mask, x);
}

__attribute__((target("avx2,fma"))) static inline __m256 tanh8(__m256 x) {
    const __m256 two = _mm256_set1_ps(2.0f);
    return _mm256_fmsub_ps(two, sigmoid8(_mm256_mul_ps(two, x)), _mm256_set1_ps(1.0f));
}

__attribute__((target("avx2,fma"), always_inline)) static inline void train_forward8(float *g, float *c, float *c_raw, float *tc, float *m, Py_ssize_t H, float clip, Py_ssize_t k, __m256i mask, int full) {
    const __m256 lo = _mm256_set1_ps(-clip), hi = _mm256_set1_ps(clip);
    __m256 si = sigmoid8(ld(g + k, mask, full));
    __m256 sf = sigmoid8(ld(g + H + k, mask, full));
    __m256 so = sigmoid8(ld(g + 2 * H + k, mask, full));
    __m256 j = tanh8(ld(g + 3 * H + k, mask, full));
    __m256 raw = _mm256_fmadd_ps(sf, ld(c + k, mask, full), _mm256_mul_ps(si, j));
    __m256 cell = clamp8(raw, lo, hi);
    __m256 t = tanh8(cell);
    st(g + k, mask, si, full);
    st(g + H + k, mask, sf, full);
    st(g + 2 * H + k, mask, so, full);
    st(g + 3 * H + k, mask, j, full);
    st(c + k, mask, cell, full);
    st(c_raw + k, mask, raw, full);
    st(tc + k, mask, t, full);
    st(m + k, mask, _mm256_mul_ps(so, t), full);
}

__attribute__((target("avx2,fma"))) static void train_forward_row(float *g, float *c, float *c_raw, float *tc, float *m, Py_ssize_t H, float clip) {
    Py_ssize_t k = 0;
    for (; k + 8 <= H; k += 8)
        train_forward8(g, c, c_raw, tc, m, H, clip, k, tail_mask(8), 1);
    if (k < H)
        train_forward8(g, c, c_raw, tc, m, H, clip, k, tail_mask(H - k), 0);
}

__attribute__((target("avx2,fma"), always_inline)) static inline void train_backward8(const float *g, float *dg, const float *dm, float *dc, const float *c_raw, const float *tc, const float *c_prev, Py_ssize_t H, float clip, float prev_clip, Py_ssize_t k, __m256i mask, int full) {
    const __m256 hi = _mm256_set1_ps(clip), one = _mm256_set1_ps(1.0f);
    const __m256 prev_lo = _mm256_set1_ps(-prev_clip), prev_hi = _mm256_set1_ps(prev_clip);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 si = ld(g + k, mask, full), sf = ld(g + H + k, mask, full), so = ld(g + 2 * H + k, mask, full), j = ld(g + 3 * H + k, mask, full);
    __m256 t = ld(tc + k, mask, full), dmk = ld(dm + k, mask, full);
    __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(dmk, so), _mm256_fnmadd_ps(t, t, one), ld(dc + k, mask, full));
    __m256 inside = _mm256_cmp_ps(_mm256_andnot_ps(sign, ld(c_raw + k, mask, full)), hi, _CMP_LE_OQ);
    d = _mm256_and_ps(d, inside);
    __m256 cp = clamp8(ld(c_prev + k, mask, full), prev_lo, prev_hi);
    st(dg + k, mask, _mm256_mul_ps(_mm256_mul_ps(d, j), _mm256_mul_ps(si, _mm256_sub_ps(one, si))), full);
    st(dg + H + k, mask, _mm256_mul_ps(_mm256_mul_ps(d, cp), _mm256_mul_ps(sf, _mm256_sub_ps(one, sf))), full);
    st(dg + 2 * H + k, mask, _mm256_mul_ps(_mm256_mul_ps(dmk, t), _mm256_mul_ps(so, _mm256_sub_ps(one, so))), full);
    st(dg + 3 * H + k, mask, _mm256_mul_ps(_mm256_mul_ps(d, si), _mm256_fnmadd_ps(j, j, one)), full);
    st(dc + k, mask, _mm256_mul_ps(d, sf), full);
}

__attribute__((target("avx2,fma"))) static void train_backward_row(const float *g, float *dg, const float *dm, float *dc, const float *c_raw, const float *tc, const float *c_prev, Py_ssize_t H, float clip, float prev_clip) {
    Py_ssize_t k = 0;
    for (; k + 8 <= H; k += 8)
        train_backward8(g, dg, dm, dc, c_raw, tc, c_prev, H, clip, prev_clip, k, tail_mask(8), 1);
    if (k < H)
        train_backward8(g, dg, dm, dc, c_raw, tc, c_prev, H, clip, prev_clip, k, tail_mask(H - k), 0);
}

#endif

/* train_forward(gates, c, c_raw, tanh_c, m, rows, hidden, clip, threads): one
 * step's cell for `rows` rows; addresses of C-contiguous float32 buffers, gates
 * (rows, 4 hidden), the others (rows, hidden); clip +inf for none. */
static PyObject *train_forward(PyObject *self, PyObject *args) {
    unsigned long long gates, c, c_raw, tc, m;
    Py_ssize_t rows, hidden;
    float clip;
    int threads;
    if (!PyArg_ParseTuple(args, "KKKKKnnfi", &gates, &c, &c_raw, &tc, &m, &rows, &hidden, &clip, &threads))
        return NULL;
    if (!require_kernel())
        return NULL;
#ifdef HAVE_X86_KERNEL
    float *G = (float *)(uintptr_t)gates, *C = (float *)(uintptr_t)c, *R = (float *)(uintptr_t)c_raw;
    float *T = (float *)(uintptr_t)tc, *M = (float *)(uintptr_t)m;
    Py_BEGIN_ALLOW_THREADS
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(team_size(rows, hidden, threads))
#endif
    for (Py_ssize_t b = 0; b < rows; b++)
        train_forward_row(G + b * 4 * hidden, C + b * hidden, R + b * hidden, T + b * hidden, M + b * hidden, hidden, clip);
    Py_END_ALLOW_THREADS
#endif
    Py_RETURN_NONE;
}

/* train_backward(gates, d_gates, dm, dc, c_raw, tanh_c, c_prev, rows, hidden, clip, prev_clip, threads):
 * gates hold the step's activations, d_gates receives their pre-activations'
 * gradients; dc holds the carried cell gradient and receives c_prev's.
 * Shapes as train_forward's (d_gates as gates). */
static PyObject *train_backward(PyObject *self, PyObject *args) {
    unsigned long long gates, d_gates, dm, dc, c_raw, tc, c_prev;
    Py_ssize_t rows, hidden;
    float clip, prev_clip;
    int threads;
    if (!PyArg_ParseTuple(args, "KKKKKKKnnffi", &gates, &d_gates, &dm, &dc, &c_raw, &tc, &c_prev, &rows, &hidden, &clip, &prev_clip, &threads))
        return NULL;
    if (!require_kernel())
        return NULL;
#ifdef HAVE_X86_KERNEL
    const float *G = (const float *)(uintptr_t)gates;
    float *DG = (float *)(uintptr_t)d_gates, *DC = (float *)(uintptr_t)dc;
    const float *DM = (const float *)(uintptr_t)dm, *R = (const float *)(uintptr_t)c_raw;
    const float *T = (const float *)(uintptr_t)tc, *P = (const float *)(uintptr_t)c_prev;
    Py_BEGIN_ALLOW_THREADS
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(team_size(rows, hidden, threads))
#endif
    for (Py_ssize_t b = 0; b < rows; b++)
        train_backward_row(G + b * 4 * hidden, DG + b * 4 * hidden, DM + b * hidden, DC + b * hidden, R + b * hidden, T + b * hidden, P + b * hidden, hidden, clip, prev_clip);
    Py_END_ALLOW_THREADS
#endif
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"available", available, METH_NOARGS, "Whether this CPU can run the kernel (x86-64 with AVX2 and FMA)."},
    {"update", update, METH_VARARGS, "update(gates, c2, m, rows, hidden, clip2, threads, addend, addend_rows, index): one LSTM cell step, in place."},
    {"train_forward", train_forward, METH_VARARGS, "train_forward(gates, c, c_raw, tanh_c, m, rows, hidden, clip, threads): one training step's cell, in place."},
    {"train_backward", train_backward, METH_VARARGS, "train_backward(gates, d_gates, dm, dc, c_raw, tanh_c, c_prev, rows, hidden, clip, prev_clip, threads): its gradients."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lstm_cell", "The fused LSTM cell of one step: inference, and training forward and backward (spacy_elmo/bilm/_lstm_cell.c).", -1, methods};

PyMODINIT_FUNC PyInit__lstm_cell(void) { return PyModule_Create(&module); }
