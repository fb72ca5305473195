// SPDX-License-Identifier: Apache-2.0
// rope_check: ggml's ROPE op on the OpenCL backend against clpe and an exact
// rotation, at positions 0, 4095, 2^24 + 1 and 2^31 - 1, in ggml's normal,
// neox and multi (M-RoPE) modes.
//
//   rope_check          the clpe path: every output bit equals clpe_host_rope
//                       of the same configuration (f32), and every element is
//                       within 2^-22 * m * hypot(a, b) of the exact rotation;
//                       exit status 1 otherwise
//   rope_check --stock  run with GGML_OPENCL_CLPE=0: the float32 kernel's
//                       error, reported (no bound)
//
// The CPU backend's error is reported beside each case. The exact rotation
// turns pair i by p * w_i in 256-bit MPFR, w_i the frequency of ggml's
// formula (base^(-2i/n_dims), frequency factors, freq_scale, YaRN's ramp)
// in double precision: the rotation the op's parameters describe. In the
// multi mode each pair turns by the position of its section's stream
// (temporal, height, width), and clpe's counterpart is a multimodal rotary
// object (clpe_rope_create_mrope_host) given the same streams.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <clpe.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct rope_case {
    const char * name;
    int mode;             // GGML_ROPE_TYPE_NORMAL, _NEOX or _MROPE
    int n_dims;
    float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    int n_ctx_orig;
    bool llama3;          // rope_freqs factors as Llama 3.1 carries them
    int sections[4];      // multi: pairs per stream (t, h, w, e)
    bool mixed;           // multi: h and w differ from t (an image token's
                          // streams); else t = h = w, as llama.cpp feeds text
};

const int HEAD_DIM = 128;
const int N_HEAD = 4;
const int32_t POSITIONS[] = {0, 4095, (1 << 24) + 1, INT32_MAX};
const int N_TOK = 4;
const int N_STREAMS = 4;  // ggml's multi mode reads 4 positions per token

// the positions of stream j of token t in the multi mode: t has POSITIONS[t];
// h and w have it too, or (mixed) the next tokens' ones; the 4th stream 0
int32_t stream_position(const rope_case & c, int j, int t) {
    if (j == 3) {
        return 0;
    }
    return POSITIONS[c.mixed ? (t + j) % N_TOK : t];
}

// the position pair i of token t turns by
int32_t pair_position(const rope_case & c, int i, int t) {
    if (c.mode != GGML_ROPE_TYPE_MROPE) {
        return POSITIONS[t];
    }
    const int total = c.sections[0] + c.sections[1] + c.sections[2] + c.sections[3];
    int sector = i % total, j = 0;
    while (j < 3 && sector >= c.sections[j]) {
        sector -= c.sections[j];
        ++j;
    }
    return stream_position(c, j, t);
}

// the op's position tensor: N_TOK positions, or N_STREAMS streams of them
std::vector<int32_t> op_positions(const rope_case & c) {
    if (c.mode != GGML_ROPE_TYPE_MROPE) {
        return std::vector<int32_t>(POSITIONS, POSITIONS + N_TOK);
    }
    std::vector<int32_t> p;
    for (int j = 0; j < N_STREAMS; ++j) {
        for (int t = 0; t < N_TOK; ++t) {
            p.push_back(stream_position(c, j, t));
        }
    }
    return p;
}

