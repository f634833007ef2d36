"""``validation.benchmarks.high_d_profile``: its probes around a small solve (every kernel
counted, the solver left as it was) and the cost model's arithmetic on rows written here."""

from __future__ import annotations

import pytest
from sklearn.datasets import make_classification

from fast_solver.lmnn import smoothed, solver
from lmnn_sdp.core.machine import available_cores
from lmnn_sdp.core.problem import LMNNProblem
from validation.benchmarks import high_d_profile as profile


def test_the_probes_count_every_kernel_of_a_solve_and_leave_the_solver_as_it_was():
    X, y = make_classification(150, 12, n_informative=8, n_redundant=0, n_classes=3, random_state=0)
    originals = (smoothed.SmoothedObjective.hessian_product, solver.prove_projected)
    probe = profile._Probe()
    with probe.installed():
        result = solver.solve(LMNNProblem(X, y, k=3, mu=0.5), tol=1e-4)
    assert (smoothed.SmoothedObjective.hessian_product, solver.prove_projected) == originals
    assert result.converged
    summary = probe.summary()
    calls, flops = summary["calls"], summary["flops"]
    assert calls["hessp"] == result.n_hessian_products > 0
    assert calls["search"] == result.n_searches and calls["certificate"] >= 1
    assert calls["precondition"] >= calls["preconditioner"] > 0  # one application a CG iteration
    for kernel in ("evaluate", "hessp", "preconditioner", "precondition", "search", "certificate"):
        assert flops[kernel][0] > 0, kernel
    # the float32 distance tiles of the searches (blockwise: rank 12 > 8) and of the
    # certificate's evaluations of eq. 14, each credited to its own kernel
    assert flops["search"][1] > 0 and flops["certificate"][1] > 0
    assert flops["hessp"][1] > 0  # triplets in transition: the products in float32


def test_the_cost_rows_put_each_kernel_against_the_peak_of_its_precision():
    peaks = {("float64", 1): 10.0, ("float32", 1): 20.0, ("float64", 2): 20.0, ("float32", 2): 40.0}
    rows = [dict(d=10, calls={"hessp": 4, "search": 2}, seconds={"hessp": 2.0, "search": 1.0}, shapes=[],
                 flops={"hessp": (4e9, 8e9), "search": (0.0, 2e9)}),
            dict(d=20, calls={"hessp": 10, "search": 3}, seconds={"hessp": 20.0, "search": 6.0}, shapes=[],
                 flops={"hessp": (40e9, 80e9), "search": (0.0, 12e9)})]
    out = profile.cost_rows(rows, peaks)
    assert [(row["kernel"].split()[:2], row["threads"], row["gflops"]) for row in out[:4]] == [
        (["GEMM", "float32"], 1, 20.0), (["GEMM", "float32"], 2, 40.0),
        (["GEMM", "float64"], 1, 10.0), (["GEMM", "float64"], 2, 20.0)]
    kernels = {(row["d"], row["kernel"]): row for row in out[4:]}
    assert kernels[10, "hessp"]["floor_s"] == pytest.approx(4 / 20 + 8 / 40)  # at the 2-core peaks
    assert kernels[10, "hessp"]["gflops"] == pytest.approx(12 / 2.0)
    assert kernels[10, "hessp"]["of_peak"] == pytest.approx(0.4 / 2.0)
    assert kernels[20, "search"]["floor_s"] == pytest.approx(12 / 40)
    # the floor of d = 20: the calls of d = 10, each at the peak with d = 20's operations a call
    assert kernels[20, "floor"]["seconds"] == pytest.approx(4 * (40 / 20 + 80 / 40) / 10 + 2 * (12 / 40) / 3)


def test_the_gemm_peaks_are_measured_on_one_thread_and_on_every_core():
    peaks = profile.gemm_peaks((64, 32, 48), repeats=2)
    assert set(peaks) == {(dtype, t) for dtype in ("float64", "float32") for t in {1, available_cores()}}
    assert all(g > 0 for g in peaks.values())
