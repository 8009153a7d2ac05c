//! The shape of the code, as ARCHITECTURE.md states it: the CLI links neither sqlx nor axum,
//! the script language neither tonic nor tokio-postgres; no path attributes on modules, no
//! source file over 600 lines, and no two modules of a crate that import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 11] = [
    "proto",
    "measure",
    "daemon",
    "spec",
    "report",
    "cli",
    "coordinator",
    "agent",
    "client-worker",
    "pgbench-script",
    "tests",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The packages in the normal dependency tree of `package`.
fn dependencies(package: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree", "--locked", "-e", "normal", "--prefix", "none", "-p", package,
        ])
        .current_dir(root())
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_cli_and_the_script_language_link_only_what_they_need() {
    let cli = dependencies("blocklab-cli");
    assert!(cli.contains("tonic"), "the tree is read: {cli:?}");
    for banned in ["sqlx", "axum"] {
        assert!(!cli.contains(banned), "blocklab-cli depends on {banned}");
    }
    let script = dependencies("blocklab-script");
    for banned in ["tonic", "tokio-postgres", "blocklab-proto"] {
        assert!(
            !script.contains(banned),
            "blocklab-script depends on {banned}"
        );
    }
}

#[test]
fn no_path_attributes_and_no_file_over_600_lines() {
    let mut files = Vec::new();
    for c in CRATES {
        rust_files(&root().join(c), &mut files);
    }
    assert!(files.len() > 100, "found the sources: {}", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        if text
            .lines()
            .any(|l| l.trim_start().starts_with(concat!("#[", "path")))
        {
            problems.push(format!("{}: a path attribute", f.display()));
        }
        let n = text.lines().count();
        if n > 600 {
            problems.push(format!("{}: {n} lines", f.display()));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A crate's modules by path (`["catalog", "rows"]`), each with its source file.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("below src").with_extension("");
            let mut m: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                m.pop();
            }
            (m, f)
        })
        .collect()
}

/// The longest prefix of `path` that names a module.
fn module_of(mods: &BTreeMap<Vec<String>, PathBuf>, path: &[String]) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|p| mods.contains_key(p))
        .unwrap_or_default()
}

/// Identifier paths that start at `at` in `text` (`crate::a::b`, `super::super::c`); a
/// group (`super::{a, b::C}`) gives one path per item.
fn paths_after<'t>(text: &'t str, at: &'t str) -> impl Iterator<Item = Vec<String>> + 't {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    text.match_indices(at).flat_map(move |(i, _)| {
        let before = text[..i].chars().next_back();
        if before.is_some_and(ident) {
            return Vec::new();
        }
        let rest = &text[i + at.len()..];
        let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
        let head: Vec<String> = rest[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        match rest[end..].strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                group
                    .split(',')
                    .map(|item| {
                        let item = item.trim();
                        let item = &item[..item.find(|c: char| !ident(c)).unwrap_or(item.len())];
                        let mut p = head.clone();
                        p.extend(
                            item.split("::")
                                .filter(|s| !s.is_empty())
                                .map(str::to_string),
                        );
                        p
                    })
                    .collect()
            }
            None => vec![head],
        }
    })
}

/// What each module imports of its crate: `crate::` and `super::` paths and its children.
fn imports(mods: &BTreeMap<Vec<String>, PathBuf>) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut edges = BTreeMap::new();
    for (m, f) in mods {
        if m.last().is_some_and(|s| s == "tests") {
            continue;
        }
        let full = std::fs::read_to_string(f).expect("read source");
        // Code only: unit tests at the end and comments do not count.
        let code = full.split("#[cfg(test)]").next().unwrap_or("");
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut to = BTreeSet::new();
        for p in paths_after(&code, "crate::") {
            to.insert(module_of(mods, &p));
        }
        for p in paths_after(&code, "super::") {
            let ups = 1 + p.iter().take_while(|s| *s == "super").count();
            let rest: Vec<String> = p.iter().skip_while(|s| *s == "super").cloned().collect();
            let base = &m[..m.len().saturating_sub(ups)];
            let mut target = base.to_vec();
            target.extend(rest);
            to.insert(module_of(mods, &target));
        }
        for (child, _) in mods.range(m.clone()..) {
            if child.len() == m.len() + 1 && child.starts_with(m) {
                let name = child.last().expect("child name");
                if code.contains(&format!("{name}::")) && name != "tests" {
                    to.insert(child.clone());
                }
            }
        }
        to.remove(m);
        edges.insert(m.clone(), to);
    }
    edges
}

