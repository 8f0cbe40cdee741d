"""Built-in benchmarks. Each module defines one :class:`Benchmark` subclass."""
