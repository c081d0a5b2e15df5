#!/usr/bin/env python3
"""Case evaluator for examples/retail-replenishment (a delivery case in the style of seed 002).

Protocol (specgap DESIGN section 2): reads the submitted plan from
``$SPECGAP_WORKSPACE/plan.json`` (read-only), never executes anything from the submission,
and writes ``$SPECGAP_OUT/result.json`` with a ``delivery`` verdict.  The evaluator uses its
own private copy of the business data (``./data``, cwd = a private copy of ``evaluator/``),
so editing the workspace's ``data/`` changes nothing.

Extraction contract (what a plan may look like)
------------------------------------------------
``plan.json`` is either a JSON list of shipments or an object whose ``shipments`` (or
``moves`` / ``plan`` / ``orders`` / ``instructions``) member is that list.  Every shipment is an
object with

* ``date``  (alias ``day``, ``dispatch_date``, ``ship_date``): ISO date the goods leave,
* ``item``  (alias ``item_id``, ``sku``),
* ``from``  (alias ``source``, ``from_id``, ``origin``): a site id or a supplier id,
* ``to``    (alias ``destination``, ``to_id``, ``dest``): a site id,
* ``qty``   (alias ``quantity``, ``units``): a positive whole number of units.

Other members are ignored.  Shipments with the same key are added up.

Hard constraints (any violation voids the delivery)
---------------------------------------------------
* ``store-ships-stock``  stores never send stock anywhere; only warehouses and suppliers ship.
* ``no-lane``            transfers follow the lanes in ``data/lanes.csv``; suppliers deliver
                         to any site.
* ``lane-closed``        the Pinecrest-Millbrook lane (both directions) is closed this week.
* ``whole-cases``        supplier purchases are whole cases (``case_pack`` units each).
* ``supplier-catalogue`` a supplier only sells the items it lists.
* ``stock-available``    a site can only dispatch what it holds after the day's sales; each
                         day runs arrivals -> sales -> dispatch.
* ``same-city-first``    a store may receive an item from another city or from a supplier
                         only on a day when its own city's warehouse has none of that item
                         left after that day's dispatches.
* ``out-of-horizon``     (fatal) shipments dated outside Thu 2025-03-13 .. Wed 2025-03-19.

Objective (max; the accepted reference is in task.toml)
-------------------------------------------------------
Unserved demand is back-ordered and served first-come-first-served from later stock.  With D
the week's demand, U the units still unserved on Sunday night, W the unit-days customers
waited (the back-order open at the end of each day, summed over days), W_max the value of W
had nothing ever been served, and C the cost (transfer cost per unit of lane, purchase unit
cost, one order fee per supplier, day and destination):

    objective = 0.70 * (1 - U/D) + 0.20 * (1 - W/W_max) + 0.10 * max(0, 1 - C/10000)

rounded to 8 decimals.  Standard library only; deterministic; runs in well under a second.
"""

import csv
import datetime
import json
import os
import sys
import traceback
from collections import defaultdict

WEEK_START = datetime.date(2025, 3, 13)  # a Thursday
DAYS = 7
CLOSED_CITY_PAIRS = {("Pinecrest", "Millbrook"), ("Millbrook", "Pinecrest")}
WEIGHT_SERVED, WEIGHT_WAIT, WEIGHT_COST = 0.70, 0.20, 0.10
COST_BUDGET_CENTS = 1_000_000  # 10 000.00 per week
LIST_KEYS = ("shipments", "moves", "plan", "orders", "instructions")
ALIASES = {
    "date": ("date", "day", "dispatch_date", "ship_date"),
    "item": ("item", "item_id", "sku"),
    "from": ("from", "source", "from_id", "origin"),
    "to": ("to", "destination", "to_id", "dest"),
    "qty": ("qty", "quantity", "units"),
}
MAX_EXAMPLES = 3


