"""Reference values for the report crate's statistics tests (Welch, Benjamini-Hochberg,
the changes as ratios on the log scale: the delta method, the blocked models, TOST, MDE and
the rounds to equivalence), computed independently with SciPy, statsmodels and pandas. The
printed values are copied into report/src/stats/tests.rs, report/src/stats/tests/reference.rs,
report/src/stats/ratio/tests.rs and report/src/analysis/tests/.

    python3 -m venv /tmp/statsenv && /tmp/statsenv/bin/pip install scipy statsmodels pandas
    /tmp/statsenv/bin/python report/tests/reference/stats_reference.py
"""

import numpy as np
import pandas as pd
import scipy
import statsmodels
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.multitest import multipletests

print(
    "scipy", scipy.__version__, "statsmodels", statsmodels.__version__, "numpy", np.__version__,
    "pandas", pd.__version__,
)


def welch(name, base, treat):
    b, t = np.array(base), np.array(treat)
    r = stats.ttest_ind(t, b, equal_var=False)
    print(f"welch {name}: t={float(r.statistic)!r} p={float(r.pvalue)!r} df={float(r.df)!r}")
    return r.pvalue


def bh(name, p):
    q1 = stats.false_discovery_control(p, method="bh")
    q2 = multipletests(p, method="fdr_bh")[1]
    assert np.allclose(q1, q2, rtol=1e-12, atol=0)
    print(f"bh {name}: {[float(x) for x in q1]!r}")
    return q1


# The samples of report/src/stats/tests.rs.
A = [1234.5, 1210.2, 1251.8]
B = [1301.3, 1288.9, 1320.4]
C_ = [1198.0, 1275.5, 1222.1]
E = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6]
F = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7]
G = [1012.0, 1015.3, 1013.1, 1016.0, 1011.2, 1014.4]
welch("E,F", E, F)
welch("E,G", E, G)

# BH on a family with ties and unsorted input.
bh("family", [0.01, 0.04, 0.03, 0.2, 0.04, 0.001, 0.9, 0.5])
bh("single", [0.03])

# ---------------------------------------------------------------------------------------------
# Changes as ratios (report/src/stats/ratio/tests.rs): the change is estimated on the log scale.

ALPHA = 0.05
POWER = 0.8


def pct(x):
    return 100.0 * np.expm1(x)


def delta_ratio(name, base, treat, band_pct=None, limit=1000):
    """Welch with the delta method: se(ln mean) = s / (sqrt(n) mean); computed twice, from the
    formula and as Welch's test of each cell's runs divided by its mean."""
    b, t = np.array(base), np.array(treat)
    nb, nt = len(b), len(t)
    d = np.log(t.mean()) - np.log(b.mean())
    ub = b.var(ddof=1) / (nb * b.mean() ** 2)
    ut = t.var(ddof=1) / (nt * t.mean() ** 2)
    se = np.sqrt(ub + ut)
    df = (ub + ut) ** 2 / (ub**2 / (nb - 1) + ut**2 / (nt - 1))
    r = stats.ttest_ind(t / t.mean(), b / b.mean(), equal_var=False)
    assert abs(r.df - df) <= 1e-9 * df, (r.df, df)
    ci_rel = r.confidence_interval(0.95)  # of the scaled difference, 0 +- q se
    assert abs((ci_rel.high - ci_rel.low) / 2 - stats.t.ppf(0.975, df) * se) <= 1e-12
    tt = d / se
    p = 2 * stats.t.sf(abs(tt), df)
    lo, hi = d - stats.t.ppf(0.975, df) * se, d + stats.t.ppf(0.975, df) * se
    print(
        f"delta {name}: d={float(d)!r} se={float(se)!r} df={float(df)!r} t={float(tt)!r} "
        f"p={float(p)!r} pct={float(pct(d))!r} pct_ci95=({float(pct(lo))!r}, {float(pct(hi))!r})"
    )
    mde(name, se, df)
    if band_pct is not None:
        log_tost(name, d, se, df, band_pct)
        more = None
        for k in range(limit + 1):
            u = ub * nb / (nb + k) + ut * nt / (nt + k)
            dfk = u**2 / ((ub * nb / (nb + k)) ** 2 / (nb + k - 1) + (ut * nt / (nt + k)) ** 2 / (nt + k - 1))
            if fits(d, np.sqrt(u), dfk, band_pct):
                more = k
                break
        print(f"rounds {name} band {band_pct}: {more!r}")
    return p


def fits(d, se, df, band_pct):
    half = stats.t.ppf(1 - ALPHA, df) * se
    return d - half > np.log1p(-band_pct / 100) and d + half < np.log1p(band_pct / 100)


