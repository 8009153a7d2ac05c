//! Validation of the raw spec into a [`Spec`]: every error names its field.

use std::collections::BTreeMap;
use std::time::Duration;

use super::raw::{RawSource, RawSpec, RawWorkload, RawWorkloadOverride};
use super::*;

pub(super) fn parse(text: &str) -> Result<Spec, SpecError> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(SpecError::new(
            "spec",
            format!(
                "{} bytes is larger than the limit of {MAX_SPEC_BYTES}",
                text.len()
            ),
        ));
    }
    let raw: RawSpec = toml::from_str(text).map_err(|e| toml_error(text, e))?;
    validate(raw)
}

fn validate(raw: RawSpec) -> Result<Spec, SpecError> {
    if let Some(k) = raw.kind.as_deref().filter(|k| *k != "benchmark") {
        return Err(SpecError::new(
            "kind",
            format!("{k:?} here needs the probe spec layout; a benchmark has kind = \"benchmark\""),
        ));
    }
    if raw.name.trim().is_empty() || raw.name.len() > 200 {
        return Err(SpecError::new("name", "must be 1 to 200 characters"));
    }
    if !(1..=1000).contains(&raw.repetitions) {
        return Err(SpecError::new("repetitions", "must be between 1 and 1000"));
    }
    let order = match (raw.order.as_deref().unwrap_or("interleaved"), raw.seed) {
        ("interleaved", _) => RunOrder::Interleaved,
        ("sequential", _) => RunOrder::Sequential,
        ("shuffled", Some(seed)) => RunOrder::Shuffled { seed },
        ("shuffled", None) => RunOrder::Shuffled { seed: fresh_seed() },
        (other, _) => {
            return Err(SpecError::new(
                "order",
                format!("{other:?} is not allowed; use interleaved, shuffled or sequential"),
            ));
        }
    };
    let memory_policy = match raw.memory_policy.as_deref().unwrap_or("refuse") {
        "refuse" => MemoryPolicy::Refuse,
        "convert" => MemoryPolicy::Convert,
        other => {
            return Err(SpecError::new(
                "memory_policy",
                format!("{other:?} is not allowed; use refuse or convert"),
            ));
        }
    };
    let sources = validate_sources(raw.source, raw.sources)?;
    let m = &raw.matrix;
    check_sizes(
        "matrix.block_size_kb",
        &m.block_size_kb,
        &DATA_BLOCK_SIZES_KB,
    )?;
    check_sizes(
        "matrix.wal_block_size_kb",
        &m.wal_block_size_kb,
        &WAL_BLOCK_SIZES_KB,
    )?;
    let segsizes_gb = optional_axis("matrix.segsize_gb", &m.segsize_gb, &SEGSIZES_GB)?;
    let wal_segsizes_mb =
        optional_axis("matrix.wal_segsize_mb", &m.wal_segsize_mb, &WAL_SEGSIZES_MB)?;
    let vary = match m.vary.as_deref().unwrap_or("one-at-a-time") {
        "one-at-a-time" => Vary::OneAtATime,
        "all" => Vary::All,
        other => {
            return Err(SpecError::new(
                "matrix.vary",
                format!("{other:?} is not allowed; use one-at-a-time or all"),
            ));
        }
    };
    counts("matrix.clients", &m.clients, 1, 10_000, false)?;
    counts("matrix.scale", &m.scale, 1, 100_000, true)?;
    let baseline = (
        raw.baseline
            .as_ref()
            .and_then(|b| b.block_size_kb)
            .unwrap_or(8),
        raw.baseline
            .as_ref()
            .and_then(|b| b.wal_block_size_kb)
            .unwrap_or(8),
    );
    let explicit = raw
        .baseline
        .as_ref()
        .is_some_and(|b| b.block_size_kb.is_some() || b.wal_block_size_kb.is_some());
    let in_matrix =
        m.block_size_kb.contains(&baseline.0) && m.wal_block_size_kb.contains(&baseline.1);
    let baseline = if in_matrix {
        baseline
    } else if explicit {
        return Err(SpecError::new(
            "baseline",
            format!(
                "{}K/{}K is not a cell of the matrix (block_size_kb {:?}, wal_block_size_kb {:?})",
                baseline.0, baseline.1, m.block_size_kb, m.wal_block_size_kb
            ),
        ));
    } else {
        (m.block_size_kb[0], m.wal_block_size_kb[0])
    };
    let baseline_source = match raw.baseline.as_ref().and_then(|b| b.source.clone()) {
        Some(s) if sources.iter().any(|(n, _)| *n == s) => s,
        Some(s) => {
            let names: Vec<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
            return Err(SpecError::new(
                "baseline.source",
                format!("{s:?} is not a source; use one of {}", names.join(", ")),
            ));
        }
        None => sources[0].0.clone(),
    };
    let settings = validate_settings("settings", &raw.settings, memory_policy)?;
    let mut settings_variants = vec![];
    for (name, table) in &raw.settings_variants {
        check_name(&format!("settings_variants.{name}"), name)?;
        let field = format!("settings_variants.{name}");
        settings_variants.push((
            name.clone(),
            validate_settings(&field, table, memory_policy)?,
        ));
    }
    if settings_variants.is_empty() {
        settings_variants.push(("default".to_string(), vec![]));
    }
    let workload = validate_workload("workload", &raw.workload)?;
    let mut workload_variants = vec![];
    for (name, o) in &raw.workload_variants {
        check_name(&format!("workload_variants.{name}"), name)?;
        let merged = merge_workload(&raw.workload, o);
        workload_variants.push((
            name.clone(),
            validate_workload(&format!("workload_variants.{name}"), &merged)?,
        ));
    }
    if workload_variants.is_empty() {
        workload_variants.push(("default".to_string(), workload.clone()));
    }
    let client_workers = raw.placement.client_workers.unwrap_or(1);
    if !(1..=64).contains(&client_workers) {
        return Err(SpecError::new(
            "placement.client_workers",
            "must be between 1 and 64",
        ));
    }
    if let Some(c) = m.clients.iter().find(|&&c| c < client_workers) {
        return Err(SpecError::new(
            "matrix.clients",
            format!("{c} clients cannot be split across {client_workers} client workers"),
        ));
    }
    for (i, l) in raw.placement.db_host_labels.iter().enumerate() {
        if l.is_empty() || l.len() > 64 {
            return Err(SpecError::new(
                format!("placement.db_host_labels[{i}]"),
                "labels are 1 to 64 characters",
            ));
        }
    }
    let cells = sources.len()
        * m.block_size_kb.len().max(1)
        * m.wal_block_size_kb.len().max(1)
        * segsizes_gb.len()
        * wal_segsizes_mb.len()
        * m.clients.len()
        * m.scale.len().max(1)
        * settings_variants.len()
        * workload_variants.len();
    if cells * raw.repetitions as usize > 100_000 {
        return Err(SpecError::new(
            "matrix",
            format!(
                "{cells} cells x {} repetitions is more than 100000 runs",
                raw.repetitions
            ),
        ));
    }
    Ok(Spec {
        name: raw.name,
        repetitions: raw.repetitions,
        order,
        baseline,
        baseline_source,
        memory_policy,
        sources,
        vary,
        block_sizes_kb: raw.matrix.block_size_kb,
        wal_block_sizes_kb: raw.matrix.wal_block_size_kb,
        segsizes_gb,
        wal_segsizes_mb,
        clients: raw.matrix.clients,
        scales: raw.matrix.scale,
        settings,
        settings_variants,
        workload,
        workload_variants,
        layout: Layout {
            separate_wal: raw.layout.separate_wal,
            drop_os_cache: raw.layout.drop_os_cache,
            checkpoint_before: raw.layout.checkpoint_before.unwrap_or(true),
        },
        db_host_labels: raw.placement.db_host_labels,
        client_workers,
    })
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        & 0x7fff_ffff_ffff_ffff
}

