"""
Reading a certificate
=====================

What a :class:`lmnn_sdp.Certificate` holds, how :meth:`~lmnn_sdp.Certificate.verify`
re-derives it, and how it is saved and loaded: the numbers go to ``PATH.json``, the data and
the evidence (metric, triplets, multipliers) to ``PATH.npz``.
"""

import tempfile
from pathlib import Path

from sklearn.datasets import load_iris

from fast_solver import LMNN
from lmnn_sdp import LMNNProblem, certificates

X, y = load_iris(return_X_y=True)
problem = LMNNProblem(X, y, k=3, mu=0.5)
cert = LMNN(k=3, mu=0.5).fit(X, y).result_.certificate

# %%
# The claims, with bounds on their floating-point rounding.
print(cert)
print(f"upper {cert.upper!r} +- {cert.upper_error:.2e}")
print(f"lower {cert.lower!r} +- {cert.lower_error:.2e}")
print(f"relative_gap {cert.relative_gap:.3e}, tol {cert.tol:g}, certified {cert.certified}")

# %%
# The evidence: the metric, and the triplets ``(i, j, l)`` with a positive multiplier.
print("metric shape", cert.metric.shape, "triplets", cert.triplets.shape, "multipliers", cert.multipliers.shape)
print("first triplets", cert.triplets[:3].tolist(), "multipliers", cert.multipliers[:3].round(6).tolist())
print("multipliers in [0, mu]:", bool((cert.multipliers >= 0).all() and (cert.multipliers <= problem.mu).all()))

# %%
# ``verify()`` re-derives every number from the evidence alone and refuses any it does not
# reproduce; it returns the re-derived certificate.
checked = cert.verify()
print(f"re-derived: upper {checked.upper!r}, lower {checked.lower!r}, certified {checked.certified}")

# %%
# Save and load. A loaded certificate states the numbers as stored until it is verified.
with tempfile.TemporaryDirectory() as folder:
    written = cert.save(Path(folder) / "iris-lmnn")
    print("written:", sorted(Path(p).name for p in written))
    loaded = certificates.load(Path(folder) / "iris-lmnn")
    print(f"loaded:      upper {loaded.upper!r}, lower {loaded.lower!r}")
    again = loaded.verify()
    print(f"re-verified: upper {again.upper!r}, lower {again.lower!r}, certified {again.certified}")