def mde(name, se, df):
    m = (stats.t.ppf(1 - ALPHA / 2, df) + stats.t.ppf(POWER, df)) * se
    print(f"mde {name}: {float(pct(m))!r}")


def log_tost(name, d, se, df, band_pct):
    lo_b, hi_b = np.log1p(-band_pct / 100), np.log1p(band_pct / 100)
    p_lower = stats.t.sf((d - lo_b) / se, df)
    p_upper = stats.t.cdf((d - hi_b) / se, df)
    half = stats.t.ppf(1 - ALPHA, df) * se
    print(
        f"log tost {name} band {band_pct}: p={float(max(p_lower, p_upper))!r} "
        f"p_lower={float(p_lower)!r} p_upper={float(p_upper)!r} "
        f"pct_ci90=({float(pct(d - half))!r}, {float(pct(d + half))!r})"
    )
    return max(p_lower, p_upper)


def ols(name, rows, formula, band_pct=None, rounds=None, df_per_round=1, limit=1000, log=True):
    """rows: (cell, round, host, y). Prints the cell coefficient, bse, df_resid, p and conf_int
    of `formula`, fitted on log(y) (or y)."""
    df = pd.DataFrame(rows, columns=["cell", "round", "host", "y"])
    df["ly"] = np.log(df["y"]) if log else df["y"]
    m = smf.ols(formula, data=df).fit()
    term = "C(cell, Treatment('base'))[T.treat]"
    c, se, dfr, p = m.params[term], m.bse[term], m.df_resid, m.pvalues[term]
    lo, hi = m.conf_int(0.05).loc[term]
    print(
        f"ols {name} [{formula}]: coef={float(c)!r} bse={float(se)!r} df_resid={float(dfr)!r} "
        f"t={float(m.tvalues[term])!r} p={float(p)!r} conf_int=({float(lo)!r}, {float(hi)!r})"
        + (f" pct={float(pct(c))!r} pct_ci95=({float(pct(lo))!r}, {float(pct(hi))!r})" if log else "")
    )
    if log:
        mde(name, se, dfr)
        if band_pct is not None:
            log_tost(name, c, se, dfr, band_pct)
            more = None
            for k in range(limit + 1):
                if fits(c, se * np.sqrt(rounds / (rounds + k)), dfr + df_per_round * k, band_pct):
                    more = k
                    break
            print(f"rounds {name} band {band_pct}: {more!r}")
    return m


CELL_ROUND = "ly ~ C(cell, Treatment('base')) + C(round)"
CELL_ROUND_HOST = "ly ~ C(cell, Treatment('base')) + C(round) + C(host)"
CELL_HOST = "ly ~ C(cell, Treatment('base')) + C(host)"


def rows_of(base, treat, host="h"):
    """base, treat: lists of (round, y)."""
    return [("base", r, host, y) for r, y in base] + [("treat", r, host, y) for r, y in treat]


# Balanced: 5 rounds, one run of each cell in each, a drift across rounds.
BAL_B = [(0, 1000.0), (1, 1010.0), (2, 1024.0), (3, 1031.0), (4, 1046.0)]
BAL_T = [(0, 1013.0), (1, 1020.0), (2, 1039.0), (3, 1041.0), (4, 1062.0)]
ols("balanced", rows_of(BAL_B, BAL_T), CELL_ROUND, band_pct=2.0, rounds=5)
delta_ratio("balanced pooled", [y for _, y in BAL_B], [y for _, y in BAL_T], band_pct=2.0)
# Unbalanced: round 2 has two runs of the treatment cell.
UNB_T = BAL_T + [(2, 1036.0)]
ols("unbalanced", rows_of(BAL_B, UNB_T), CELL_ROUND)
# Missing runs: no baseline in round 3, no treatment in round 1 (their rounds still enter).
MIS_B = [(0, 1000.0), (1, 1010.0), (2, 1024.0), (4, 1046.0), (5, 1050.0)]
MIS_T = [(0, 1013.0), (2, 1039.0), (3, 1041.0), (4, 1062.0), (5, 1063.0)]
ols("missing", rows_of(MIS_B, MIS_T), CELL_ROUND)
# The same three on the raw scale, for the linear model itself.
ols("balanced raw", rows_of(BAL_B, BAL_T), CELL_ROUND, log=False)
ols("unbalanced raw", rows_of(BAL_B, UNB_T), CELL_ROUND, log=False)
ols("missing raw", rows_of(MIS_B, MIS_T), CELL_ROUND, log=False)
# Rounds and hosts: two hosts measure each round at once.
RH = [
    ("base", 0, "a", 1000.0), ("treat", 0, "a", 1012.0), ("base", 0, "b", 905.0), ("treat", 0, "b", 918.0),
    ("base", 1, "a", 1008.0), ("treat", 1, "a", 1019.0), ("base", 1, "b", 913.0), ("treat", 1, "b", 921.0),
    ("base", 2, "a", 1017.0), ("treat", 2, "a", 1031.0), ("base", 2, "b", 920.0), ("treat", 2, "b", 934.0),
]
ols("rounds and hosts", RH, CELL_ROUND_HOST)
# Hosts only (the host test of blocked comparisons), on the log scale.
HOSTS = rows_of([(0, 1000.0), (1, 1012.0), (2, 995.0)], [(0, 1031.0), (1, 1040.0), (2, 1022.0)], "a") + rows_of(
    [(0, 905.0), (1, 898.0), (2, 910.0)], [(0, 930.0), (1, 925.0)], "b"
)
ols("hosts", HOSTS, CELL_HOST)
# Each round on one host (as two db hosts take alternate rounds): the host is spanned by the
# round, and statsmodels' pseudo-inverse fit leaves it without effect.
NESTED = [
    ("base", 0, "a", 1000.0), ("treat", 0, "a", 1020.0), ("base", 1, "b", 950.0), ("treat", 1, "b", 972.0),
    ("base", 2, "a", 1004.0), ("treat", 2, "a", 1021.0),
]
ols("nested", NESTED, CELL_ROUND_HOST)

