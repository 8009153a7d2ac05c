//! A build's GUC catalog as `postgres --describe-config` prints it: one line per setting,
//! tab-separated name, context, group, type, reset value, min, max, short and long
//! description. Settings PostgreSQL keeps out of the sample file (internal ones such as
//! `block_size`, developer options) are not listed; the unit is not printed.

use std::collections::HashMap;

/// How a setting's value is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GucType {
    Bool,
    Integer,
    Real,
    Str,
    Enum,
}

/// One setting of the catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct Guc {
    pub name: String,
    /// `postmaster`, `sighup`, `user`, `internal`, ...
    pub context: String,
    pub group: String,
    pub kind: GucType,
    pub reset: String,
    /// Bounds of integer and real settings, in the setting's base unit.
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// The settings of one build, by name.
#[derive(Clone, Debug, Default)]
pub struct GucCatalog {
    by_name: HashMap<String, Guc>,
}

impl GucCatalog {
    /// Parses `--describe-config` output; lines that do not have the expected shape are
    /// skipped (a later PostgreSQL may print more columns, which are ignored).
    pub fn parse(text: &str) -> Self {
        let mut by_name = HashMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 7 {
                continue;
            }
            let kind = match f[3] {
                "BOOLEAN" => GucType::Bool,
                "INTEGER" => GucType::Integer,
                "REAL" => GucType::Real,
                "STRING" => GucType::Str,
                "ENUM" => GucType::Enum,
                _ => continue,
            };
            let bound = |s: &str| s.trim().parse::<f64>().ok();
            let guc = Guc {
                name: f[0].to_string(),
                context: f[1].to_string(),
                group: f[2].to_string(),
                kind,
                reset: f[4].to_string(),
                min: bound(f[5]),
                max: bound(f[6]),
            };
            by_name.insert(guc.name.clone(), guc);
        }
        Self { by_name }
    }

    /// The names of the settings listed, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&Guc> {
        self.by_name.get(name)
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Lines as PostgreSQL 15's `postgres --describe-config` prints them.
    pub(crate) const PG15_SAMPLE: &str = "\
checkpoint_timeout\tsighup\tWrite-Ahead Log / Checkpoints\tINTEGER\t0\t30\t86400\tSets the maximum time between automatic WAL checkpoints.\t
fsync\tsighup\tWrite-Ahead Log / Settings\tBOOLEAN\tFALSE\t\t\tForces synchronization of updates to disk.\tThe server will use the fsync() system call.
max_connections\tpostmaster\tConnections and Authentication / Connection Settings\tINTEGER\t0\t1\t262143\tSets the maximum number of concurrent connections.\t
random_page_cost\tuser\tQuery Tuning / Planner Cost Constants\tREAL\t0\t0\t1.79769e+308\tSets the planner's estimate of the cost of a nonsequentially fetched disk page.\t
search_path\tuser\tClient Connection Defaults / Statement Behavior\tSTRING\t\"$user\", public\t\t\tSets the schema search order for names that are not schema-qualified.\t
shared_buffers\tpostmaster\tResource Usage / Memory\tINTEGER\t0\t16\t1073741823\tSets the number of shared memory buffers used by the server.\t
wal_level\tpostmaster\tWrite-Ahead Log / Settings\tENUM\treplica\t\t\tSets the level of information written to the WAL.\t
work_mem\tuser\tResource Usage / Memory\tINTEGER\t0\t64\t2147483647\tSets the maximum memory to be used for query workspaces.\tThis much memory can be used by each internal sort operation.
";

    #[test]
    fn parses_describe_config_lines() {
        let c = GucCatalog::parse(&format!("{PG15_SAMPLE}garbage line\nx\ty\n"));
        assert_eq!(c.len(), 8);
        let w = c.get("work_mem").unwrap();
        assert_eq!(
            (w.kind, w.context.as_str(), w.min, w.max),
            (GucType::Integer, "user", Some(64.0), Some(2_147_483_647.0))
        );
        assert_eq!(c.get("fsync").unwrap().kind, GucType::Bool);
        assert_eq!(c.get("fsync").unwrap().min, None);
        assert_eq!(c.get("wal_level").unwrap().kind, GucType::Enum);
        assert_eq!(c.get("search_path").unwrap().reset, "\"$user\", public");
        assert_eq!(c.get("random_page_cost").unwrap().max, Some(1.79769e308));
        assert!(c.get("block_size").is_none());
    }
}
