"""Print the per-arm table of one experiment.

    python3 -m analysis.report experiments/checkout-may
"""

import sys

from analysis import data
from analysis.abtest import summarize


def euros(cents):
    return f"{cents / 100:,.2f}"


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip())
        return 2
    try:
        registry = data.load(argv[1])[0]
        summary = summarize(argv[1])
    except (OSError, ValueError, KeyError) as err:
        print(f"{argv[1]}: cannot read the experiment ({type(err).__name__}: {err})")
        return 1
    names = registry.get("arms", {})
    print(f"{registry.get('title', summary.get('experiment'))}")
    print(f"{'arm':>4}  {'name':<22}{'visitors':>10}  {'revenue/visitor EUR':>20}  {'difference EUR':>15}  95% interval")
    for arm, row in summary["arms"].items():
        line = f"{arm:>4}  {names.get(arm, '?'):<22}{row['visitors']:>10,}  {euros(row['revenue_per_visitor']):>20}"
        cmp = summary.get("comparisons", {}).get(arm)
        if cmp:
            line += f"  {euros(cmp['difference']):>15}  [{euros(cmp['low'])}, {euros(cmp['high'])}]"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