std::vector<float> llama3_factors(double base, int dim) {
    std::vector<float> out;
    const double factor = 8, low = 1, high = 4, old_ctx = 8192;
    for (int i = 0; i < dim; i += 2) {
        const double freq = 1.0 / pow(base, (double) i / dim);
        const double wavelen = 2 * M_PI / freq;
        if (wavelen < old_ctx / high) {
            out.push_back(1.0f);
        } else if (wavelen > old_ctx / low) {
            out.push_back((float) factor);
        } else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            out.push_back((float) (1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return out;
}

// ggml's frequencies and amplitude in double precision (the clpe path's mapping)
void frequencies(const rope_case & c, const std::vector<float> & ff, std::vector<double> & w, double & m) {
    float corr[2];
    ggml_rope_yarn_corr_dims(c.n_dims, c.n_ctx_orig, c.freq_base, c.beta_fast, c.beta_slow, corr);
    w.assign(c.n_dims / 2, 0.0);
    for (int i = 0; i < c.n_dims / 2; ++i) {
        double f = pow((double) c.freq_base, -2.0 * i / c.n_dims);
        if (!ff.empty()) {
            f /= (double) ff[i];
        }
        double mix = 0.0;
        if (c.ext_factor != 0.0f) {
            const double y = (i - (double) corr[0]) / std::max(0.001, (double) corr[1] - corr[0]);
            mix = (1.0 - std::min(1.0, std::max(0.0, y))) * c.ext_factor;
        }
        w[i] = f * ((double) c.freq_scale * (1.0 - mix) + mix);
    }
    m = c.attn_factor;
    if (c.ext_factor != 0.0f) {
        m *= 1.0 + 0.1 * log(1.0 / (double) c.freq_scale);
    }
}

// ROPE of x on a backend; returns the output
std::vector<float> run_rope(ggml_backend_t backend, const rope_case & c, const std::vector<float> & x,
                            const std::vector<float> & ff) {
    ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * tx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, HEAD_DIM, N_HEAD, N_TOK);
    const std::vector<int32_t> pos = op_positions(c);
    ggml_tensor * tp = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (int64_t) pos.size());
    ggml_tensor * tf = ff.empty() ? nullptr : ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t) ff.size());
    ggml_tensor * out;
    if (c.mode == GGML_ROPE_TYPE_MROPE) {
        int sections[4] = {c.sections[0], c.sections[1], c.sections[2], c.sections[3]};
        out = ggml_rope_multi(ctx, tx, tp, tf, c.n_dims, sections, c.mode, c.n_ctx_orig, c.freq_base, c.freq_scale,
                              c.ext_factor, c.attn_factor, c.beta_fast, c.beta_slow);
    } else {
        out = ggml_rope_ext(ctx, tx, tp, tf, c.n_dims, c.mode, c.n_ctx_orig, c.freq_base, c.freq_scale,
                            c.ext_factor, c.attn_factor, c.beta_fast, c.beta_slow);
    }
    ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    ggml_backend_tensor_set(tx, x.data(), 0, x.size() * sizeof(float));
    ggml_backend_tensor_set(tp, pos.data(), 0, pos.size() * sizeof(int32_t));
    if (tf) {
        ggml_backend_tensor_set(tf, ff.data(), 0, ff.size() * sizeof(float));
    }
    if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "rope_check: graph compute failed on %s\n", ggml_backend_name(backend));
        exit(2);
    }
    std::vector<float> y(x.size());
    ggml_backend_tensor_get(out, y.data(), 0, y.size() * sizeof(float));
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return y;
}

// worst |y - exact| / (m * hypot(a, b)) over the rotated pairs of token t
double worst_error(const rope_case & c, const std::vector<double> & w, double m, const std::vector<float> & x,
                   const std::vector<float> & y, int t) {
    mpfr_t th, s, co, tmp;
    mpfr_inits2(256, th, s, co, tmp, (mpfr_ptr) 0);
    double worst = 0.0;
    for (int h = 0; h < N_HEAD; ++h) {
        const size_t row = ((size_t) t * N_HEAD + h) * HEAD_DIM;
        for (int i = 0; i < c.n_dims / 2; ++i) {
            const int ia = c.mode == GGML_ROPE_TYPE_NORMAL ? 2 * i : i;
            const int ib = c.mode == GGML_ROPE_TYPE_NORMAL ? 2 * i + 1 : i + c.n_dims / 2;
            const double a = x[row + ia], b = x[row + ib];
            mpfr_set_d(th, w[i], MPFR_RNDN);
            mpfr_mul_si(th, th, pair_position(c, i, t), MPFR_RNDN);
            mpfr_sin_cos(s, co, th, MPFR_RNDN);
            const double cs = mpfr_get_d(co, MPFR_RNDN), sn = mpfr_get_d(s, MPFR_RNDN);
            const double ea = m * (a * cs - b * sn), eb = m * (a * sn + b * cs);
            const double scale = m * hypot(a, b);
            if (scale == 0.0) {
                continue;
            }
            worst = std::max(worst, std::max(fabs(y[row + ia] - ea), fabs(y[row + ib] - eb)) / scale);
        }
        for (int e = c.n_dims; e < HEAD_DIM; ++e) {  // elements past n_dims: copied
            if (y[row + e] != x[row + e]) {
                worst = INFINITY;
            }
        }
    }
    mpfr_clears(th, s, co, tmp, (mpfr_ptr) 0);
    return worst;
}

