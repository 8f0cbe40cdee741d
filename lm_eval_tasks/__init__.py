"""Reserved for a later slice; holds no benchmark knowledge (see adapters/)."""