fn check_name(field: &str, name: &str) -> Result<(), SpecError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(SpecError::new(
            field,
            "names are 1 to 40 letters, digits, '_' or '-'",
        ))
    }
}

fn validate_sources(
    single: Option<RawSource>,
    named: BTreeMap<String, RawSource>,
) -> Result<Vec<(String, Source)>, SpecError> {
    let list: Vec<(String, String, RawSource)> = match (single, named.is_empty()) {
        (Some(s), true) => vec![("default".into(), "source".into(), s)],
        (None, false) => named
            .into_iter()
            .map(|(n, s)| (n.clone(), format!("sources.{n}"), s))
            .collect(),
        (Some(_), false) => {
            return Err(SpecError::new(
                "sources",
                "give either [source] or [sources.NAME] tables, not both",
            ));
        }
        (None, true) => {
            return Err(SpecError::new(
                "source",
                "missing: give [source] with tarball, url + sha256, or git + ref",
            ));
        }
    };
    let mut out = Vec::new();
    for (name, field, s) in list {
        check_name(&field, &name)?;
        out.push((name, validate_source(&field, s)?));
    }
    Ok(out)
}

fn validate_source(field: &str, s: RawSource) -> Result<Source, SpecError> {
    let given = [s.tarball.is_some(), s.url.is_some(), s.git.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(SpecError::new(
            field,
            "give exactly one of tarball, url (with sha256), git (with ref)",
        ));
    }
    let sha256 = s.sha256.unwrap_or_default().to_ascii_lowercase();
    if !sha256.is_empty() && (sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err(SpecError::new(
            format!("{field}.sha256"),
            "must be 64 hexadecimal characters",
        ));
    }
    if let Some(url) = &s.url {
        if !(url.starts_with("https://") || url.starts_with("http://"))
            || url.chars().any(char::is_whitespace)
        {
            return Err(SpecError::new(
                format!("{field}.url"),
                "must be an http:// or https:// URL",
            ));
        }
        if sha256.is_empty() {
            return Err(SpecError::new(
                format!("{field}.sha256"),
                "is required with url",
            ));
        }
    }
    if let Some(t) = &s.tarball {
        check_tarball_path(t).map_err(|m| SpecError::new(format!("{field}.tarball"), m))?;
    }
    let git_ref = s.git_ref.unwrap_or_default();
    if let Some(g) = &s.git {
        // `ext::` and `fd::` are git transports that run commands or use descriptors.
        if g.is_empty()
            || g.starts_with('-')
            || g.contains("::")
            || g.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(SpecError::new(
                format!("{field}.git"),
                "must be a git URL or path",
            ));
        }
        let ok = !git_ref.is_empty()
            && !git_ref.starts_with('-')
            && git_ref
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
        if !ok {
            return Err(SpecError::new(
                format!("{field}.ref"),
                "is required with git: a branch, tag or commit (letters, digits, . _ / -)",
            ));
        }
    }
    for (i, flag) in s.configure.iter().enumerate() {
        validate_configure_flag(flag)
            .map_err(|m| SpecError::new(format!("{field}.configure[{i}]"), m))?;
    }
    let cflags: Vec<String> = s
        .cflags
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    for w in &cflags {
        let ok = w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=.,+/".contains(c));
        if !ok {
            return Err(SpecError::new(
                format!("{field}.cflags"),
                format!("{w:?} is not a plain compiler flag"),
            ));
        }
    }
    Ok(Source {
        tarball: s.tarball.unwrap_or_default(),
        url: s.url.unwrap_or_default(),
        sha256,
        git_url: s.git.unwrap_or_default(),
        git_ref,
        configure: s.configure,
        cflags,
    })
}