def cents(text):
    """Money column (e.g. '1.45') to integer cents, exactly."""
    whole, _, frac = text.strip().partition(".")
    frac = (frac + "00")[:2]
    return int(whole) * 100 + int(frac)


def read_csv(name):
    with open(os.path.join("data", name), newline="") as handle:
        return list(csv.DictReader(handle))


class Case:
    """The private business data, with the conventions the customer holds applied."""

    def __init__(self):
        self.city = {}
        self.kind = {}
        for row in read_csv("locations.csv"):
            self.city[row["location_id"]] = row["city"]
            self.kind[row["location_id"]] = row["kind"]
        self.warehouse_of_city = {c: l for l, c in self.city.items() if self.kind[l] == "warehouse"}
        self.case_pack = {row["item_id"]: int(row["case_pack"]) for row in read_csv("items.csv")}
        # Warehouse systems count whole cases; store tills count units.
        self.start = defaultdict(int)
        for row in read_csv("stock.csv"):
            loc, item, qty = row["location_id"], row["item_id"], int(row["on_hand"])
            factor = self.case_pack[item] if self.kind[loc] == "warehouse" else 1
            self.start[(loc, item)] = qty * factor
        self.demand = defaultdict(int)
        for row in read_csv("demand.csv"):
            day = (datetime.date.fromisoformat(row["date"]) - WEEK_START).days
            self.demand[(row["location_id"], row["item_id"], day)] += int(row["qty"])
        self.catalogue = {}
        self.order_fee = {}
        for row in read_csv("suppliers.csv"):
            self.catalogue[(row["supplier_id"], row["item_id"])] = (
                cents(row["unit_cost"]),
                int(row["lead_days"]),
            )
            self.order_fee[row["supplier_id"]] = cents(row["order_fee"])
        self.lane = {}
        for row in read_csv("lanes.csv"):
            self.lane[(row["from_location"], row["to_location"])] = (
                int(row["lead_days"]),
                cents(row["cost_per_unit"]),
            )


def purchase_arrival(day, lead):
    """Suppliers work Monday-Friday: an order placed at a weekend is taken on Monday, and
    lead_days counts business days.  Returns the arrival day index (may exceed the week)."""
    date = WEEK_START + datetime.timedelta(days=day)
    while date.weekday() >= 5:
        date += datetime.timedelta(days=1)
    remaining = lead
    while remaining > 0:
        date += datetime.timedelta(days=1)
        if date.weekday() < 5:
            remaining -= 1
    return (date - WEEK_START).days


