"""Constraint generation for the exact solvers: cutting planes and aggregated active sets,
one loop each for LMNN and multi-metric LMNN, and their starting metrics."""
