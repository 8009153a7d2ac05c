//! `blocklab-worker serve --config`: the default config parses back to the defaults.
use super::*;

#[test]
fn default_config_parses_back_to_the_defaults() {
    use clap::CommandFactory;
    let text = blocklab_proto::config::default_config(
        &Cli::command()
            .find_subcommand("serve")
            .expect("serve")
            .clone(),
    );
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("blocklab-worker.toml");
    std::fs::write(&path, &text).expect("write");
    let argv = |extra: &[&str]| -> Vec<std::ffi::OsString> {
        ["blocklab-worker", "serve"]
            .iter()
            .chain(extra)
            .map(Into::into)
            .collect()
    };
    let with: Cli = blocklab_proto::config::parse_with_config(
        argv(&["--config", path.to_str().expect("utf-8")]),
        Some("serve"),
    )
    .expect("default config parses");
    let without: Cli =
        blocklab_proto::config::parse_with_config(argv(&[]), Some("serve")).expect("no config");
    let strip = |s: String| s.replace(&format!("Some({:?})", path), "None");
    assert_eq!(strip(format!("{with:?}")), format!("{without:?}"));
    std::fs::write(&path, "no_such_key = 1\n").expect("write");
    let e = blocklab_proto::config::parse_with_config::<Cli>(
        argv(&["--config", path.to_str().expect("utf-8")]),
        Some("serve"),
    )
    .expect_err("unknown key")
    .to_string();
    assert!(e.contains("unknown key `no_such_key`"), "{e}");
}
