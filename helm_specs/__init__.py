"""HELM binding: ``helm-run --run-entries safetyrepro_<benchmark>:...`` through the ``helm`` entry
point (``run_specs``): run specs built from the core's configuration, a scenario of the core's
items, the annotator where the cell's scorer reads HELM's answers, the core's metrics, and the
prod_env deployments for local models. Holds no benchmark knowledge: everything comes from
``safetyrepro.adapters`` (see ``helm_specs/README.md``)."""
