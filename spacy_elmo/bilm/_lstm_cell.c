/* The LSTM cell update of one inference step in a single pass (AVX2 + FMA).
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
 * without it (no compiler, not x86-64, no AVX2) `cell_kernel.usable()` is
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
 * exponent bits; y is clamped to [-88, 88], where sigmoid is 0 or 1 in float32. */
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
__attribute__((target("avx2,fma"))) static inline __m256 sigmoid8(__m256 x) {
    __m256 y = _mm256_sub_ps(_mm256_setzero_ps(), x);
    y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-EXP_LIMIT)), _mm256_set1_ps(EXP_LIMIT));
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
        cell = _mm256_min_ps(_mm256_max_ps(cell, lo), hi);
        _mm256_storeu_ps(c + k, cell);
        _mm256_storeu_ps(m + k, _mm256_mul_ps(_mm256_sub_ps(sigmoid8(cell), half), so));
    }
    for (; k < H; k++) {
        float si = sigmoid1(load_gate1(g, a, k)), sf = sigmoid1(load_gate1(g, a, H + k));
        float so = sigmoid1(load_gate1(g, a, 2 * H + k)), sj = sigmoid1(load_gate1(g, a, 3 * H + k));
        float cell = fmaf(sf, c[k], fmaf(4.0f * si, sj, -2.0f * si));
        cell = fminf(fmaxf(cell, -clip2), clip2);
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
    if (!kernel_available()) {
        PyErr_SetString(PyExc_RuntimeError, "the LSTM cell kernel needs an x86-64 CPU with AVX2 and FMA");
        return NULL;
    }
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
    /* a parallel region costs more than a small step's arithmetic */
    int team = (rows * hidden >= 16384 && threads > 1) ? threads : 1;
#pragma omp parallel for schedule(static) num_threads(team)
#endif
    for (Py_ssize_t b = 0; b < rows; b++) {
        const float *a = add ? add + rows_index[b] * 4 * hidden : NULL;
        cell_row(g + b * 4 * hidden, a, c + b * hidden, out + b * hidden, hidden, clip2);
    }
    Py_END_ALLOW_THREADS
#endif
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"available", available, METH_NOARGS, "Whether this CPU can run the kernel (x86-64 with AVX2 and FMA)."},
    {"update", update, METH_VARARGS, "update(gates, c2, m, rows, hidden, clip2, threads, addend, addend_rows, index): one LSTM cell step, in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lstm_cell", "The fused LSTM cell update of one inference step (spacy_elmo/bilm/_lstm_cell.c).", -1, methods};

PyMODINIT_FUNC PyInit__lstm_cell(void) { return PyModule_Create(&module); }
