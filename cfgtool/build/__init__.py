"""Resolving nodes. The builder parses, merges and resolves each node of a graph, with content-addressed caches. The
structure cache keeps import graphs between compiles. The budget bounds what a compile may cost."""
