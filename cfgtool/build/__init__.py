"""Resolving nodes: the builder (parse, merge, resolve each node of a graph), its content-addressed caches, the
structure cache that keeps import graphs between compiles, and the budget that bounds what a compile may cost."""
