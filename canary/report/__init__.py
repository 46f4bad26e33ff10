"""After the run: the compatibility matrix of a results file (``--canary-json``), folded
into version ranges, the upstream diff behind each drift, and its renderings
(``python -m canary report``). Nothing here imports the pytest plugin."""
