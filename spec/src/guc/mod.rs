//! PostgreSQL's settings (GUCs) as blocklab judges them: a build's catalog as
//! `postgres --describe-config` prints it ([`GucCatalog`]), a value judged the way the server
//! parses it ([`judge`]), which settings a spec may give at all ([`refused`]), and the
//! catalogs of the versions blocklab knows, embedded so that a spec is judged at submit
//! ([`known`]). The agent judges again with the catalog of the build that will run them.

mod allow;
mod catalog;
mod known;
mod value;

pub use allow::{
    ALLOWED_GROUPS, ALLOWED_SUMMARY, RESERVED_SETTINGS, UNLISTED_ALLOWED, allowed_group, refused,
    refused_name,
};
pub use catalog::{Guc, GucCatalog, GucType};
pub use known::{KNOWN_VERSIONS, known};
pub use value::judge;
