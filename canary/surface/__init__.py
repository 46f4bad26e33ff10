"""The dependency surface of a project that patches upstream internals: every upstream
symbol, patch target and source anchor it uses (:mod:`~canary.surface.extract`), resolved
against every release (:mod:`~canary.surface.resolve`) and reported
(:mod:`~canary.surface.report`). :mod:`~canary.surface.model` is the data that flows
between them, and the JSON contract other tools read."""