/// The pairs of modules below `src` that import each other.
fn mutual(src: &Path) -> Vec<String> {
    let mods = modules(src);
    let edges = imports(&mods);
    let mut pairs = Vec::new();
    for (a, to) in &edges {
        for b in to {
            if a < b && edges.get(b).is_some_and(|back| back.contains(a)) {
                pairs.push(format!("{} <-> {}", a.join("::"), b.join("::")));
            }
        }
    }
    pairs
}

#[test]
fn no_two_modules_import_each_other() {
    let pairs: Vec<String> = CRATES
        .iter()
        .flat_map(|c| {
            mutual(&root().join(c).join("src"))
                .into_iter()
                .map(move |p| format!("{c}: {p}"))
        })
        .collect();
    assert!(
        pairs.is_empty(),
        "modules that import each other: {pairs:#?}"
    );
}

#[test]
fn the_import_check_sees_a_cycle() {
    let dir = tempfile::tempdir().expect("dir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").expect("write");
    std::fs::write(
        src.join("a/mod.rs"),
        "mod c;\nuse crate::b::B;\npub struct A;\n",
    )
    .expect("write");
    std::fs::write(src.join("a/c.rs"), "use super::super::b::B;\n").expect("write");
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\nfn f() { let _ = crate::a::A; }\n",
    )
    .expect("write");
    assert_eq!(mutual(src), vec!["a <-> b".to_string()]);
}

/// Where the wire types (`blocklab_proto`) may be used: the contract itself, the seams that
/// serve or call gRPC, and the clients (the CLI, the end-to-end tests).
const WIRE_SEAMS: [&str; 6] = [
    "coordinator/src/control.rs",
    "coordinator/src/fleet/",
    "agent/src/handler/",
    "client-worker/src/serve/",
    "daemon/src/fleet.rs",
    "cli/",
];

/// Files outside the seams that still use wire types, each to move behind a seam; the list
/// only shrinks (a file that no longer uses them must leave it).
const WIRE_TO_MOVE: [&str; 0] = [];

fn uses_wire(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).expect("read source");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .any(|l| l.contains("blocklab_proto"))
}

#[test]
fn wire_types_stay_at_the_seams() {
    let mut files = Vec::new();
    for c in CRATES.iter().filter(|c| !matches!(**c, "proto" | "tests")) {
        rust_files(&root().join(c).join("src"), &mut files);
    }
    let mut outside = Vec::new();
    let mut moved = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .expect("below the root")
            .to_string_lossy()
            .into_owned();
        let wire = uses_wire(f);
        let listed = WIRE_TO_MOVE.contains(&rel.as_str());
        if WIRE_SEAMS.iter().any(|s| rel.starts_with(s)) {
        } else if listed && !wire {
            moved.push(rel);
        } else if wire && !listed {
            outside.push(rel);
        }
    }
    assert!(
        outside.is_empty(),
        "wire types used outside the seams {WIRE_SEAMS:?}: {outside:#?}"
    );
    assert!(
        moved.is_empty(),
        "no longer using wire types, so off WIRE_TO_MOVE: {moved:#?}"
    );
    let gone: Vec<&str> = WIRE_TO_MOVE
        .into_iter()
        .filter(|f| !root().join(f).exists())
        .collect();
    assert!(gone.is_empty(), "listed in WIRE_TO_MOVE but gone: {gone:?}");
}

/// The report reads a job's results as domain values (`blocklab_measure::job`): it links
/// neither the contract nor tonic.
#[test]
fn report_links_no_wire() {
    let report = dependencies("blocklab-report");
    for wire in ["blocklab-proto", "tonic", "prost"] {
        assert!(
            !report.contains(wire),
            "blocklab-report links {wire}: {report:?}"
        );
    }
}
