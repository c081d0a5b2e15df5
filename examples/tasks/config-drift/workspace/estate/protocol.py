"""Drift protocol shared by every region's estate tooling.

This file ships byte for byte the same in every region's release, so the regions agree on
what a drift record is called, which states it can be in and how a compliance number is
computed. Change it only through the cross-region release.
"""

from enum import Enum

RECORD_KEY_FIELDS = ("env", "service", "setting")


class Status(str, Enum):
    """States of a drift record in the ledger."""

    DETECTED = "detected"
    ACKNOWLEDGED = "acknowledged"
    IGNORED = "ignored"
    RESOLVED = "resolved"


class NoActiveBaseline(LookupError):
    """The environment has no baseline declaration in force."""

    def __init__(self, env):
        super().__init__(f"no baseline in force for {env}")
        self.env = env


def record_key(env, service, setting):
    """The identity of a drift condition, built from RECORD_KEY_FIELDS."""
    return f"{env}/{service}/{setting}"


SEVERITY = {
    "image": "critical",
    "replicas": "major",
    "ports": "major",
    "limits": "major",
}


def severity_for(setting):
    """Severity of drift on a setting: critical, major or minor."""
    return SEVERITY.get(setting, "minor")


def canonical_config(settings):
    """The canonical form of one service's settings, used for comparing and for storing.

    - keys are sorted, because the order in which a host reports its settings means nothing;
    - a setting whose value is None was not reported by the collector and is left out;
    - strings lose surrounding whitespace;
    - lists are sets of scalars: duplicates dropped, items sorted;
    - nested mappings get the same treatment.
    Returns a new dict; the argument is not changed. None stands for an empty mapping.
    """
    if settings is None:
        return {}
    return _canonical_mapping(settings)


def _canonical_mapping(mapping):
    out = {}
    for key in sorted(mapping, key=str):
        value = _canonical_value(mapping[key])
        if value is not None:
            out[str(key).strip()] = value
    return out


def _canonical_value(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return _canonical_mapping(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = []
        for item in value:
            item = _canonical_value(item)
            if item is not None and item not in items:
                items.append(item)
        return sorted(items, key=lambda v: (type(v).__name__, repr(v) if isinstance(v, (dict, list)) else v))
    return value


def compliance_score(compliant, drifted, missing):
    """The compliance number of one snapshot, in percent with one decimal.

    Only services whose state could be judged count: compliant, drifted and missing ones.
    Returns None when nothing could be judged (an empty baseline, or nothing but unknowns).
    """
    judged = compliant + drifted + missing
    if judged == 0:
        return None
    return round(100.0 * compliant / judged, 1)
