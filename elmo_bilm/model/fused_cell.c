/* The pointwise part of one LSTM step in one pass over memory (elmo_bilm/model/fused_cell.py).

   For each row r and cell k, with gates (n, 4 d) laid out i, j, f, o (bilm-tf's order):
     c'[r, k] = clip(s(f) c[r, k] + s(i) tanh(j), clip)
     m[r, k]  = s(o) tanh(c'[r, k])
   float32 arithmetic throughout, gates float32 or bfloat16, states float32. The inner loop is
   vectorised by the compiler with glibc's vector maths (libmvec): math.h declares its SIMD
   variants of expf and tanhf only under __FAST_MATH__, which is defined for that declaration
   alone; the file is not compiled with -ffast-math (whose start-up code would change the
   process's denormal handling). */
#define __FAST_MATH__ 1
#include <math.h>
#undef __FAST_MATH__
#include <stdint.h>
#include <string.h>

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static inline float from_bf16(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &word, sizeof value);
  return value;
}

#define CELL(LOAD)                                                                  \
  for (long r = 0; r < n; r++) {                                                    \
    const float *c_r = c + r * d;                                                   \
    float *c_out_r = c_out + r * d, *m_r = m + r * d;                               \
    _Pragma("omp simd") for (long k = 0; k < d; k++) {                              \
      float cell = sigmoid(LOAD(2 * d + k)) * c_r[k] + sigmoid(LOAD(k)) * tanhf(LOAD(d + k)); \
      cell = cell > clip ? clip : (cell < -clip ? -clip : cell);                    \
      c_out_r[k] = cell;                                                            \
      m_r[k] = sigmoid(LOAD(3 * d + k)) * tanhf(cell);                              \
    }                                                                               \
  }

void lstm_cell_float32(const float *gates, const float *c, float *c_out, float *m, long n, long d,
                       float clip) {
#define LOAD_FLOAT32(i) gates[r * 4 * d + (i)]
  CELL(LOAD_FLOAT32)
}

void lstm_cell_bfloat16(const uint16_t *gates, const float *c, float *c_out, float *m, long n,
                        long d, float clip) {
#define LOAD_BFLOAT16(i) from_bf16(gates[r * 4 * d + (i)])
  CELL(LOAD_BFLOAT16)
}

/* The other loop built with the cell: each row's hash of a weight's 32-bit words for
   elmo_bilm/model/derived.py's `fingerprint`, sum_j words[r, j] * c[j] modulo 2^64 with each
   word sign-extended, in unsigned (wrapping, exact) arithmetic: the same integers as the int64
   matrix-vector product it replaces, at the speed of reading the words. */
void row_hashes(const int32_t *words, long rows, long width, const int64_t *c, int64_t *out) {
  for (long r = 0; r < rows; r++) {
    const int32_t *w = words + r * width;
    uint64_t sum = 0;
    _Pragma("omp simd reduction(+ : sum)") for (long j = 0; j < width; j++) {
      sum += (uint64_t)(int64_t)w[j] * (uint64_t)c[j];
    }
    memcpy(out + r, &sum, sizeof sum);
  }
}
