"""What the entries and studies share: timing, memory and the result record (``common``), hand-written searches and
decoder-call accounting, the timed translation model, the language models and the tutorial baselines."""
