"""cfgtool's benchmarks: scripts that print their figures (benchmarks/README.md). Run them from the repository
root as modules, `python -m benchmarks.NAME`, so that they import their shared helpers (`benchmarks.machine`,
`benchmarks.gen_store`) and the tests' generators (`tests.hostile.gen`, `tests.hocon.hocon_gen`) by name."""
