"""Nightly configuration check.

Walks the declaration captured for an environment and notes every declared setting that
the hosts no longer report as declared. See README.md for the interface.
"""

from estate import protocol


class Estate:
    def __init__(self):
        self.baselines = []  # every declaration captured, oldest first
        self.rows = []
        self.snaps = []
        self.next_id = 1

    # -- baselines -------------------------------------------------------------------
    def declare_baseline(self, env, baseline_id, night, services):
        self.baselines.append({"id": baseline_id, "env": env, "night": night, "services": services})

    def delete_baseline(self, baseline_id):
        self.baselines = [b for b in self.baselines if b["id"] != baseline_id]

    def active_baseline(self, env):
        baseline = self._baseline(env)
        return baseline["id"] if baseline else None

    def _baseline(self, env):
        for baseline in self.baselines:
            if baseline["env"] == env:
                return baseline
        return None

    # -- nightly scan ----------------------------------------------------------------
    def scan(self, env, night, observed):
        baseline = self._baseline(env) or {"id": None, "services": {}}
        declared = baseline["services"]
        for service, settings in declared.items():
            seen = observed.get(service, {})
            for setting, value in settings.items():
                if seen.get(setting) != value:
                    self._add_row(env, service, setting, baseline["id"], night, value, seen.get(setting))
        matching = sum(
            1
            for service, settings in observed.items()
            if service in declared and all(settings.get(k) == v for k, v in declared[service].items())
        )
        total = len(observed)
        snapshot = {
            "night": night,
            "env": env,
            "baseline": baseline["id"],
            "total": total,
            "compliant": matching,
            "drifted": total - matching,
            "missing": 0,
            "unknown": 0,
            "score": round(100.0 * matching / total, 1) if total else None,
        }
        self.snaps.append(snapshot)
        return dict(snapshot)

    def _add_row(self, env, service, setting, baseline_id, night, expected, observed):
        self.rows.append(
            {
                "id": f"D-{self.next_id:04d}",
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
        )
        self.next_id += 1

    # -- operator triage -------------------------------------------------------------
    def acknowledge(self, record_id, night, operator):
        self._triage(record_id, protocol.Status.ACKNOWLEDGED, night, operator, "")

    def ignore(self, record_id, night, operator, reason=""):
        self._triage(record_id, protocol.Status.IGNORED, night, operator, reason)

    def _triage(self, record_id, status, night, operator, reason):
        for row in self.rows:
            if row["id"] == record_id:
                row["status"] = status.value
                row["triage"] = {"decision": status.value, "by": operator, "night": night, "reason": reason}
                return
        raise KeyError(record_id)

    # -- views -----------------------------------------------------------------------
    def ledger(self, env=None):
        return [dict(r) for r in self.rows if env is None or r["env"] == env]

    def queue(self, env):
        return [dict(r) for r in self.rows if r["env"] == env and r["status"] == protocol.Status.DETECTED.value]

    def snapshots(self, env):
        return [dict(s) for s in self.snaps if s["env"] == env]
