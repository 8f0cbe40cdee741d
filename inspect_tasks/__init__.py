"""Inspect AI binding: ``inspect eval safetyrepro/<benchmark>`` and the ``safetyrepro/<model>``
provider, registered through the ``inspect_ai`` entry point (``_registry``). Holds no benchmark
knowledge: everything comes from ``safetyrepro.adapters``."""