fn validate_settings(
    prefix: &str,
    table: &BTreeMap<String, toml::Value>,
    policy: MemoryPolicy,
) -> Result<Vec<(String, String)>, SpecError> {
    let mut out = Vec::new();
    for (name, value) in table {
        let field = format!("{prefix}.{name}");
        if !valid_setting_name(name) {
            return Err(SpecError::new(
                field,
                "setting names are lowercase letters, digits, '_' and '.'",
            ));
        }
        if crate::RESERVED_SETTINGS.contains(&name.as_str()) {
            return Err(SpecError::new(
                field,
                "may not be set by a spec: the agent sets it, or it runs commands or loads code on the database host",
            ));
        }
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => return Err(SpecError::new(field, "must be a string, number or boolean")),
        };
        if text.chars().any(|c| c.is_control()) || text.len() > 1024 {
            return Err(SpecError::new(
                field,
                "must be one line of at most 1024 characters",
            ));
        }
        let text = hold_constant(name, &text, policy).map_err(|m| SpecError::new(field, m))?;
        out.push((name.clone(), text));
    }
    Ok(out)
}

fn merge_workload(base: &RawWorkload, o: &RawWorkloadOverride) -> RawWorkload {
    fn pick<T: Clone>(o: &Option<T>, b: &Option<T>) -> Option<T> {
        o.clone().or_else(|| b.clone())
    }
    RawWorkload {
        kind: base.kind.clone(),
        builtin: pick(&o.builtin, &base.builtin),
        scale: o.scale.unwrap_or(base.scale),
        duration: pick(&o.duration, &base.duration),
        warmup: pick(&o.warmup, &base.warmup),
        protocol: pick(&o.protocol, &base.protocol),
        threads: o.threads.unwrap_or(base.threads),
        keying_thinking: pick(&o.keying_thinking, &base.keying_thinking),
        time_scale: pick(&o.time_scale, &base.time_scale),
        check: pick(&o.check, &base.check),
        mixes: pick(&o.mixes, &base.mixes),
        single_user: pick(&o.single_user, &base.single_user),
        steps: pick(&o.steps, &base.steps),
    }
}

