"""The numpy core, the one part of ``lmnn_sdp`` that ``fast_solver`` builds on: the problem,
its objective and exact triplet search (``problem``), the reduced space, the clusters'
spaces and their null spaces (``clusters``), the PSD cone and line searches. Nothing here imports cvxpy."""
