"""Cross-harness comparison: each harness's output read back per item (`readers`) and compared
item by item (`agreement`). Holds no benchmark knowledge (see adapters/)."""
