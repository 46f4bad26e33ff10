"""The catalog: one test module per upstream package (``pytest canary``)."""
