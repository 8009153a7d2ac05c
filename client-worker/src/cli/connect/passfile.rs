//! The password file (`PGPASSFILE`, else `~/.pgpass`): `host:port:database:user:password`
//! lines, `*` matching anything, `\` escaping `:` and `\`; ignored, as libpq does, when
//! group or others may read it. A socket directory matches `localhost`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Splits a line into its fields, undoing the escapes.
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut it = line.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => out.last_mut().expect("one field").extend(it.next()),
            ':' => out.push(String::new()),
            c => out.last_mut().expect("one field").push(c),
        }
    }
    out
}

/// The password for the first line matching, if any.
pub fn find(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    let host = if host.is_empty() || host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    let ok = |pattern: &str, v: &str| pattern == "*" || pattern == v;
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(fields)
        .find(|f| {
            f.len() >= 5 && ok(&f[0], host) && ok(&f[1], port) && ok(&f[2], db) && ok(&f[3], user)
        })
        .map(|f| f[4..].join(":"))
}

pub fn lookup(path: &Path, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        );
        return None;
    }
    find(&std::fs::read_to_string(path).ok()?, host, port, db, user)
}
