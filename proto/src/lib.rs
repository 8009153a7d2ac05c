//! The blocklab wire contract (`blocklab.v1`): the code generated from `proto/blocklab/v1/`
//! (`common`, `control`, `fleet`) and the conversions of its types (the measurements of a
//! run in `measure.rs`, a job's export and results in `job.rs`).

fn all<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

/// Spells the field-for-field conversion of a struct pair once for both directions: plain
/// fields, lists of convertible items, and optional convertible messages.
macro_rules! both_ways {
    ($a:ty, $b:ty, [$($f:ident),*], [$($v:ident),*]) => {
        both_ways!($a, $b, [$($f),*], [$($v),*], []);
    };
    ($a:ty, $b:ty, [$($f:ident),*], [$($v:ident),*], [$($o:ident),*]) => {
        impl From<$a> for $b {
            fn from(x: $a) -> Self {
                Self { $($f: x.$f,)* $($v: all(x.$v),)* $($o: x.$o.map(Into::into),)* }
            }
        }
        impl From<$b> for $a {
            fn from(x: $b) -> Self {
                Self { $($f: x.$f,)* $($v: all(x.$v),)* $($o: x.$o.map(Into::into),)* }
            }
        }
    };
}

mod job;
mod measure;

pub mod v1 {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("blocklab.v1");
}

pub use v1::*;

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
