"""Nightly configuration check against each environment's declared baseline.

Each scan compares what the hosts report with the baseline in force, both sides in
protocol.canonical_config form. The ledger keeps one durable row per continuing drift
condition (protocol.record_key); a scan updates an open row, resolves it the night the
condition clears and opens a new row when a resolved condition returns. Operator triage
(acknowledged, ignored) is never undone by a scan. Every scan leaves a snapshot that
partitions the declared services into compliant, drifted, missing and unknown.
"""

from estate import notes, protocol


class Estate:
    def __init__(self):
        self._baselines = {}  # baseline id -> {"id", "env", "night", "services"}
        self._active = {}  # env -> id of the baseline in force
        self._rows = []  # ledger rows, oldest first
        self._snapshots = []
        self._serial = 0

    # -- baselines -------------------------------------------------------------------
    def declare_baseline(self, env, baseline_id, night, services):
        """Capture a declaration for `env`; it supersedes the one in force."""
        if baseline_id in self._baselines:
            raise ValueError(f"baseline {baseline_id} already exists")
        canonical = {service: protocol.canonical_config(settings) for service, settings in services.items()}
        self._baselines[baseline_id] = {"id": baseline_id, "env": env, "night": night, "services": canonical}
        self._active[env] = baseline_id

    def delete_baseline(self, baseline_id):
        """Remove a baseline with the ledger rows and snapshots it owns."""
        baseline = self._baselines.pop(baseline_id, None)
        if baseline is None:
            raise KeyError(baseline_id)
        if self._active.get(baseline["env"]) == baseline_id:
            del self._active[baseline["env"]]
        self._rows = [r for r in self._rows if r["baseline"] != baseline_id]
        self._snapshots = [s for s in self._snapshots if s["baseline"] != baseline_id]

    def active_baseline(self, env):
        return self._active.get(env)

    # -- nightly scan ----------------------------------------------------------------
    def scan(self, env, night, observed):
        baseline_id = self._active.get(env)
        if baseline_id is None:
            raise protocol.NoActiveBaseline(env)
        declared = self._baselines[baseline_id]["services"]
        counts = {notes.COMPLIANT: 0, notes.DRIFTED: 0, notes.MISSING: 0, notes.UNKNOWN: 0}
        for service, settings in declared.items():
            state, matching, differing = notes.compare_service(settings, observed.get(service))
            counts[state] += 1
            for setting in matching:
                self._clear(env, service, setting, night)
            for setting, value in differing.items():
                self._drift(env, service, setting, baseline_id, settings[setting], value, night)
        snapshot = {
            "night": night,
            "env": env,
            "baseline": baseline_id,
            "total": len(declared),
            "compliant": counts[notes.COMPLIANT],
            "drifted": counts[notes.DRIFTED],
            "missing": counts[notes.MISSING],
            "unknown": counts[notes.UNKNOWN],
            "score": protocol.compliance_score(counts[notes.COMPLIANT], counts[notes.DRIFTED], counts[notes.MISSING]),
        }
        self._snapshots.append(snapshot)
        return dict(snapshot)

    def _open_row(self, env, service, setting):
        key = protocol.record_key(env, service, setting)
        for row in self._rows:
            if row["key"] == key and notes.is_open(row):
                return row
        return None

    def _drift(self, env, service, setting, baseline_id, expected, observed, night):
        row = self._open_row(env, service, setting)
        if row is None:
            self._serial += 1
            row = notes.new_row(f"D-{self._serial:04d}", env, service, setting, baseline_id, expected, observed, night)
            self._rows.append(row)
            return
        row["expected"] = expected
        row["observed"] = observed
        row["last_seen"] = night

    def _clear(self, env, service, setting, night):
        row = self._open_row(env, service, setting)
        if row is not None:
            row["status"] = protocol.Status.RESOLVED.value
            row["resolved_on"] = night
            row["last_seen"] = night

    # -- operator triage -------------------------------------------------------------
    def acknowledge(self, record_id, night, operator):
        self._triage(record_id, protocol.Status.ACKNOWLEDGED, night, operator, "")

    def ignore(self, record_id, night, operator, reason=""):
        self._triage(record_id, protocol.Status.IGNORED, night, operator, reason)

    def _triage(self, record_id, status, night, operator, reason):
        for row in self._rows:
            if row["id"] == record_id:
                if not notes.is_open(row):
                    raise ValueError(f"{record_id} is already resolved")
                row["status"] = status.value
                row["triage"] = {"decision": status.value, "by": operator, "night": night, "reason": reason}
                return
        raise KeyError(record_id)

    # -- views -----------------------------------------------------------------------
    def ledger(self, env=None):
        return [dict(r) for r in self._rows if env is None or r["env"] == env]

    def queue(self, env):
        return [dict(r) for r in self._rows if r["env"] == env and r["status"] == protocol.Status.DETECTED.value]

    def snapshots(self, env):
        return [dict(s) for s in self._snapshots if s["env"] == env]
