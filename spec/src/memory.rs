//! Holding memory constant across page sizes. PostgreSQL reads a bare number for some
//! settings as a count of pages (BLCKSZ or XLOG_BLCKSZ), so `shared_buffers = 16384` is
//! 128MB at 8K pages but 256MB at 16K. Values with a unit keep their bytes at any page size;
//! bare page counts are refused with an explanation, or read as 8K pages and rewritten in kB
//! when the spec says `memory_policy = "convert"`.

/// How bare page counts in settings are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MemoryPolicy {
    Refuse,
    Convert,
}

/// Settings whose bare numbers count data pages (BLCKSZ).
const DATA_PAGE_SETTINGS: [&str; 8] = [
    "shared_buffers",
    "temp_buffers",
    "effective_cache_size",
    "backend_flush_after",
    "bgwriter_flush_after",
    "checkpoint_flush_after",
    "min_parallel_table_scan_size",
    "min_parallel_index_scan_size",
];

/// Settings whose bare numbers count WAL pages (XLOG_BLCKSZ).
const WAL_PAGE_SETTINGS: [&str; 2] = ["wal_buffers", "wal_writer_flush_after"];

/// Which page a bare number of this setting counts, if any.
pub fn page_unit(name: &str) -> Option<&'static str> {
    if DATA_PAGE_SETTINGS.contains(&name) {
        Some("BLCKSZ")
    } else if WAL_PAGE_SETTINGS.contains(&name) {
        Some("XLOG_BLCKSZ")
    } else {
        None
    }
}

/// Checks (and under `Convert`, rewrites) one setting's value. Errors are messages for the
/// setting's field.
pub fn hold_constant(name: &str, value: &str, policy: MemoryPolicy) -> Result<String, String> {
    let Some(unit) = page_unit(name) else {
        return Ok(value.to_string());
    };
    let v = value.trim();
    let Ok(pages) = v.parse::<i64>() else {
        return Ok(value.to_string()); // has a unit (or PostgreSQL will refuse it)
    };
    if pages <= 0 {
        return Ok(value.to_string()); // -1 (auto) and 0 (off) mean the same at any page size
    }
    match policy {
        MemoryPolicy::Refuse => Err(format!(
            "{pages} is a count of {unit}-sized pages, so its memory changes with the page size; \
             write it with a unit (e.g. \"{}kB\") to keep the bytes constant, or set \
             memory_policy = \"convert\" to read bare counts as 8K pages",
            pages * 8
        )),
        MemoryPolicy::Convert => pages
            .checked_mul(8)
            .map(|kb| format!("{kb}kB"))
            .ok_or_else(|| format!("{pages} pages is too large")),
    }
}

/// Bytes of one `pg_settings` value in its `unit`, for memory units (`B`, `kB`, `MB`, `GB`,
/// `TB`, and pages such as `8kB`); `None` for other units and unparsable values.
pub fn setting_bytes(setting: &str, unit: &str) -> Option<i128> {
    let v: i128 = setting.trim().parse().ok()?;
    let per = match unit {
        "B" => 1,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        u => u.strip_suffix("kB")?.parse::<i128>().ok()? << 10,
    };
    Some(v * per)
}

/// Whether a `pg_settings` unit counts pages (BLCKSZ or XLOG_BLCKSZ): `8kB`, `16kB`, ...
/// (PostgreSQL shows page units as the page size).
pub fn is_page_unit(unit: &str) -> bool {
    unit.strip_suffix("kB")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// PostgreSQL 17's SLRU caches, counted in pages with a floor of 16 pages: at their default
/// of 16 (128kB at 8K pages) the same bytes are 8 pages at 16K, below what the server accepts,
/// so they keep each build's own count (and the held-constant line names them when they
/// differ).
pub const SLRU_BUFFERS: [&str; 7] = [
    "commit_timestamp_buffers",
    "multixact_member_buffers",
    "multixact_offset_buffers",
    "notify_buffers",
    "serializable_buffers",
    "subtransaction_buffers",
    "transaction_buffers",
];

/// The settings that hold a reference server's memory at any page size: every setting whose
/// unit is a page but the SLRU caches ([`SLRU_BUFFERS`]), as the reference server resolved it
/// (spec value, default or automatic), written in kB. `reference` is (name, setting, unit) as read from `pg_settings`; negative
/// values (special meanings, such as -1) are left to the server.
pub fn held_settings(reference: &[(String, String, String)]) -> Vec<(String, String)> {
    reference
        .iter()
        .filter(|(name, _, unit)| is_page_unit(unit) && !SLRU_BUFFERS.contains(&name.as_str()))
        .filter_map(|(name, setting, unit)| {
            let bytes = setting_bytes(setting, unit).filter(|b| *b >= 0)?;
            Some((name.clone(), format!("{}kB", bytes / 1024)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_unit_settings_are_written_in_kb_at_the_reference_bytes() {
        let s = |n: &str, v: &str, u: &str| (n.to_string(), v.to_string(), u.to_string());
        let reference = [
            s("shared_buffers", "32768", "8kB"),
            s("wal_buffers", "1024", "8kB"),
            s("effective_cache_size", "524288", "8kB"),
            s("work_mem", "4096", "kB"),
            s("max_wal_size", "1024", "MB"),
            s("checkpoint_timeout", "300", "s"),
            s("backend_flush_after", "0", "8kB"),
            s("notify_buffers", "16", "8kB"),
            s("transaction_buffers", "0", "8kB"),
        ];
        assert_eq!(
            held_settings(&reference),
            vec![
                ("shared_buffers".to_string(), "262144kB".to_string()),
                ("wal_buffers".to_string(), "8192kB".to_string()),
                ("effective_cache_size".to_string(), "4194304kB".to_string()),
                ("backend_flush_after".to_string(), "0kB".to_string()),
            ]
        );
        assert_eq!(setting_bytes("512", "16kB"), Some(8 << 20));
        assert_eq!(setting_bytes("1", "MB"), Some(1 << 20));
        assert_eq!(setting_bytes("300", "s"), None);
        assert!(is_page_unit("32kB") && !is_page_unit("kB") && !is_page_unit("MB"));
    }

    #[test]
    fn values_with_units_pass_unchanged() {
        for p in [MemoryPolicy::Refuse, MemoryPolicy::Convert] {
            assert_eq!(
                hold_constant("shared_buffers", "128MB", p).as_deref(),
                Ok("128MB")
            );
            assert_eq!(hold_constant("wal_buffers", "-1", p).as_deref(), Ok("-1"));
            assert_eq!(hold_constant("work_mem", "4096", p).as_deref(), Ok("4096"));
        }
    }

    #[test]
    fn bare_page_counts_are_refused_or_converted() {
        let e =
            hold_constant("shared_buffers", "16384", MemoryPolicy::Refuse).expect_err("refused");
        assert!(e.contains("BLCKSZ") && e.contains("131072kB"), "{e}");
        let e = hold_constant("wal_buffers", "512", MemoryPolicy::Refuse).expect_err("refused");
        assert!(e.contains("XLOG_BLCKSZ"), "{e}");
        assert_eq!(
            hold_constant("shared_buffers", "16384", MemoryPolicy::Convert).as_deref(),
            Ok("131072kB")
        );
        assert_eq!(
            hold_constant("effective_cache_size", " 100 ", MemoryPolicy::Convert).as_deref(),
            Ok("800kB")
        );
    }
}
