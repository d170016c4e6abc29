"""Benchmarks of jupyter-scratchpad against the tools people use today (``benchmarks/run.py``)."""
