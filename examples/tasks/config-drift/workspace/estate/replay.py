"""Replay a recorded console session through the current estate code.

    python3 -m estate.replay project_records/reboot-night.json

Prints the console as it was recorded, then the same events run through
estate/reconcile.py, in the same layout.
"""

import json
import sys

from estate.reconcile import Estate


def show(value):
    if hasattr(value, "value"):
        value = value.value
    return json.dumps(value, default=str)


def plain(value):
    return value.value if hasattr(value, "value") else value


def row_line(row):
    text = f"  {row.get('id')} {row.get('env')}/{row.get('service')}/{row.get('setting')} {plain(row.get('status'))}"
    text += f" first seen {row.get('first_seen')}"
    if row.get("resolved_on"):
        text += f" resolved {row.get('resolved_on')}"
    text += f" expected {show(row.get('expected'))} observed {show(row.get('observed'))}"
    return text


def open_row(estate, env, key):
    service, setting = key.split("/", 1)
    rows = [
        r
        for r in estate.ledger(env)
        if r.get("service") == service and r.get("setting") == setting and plain(r.get("status")) != "resolved"
    ]
    return rows[-1] if rows else None


def run_event(estate, ev, out):
    op, night = ev["op"], ev.get("night", "")
    if op == "declare":
        estate.declare_baseline(ev["env"], ev["baseline"], night, ev["services"])
        out.append(f"{night} declare {ev['env']} baseline {ev['baseline']} ({len(ev['services'])} services)")
        out.append(f"  active baseline for {ev['env']}: {estate.active_baseline(ev['env'])}")
    elif op == "scan":
        try:
            snap = estate.scan(ev["env"], night, ev["observed"])
        except Exception as err:
            out.append(f"{night} scan {ev['env']}: error {type(err).__name__}: {err}")
            return
        score = "n/a" if snap.get("score") is None else f"{snap['score']:.1f}"
        out.append(
            f"{night} scan {ev['env']} against {snap.get('baseline')}: total {snap.get('total')} | "
            f"compliant {snap.get('compliant')} | drifted {snap.get('drifted')} | "
            f"missing {snap.get('missing')} | unknown {snap.get('unknown')} | score {score}"
        )
        for row in estate.ledger(ev["env"]):
            out.append(row_line(row))
        queue = [r.get("id") for r in estate.queue(ev["env"])]
        out.append(f"  morning queue: {', '.join(queue) if queue else '(empty)'}")
    elif op in ("acknowledge", "ignore"):
        row = open_row(estate, ev["env"], ev["key"])
        if row is None:
            out.append(f"{night} {op} {ev['env']}/{ev['key']}: no open record")
            return
        if op == "acknowledge":
            estate.acknowledge(row["id"], night, ev["operator"])
        else:
            estate.ignore(row["id"], night, ev["operator"], ev.get("reason", ""))
        out.append(f"{night} {op} {row['id']} ({ev['env']}/{ev['key']}) by {ev['operator']}")
    elif op == "delete":
        estate.delete_baseline(ev["baseline"])
        env = ev["env"]
        out.append(f"{night} delete baseline {ev['baseline']}")
        out.append(f"  active baseline for {env}: {estate.active_baseline(env)}")
        rows = estate.ledger(env)
        out.append(f"  ledger {env}: {len(rows)} record(s)")
        for row in rows:
            out.append(row_line(row))
        nights = [s.get("night") for s in estate.snapshots(env)]
        out.append(f"  snapshots {env}: {', '.join(nights) if nights else '(none)'}")
    else:
        raise ValueError(f"unknown event {op!r}")


def replay_events(events):
    estate = Estate()
    out = []
    for ev in events:
        try:
            run_event(estate, ev, out)
        except Exception as err:
            out.append(f"{ev.get('night', '')} {ev.get('op')}: error {type(err).__name__}: {err}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip())
        return 2
    try:
        with open(argv[1]) as f:
            record = json.load(f)
        events = record["events"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"{argv[1]}: not a console record ({type(err).__name__})")
        return 1
    print(f"== {record.get('title', argv[1])} ==")
    print(f"-- recorded console ({record.get('recorded', 'unknown session')}) --")
    for line in record.get("console", []):
        print(line)
    print("-- replay through estate/reconcile.py --")
    for line in replay_events(events):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
