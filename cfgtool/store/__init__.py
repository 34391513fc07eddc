"""The store layer: keys, sources, settings, includes, nodes and the import graph (docs/store-format.md,
docs/resolution.md#linearization, docs/queries.md#the-queries)."""
