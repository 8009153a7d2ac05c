//! What a build makes: the parts of PostgreSQL a lab runs, not the whole tree. A plain `make`
//! also compiles ECPG, a score of client tools nothing here runs (pg_upgrade, pg_basebackup,
//! pg_rewind, pgbench, ...), the regression and isolation test drivers; a lab needs the
//! server and what initdb loads into a cluster (the catalogs, the time zones, the encoding
//! conversions, the snowball dictionaries, PL/pgSQL), the tools the agent runs (initdb,
//! pg_ctl, pg_config, pg_waldump, pg_dump and pg_restore) and psql for the person at the host,
//! with libpq under them. A configure flag that adds a part (`--with-llvm`, a procedural
//! language) adds its directory; `contrib/basic_archive` (an archive module the agent can
//! own) is made where the source has it.
//!
//! The directories are made in order, each with the jobs of the build, by a makefile the
//! agent writes into the build directory (`blocklab.mk`): PostgreSQL's own `src/Makefile`
//! makes its subdirectories one at a time too.

use std::path::Path;

/// Names the recipe in every build key: builds made before it (the whole tree) are other
/// builds.
pub const RECIPE: &str = "lab-parts-2";

const HEADER: &str = "# Written by the blocklab agent: the parts of PostgreSQL a lab runs.\n";

/// The makefile's name in the build directory.
pub const MAKEFILE: &str = "blocklab.mk";

/// Made, and installed, in this order (those the source lacks are skipped).
const PARTS: &[&str] = &[
    "src/common",
    "src/port",
    "src/timezone",
    "src/backend",
    // The server's headers (for an extension built against the lab's build) and, from 16 on,
    // the catalogs' bootstrap file initdb reads (postgres.bki; in 15 the backend installs it).
    "src/include",
    "src/backend/utils/mb/conversion_procs",
    "src/backend/snowball",
    "src/interfaces/libpq",
    "src/backend/replication/libpqwalreceiver",
    "src/backend/replication/pgoutput",
    "src/fe_utils",
    "src/bin/initdb",
    "src/bin/pg_config",
    "src/bin/pg_ctl",
    "src/bin/pg_dump",
    "src/bin/pg_waldump",
    "src/bin/psql",
    "src/pl/plpgsql",
    "contrib/basic_archive",
];

/// Made but not installed: static libraries the parts above link in.
const NOT_INSTALLED: &[&str] = &["src/common", "src/port", "src/fe_utils"];

/// Parts a configure flag adds.
const BY_FLAG: &[(&str, &str)] = &[
    ("--with-llvm", "src/backend/jit/llvm"),
    ("--with-perl", "src/pl/plperl"),
    ("--with-python", "src/pl/plpython"),
    ("--with-tcl", "src/pl/tcl"),
];

/// The directories (relative to the source's top) this build makes, in order.
pub fn parts(top: &Path, configure_flags: &[String]) -> Vec<&'static str> {
    let flagged = BY_FLAG
        .iter()
        .filter(|(flag, _)| configure_flags.iter().any(|f| f == flag))
        .map(|(_, dir)| *dir);
    PARTS
        .iter()
        .copied()
        .chain(flagged)
        .filter(|d| top.join(d).join("Makefile").is_file())
        .collect()
}

/// Whether the source makes its generated headers (the parser's, the catalogs', the error
/// codes) with one backend target, as PostgreSQL's top-level make does first (11 on).
pub fn has_generated_headers(top: &Path) -> bool {
    std::fs::read_to_string(top.join("src/backend/Makefile"))
        .is_ok_and(|m| m.lines().any(|l| l.starts_with("generated-headers:")))
}

