"""Loading one experiment folder: registry.json plus the exported CSV files."""

import csv
import json
import os


def experiment_dir(path):
    """Accept the experiment folder itself or any file inside it."""
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(path):
    """Returns (registry, assignments, orders, ops_log) for one experiment folder."""
    folder = experiment_dir(path)
    with open(os.path.join(folder, "registry.json")) as f:
        registry = json.load(f)
    assignments = read_csv(os.path.join(folder, "assignments.csv"))
    orders = read_csv(os.path.join(folder, "orders.csv"))
    ops_path = os.path.join(folder, "ops_log.csv")
    ops_log = read_csv(ops_path) if os.path.exists(ops_path) else []
    return registry, assignments, orders, ops_log
