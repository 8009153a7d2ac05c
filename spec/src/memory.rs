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

#[cfg(test)]
mod tests {
    use super::*;

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