// ggml's YaRN (the clpe path follows it) against Hugging Face's YaRN (clpe's
// CLPE_ROPE_YARN, the model's intent): frequencies, amplitude, and how far
// apart the two exact rotations of a unit pair are at each position.
void yarn_intent(const rope_case & c) {
    std::vector<double> w;
    double m;
    frequencies(c, {}, w, m);
    clpe_rope_config cfg = clpe_rope_config_default(c.n_dims);
    cfg.base = c.freq_base;
    cfg.pairing = CLPE_ROPE_HALF_SPLIT;
    cfg.scaling = CLPE_ROPE_YARN;
    cfg.factor = 1.0 / c.freq_scale;
    cfg.original_max_position = c.n_ctx_orig;
    cfg.beta_fast = c.beta_fast;
    cfg.beta_slow = c.beta_slow;
    clpe_status st;
    clpe_rope * hf = clpe_rope_create_host(&cfg, &st);
    if (!hf) {
        printf("yarn: clpe_rope_create_host: %s\n", clpe_status_string(st));
        return;
    }
    std::vector<double> w_hf(c.n_dims / 2);
    double m_hf;
    clpe_rope_get_frequencies(hf, w_hf.data(), w_hf.size(), &m_hf);
    clpe_rope_release(hf);
    double rel = 0.0;
    for (size_t i = 0; i < w.size(); ++i) {
        rel = std::max(rel, fabs(w[i] - w_hf[i]) / w_hf[i]);
    }
    printf("yarn (factor %g, n_ctx_orig %d): ggml's frequencies against Hugging Face's: max |dw|/w = %.3g; "
           "amplitude %.9g (ggml) and %.9g (Hugging Face)\n", 1.0 / c.freq_scale, c.n_ctx_orig, rel, m, m_hf);
    mpfr_t a, b, d;
    mpfr_inits2(256, a, b, d, (mpfr_ptr) 0);
    for (int32_t p : POSITIONS) {
        double worst = 0.0;
        for (size_t i = 0; i < w.size(); ++i) {
            mpfr_set_d(a, w[i], MPFR_RNDN);
            mpfr_mul_si(a, a, p, MPFR_RNDN);
            mpfr_set_d(b, w_hf[i], MPFR_RNDN);
            mpfr_mul_si(b, b, p, MPFR_RNDN);
            mpfr_sub(d, a, b, MPFR_RNDN);  // |e^{ia} - e^{ib}| = 2 |sin((a - b) / 2)|
            mpfr_div_ui(d, d, 2, MPFR_RNDN);
            mpfr_sin(d, d, MPFR_RNDN);
            worst = std::max(worst, 2.0 * fabs(mpfr_get_d(d, MPFR_RNDN)));
        }
        printf("yarn: position %-10d the two exact rotations of a unit pair differ by up to %.3g\n", p, worst);
    }
    mpfr_clears(a, b, d, (mpfr_ptr) 0);
}

}  // namespace

