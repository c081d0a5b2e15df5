"""Helpers for estate/reconcile.py: comparing one service and building ledger rows."""

from estate import protocol

COMPLIANT = "compliant"
DRIFTED = "drifted"
MISSING = "missing"
UNKNOWN = "unknown"
OPEN_STATES = (protocol.Status.DETECTED.value, protocol.Status.ACKNOWLEDGED.value, protocol.Status.IGNORED.value)


def compare_service(declared, reported):
    """Compare one service's canonical declaration with what its hosts reported.

    Returns (state, matching, differing) where matching is the list of declared settings
    reported with the declared value and differing maps each setting reported with another
    value to that value. A setting the collector left out is in neither: silence is not a
    change. `reported` is None when the service was not reported at all.
    """
    if reported is None:
        return MISSING, [], {}
    seen = protocol.canonical_config(reported)
    matching, differing, silent = [], {}, False
    for setting, expected in declared.items():
        if setting not in seen:
            silent = True
        elif seen[setting] == expected:
            matching.append(setting)
        else:
            differing[setting] = seen[setting]
    if differing:
        return DRIFTED, matching, differing
    if silent:
        return UNKNOWN, matching, differing
    return COMPLIANT, matching, differing


def new_row(record_id, env, service, setting, baseline_id, expected, observed, night):
    return {
        "id": record_id,
        "key": protocol.record_key(env, service, setting),
        "env": env,
        "service": service,
        "setting": setting,
        "baseline": baseline_id,
        "severity": protocol.severity_for(setting),
        "expected": expected,
        "observed": observed,
        "status": protocol.Status.DETECTED.value,
        "first_seen": night,
        "last_seen": night,
        "resolved_on": None,
        "triage": None,
    }


def is_open(row):
    return row["status"] in OPEN_STATES
