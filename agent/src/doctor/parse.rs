//! Readers of the kernel's texts the checks look at; pure, so each is tested on the text.

/// The bracketed choice of a sysfs selector: `always [madvise] never` → `madvise` (the
/// transparent huge page modes, a block queue's `scheduler`). A text without one names its
/// only value.
pub fn selected(text: &str) -> Option<&str> {
    let t = text.trim();
    if let Some(open) = t.find('[') {
        let rest = &t[open + 1..];
        return rest.find(']').map(|close| &rest[..close]);
    }
    (!t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
}

/// Swap in use, in kB, from /proc/meminfo (`SwapTotal` minus `SwapFree`).
pub fn swap_used_kb(meminfo: &str) -> Option<u64> {
    let field = |name: &str| {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    Some(field("SwapTotal")?.saturating_sub(field("SwapFree")?))
}

/// The 1-minute load average and the runnable tasks from /proc/loadavg
/// (`0.52 0.40 0.31 2/345 6789`).
pub fn load(loadavg: &str) -> Option<(f64, u64)> {
    let mut f = loadavg.split_whitespace();
    let load1 = f.next()?.parse().ok()?;
    let running = f.nth(2)?.split_once('/')?.0.parse().ok()?;
    Some((load1, running))
}

/// A sysfs boolean-ish value (`1`/`0`, `on`/`off`, `Y`/`N`).
pub fn flag(text: &str) -> Option<bool> {
    match text.trim() {
        "1" | "on" | "Y" | "y" => Some(true),
        "0" | "off" | "N" | "n" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transparent_huge_pages_mode() {
        assert_eq!(selected("always [madvise] never\n"), Some("madvise"));
        assert_eq!(selected("[always] madvise never"), Some("always"));
        assert_eq!(selected("always madvise never"), None);
        assert_eq!(selected(""), None);
    }

    #[test]
    fn disk_scheduler_and_write_cache() {
        assert_eq!(
            selected("none [mq-deadline] kyber bfq \n"),
            Some("mq-deadline")
        );
        assert_eq!(selected("[none] mq-deadline"), Some("none"));
        // write_cache is not a selector: "write back" / "write through" are read whole.
        assert_eq!(selected("none\n"), Some("none"));
    }

    #[test]
    fn swap_in_use() {
        let m = "MemTotal:       8000000 kB\nSwapTotal:       2097148 kB\nSwapFree:        2000000 kB\n";
        assert_eq!(swap_used_kb(m), Some(97148));
        assert_eq!(swap_used_kb("SwapTotal: 0 kB\nSwapFree: 0 kB\n"), Some(0));
        assert_eq!(swap_used_kb("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn load_average_and_runnable_tasks() {
        assert_eq!(load("22.02 15.33 11.44 19/242 3011\n"), Some((22.02, 19)));
        assert_eq!(load("0.00 0.01 0.05 1/80 12"), Some((0.0, 1)));
        assert_eq!(load("garbage"), None);
    }

    #[test]
    fn sysfs_flags() {
        assert_eq!(flag("1\n"), Some(true));
        assert_eq!(flag("0"), Some(false));
        assert_eq!(flag("off"), Some(false));
        assert_eq!(flag("notsupported"), None);
    }
}
