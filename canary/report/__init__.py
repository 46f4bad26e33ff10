"""The compatibility matrix of a run: recording it (``--canary-json``), folding it into
version ranges, the upstream diff behind each drift, and rendering it
(``python -m canary report``)."""
