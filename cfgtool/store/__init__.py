"""The store layer: keys, sources, settings, includes, nodes and the import graph (DESIGN 4, 5.1, 6)."""
