//! `blocklab --help` and every subcommand's `--help` (with its examples) against the files in
//! tests/snapshots/; `BLOCKLAB_UPDATE_SNAPSHOTS=1 cargo test --test cli_help` rewrites them.
//! Also: shell completions, and the README's command list against the real subcommands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SUBCOMMANDS: [&str; 15] = [
    "submit",
    "bisect",
    "jobs",
    "job",
    "hosts",
    "builds",
    "watch",
    "cancel",
    "rerun",
    "results",
    "compare",
    "plot",
    "report",
    "export",
    "completions",
];

/// Runs a binary with a clean environment, so `[env: X=value]` in help texts is stable.
fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run binary")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots")
}

#[test]
fn help_texts_match_snapshots() {
    let update = std::env::var_os("BLOCKLAB_UPDATE_SNAPSHOTS").is_some();
    let mut cases = vec![("blocklab--help".to_string(), vec!["--help".to_string()])];
    for sub in SUBCOMMANDS {
        cases.push((
            format!("blocklab-{sub}--help"),
            vec![sub.into(), "--help".into()],
        ));
    }
    let mut mismatched = Vec::new();
    for (name, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = stdout(&run(env!("CARGO_BIN_EXE_blocklab"), &args));
        if name != "blocklab--help" && name != "blocklab-completions--help" {
            assert!(
                got.contains("Examples:\n  blocklab "),
                "{name} has no examples:\n{got}"
            );
        }
        let path = snapshot_dir().join(format!("{name}.txt"));
        if update {
            std::fs::write(&path, &got).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            Ok(want) => mismatched.push(format!(
                "{}: differs\n--- want\n{want}\n--- got\n{got}",
                path.display()
            )),
            Err(e) => mismatched.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        mismatched.is_empty(),
        "help snapshots differ (BLOCKLAB_UPDATE_SNAPSHOTS=1 rewrites them):\n{}",
        mismatched.join("\n")
    );
}

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _blocklab"),
        ("zsh", "#compdef blocklab"),
        ("fish", "complete -c blocklab"),
    ] {
        let text = stdout(&run(
            env!("CARGO_BIN_EXE_blocklab"),
            &["completions", shell],
        ));
        assert!(text.contains(marker), "{shell}: no {marker:?}");
        for sub in ["submit", "watch", "results", "completions"] {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let o = run(env!("CARGO_BIN_EXE_blocklab"), &["completions", "tcsh"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bash"));
}

/// The subcommands `blocklab --help` lists (without `help`).
fn listed_subcommands() -> BTreeSet<String> {
    let help = stdout(&run(env!("CARGO_BIN_EXE_blocklab"), &["--help"]));
    let (_, commands) = help.split_once("Commands:\n").expect("a Commands section");
    commands
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

#[test]
fn the_readme_lists_every_subcommand_and_no_other() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let (_, using) = readme
        .split_once("## Using it\n")
        .expect("a Using it section");
    let (_, block) = using.split_once("```sh\n").expect("its command list");
    let (block, _) = block.split_once("```").expect("the list's end");
    let in_readme: BTreeSet<String> = block
        .split("blocklab ")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_lowercase()).next())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    let subcommands = listed_subcommands();
    assert_eq!(
        in_readme, subcommands,
        "README's `Using it` list vs `blocklab --help`"
    );
    assert_eq!(
        subcommands,
        SUBCOMMANDS
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
        "every subcommand's --help has a snapshot"
    );
}
