"""Leaf helpers that know nothing of configs: atomic files, cache directories, forking, the cache codec, YAML
positions and reading plain values by path. They import nothing from cfgtool but `errors`."""
