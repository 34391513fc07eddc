"""Leaf helpers that know nothing of configs. They cover atomic files, cache directories, forking and the cache
codec. Also YAML positions and reading plain values by path. They import nothing from cfgtool but `errors`."""
