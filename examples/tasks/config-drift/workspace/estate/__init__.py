"""Estate tooling: nightly configuration checks against declared baselines."""
