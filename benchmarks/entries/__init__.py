"""The entries of ``python -m benchmarks.run``, one module each (``benchmarks.run.ENTRIES`` maps an entry's name to
its module): each has ``Sizes``, ``SPLIT`` and ``run(settings)``."""
