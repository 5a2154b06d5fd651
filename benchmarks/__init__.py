"""Speed and memory benchmarks: our models side by side with what users run today, same weights, same data.

Run them with ``python -m benchmarks.run`` (see ``benchmarks/run.py``); each entry lives in its own module and
returns rows for a table, the ratios that matter and the targets they are held to.
"""