fn validate_workload(prefix: &str, w: &RawWorkload) -> Result<Workload, SpecError> {
    let kind = super::kind::validate_kind(prefix, w)?;
    let builtin = w.builtin.clone().unwrap_or_else(|| "tpcb-like".into());
    let protocol = w.protocol.clone().unwrap_or_else(|| "simple".into());
    if !BUILTINS.contains(&builtin.as_str()) {
        return Err(SpecError::new(
            format!("{prefix}.builtin"),
            format!(
                "{builtin:?} is not a built-in; use one of {}",
                BUILTINS.join(", ")
            ),
        ));
    }
    if !PROTOCOLS.contains(&protocol.as_str()) {
        return Err(SpecError::new(
            format!("{prefix}.protocol"),
            format!(
                "{protocol:?} is not allowed; use one of {}",
                PROTOCOLS.join(", ")
            ),
        ));
    }
    let max_scale = match kind {
        WorkloadKind::Maintenance { .. } => 10_000,
        _ => 100_000,
    };
    if !(1..=max_scale).contains(&w.scale) {
        return Err(SpecError::new(
            format!("{prefix}.scale"),
            format!("must be between 1 and {max_scale}"),
        ));
    }
    if !(1..=1024).contains(&w.threads) {
        return Err(SpecError::new(
            format!("{prefix}.threads"),
            "must be between 1 and 1024",
        ));
    }
    let duration = match (&w.duration, kind.has_window()) {
        (Some(d), _) => parse_duration(&format!("{prefix}.duration"), d)?,
        (None, true) => {
            return Err(SpecError::new(
                format!("{prefix}.duration"),
                format!(
                    "is required for kind = \"{}\" (e.g. duration = \"60s\")",
                    kind.name()
                ),
            ));
        }
        (None, false) => Duration::ZERO,
    };
    if duration.is_zero() && kind.has_window() {
        return Err(SpecError::new(
            format!("{prefix}.duration"),
            "must be longer than zero",
        ));
    }
    let warmup = match &w.warmup {
        Some(t) => parse_duration(&format!("{prefix}.warmup"), t)?,
        None => Duration::ZERO,
    };
    Ok(Workload {
        kind,
        builtin,
        scale: w.scale,
        duration,
        warmup,
        protocol,
        threads: w.threads,
    })
}

fn optional_axis(field: &str, values: &[u32], allowed: &[u32]) -> Result<Vec<u32>, SpecError> {
    if values.is_empty() {
        return Ok(vec![0]);
    }
    check_sizes(field, values, allowed)?;
    Ok(values.to_vec())
}