# Welch with the delta method.
delta_ratio("A,B", A, B, band_pct=2.0)
delta_ratio("E,F", E, F, band_pct=2.0)
delta_ratio("E,G", E, G, band_pct=2.0)
delta_ratio("E,G", E, G, band_pct=1.0)
delta_ratio("A,C", A, C_, band_pct=2.0, limit=1000)
delta_ratio("A,C", A, C_, band_pct=10.0)
# A large drop of a positive metric with a noisy baseline: the interval stays above -100%.
delta_ratio("drop", [40.0, 2.0, 38.0, 3.0], [1.0, 0.9, 1.1, 1.0])


def delta_tost(name, base, treat, band_pct):
    """The TOST p-value of the delta-method comparison."""
    b, t = np.array(base), np.array(treat)
    nb, nt = len(b), len(t)
    d = np.log(t.mean()) - np.log(b.mean())
    ub = b.var(ddof=1) / (nb * b.mean() ** 2)
    ut = t.var(ddof=1) / (nt * t.mean() ** 2)
    se = np.sqrt(ub + ut)
    df = (ub + ut) ** 2 / (ub**2 / (nb - 1) + ut**2 / (nt - 1))
    return log_tost(name, d, se, df, band_pct)


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
ps = [delta_ratio(n, b, t, band_pct=2.0) for n, b, t in fam]
ts = [delta_tost(n, b, t, 2.0) for n, b, t in fam]
bh("family_job welch", ps)
bh("family_job tost", ts)

# The planned job of report/src/analysis/tests.rs (`planned_job`): baseline, an A/A replicate
# and 16K, tps only, six runs each, band 2%.
pb = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6]
pr = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7]
p16 = [1041.0, 1046.3, 1039.1, 1044.0, 1040.2, 1043.4]
fam = [("replicate tps", pb, pr), ("16K tps", pb, p16)]
ps = [delta_ratio(n, b, t, band_pct=2.0) for n, b, t in fam]
ts = [delta_tost(n, b, t, 2.0) for n, b, t in fam]
bh("planned_job welch", ps)
bh("planned_job tost", ts)



# Job A of coordinator/tests/report/fixture.rs: interleaved, 3 rounds, 16K and 32K against 8K.
A_8K = [1234.5, 1210.2, 1251.8]
A_16K = [1301.3, 1288.9, 1320.4]
ols("fixture 16K", rows_of(list(enumerate(A_8K)), list(enumerate(A_16K))), CELL_ROUND)


# The planned minimum detectable change of `submit --dry-run` (report/src/stats/power.rs,
# planned_mde_pct): cells x rounds within rounds, residual df (C-1)(R-1), se = cv*sqrt(2/R).
print("planned MDE (cv %, rounds, cells, alpha -> %):")
for cv, R, C, a in [(1, 5, 2, 0.0125), (2, 10, 4, 0.05), (1.5, 3, 3, 0.05 / 18)]:
    df = (C - 1) * (R - 1)
    se = cv / 100 * np.sqrt(2 / R)
    m = (stats.t.ppf(1 - a / 2, df) + stats.t.ppf(0.8, df)) * se
    print(cv, R, C, a, repr(100 * float(np.expm1(m))))
