"""Author tool (never run by specgap): writes the case data into DIR (python3 generate_data.py DIR).

Demand is drawn once from a seeded generator; stock, suppliers and lanes are set by hand.
Copy the result into both workspace/data/ and evaluator/data/, then re-solve the reference
with solve_reference.py and update task.toml, the gold plan and NOTES.md.
"""
import csv, os, random, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(20250310)
days = ["2025-03-%02d" % d for d in range(13, 20)]  # Thu 13 .. Wed 19
weekday_factor = [1.05, 1.15, 1.35, 1.2, 1.0, 0.9, 1.0]
cities = [("HAR", "Harbor"), ("PIN", "Pinecrest"), ("MIL", "Millbrook")]
locs = []
for code, name in cities:
    locs.append(("WH-" + code, "warehouse", name))
    locs.append(("ST-%s-1" % code, "store", name))
    locs.append(("ST-%s-2" % code, "store", name))
items = [("SKU-OAT", "Oat drink 1 L", 12), ("SKU-COF", "Ground coffee 500 g", 6),
         ("SKU-SOAP", "Dish soap 750 ml", 8), ("SKU-BAT", "AA batteries 4-pack", 10)]
means = {
    "SKU-OAT":  {"WH-HAR": 5, "ST-HAR-1": 16, "ST-HAR-2": 12, "WH-PIN": 4, "ST-PIN-1": 14, "ST-PIN-2": 10, "WH-MIL": 3, "ST-MIL-1": 13, "ST-MIL-2": 9},
    "SKU-COF":  {"WH-HAR": 2, "ST-HAR-1": 5, "ST-HAR-2": 4, "WH-PIN": 2, "ST-PIN-1": 6, "ST-PIN-2": 5, "WH-MIL": 1, "ST-MIL-1": 4, "ST-MIL-2": 3},
    "SKU-SOAP": {"WH-HAR": 1, "ST-HAR-1": 6, "ST-HAR-2": 5, "WH-PIN": 1, "ST-PIN-1": 5, "ST-PIN-2": 4, "WH-MIL": 2, "ST-MIL-1": 7, "ST-MIL-2": 6},
    "SKU-BAT":  {"WH-HAR": 1, "ST-HAR-1": 3, "ST-HAR-2": 2, "WH-PIN": 1, "ST-PIN-1": 4, "ST-PIN-2": 3, "WH-MIL": 1, "ST-MIL-1": 3, "ST-MIL-2": 2},
}
# store stock in units, warehouse stock in cases (the hidden convention)
stock = {
    "SKU-OAT":  {"WH-HAR": 30, "ST-HAR-1": 22, "ST-HAR-2": 15, "WH-PIN": 6, "ST-PIN-1": 12, "ST-PIN-2": 14, "WH-MIL": 12, "ST-MIL-1": 18, "ST-MIL-2": 11},
    "SKU-COF":  {"WH-HAR": 25, "ST-HAR-1": 8, "ST-HAR-2": 5, "WH-PIN": 3, "ST-PIN-1": 7, "ST-PIN-2": 9, "WH-MIL": 8, "ST-MIL-1": 6, "ST-MIL-2": 4},
    "SKU-SOAP": {"WH-HAR": 8, "ST-HAR-1": 9, "ST-HAR-2": 6, "WH-PIN": 10, "ST-PIN-1": 8, "ST-PIN-2": 5, "WH-MIL": 2, "ST-MIL-1": 4, "ST-MIL-2": 60},
    "SKU-BAT":  {"WH-HAR": 6, "ST-HAR-1": 5, "ST-HAR-2": 3, "WH-PIN": 4, "ST-PIN-1": 4, "ST-PIN-2": 6, "WH-MIL": 5, "ST-MIL-1": 5, "ST-MIL-2": 4},
}
def w(name, header, rows):
    with open(os.path.join(out, name), "w", newline="") as f:
        wr = csv.writer(f, lineterminator="\n")
        wr.writerow(header)
        wr.writerows(rows)
w("locations.csv", ["location_id", "kind", "city"], [(l, k, c) for l, k, c in locs])
w("items.csv", ["item_id", "description", "case_pack"], items)
w("stock.csv", ["location_id", "item_id", "on_hand"],
  [(l, i, stock[i][l]) for l, _, _ in locs for i, _, _ in items])
rows = []
for di, day in enumerate(days):
    for l, _, _ in locs:
        for i, _, _ in items:
            m = means[i][l] * weekday_factor[di]
            q = max(0, int(round(m * rng.uniform(0.75, 1.25))))
            rows.append((day, l, i, q))
w("demand.csv", ["date", "location_id", "item_id", "qty"], rows)
w("suppliers.csv", ["supplier_id", "item_id", "unit_cost", "lead_days", "order_fee"], [
    ("SUP-NORD", "SKU-OAT", "1.10", 2, "12.00"), ("SUP-NORD", "SKU-COF", "4.20", 2, "12.00"),
    ("SUP-NORD", "SKU-SOAP", "1.60", 2, "12.00"), ("SUP-NORD", "SKU-BAT", "3.00", 2, "12.00"),
    ("SUP-QUICK", "SKU-OAT", "1.45", 1, "20.00"), ("SUP-QUICK", "SKU-COF", "5.10", 1, "20.00"),
    ("SUP-QUICK", "SKU-BAT", "3.60", 1, "20.00"),
])
lanes = []
for code, name in cities:
    for k in (1, 2):
        lanes.append(("WH-" + code, "ST-%s-%d" % (code, k), 1, "0.20"))
for code, name in cities:
    for k in (1, 2):
        lanes.append(("ST-%s-%d" % (code, k), "WH-" + code, 1, "0.20"))
lanes += [("WH-HAR", "WH-PIN", 2, "0.60"), ("WH-PIN", "WH-HAR", 2, "0.60"),
          ("WH-HAR", "WH-MIL", 2, "0.70"), ("WH-MIL", "WH-HAR", 2, "0.70"),
          ("WH-PIN", "WH-MIL", 1, "0.45"), ("WH-MIL", "WH-PIN", 1, "0.45")]
w("lanes.csv", ["from_location", "to_location", "lead_days", "cost_per_unit"], lanes)
