//! pgbench's way of naming the server: `-h`, `-p`, `-U` and a trailing dbname (which may
//! be a conninfo string or a `postgres://` URI), over the environment (`PGHOST`, `PGPORT`,
//! `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGPASSFILE`, else `~/.pgpass`), as libpq
//! resolves them. The result is one `key=value` conninfo string.

use std::collections::BTreeMap;
use std::str::FromStr;

use clap::Args;

mod passfile;

/// Where libpq on Debian looks for the server's socket when no host is named.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

#[derive(Args, Debug, Clone, Default)]
pub struct ConnArgs {
    /// Database server host or socket directory (default: PGHOST, else the local socket).
    #[arg(short = 'h', long = "host")]
    pub host: Option<String>,
    /// Database server port (default: PGPORT, else 5432).
    #[arg(short = 'p', long = "port")]
    pub port: Option<String>,
    /// Connect as this user (default: PGUSER, else the OS user).
    #[arg(short = 'U', long = "username")]
    pub user: Option<String>,
    /// Database name (default: PGDATABASE, else the user name); a conninfo string
    /// ("host=... dbname=...") or URI works too.
    pub dbname: Option<String>,
}

/// The environment variables libpq reads, looked up through `env`.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn is_conninfo(s: &str) -> bool {
    s.contains('=') || s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// `key = value` pairs of a libpq conninfo string (values may be single-quoted with `\`
/// escapes).
fn parse_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    loop {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        if it.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = it.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            it.next();
        }
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        if it.next() != Some('=') {
            return Err(format!(
                "missing \"=\" after \"{key}\" in connection info string"
            ));
        }
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        let mut value = String::new();
        if it.peek() == Some(&'\'') {
            it.next();
            loop {
                match it.next() {
                    None => {
                        return Err("unterminated quoted string in connection info string".into());
                    }
                    Some('\\') => value.extend(it.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(&c) = it.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    it.next();
                    value.extend(it.next());
                    continue;
                }
                value.push(c);
                it.next();
            }
        }
        out.push((key, value));
    }
}

/// The pairs a URI names (through the driver's parser).
fn uri_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    use tokio_postgres::config::Host;
    let c = tokio_postgres::Config::from_str(s).map_err(|e| format!("invalid URI: {e}"))?;
    let mut out = Vec::new();
    let hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(h) => h.clone(),
            Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    if !hosts.is_empty() {
        out.push(("host".into(), hosts.join(",")));
    }
    if !c.get_ports().is_empty() {
        let ports: Vec<String> = c.get_ports().iter().map(u16::to_string).collect();
        out.push(("port".into(), ports.join(",")));
    }
    if let Some(u) = c.get_user() {
        out.push(("user".into(), u.into()));
    }
    if let Some(p) = c.get_password() {
        out.push(("password".into(), String::from_utf8_lossy(p).into_owned()));
    }
    if let Some(d) = c.get_dbname() {
        out.push(("dbname".into(), d.into()));
    }
    if let Some(o) = c.get_options() {
        out.push(("options".into(), o.into()));
    }
    if let Some(t) = c.get_connect_timeout() {
        out.push(("connect_timeout".into(), t.as_secs().to_string()));
    }
    Ok(out)
}

fn quote(v: &str) -> String {
    if !v.is_empty()
        && !v
            .chars()
            .any(|c| c.is_whitespace() || c == '\'' || c == '\\')
    {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

fn os_user() -> String {
    // SAFETY: getuid never fails; the passwd entry is read through nix.
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "postgres".into(), |u| u.name)
}

impl ConnArgs {
    /// The conninfo string these options and the environment name.
    pub fn conninfo(&self, env: Env<'_>) -> Result<String, String> {
        let mut m: BTreeMap<String, String> = BTreeMap::new();
        let mut dbname = self.dbname.clone();
        if let Some(s) = dbname.as_deref().filter(|s| is_conninfo(s)) {
            let pairs = if s.contains("://") {
                uri_pairs(s)?
            } else {
                parse_pairs(s)?
            };
            m.extend(pairs);
            dbname = None;
        }
        let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
        // The options override the conninfo string; the environment fills what is unset.
        for (key, flag, var) in [
            ("host", self.host.clone(), "PGHOST"),
            ("port", self.port.clone(), "PGPORT"),
            ("user", self.user.clone(), "PGUSER"),
            ("dbname", dbname, "PGDATABASE"),
            ("password", None, "PGPASSWORD"),
        ] {
            if let Some(v) = nonempty(flag) {
                m.insert(key.into(), v);
                if key == "host" {
                    m.remove("hostaddr");
                }
            } else if !m.contains_key(key)
                && let Some(v) = nonempty(env(var))
            {
                m.insert(key.into(), v);
            }
        }
        if !m.contains_key("host") && !m.contains_key("hostaddr") {
            m.insert("host".into(), DEFAULT_SOCKET_DIR.into());
        }
        let user = m.entry("user".into()).or_insert_with(os_user).clone();
        m.entry("dbname".into()).or_insert_with(|| user.clone());
        if !m.contains_key("password") {
            let file = nonempty(env("PGPASSFILE"))
                .or_else(|| nonempty(env("HOME")).map(|h| format!("{h}/.pgpass")));
            if let Some(file) = file {
                let host = m
                    .get("host")
                    .or(m.get("hostaddr"))
                    .cloned()
                    .unwrap_or_default();
                let port = m.get("port").cloned().unwrap_or_else(|| "5432".into());
                let db = m.get("dbname").cloned().unwrap_or_default();
                if let Some(p) =
                    passfile::lookup(std::path::Path::new(&file), &host, &port, &db, &user)
                {
                    m.insert("password".into(), p);
                }
            }
        }
        Ok(m.iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect::<Vec<_>>()
            .join(" "))
    }
}

#[cfg(test)]
mod tests;
