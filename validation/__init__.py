"""Cross-checks, certified corpus and experiments: the bridge between the solvers."""
