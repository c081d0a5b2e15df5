#!/usr/bin/env python3
"""Author tool (never run by specgap): the exact optimum of the retail case.

Builds a mixed-integer program of the week with every rule the customer holds, solves it with
CBC through PuLP (`pip install pulp`; not needed by the package itself) and writes the plan.
The program mirrors evaluator/evaluate.py: it imports the evaluator's data loader and
constants, so both read the same data.

    python3 authoring/solve_reference.py --out solutions/gold/plan.json
    python3 authoring/solve_reference.py --misread same-city --out /tmp/plan.json

Model. Integer transfers x (warehouse -> lane destination, per item and dispatch day) and
purchases p (whole cases, supplier -> any site); a binary order-fee indicator per supplier,
day and destination. Per site, item and day: stock after arrivals a, served q <= a and
q <= backlog + demand, with q = min(...) enforced by a binary at warehouses (stores have no
other use for stock, so maximal service is optimal there anyway); end stock e = a - q -
dispatch >= 0 (arrivals -> sales -> dispatch). Same-city first: a binary per store, item and
day that allows supplier deliveries to the store only when the city warehouse ends the day
at 0. The objective is the evaluator's, scaled to cents (0.70 U/D and 0.20 W/W_max turned
into cents of the 10,000 budget) so CBC's tolerances do not hide single cents. A second
solve keeps U, W and C at their optimum and ships as late as possible (a tidy, just-in-time
gold). The reference 0.99477596 is U = 0, W = 20 unit-days, C = 450.50; with W forced to 13
(the least possible) C rises to 524.50, so waiting is cheaper than the extra cost.

--misread NAME drops or bends one rule, to show what an agent that did not ask would plan:
same-city, stores-ship, closed-lane, calendar-days, units, part-cases, lead-minus-one.
"""