fn counts(
    field: &str,
    values: &[u32],
    min: u32,
    max: u32,
    may_be_empty: bool,
) -> Result<(), SpecError> {
    if values.is_empty() && !may_be_empty {
        return Err(SpecError::new(field, "must list at least one value"));
    }
    for (i, &c) in values.iter().enumerate() {
        if !(min..=max).contains(&c) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{c} is not allowed; use {min} to {max}"),
            ));
        }
        if values[..i].contains(&c) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{c} is listed twice"),
            ));
        }
    }
    Ok(())
}

pub(super) fn toml_error(text: &str, e: toml::de::Error) -> SpecError {
    let msg = e.message().trim().to_string();
    let Some(span) = e.span() else {
        return SpecError::new(backticked(&msg).unwrap_or_else(|| "spec".into()), msg);
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    // The key on that line, prefixed by the table it sits in.
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let field = match (table, key, backticked(&msg)) {
        (_, _, Some(b)) if msg.starts_with("missing field") => b,
        (Some(t), Some(k), _) => format!("{t}.{k}"),
        (None, Some(k), _) => k,
        (_, None, Some(b)) => b,
        _ => "spec".into(),
    };
    SpecError::new(field, format!("{msg} (line {line_no})"))
}

fn backticked(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string()).filter(|w| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    })
}

/// A configure flag as the agent will accept it: `--name` or `--name=value`, no shell
/// metacharacters, and none of the flags blocklab sets itself.
pub fn validate_configure_flag(flag: &str) -> Result<(), String> {
    if flag.len() > 256 {
        return Err(format!(
            "a configure flag of {} bytes is longer than the limit of 256",
            flag.len()
        ));
    }
    let Some(body) = flag.strip_prefix("--") else {
        return Err(format!("{flag:?} must start with --"));
    };
    let (name, value) = body.split_once('=').unwrap_or((body, ""));
    let name_ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let value_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./,:+-".contains(c));
    if !name_ok || !value_ok {
        return Err(format!(
            "{flag:?} is not a plain configure flag (letters, digits, '-', and a value of letters, digits and _./,:+-)"
        ));
    }
    if ["prefix", "with-blocksize", "with-wal-blocksize"].contains(&name) {
        return Err(format!(
            "{flag:?} is set by blocklab from the matrix; remove it"
        ));
    }
    Ok(())
}

/// A tarball on the agent host: an absolute path of plain characters, no `..`, no `:` (GNU tar
/// reads `host:path` as a remote archive).
fn check_tarball_path(t: &str) -> Result<(), &'static str> {
    if !t.starts_with('/') || t.len() > 4096 {
        return Err("must be an absolute path on the agent host (at most 4096 bytes)");
    }
    if t.split('/').any(|c| c == "..") {
        return Err("must not contain '..'");
    }
    if !t
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._+-~@,=".contains(c))
    {
        return Err("may contain only letters, digits and / . _ + - ~ @ , =");
    }
    Ok(())
}

fn valid_setting_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
}

/// Fisher-Yates with splitmix64, so a recorded seed reproduces the order on any build.
pub(super) fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn parse_duration(field: &str, text: &str) -> Result<Duration, SpecError> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        SpecError::new(
            field,
            format!("cannot parse {text:?} as a duration ({e}); write e.g. \"90s\" or \"2min\""),
        )
    })?;
    if d > Duration::from_secs(24 * 3600) {
        return Err(SpecError::new(field, "must be at most 24h"));
    }
    Ok(d)
}

fn check_sizes(field: &str, values: &[u32], allowed: &[u32]) -> Result<(), SpecError> {
    if values.is_empty() {
        return Err(SpecError::new(field, "must list at least one size"));
    }
    for (i, v) in values.iter().enumerate() {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!(
                    "{v} is not a size PostgreSQL allows; use one of {} (KB)",
                    list.join(", ")
                ),
            ));
        }
        if values[..i].contains(v) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{v} is listed twice"),
            ));
        }
    }
    Ok(())
}
