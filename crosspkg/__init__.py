"""``crosspkg compare``: one anchor configuration through lm-eval, Inspect AI and HELM (their
SafetyRepro tasks, and their own native implementations where they run offline), each harness's
output read back per item (``readers``), compared item by item (``agreement``, ``diff``) and
reported with every difference attributed (``compare``, ``report``). Holds no benchmark knowledge
(see adapters/)."""
