//! The blocklab wire contract (`blocklab.v1`) and small helpers shared by every side.

pub mod v1 {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("blocklab.v1");
}

pub use v1::*;

pub mod config;
pub mod fleet;
pub mod metrics;
pub mod security;

/// Default coordinator address used by the CLI and the daemons when none is configured.
pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7400";

/// Turns `host:port` or a full URL into the URL form tonic expects.
pub fn endpoint_url(addr: &str) -> String {
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

impl ConnInfo {
    /// A libpq-style key/value connection string (password included).
    pub fn to_conninfo_string(&self) -> String {
        format!(
            "host={} port={} user={} password={} dbname={}",
            self.host,
            self.port,
            quote(&self.user),
            quote(&self.password),
            quote(&self.dbname)
        )
    }
}

fn quote(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_url_adds_scheme_once() {
        assert_eq!(endpoint_url("127.0.0.1:7400"), "http://127.0.0.1:7400");
        assert_eq!(endpoint_url("https://c:1"), "https://c:1");
    }

    #[test]
    fn conninfo_quotes_odd_values() {
        let c = ConnInfo {
            host: "10.0.0.1".into(),
            port: 5432,
            user: "blocklab".into(),
            password: "a b'c".into(),
            dbname: "bench".into(),
        };
        assert_eq!(
            c.to_conninfo_string(),
            "host=10.0.0.1 port=5432 user=blocklab password='a b\\'c' dbname=bench"
        );
    }
}
