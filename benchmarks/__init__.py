"""Benchmarks: run with ``python -m benchmarks.<name>``; they print figures, they never assert."""