class Findings:
    """Violations grouped by rule, each with a count and a few examples."""

    def __init__(self):
        self.rules = {}

    def add(self, signature, rule, example):
        entry = self.rules.setdefault(rule, {"signature": signature, "count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < MAX_EXAMPLES:
            entry["examples"].append(example)

    def has(self, signature):
        return any(e["signature"] == signature for e in self.rules.values())

    def signature(self):
        for candidate in ("constraint", "fatal", "schema", "execution"):
            if self.has(candidate):
                return candidate
        return "none"

    def as_list(self):
        out = []
        for rule in sorted(self.rules):
            entry = self.rules[rule]
            detail = "; ".join(entry["examples"])
            if entry["count"] > len(entry["examples"]):
                detail += "; ..."
            out.append({"rule": rule, "count": entry["count"], "detail": detail})
        return out


def pick(entry, field):
    for key in ALIASES[field]:
        if key in entry:
            return entry[key]
    return None


def load_shipments(workspace, findings):
    path = os.path.join(workspace, "plan.json")
    if not os.path.isfile(path):
        findings.add("schema", "artifact-missing", "no plan.json at the top of the workspace")
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        findings.add("schema", "artifact-unreadable", "plan.json is not JSON: %s" % error)
        return None
    if isinstance(document, dict):
        for key in LIST_KEYS:
            if isinstance(document.get(key), list):
                return document[key]
        findings.add("schema", "artifact-shape", "plan.json object has no list of shipments (%s)" % ", ".join(LIST_KEYS))
        return None
    if isinstance(document, list):
        return document
    findings.add("schema", "artifact-shape", "plan.json must be a list or an object holding one")
    return None


def parse_quantity(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def normalise(case, raw, findings):
    """Checks the extraction contract; returns [(day, item, src, dst, qty)] for well-formed
    shipments and records schema / fatal findings for the others."""
    sites = set(case.city)
    suppliers = set(case.order_fee)
    rows = []
    for number, entry in enumerate(raw, start=1):
        where = "shipment %d" % number
        if not isinstance(entry, dict):
            findings.add("schema", "artifact-shape", "%s is not an object" % where)
            continue
        values = {field: pick(entry, field) for field in ALIASES}
        missing = [field for field, value in values.items() if value is None]
        if missing:
            findings.add("schema", "field-missing", "%s lacks %s" % (where, ", ".join(missing)))
            continue
        item, src, dst = (str(values[k]).strip() for k in ("item", "from", "to"))
        qty = parse_quantity(values["qty"])
        if qty is None or qty <= 0:
            findings.add("schema", "bad-quantity", "%s has quantity %r; expected a positive whole number of units" % (where, values["qty"]))
            continue
        if item not in case.case_pack:
            findings.add("schema", "unknown-id", "%s: unknown item %r" % (where, item))
            continue
        if src not in sites and src not in suppliers:
            findings.add("schema", "unknown-id", "%s: unknown origin %r" % (where, src))
            continue
        if dst not in sites:
            findings.add("schema", "unknown-id", "%s: destination %r is not one of our sites" % (where, dst))
            continue
        if src == dst:
            findings.add("schema", "self-shipment", "%s ships %s to itself" % (where, src))
            continue
        try:
            date = datetime.date.fromisoformat(str(values["date"]).strip()[:10])
        except ValueError:
            findings.add("schema", "bad-date", "%s has date %r; expected YYYY-MM-DD" % (where, values["date"]))
            continue
        day = (date - WEEK_START).days
        if not 0 <= day < DAYS:
            findings.add("fatal", "out-of-horizon", "%s is dated %s, outside 2025-03-13..2025-03-19" % (where, date))
            continue
        rows.append((day, item, src, dst, qty))
    return rows


def check_static_rules(case, rows, findings):
    for day, item, src, dst, qty in rows:
        date = WEEK_START + datetime.timedelta(days=day)
        if src in case.order_fee:
            if (src, item) not in case.catalogue:
                findings.add("constraint", "supplier-catalogue", "%s does not sell %s (%s)" % (src, item, date))
            elif qty % case.case_pack[item]:
                findings.add("constraint", "whole-cases", "%s %s from %s on %s: %d units is not a whole number of %d-unit cases" % (dst, item, src, date, qty, case.case_pack[item]))
            continue
        if case.kind[src] == "store":
            findings.add("constraint", "store-ships-stock", "store %s ships %d %s to %s on %s" % (src, qty, item, dst, date))
        if (src, dst) not in case.lane:
            findings.add("constraint", "no-lane", "there is no lane from %s to %s (%s)" % (src, dst, date))
        elif (case.city[src], case.city[dst]) in CLOSED_CITY_PAIRS:
            findings.add("constraint", "lane-closed", "%s -> %s on %s uses the closed %s-%s lane" % (src, dst, date, case.city[src], case.city[dst]))


def simulate(case, rows, findings):
    """Day by day: arrivals, then sales (oldest back-order first), then dispatch."""
    by_day = defaultdict(lambda: defaultdict(int))
    for day, item, src, dst, qty in rows:
        by_day[day][(item, src, dst)] += qty
    on_hand = defaultdict(int, case.start)
    arrivals = defaultdict(lambda: defaultdict(int))
    backlog = defaultdict(int)
    locations = sorted(case.city)
    items = sorted(case.case_pack)
    total_demand = sum(case.demand.values())
    waited = 0
    waited_max = 0
    cumulative = 0
    cost = 0
    for day in range(DAYS):
        date = WEEK_START + datetime.timedelta(days=day)
        for key, qty in arrivals[day].items():
            on_hand[key] += qty
        for loc in locations:
            for item in items:
                wanted = backlog[(loc, item)] + case.demand[(loc, item, day)]
                served = max(0, min(on_hand[(loc, item)], wanted))
                on_hand[(loc, item)] -= served
                backlog[(loc, item)] = wanted - served
                waited += backlog[(loc, item)]
        cumulative += sum(q for (_, _, d), q in case.demand.items() if d == day)
        waited_max += cumulative
        outgoing = defaultdict(int)
        external_in = set()
        orders = set()
        for (item, src, dst), qty in sorted(by_day[day].items()):
            if src in case.order_fee:
                unit, lead = case.catalogue.get((src, item), (0, 0))
                cost += unit * qty
                orders.add((src, dst))
                arrive = purchase_arrival(day, lead)
                if case.kind[dst] == "store":
                    external_in.add((dst, item))
            else:
                lead, unit = case.lane.get((src, dst), (DAYS, 0))
                cost += unit * qty
                outgoing[(src, item)] += qty
                arrive = day + lead
                if case.kind[dst] == "store" and case.city[src] != case.city[dst]:
                    external_in.add((dst, item))
            if arrive < DAYS:
                arrivals[arrive][(dst, item)] += qty
        cost += sum(case.order_fee[src] for src, _ in orders)
        for (src, item), qty in sorted(outgoing.items()):
            if qty > on_hand[(src, item)]:
                findings.add("constraint", "stock-available", "%s dispatches %d %s on %s but holds %d after the day's sales" % (src, qty, item, date, max(on_hand[(src, item)], 0)))
            on_hand[(src, item)] -= qty
        for store, item in sorted(external_in):
            local = case.warehouse_of_city[case.city[store]]
            left = on_hand[(local, item)]
            if left > 0:
                findings.add("constraint", "same-city-first", "%s gets %s from outside %s on %s while %s still holds %d" % (store, item, case.city[store], date, local, left))
    unserved = sum(backlog.values())
    served_share = 1 - unserved / total_demand
    wait_share = 1 - waited / waited_max
    cost_share = max(0.0, 1 - cost / COST_BUDGET_CENTS)
    objective = WEIGHT_SERVED * served_share + WEIGHT_WAIT * wait_share + WEIGHT_COST * cost_share
    summary = {
        "demand_units": total_demand,
        "unserved_units": unserved,
        "waited_unit_days": waited,
        "waited_unit_days_max": waited_max,
        "cost": cost / 100,
        "objective": round(objective, 8),
    }
    return round(objective, 8), summary


def evaluate(workspace):
    case = Case()
    findings = Findings()
    raw = load_shipments(workspace, findings)
    objective = None
    summary = {}
    if raw is not None:
        rows = normalise(case, raw, findings)
        check_static_rules(case, rows, findings)
        if not findings.has("schema") and not findings.has("fatal"):
            objective, summary = simulate(case, rows, findings)
    signature = findings.signature()
    delivery = {"valid": signature == "none", "violations": findings.as_list(), "signature": signature}
    if objective is not None:
        delivery["objective"] = objective
    return delivery, summary


def main():
    workspace = os.environ.get("SPECGAP_WORKSPACE", ".")
    out_dir = os.environ.get("SPECGAP_OUT", ".")
    try:
        delivery, summary = evaluate(workspace)
    except Exception:  # the evaluator's own failure on an odd plan: recorded, never a crash
        traceback.print_exc()
        delivery = {
            "valid": False,
            "violations": [{"rule": "evaluator-exception", "count": 1, "detail": traceback.format_exc(limit=1).strip().splitlines()[-1]}],
            "signature": "execution",
        }
        summary = {}
    result = {"version": 1, "delivery": delivery}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
        handle.write("\n")
    print(json.dumps({"signature": delivery["signature"], **summary}, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
