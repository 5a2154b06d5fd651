"""Standalone measurements, each its own command (``python -m benchmarks.studies.<name>``) and results file."""
