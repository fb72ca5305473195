# SPDX-License-Identifier: Apache-2.0
"""demo_check.py START FILE.npy - the check scripts/main.sh prints after its
encode: a few rows of the [N, D] encoding clpe wrote (positions START ..
START+N-1, paper convention, interleaved) against 200-bit mpmath, next to
the usual float32 formula at the same positions. Exit status 1 if clpe's
error exceeds its float32 bound, 6e-8."""
import sys

import mpmath
import numpy as np

mpmath.mp.prec = 200
start, path = int(sys.argv[1]), sys.argv[2]
pe = np.load(path, mmap_mode="r")
n, d = pe.shape
rows = sorted({0, 1, n // 2, n - 1})
clpe_error = naive_error = 0.0
for row in rows:
    p = start + row
    for i in range(d // 2):
        angle = p * mpmath.power(10000, mpmath.mpf(-2 * i) / d)
        exact = (float(mpmath.sin(angle)), float(mpmath.cos(angle)))
        clpe_error = max(clpe_error, abs(float(pe[row, 2 * i]) - exact[0]),
                         abs(float(pe[row, 2 * i + 1]) - exact[1]))
        # The formula frameworks write: float32 frequency, float32 position.
        w = np.exp(np.float32(2 * i) * np.float32(-np.log(10000.0) / d), dtype=np.float32)
        naive = np.float32(p) * w
        naive_error = max(naive_error, abs(float(np.sin(naive)) - exact[0]),
                          abs(float(np.cos(naive)) - exact[1]))
print(f"rows {', '.join(map(str, rows))} of {n} x {d} from position {start}, against 200-bit "
      f"mpmath: clpe max |error| {clpe_error:.1e}; the usual float32 formula {naive_error:.1e}")
sys.exit(0 if clpe_error <= 6e-8 else 1)