import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EVALUATOR = os.path.join(HERE, "..", "evaluator")
MISREADS = ("same-city", "stores-ship", "closed-lane", "calendar-days", "units", "part-cases", "lead-minus-one")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--misread", choices=MISREADS)
    parser.add_argument("--time-limit", type=int, default=600)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.chdir(EVALUATOR)
    sys.path.insert(0, EVALUATOR)
    import evaluate as ev  # noqa: E402  (the evaluator's loader and constants)
    import pulp  # noqa: E402

    case = ev.Case()
    misread = args.misread
    arrival = ev.purchase_arrival
    lanes = dict(case.lane)
    if misread == "units":
        for (loc, item), qty in list(case.start.items()):
            if case.kind[loc] == "warehouse":
                case.start[(loc, item)] = qty // case.case_pack[item]
    if misread == "calendar-days":
        def arrival(day, lead):
            return day + lead
    if misread == "lead-minus-one":
        def arrival(day, lead, _real=ev.purchase_arrival):
            return _real(day, lead) - 1
        lanes = {k: (lead - 1, cost) for k, (lead, cost) in lanes.items()}
    closed = set() if misread == "closed-lane" else ev.CLOSED_CITY_PAIRS

    days = range(ev.DAYS)
    sites = sorted(case.city)
    items = sorted(case.case_pack)
    warehouses = [s for s in sites if case.kind[s] == "warehouse"]
    sources = sites if misread == "stores-ship" else warehouses
    big = 5000
    prob = pulp.LpProblem("retail", pulp.LpMinimize)

    x = {}
    for src in sources:
        for dst in sites:
            if (src, dst) not in lanes or (case.city[src], case.city[dst]) in closed:
                continue
            lead = lanes[(src, dst)][0]
            for item in items:
                for day in days:
                    if day + lead < ev.DAYS:
                        x[src, dst, item, day] = pulp.LpVariable("x_%s_%s_%s_%d" % (src, dst, item, day), 0, cat="Integer")
    p = {}  # units purchased = cases * case_pack (any integer under part-cases)
    fee = {}
    for sup in sorted(case.order_fee):
        for dst in sites:
            for day in days:
                lines = []
                for item in items:
                    if (sup, item) in case.catalogue and arrival(day, case.catalogue[sup, item][1]) < ev.DAYS:
                        n = pulp.LpVariable("p_%s_%s_%s_%d" % (sup, dst, item, day), 0, cat="Integer")
                        p[sup, dst, item, day] = n if misread == "part-cases" else n * case.case_pack[item]
                        lines.append(p[sup, dst, item, day])
                if lines:
                    fee[sup, dst, day] = pulp.LpVariable("f_%s_%s_%d" % (sup, dst, day), cat="Binary")
                    prob += pulp.lpSum(lines) <= big * fee[sup, dst, day]

    def arriving(site, item, day):
        terms = [v for (s, d, i, t), v in x.items() if d == site and i == item and t + lanes[(s, d)][0] == day]
        terms += [v for (s, d, i, t), v in p.items() if d == site and i == item and arrival(t, case.catalogue[s, i][1]) == day]
        return pulp.lpSum(terms)

    end, backlog, waiting = {}, {}, []
    for site in sites:
        for item in items:
            stock, owed = case.start[(site, item)], 0
            for day in days:
                have = stock + arriving(site, item, day)
                want = owed + case.demand[(site, item, day)]
                served = pulp.LpVariable("q_%s_%s_%d" % (site, item, day), 0)
                owed_now = pulp.LpVariable("b_%s_%s_%d" % (site, item, day), 0)
                left = pulp.LpVariable("e_%s_%s_%d" % (site, item, day), 0)
                prob += served <= have
                prob += served <= want
                if case.kind[site] == "warehouse":
                    full = pulp.LpVariable("z_%s_%s_%d" % (site, item, day), cat="Binary")
                    prob += served >= have - big * full
                    prob += served >= want - big * (1 - full)
                outgoing = pulp.lpSum(v for (s, d, i, t), v in x.items() if s == site and i == item and t == day)
                prob += owed_now == want - served
                prob += left == have - served - outgoing
                end[site, item, day], backlog[site, item, day] = left, owed_now
                waiting.append(owed_now)
                stock, owed = left, owed_now

    if misread != "same-city":
        for store in sites:
            if case.kind[store] != "store":
                continue
            local = case.warehouse_of_city[case.city[store]]
            for item in items:
                for day in days:
                    outside = [v for (s, d, i, t), v in p.items() if d == store and i == item and t == day]
                    outside += [v for (s, d, i, t), v in x.items() if d == store and i == item and t == day and case.city[s] != case.city[store]]
                    if outside:
                        allowed = pulp.LpVariable("y_%s_%s_%d" % (store, item, day), cat="Binary")
                        prob += pulp.lpSum(outside) <= big * allowed
                        prob += end[local, item, day] <= big * (1 - allowed)

    demand = sum(case.demand.values())
    waited_max, cumulative = 0, 0
    for day in days:
        cumulative += sum(q for (_, _, d), q in case.demand.items() if d == day)
        waited_max += cumulative
    unserved = pulp.lpSum(backlog[s, i, ev.DAYS - 1] for s in sites for i in items)
    waited = pulp.lpSum(waiting)
    cost = pulp.lpSum(v * lanes[(s, d)][1] for (s, d, i, t), v in x.items())
    cost += pulp.lpSum(v * case.catalogue[s, i][0] for (s, d, i, t), v in p.items())
    cost += pulp.lpSum(v * case.order_fee[s] for (s, d, t), v in fee.items())
    cent = ev.WEIGHT_COST / ev.COST_BUDGET_CENTS
    prob += (ev.WEIGHT_SERVED / demand / cent) * unserved + (ev.WEIGHT_WAIT / waited_max / cent) * waited + cost
    solver = pulp.PULP_CBC_CMD(msg=0, gapRel=0, gapAbs=0.01, threads=1, timeLimit=args.time_limit)
    prob.solve(solver)
    u, w, c = pulp.value(unserved), pulp.value(waited), pulp.value(cost)
    print("%s: U=%g W=%g C=%.2f" % (pulp.LpStatus[prob.status], u, w, c / 100))

    if misread is None:
        tidy = pulp.LpProblem("retail_just_in_time", pulp.LpMinimize)
        for name, constraint in prob.constraints.items():
            tidy += constraint, name
        tidy += unserved <= round(u)
        tidy += waited <= round(w)
        tidy += cost <= round(c)
        tidy += pulp.lpSum(v * (ev.DAYS - t) for (s, d, i, t), v in list(x.items()) + list(p.items()))
        tidy.solve(solver)
        print("just in time: %s" % pulp.LpStatus[tidy.status])

    plan = []
    for (src, dst, item, day), v in list(x.items()) + list(p.items()):
        qty = round(pulp.value(v))
        if qty:
            date = (ev.WEEK_START + datetime.timedelta(days=day)).isoformat()
            plan.append({"date": date, "item": item, "from": src, "to": dst, "qty": qty})
    plan.sort(key=lambda s: (s["date"], s["from"], s["to"], s["item"]))
    with open(out, "w") as handle:
        handle.write('{"shipments": [\n')
        handle.write(",\n".join("  " + json.dumps(s) for s in plan))
        handle.write("\n]}\n")
    print("%d shipments -> %s" % (len(plan), out))


if __name__ == "__main__":
    main()
