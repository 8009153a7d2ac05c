//! Judging one setting against its catalog entry the way PostgreSQL parses values
//! (`parse_bool`, `parse_int`, `parse_real` in guc.c): numbers in C syntax with an optional
//! unit after optional white space, bounds checked when no unit is given (the catalog does
//! not say which unit a setting counts in, so a unit is only checked for being one of
//! PostgreSQL's memory or time units).

use super::catalog::{Guc, GucType};

/// PostgreSQL's memory units, then its time units (case-sensitive, as the server has them).
const UNITS: [&str; 11] = [
    "B", "kB", "MB", "GB", "TB", "us", "ms", "s", "min", "h", "d",
];

/// Why `value` is not acceptable for `guc`, or `None`.
pub fn judge(guc: &Guc, value: &str) -> Option<String> {
    if guc.context == "internal" {
        return Some("is fixed when PostgreSQL is built and cannot be set".into());
    }
    match guc.kind {
        GucType::Bool => (!is_bool(value))
            .then(|| format!("{value:?} is not a boolean (on, off, true, false, yes, no, 1, 0)")),
        GucType::Integer => judge_number(guc, value, true),
        GucType::Real => judge_number(guc, value, false),
        GucType::Enum => {
            let ok = !value.trim().is_empty()
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_- ".contains(c));
            (!ok).then(|| format!("{value:?} is not one of the setting's values"))
        }
        GucType::Str => None,
    }
}

/// `parse_bool`: a case-insensitive prefix of true/false/yes/no, on, of(f), 1 or 0.
fn is_bool(value: &str) -> bool {
    let v = value.to_ascii_lowercase();
    let prefix_of = |word: &str, least: usize| v.len() >= least && word.starts_with(v.as_str());
    prefix_of("true", 1)
        || prefix_of("false", 1)
        || prefix_of("yes", 1)
        || prefix_of("no", 1)
        || v == "on"
        || prefix_of("off", 2)
        || v == "1"
        || v == "0"
}

fn judge_number(guc: &Guc, value: &str, integer: bool) -> Option<String> {
    let what = if integer { "an integer" } else { "a number" };
    let Some((n, rest)) = scan_number(value, integer) else {
        return Some(format!("{value:?} is not {what}"));
    };
    let unit = rest.trim_matches(is_c_space);
    if !unit.is_empty() {
        if !UNITS.contains(&unit) {
            return Some(format!(
                "{unit:?} is not a unit (memory: B, kB, MB, GB, TB; time: us, ms, s, min, h, d)"
            ));
        }
        // A unit scales the number but cannot make a negative one positive.
        if n < 0.0 && guc.min.is_some_and(|m| m >= 0.0) {
            return Some(format!("{value:?} is below the minimum {}", bound(guc.min)));
        }
        return None;
    }
    let n = if integer { n.round() } else { n };
    // Bounds of real settings are printed with 6 significant digits (%g).
    let slack = |b: f64| if integer { 0.0 } else { b.abs() * 1e-5 };
    let below = guc.min.is_some_and(|m| n < m - slack(m));
    let above = guc.max.is_some_and(|m| n > m + slack(m));
    if below || above {
        return Some(format!(
            "{} is outside the valid range ({} .. {})",
            value.trim_matches(is_c_space),
            bound(guc.min),
            bound(guc.max)
        ));
    }
    None
}

fn bound(b: Option<f64>) -> String {
    b.map_or_else(|| "?".into(), |v| v.to_string())
}

fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// The number at the start of `s` as `strtol(s, 0)` (integers: hex `0x`, octal leading `0`)
/// and `strtod` read it, and what follows; `None` when no number starts there.
fn scan_number(s: &str, integer: bool) -> Option<(f64, &str)> {
    let t = s.trim_start_matches(is_c_space);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let b = body.as_bytes();
    let digits = |from: usize, radix: u32| {
        b[from..]
            .iter()
            .take_while(|c| (**c as char).is_digit(radix))
            .count()
    };
    if integer {
        if b.len() > 2 && b[0] == b'0' && (b[1] | 0x20) == b'x' && digits(2, 16) > 0 {
            let n = digits(2, 16);
            let v = u64::from_str_radix(&body[2..2 + n], 16).ok()? as f64;
            return Some((sign * v, &body[2 + n..]));
        }
        if b.len() > 1 && b[0] == b'0' && b[1].is_ascii_digit() {
            let n = 1 + digits(1, 8);
            if !matches!(b.get(n), Some(b'.' | b'e' | b'E')) {
                let v = u64::from_str_radix(&body[..n], 8).ok()? as f64;
                return Some((sign * v, &body[n..]));
            }
        }
    }
    // Decimal: digits, optional fraction, optional exponent (strtod's reading).
    let int = digits(0, 10);
    let mut end = int;
    let mut frac = 0;
    if b.get(end) == Some(&b'.') {
        frac = digits(end + 1, 10);
        end += 1 + frac;
    }
    if int + frac == 0 {
        return None;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut e = end + 1;
        if matches!(b.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        let n = digits(e, 10);
        if n > 0 {
            end = e + n;
        }
    }
    let v: f64 = body[..end].parse().ok()?;
    v.is_finite().then_some((sign * v, &body[end..]))
}

#[cfg(test)]
mod tests {
    use super::super::catalog::{GucCatalog, tests::PG15_SAMPLE};
    use super::*;

    fn check(name: &str, value: &str) -> Option<String> {
        let c = GucCatalog::parse(PG15_SAMPLE);
        judge(c.get(name).unwrap(), value)
    }

    #[test]
    fn integers_follow_parse_int() {
        for ok in [
            "64", "4MB", "4 MB", " 100 ", "0x40", "0100", "64.4", "1e3", "2GB",
        ] {
            assert_eq!(check("work_mem", ok), None, "{ok}");
        }
        assert_eq!(check("max_connections", "262143"), None);
        assert_eq!(check("checkpoint_timeout", "5min"), None);
        let e = check("work_mem", "-1").unwrap();
        assert_eq!(e, "-1 is outside the valid range (64 .. 2147483647)");
        assert!(check("work_mem", "63").is_some());
        assert!(check("work_mem", "0x10").unwrap().contains("outside"));
        assert!(
            check("max_connections", "262144")
                .unwrap()
                .contains("262143")
        );
        assert_eq!(
            check("max_connections", "lots").unwrap(),
            "\"lots\" is not an integer"
        );
        let e = check("shared_buffers", "64MB' ; x").unwrap();
        assert!(e.contains("\"MB' ; x\" is not a unit"), "{e}");
        for bad in [
            "", "MB", "4mb", "4 M", "1.5.2", "nan", "inf", "--1", "4MB x",
        ] {
            assert!(check("work_mem", bad).is_some(), "{bad:?} accepted");
        }
        assert!(check("shared_buffers", "-8MB").unwrap().contains("minimum"));
    }

    #[test]
    fn reals_booleans_enums_and_strings() {
        assert_eq!(check("random_page_cost", "1.1"), None);
        assert_eq!(check("random_page_cost", "1.79769e+308"), None);
        assert!(
            check("random_page_cost", "-0.5")
                .unwrap()
                .contains("outside")
        );
        assert!(check("random_page_cost", "cheap").is_some());
        for ok in ["on", "OFF", "of", "t", "true", "y", "no", "1", "0", "FALSE"] {
            assert_eq!(check("fsync", ok), None, "{ok}");
        }
        for bad in ["o", "2", "enable", "", " on", "yes please"] {
            assert!(check("fsync", bad).is_some(), "{bad:?} accepted");
        }
        assert_eq!(check("wal_level", "logical"), None);
        assert!(check("wal_level", "replica'; x").is_some());
        assert!(check("wal_level", "").is_some());
        assert_eq!(check("search_path", "a, 'b' ; c"), None);
        let internal = Guc {
            context: "internal".into(),
            ..GucCatalog::parse(PG15_SAMPLE)
                .get("work_mem")
                .unwrap()
                .clone()
        };
        assert!(judge(&internal, "64").unwrap().contains("cannot be set"));
    }
}