/// The parts of `parts` that are installed.
pub fn installed(parts: &[&'static str]) -> Vec<&'static str> {
    parts
        .iter()
        .copied()
        .filter(|p| !NOT_INSTALLED.contains(p))
        .collect()
}

/// The makefile that makes (`all`) `parts` and installs (`install`) `installed`, the
/// generated headers first when the source has that target. Its names come from the fixed
/// lists above, never from a spec.
pub fn makefile(parts: &[&str], installed: &[&str], generated_headers: bool) -> String {
    if !parts.contains(&"src/backend") {
        // Not a tree laid out as PostgreSQL's: its own makefile, whole.
        return format!(
            "{HEADER}.PHONY: all install\nall:\n\t$(MAKE) all\n\ninstall:\n\t$(MAKE) install\n"
        );
    }
    let mut all = String::new();
    if generated_headers {
        all.push_str("\t$(MAKE) -C src/backend generated-headers\n");
    }
    let mut install = String::new();
    for p in parts {
        all.push_str(&format!("\t$(MAKE) -C {p} all\n"));
        if installed.contains(p) {
            install.push_str(&format!("\t$(MAKE) -C {p} install\n"));
        }
    }
    format!(
        "{HEADER}.NOTPARALLEL:\n\
         .PHONY: all install\n\
         all:\n{all}\n\
         install:\n{install}"
    )
}

/// Whether `rel` (a path under the source's top) lies in one of `parts`: the progress
/// estimate counts only those sources.
pub fn in_parts(rel: &str, parts: &[&str]) -> bool {
    parts.iter().any(|p| {
        rel.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_follow_the_source_and_the_flags() {
        let top = tempfile::tempdir().unwrap();
        for d in [
            "src/backend",
            "src/bin/psql",
            "src/pl/plperl",
            "src/bin/pgbench",
        ] {
            std::fs::create_dir_all(top.path().join(d)).unwrap();
            std::fs::write(top.path().join(d).join("Makefile"), "").unwrap();
        }
        assert_eq!(parts(top.path(), &[]), ["src/backend", "src/bin/psql"]);
        assert_eq!(
            parts(top.path(), &["--with-perl".into(), "--with-python".into()]),
            ["src/backend", "src/bin/psql", "src/pl/plperl"]
        );
    }

    #[test]
    fn the_makefile_makes_in_order_and_installs_what_a_cluster_needs() {
        let mk = makefile(
            &["src/common", "src/backend", "src/bin/initdb"],
            &["src/backend", "src/bin/initdb"],
            true,
        );
        assert_eq!(
            mk,
            "# Written by the blocklab agent: the parts of PostgreSQL a lab runs.\n\
             .NOTPARALLEL:\n\
             .PHONY: all install\n\
             all:\n\
             \t$(MAKE) -C src/backend generated-headers\n\
             \t$(MAKE) -C src/common all\n\
             \t$(MAKE) -C src/backend all\n\
             \t$(MAKE) -C src/bin/initdb all\n\
             \n\
             install:\n\
             \t$(MAKE) -C src/backend install\n\
             \t$(MAKE) -C src/bin/initdb install\n"
        );
    }

    #[test]
    fn a_tree_without_the_backend_is_made_whole() {
        assert_eq!(
            makefile(&["src/bin/psql"], &["src/bin/psql"], false),
            "# Written by the blocklab agent: the parts of PostgreSQL a lab runs.\n\
             .PHONY: all install\nall:\n\t$(MAKE) all\n\ninstall:\n\t$(MAKE) install\n"
        );
    }

    #[test]
    fn static_libraries_are_made_not_installed() {
        assert_eq!(
            installed(&[
                "src/common",
                "src/port",
                "src/backend",
                "src/include",
                "src/fe_utils"
            ]),
            ["src/backend", "src/include"]
        );
    }

    #[test]
    fn generated_headers_come_from_the_backend_makefile() {
        let top = tempfile::tempdir().unwrap();
        assert!(!has_generated_headers(top.path()));
        std::fs::create_dir_all(top.path().join("src/backend")).unwrap();
        std::fs::write(
            top.path().join("src/backend/Makefile"),
            "all: postgres\ngenerated-headers: parser/gram.h\n",
        )
        .unwrap();
        assert!(has_generated_headers(top.path()));
    }

    #[test]
    fn in_parts_matches_whole_directories() {
        let p = ["src/bin/psql", "src/backend"];
        assert!(in_parts("src/bin/psql/describe.c", &p));
        assert!(in_parts("src/backend/access/heap/heapam.c", &p));
        assert!(!in_parts("src/bin/psqlx/a.c", &p));
        assert!(!in_parts("src/bin/pgbench/pgbench.c", &p));
    }
}