int main(int argc, char ** argv) {
    const bool stock = argc > 1 && strcmp(argv[1], "--stock") == 0;
    ggml_backend_dev_t dev = nullptr;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (strcmp(ggml_backend_reg_name(ggml_backend_dev_backend_reg(d)), "OpenCL") == 0) {
            dev = d;
            break;
        }
    }
    if (!dev) {
        fprintf(stderr, "rope_check: no OpenCL device in ggml (is the device accepted?)\n");
        return 2;
    }
    ggml_backend_t cl = ggml_backend_dev_init(dev, nullptr);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    printf("rope_check: %s (%s) against %s; OpenCL ROPE: %s\n", ggml_backend_dev_name(dev),
           ggml_backend_dev_description(dev), stock ? "the exact rotation" : "clpe_host_rope and the exact rotation",
           stock ? "the float32 kernel (GGML_OPENCL_CLPE=0)" : "clpe");

    const rope_case cases[] = {
        {"llama (normal)",       GGML_ROPE_TYPE_NORMAL, 128, 10000.0f,   1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    false},
        {"qwen2 (neox)",         GGML_ROPE_TYPE_NEOX,   128, 1000000.0f, 1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    false},
        {"llama3 (rope_freqs)",  GGML_ROPE_TYPE_NORMAL, 128, 500000.0f,  1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    true},
        {"yarn (neox, x4)",      GGML_ROPE_TYPE_NEOX,   128, 10000.0f,   0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 4096, false},
        {"partial (neox, 64)",   GGML_ROPE_TYPE_NEOX,   64,  10000.0f,   1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    false},
        // Qwen2-VL's language model: sections [16, 24, 24, 0] of 64 pairs
        {"qwen2vl (multi)",      GGML_ROPE_TYPE_MROPE,  128, 1000000.0f, 1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    false,
         {16, 24, 24, 0}, false},
        {"qwen2vl (multi, thw)", GGML_ROPE_TYPE_MROPE,  128, 1000000.0f, 1.0f,  0.0f, 1.0f, 32.0f, 1.0f, 0,    false,
         {16, 24, 24, 0}, true},
    };

    std::mt19937 gen(49);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    bool ok = true;
    printf("%-22s %-12s %12s %12s %12s  %s\n", "case", "position", "OpenCL/bound", "OpenCL err", "CPU err",
           stock ? "" : "bits vs clpe_host_rope");
    for (const rope_case & c : cases) {
        std::vector<float> x((size_t) HEAD_DIM * N_HEAD * N_TOK);
        for (float & v : x) {
            v = uni(gen);
        }
        const std::vector<float> ff = c.llama3 ? llama3_factors(c.freq_base, c.n_dims) : std::vector<float>();
        std::vector<double> w;
        double m;
        frequencies(c, ff, w, m);

        const std::vector<float> y_cl = run_rope(cl, c, x, ff);
        const std::vector<float> y_cpu = run_rope(cpu, c, x, ff);

        // clpe's host emulation of the same configuration, in place on a copy
        std::vector<float> y_host = x;
        size_t same = 0, compared = 0;
        if (!stock) {
            clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
            cfg.rotary_dim = c.n_dims;
            cfg.pairing = c.mode == GGML_ROPE_TYPE_NORMAL ? CLPE_ROPE_INTERLEAVED : CLPE_ROPE_HALF_SPLIT;
            cfg.scaling = CLPE_ROPE_FREQUENCIES;
            cfg.frequencies = w.data();
            cfg.attention_factor = m;
            clpe_status st;
            clpe_rope * rope;
            std::vector<int64_t> pos;
            clpe_position_source source;
            if (c.mode == GGML_ROPE_TYPE_MROPE) {
                // three streams (t, h, w) of one frequency ladder, as
                // Qwen2-VL's language model; positions [streams, batch 1, seq]
                clpe_mrope_config mc = {};
                mc.rope = cfg;
                mc.streams = 3;
                for (int j = 0; j < 3; ++j) {
                    mc.section[j] = (uint32_t) c.sections[j];
                }
                mc.ladder = CLPE_MROPE_ONE_LADDER;
                rope = clpe_rope_create_mrope_host(&mc, &st);
                for (int j = 0; j < 3; ++j) {
                    for (int t = 0; t < N_TOK; ++t) {
                        pos.push_back(stream_position(c, j, t));
                    }
                }
                source = CLPE_POSITIONS_STREAMS;
            } else {
                rope = clpe_rope_create_host(&cfg, &st);
                pos.assign(POSITIONS, POSITIONS + N_TOK);
                source = CLPE_POSITIONS_IDS;
            }
            if (!rope) {
                fprintf(stderr, "rope_check: %s: creating clpe's rotary object: %s\n", c.name,
                        clpe_status_string(st));
                return 2;
            }
            clpe_host_rope_tensor q = {y_host.data(), (size_t) N_HEAD, 0, 0, 0, {0, 0}};
            st = clpe_host_rope(rope, 1, N_TOK, &q, nullptr, source, 0, pos.data(), 0);
            if (st != CLPE_SUCCESS) {
                fprintf(stderr, "rope_check: clpe_host_rope: %s\n", clpe_status_string(st));
                return 2;
            }
            clpe_rope_release(rope);
        }
        for (int t = 0; t < N_TOK; ++t) {
            const double e_cl = worst_error(c, w, m, x, y_cl, t);
            const double e_cpu = worst_error(c, w, m, x, y_cpu, t);
            const double ratio = e_cl / ldexp(1.0, -22);
            std::string bits;
            if (!stock) {
                size_t s = 0, n = (size_t) HEAD_DIM * N_HEAD;
                for (size_t k = (size_t) t * n; k < (size_t) (t + 1) * n; ++k) {
                    s += memcmp(&y_cl[k], &y_host[k], sizeof(float)) == 0;
                }
                same += s;
                compared += n;
                bits = std::to_string(s) + "/" + std::to_string(n) + " equal";
                if (s != n || ratio > 1.0) {
                    ok = false;
                    bits += "  FAIL";
                }
            }
            printf("%-22s %-12d %12.3g %12.3g %12.3g  %s\n", c.name, POSITIONS[t], ratio, e_cl, e_cpu, bits.c_str());
        }
        (void) same;
        (void) compared;
    }
    printf("errors: worst |out - exact| / (m * hypot(a, b)) over the pairs of a token; bound 2^-22 = %.3g\n",
           ldexp(1.0, -22));
    printf("multi: sections [16, 24, 24, 0] of 64 pairs turn by the t, h, w positions; \"position\" is t; "
           "h = w = t, or (thw) h and w are the next two tokens' positions\n");
    if (!stock) {
        yarn_intent(cases[3]);
    }
    ggml_backend_free(cpu);
    ggml_backend_free(cl);
    if (!stock) {
        printf(ok ? "rope_check: OK\n" : "rope_check: FAILED\n");
    }
    return ok ? 0 : 1;
}
