"""Benchmarks: scripts that print figures and ratios against peers run in the same script
(``python -m validation.benchmarks.NAME``); no timed assertions anywhere."""
