#!/usr/bin/env python3
"""Replenishment plan built from the request and the data alone, without asking the client.

Assumptions taken at face value (none of them was checked with the client):
- every on_hand figure is in units;
- every lane in lanes.csv can be used, lead times are calendar days;
- trucks leave in the morning, before the day's sales;
- a sale we cannot make is lost, so each day is planned on its own;
- a supplier delivers any number of units to any site.

For every shortfall, in date order, the cheapest source that can cover all of it in time is
used: a site with spare stock on a lane, else the cheapest supplier that arrives in time.
"""

import csv
import datetime
import json
from collections import defaultdict

START = datetime.date(2025, 3, 13)
DAYS = 7


def rows(name):
    with open("data/" + name, newline="") as handle:
        return list(csv.DictReader(handle))


def main():
    sites = [r["location_id"] for r in rows("locations.csv")]
    items = [r["item_id"] for r in rows("items.csv")]
    stock = {(r["location_id"], r["item_id"]): int(r["on_hand"]) for r in rows("stock.csv")}
    demand = defaultdict(int)
    for r in rows("demand.csv"):
        day = (datetime.date.fromisoformat(r["date"]) - START).days
        demand[(r["location_id"], r["item_id"], day)] += int(r["qty"])
    lanes = [(r["from_location"], r["to_location"], int(r["lead_days"]), float(r["cost_per_unit"])) for r in rows("lanes.csv")]
    offers = [(r["supplier_id"], r["item_id"], float(r["unit_cost"]), int(r["lead_days"])) for r in rows("suppliers.csv")]

    plan = []
    for item in items:
        # projected[site][day]: stock at the start of the day (after arrivals, before sales)
        incoming = defaultdict(int)
        committed = defaultdict(int)  # units promised out of a site, by site
        projected = {s: stock[(s, item)] for s in sites}
        for day in range(DAYS):
            for site in sites:
                projected[site] += incoming[(site, day)]
                need = demand[(site, item, day)] - projected[site]
                if need > 0:
                    source = cheapest_transfer(site, day, need, item, lanes, stock, demand, committed)
                    if source is not None:
                        src, lead = source
                        committed[src] += need
                        plan.append(shipment(day - lead, item, src, site, need))
                        projected[site] += need
                    else:
                        supplier = cheapest_supplier(item, day, offers)
                        if supplier is not None:
                            name, lead = supplier
                            plan.append(shipment(day - lead, item, name, site, need))
                            projected[site] += need
                projected[site] = max(0, projected[site] - demand[(site, item, day)])
    plan.sort(key=lambda s: (s["date"], s["item"], s["from"], s["to"]))
    with open("plan.json", "w") as handle:
        json.dump({"shipments": plan}, handle, indent=1)
        handle.write("\n")


def spare(site, item, stock, demand, committed):
    week = sum(demand[(site, item, d)] for d in range(DAYS))
    return stock[(site, item)] - week - committed[site]


def cheapest_transfer(site, day, need, item, lanes, stock, demand, committed):
    best = None
    for src, dst, lead, cost in lanes:
        if dst != site or day - lead < 0:
            continue
        if spare(src, item, stock, demand, committed) >= need and (best is None or cost < best[0]):
            best = (cost, src, lead)
    return None if best is None else (best[1], best[2])


def cheapest_supplier(item, day, offers):
    best = None
    for name, sold, cost, lead in offers:
        if sold == item and day - lead >= 0 and (best is None or cost < best[0]):
            best = (cost, name, lead)
    return None if best is None else (best[1], best[2])


def shipment(day, item, src, dst, qty):
    date = START + datetime.timedelta(days=day)
    return {"date": date.isoformat(), "item": item, "from": src, "to": dst, "qty": qty}


if __name__ == "__main__":
    main()
