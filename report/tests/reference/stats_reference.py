"""Reference values for the report crate's statistics tests (Welch, Benjamini-Hochberg,
TOST), computed independently with SciPy and statsmodels. The printed values are copied
into report/src/stats/tests.rs and report/src/analysis/tests.rs.

    python3 -m venv /tmp/statsenv && /tmp/statsenv/bin/pip install scipy statsmodels
    /tmp/statsenv/bin/python report/tests/reference/stats_reference.py
"""

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_ind

print("scipy", scipy.__version__, "statsmodels", statsmodels.__version__, "numpy", np.__version__)


def welch(name, base, treat):
    b, t = np.array(base), np.array(treat)
    r = stats.ttest_ind(t, b, equal_var=False)
    print(f"welch {name}: t={float(r.statistic)!r} p={float(r.pvalue)!r} df={float(r.df)!r}")
    return r.pvalue


def tost(name, base, treat, band_pct):
    """Equivalence of treat and base within +-band_pct of the baseline mean."""
    b, t = np.array(base), np.array(treat)
    bound = band_pct * abs(b.mean()) / 100.0
    p, lower, upper = ttost_ind(t, b, -bound, bound, usevar="unequal")
    # 90% CI of the difference, in percent of the baseline mean
    r = stats.ttest_ind(t, b, equal_var=False)
    ci = r.confidence_interval(0.90)
    print(
        f"tost {name} band {band_pct}: p={float(p)!r} p_lower={float(lower[1])!r} "
        f"p_upper={float(upper[1])!r} df={float(lower[2])!r} "
        f"pct_ci90=({float(100 * ci.low / b.mean())!r}, {float(100 * ci.high / b.mean())!r})"
    )
    return p


def bh(name, p):
    q1 = stats.false_discovery_control(p, method="bh")
    q2 = multipletests(p, method="fdr_bh")[1]
    assert np.allclose(q1, q2, rtol=1e-12, atol=0)
    print(f"bh {name}: {[float(x) for x in q1]!r}")
    return q1


# The samples of report/src/stats/tests.rs.
A = [1234.5, 1210.2, 1251.8]
B = [1301.3, 1288.9, 1320.4]
C = [1198.0, 1275.5, 1222.1]
E = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6]
F = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7]
G = [1012.0, 1015.3, 1013.1, 1016.0, 1011.2, 1014.4]
tost("A,C", A, C, 2.0)
tost("A,C", A, C, 10.0)
tost("E,F", E, F, 2.0)
tost("E,G", E, G, 2.0)
tost("E,G", E, G, 1.0)
welch("E,F", E, F)
welch("E,G", E, G)

# BH on a family with ties and unsorted input.
bh("family", [0.01, 0.04, 0.03, 0.2, 0.04, 0.001, 0.9, 0.5])
bh("single", [0.03])

# The job of report/src/analysis/tests.rs (`family_job`): a baseline and two cells with tps
# and latency_avg_ms (every other column is 0 in every run: zero variance, not in the family).
base_tps = [1234.5, 1210.2, 1251.8]
base_lat = [3.24, 3.31, 3.20]
c16_tps = [1301.3, 1288.9, 1320.4]
c16_lat = [3.07, 3.10, 3.03]
c32_tps = [1236.0, 1229.5, 1240.3]
c32_lat = [3.22, 3.26, 3.25]
fam = [
    ("16K tps", base_tps, c16_tps),
    ("16K lat", base_lat, c16_lat),
    ("32K tps", base_tps, c32_tps),
    ("32K lat", base_lat, c32_lat),
]
ps = [welch(n, b, t) for n, b, t in fam]
ts = [tost(n, b, t, 2.0) for n, b, t in fam]
bh("family_job welch", ps)
bh("family_job tost", ts)

# The planned job of report/src/analysis/tests.rs (`planned_job`): baseline, an A/A replicate
# and 16K, tps only, six runs each, band 2%.
pb = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6]
pr = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7]
p16 = [1041.0, 1046.3, 1039.1, 1044.0, 1040.2, 1043.4]
fam = [("replicate tps", pb, pr), ("16K tps", pb, p16)]
ps = [welch(n, b, t) for n, b, t in fam]
ts = [tost(n, b, t, 2.0) for n, b, t in fam]
bh("planned_job welch", ps)
bh("planned_job tost", ts)
