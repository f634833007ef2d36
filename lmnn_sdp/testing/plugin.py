"""A pytest plugin: the ``lmnn_case`` fixture, one test per case of the certified corpus.

Registered as the ``pytest11`` entry point ``lmnn_sdp`` of the ``lmnn-sdp`` distribution, so
installing ``lmnn-sdp`` is enough; without the entry point, load it with
``pytest -p lmnn_sdp.testing.plugin``. A test that takes ``lmnn_case`` runs once per LMNN
case of the corpus (``lmnn_sdp.testing.corpus_cases``), named after it::

    def test_my_solver(lmnn_case):
        metric = my_solver(lmnn_case.X, lmnn_case.y, lmnn_case.k, lmnn_case.mu)
        assert_lmnn_optimal(lmnn_case.X, lmnn_case.y, metric, k=lmnn_case.k, mu=lmnn_case.mu)

``mm_lmnn_case`` does the same over the multi-metric LMNN cases, ``mmc_case`` over the MMC
cases, full and diagonal (``lmnn_sdp.testing.MMCCase``).
"""

from __future__ import annotations

from lmnn_sdp.testing.corpus_cases import corpus_cases

FIXTURES = {"lmnn_case": ("lmnn",), "mm_lmnn_case": ("multi-metric-lmnn",), "mmc_case": ("mmc", "mmc-diagonal")}


def pytest_generate_tests(metafunc):
    """Parametrise ``lmnn_case``, ``mm_lmnn_case`` and ``mmc_case`` over the corpus, ids the case names.

    Parameters
    ----------
    metafunc : pytest.Metafunc
        The test function being collected.

    Returns
    -------
    None

    Examples
    --------
    >>> from lmnn_sdp.testing.plugin import FIXTURES
    >>> sorted(FIXTURES)
    ['lmnn_case', 'mm_lmnn_case', 'mmc_case']
    """
    for name, kinds in FIXTURES.items():
        if name in metafunc.fixturenames:
            cases = [case for kind in kinds for case in corpus_cases(kind)]
            metafunc.parametrize(name, cases, ids=[case.id for case in cases])
