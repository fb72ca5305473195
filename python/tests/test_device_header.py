# SPDX-License-Identifier: Apache-2.0
"""clpe_device.h from Python: the header's path holds the library's own
text, and a user's kernel built with it (through -I and through the text)
computes, from clpe.device_words(rope), the bits of rope.cache."""
import numpy as np
import pytest

import clpe
from conftest import bits

KERNEL = """
kernel void cos_sin(global const ulong *words, long start, global float *cos_out,
                    global float *sin_out)
{
    uint s = get_global_id(0), n = clpe_words_pairs(words);
    for (uint i = 0; i < n; ++i) {
        float c, v;
        clpe_rope_cos_sin(words, (long)((ulong)start + s), i, &c, &v);
        cos_out[s * n + i] = c;
        sin_out[s * n + i] = v;
    }
}
"""


def test_header_path_holds_the_library_text():
    path = clpe.device_header_path()
    text = open(path).read()
    assert text == clpe.device_source()
    assert "clpe_rope_cos_sin" in text and "pe_sincos32" in text
    assert clpe.device_include_dir() + "/clpe_device.h" == path


@pytest.mark.parametrize("through", ["include", "source"])
def test_user_kernel_equals_rope_cache(cl, context, queue, through):
    from pyopencl import array as cla
    rope = clpe.Rope(context, head_dim=64, base=1000000.0, scaling="yarn", factor=4.0,
                     original_max_position=32768)
    words, options = clpe.device_words(rope)
    assert options == "-DCLPE_DEVICE_LAYOUT=1"
    header = np.empty(4, np.uint64)
    cl.enqueue_copy(queue, header, words)
    amplitude = np.float32(rope.frequencies()[1])
    assert list(header[:3]) == [1, 32, 8]  # layout 1, 32 pairs, ROTARY
    assert header[3] == amplitude.view(np.uint32)
    assert amplitude > 1.13  # 0.1 ln 4 + 1: the test sees the amplitude at work

    if through == "include":
        source = '#include "clpe_device.h"\n' + KERNEL
        options += " -I " + clpe.device_include_dir()
    else:
        source = clpe.device_source() + KERNEL
    program = cl.Program(context, source).build(options)
    start, n = 2 ** 40 - 5, 9
    cos = cla.empty(queue, (n, 32), np.float32)
    sin = cla.empty(queue, (n, 32), np.float32)
    program.cos_sin(queue, (n,), None, words, np.int64(start), cos.data, sin.data)
    ref_cos = cla.empty(queue, (n, 64), np.float32)
    ref_sin = cla.empty(queue, (n, 64), np.float32)
    rope.cache(queue, ref_cos, ref_sin, start=start).wait()
    # half-split: the cache repeats the 32 values in both halves
    assert (bits(cos.get()) == bits(ref_cos.get()[:, :32])).all()
    assert (bits(sin.get()) == bits(ref_sin.get()[:, :32])).all()
    assert np.abs(sin.get()).max() > 1.0  # amplitude times a sine near 1
    words.release()


def test_device_words_takes_rope_or_encoder(context):
    with pytest.raises(TypeError, match="clpe.Rope or clpe.Encoder"):
        clpe.device_words(object())
    enc = clpe.Encoder(context, d=16)
    words, options = clpe.device_words(enc)
    assert words.size == (4 + 2 * 8) * 8 and options
    enc.close()
    with pytest.raises(ValueError, match="closed"):
        clpe.device_words(enc)


FP8_KERNEL = """
kernel void fp8_read(float scale, global float *e4m3, global float *e5m2)
{
    uint b = get_global_id(0);
    e4m3[b] = clpe_fp8_e4m3_to_float((uchar)b, scale);
    e5m2[b] = clpe_fp8_e5m2_to_float((uchar)b, scale);
}
"""


def test_user_kernel_reads_fp8_caches(cl, context, queue):
    """clpe_fp8_*_to_float on every byte equals ml_dtypes' value of it times
    the scale in float32 (NaN as NaN)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from pyopencl import array as cla
    program = cl.Program(context, clpe.device_source() + FP8_KERNEL).build(
        "-DCLPE_DEVICE_LAYOUT=1")
    codes = np.arange(256, dtype=np.uint8)
    for scale in (1.0, 0.0123, 37.5):
        e4m3 = cla.empty(queue, 256, np.float32)
        e5m2 = cla.empty(queue, 256, np.float32)
        program.fp8_read(queue, (256,), None, np.float32(scale), e4m3.data, e5m2.data)
        for got, fmt in ((e4m3.get(), ml_dtypes.float8_e4m3fn),
                         (e5m2.get(), ml_dtypes.float8_e5m2)):
            want = codes.view(fmt).astype(np.float32) * np.float32(scale)
            nan = np.isnan(want)
            assert (np.isnan(got) == nan).all()
            assert (bits(got[~nan]) == bits(want[~nan])).all()
