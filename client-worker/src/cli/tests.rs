//! `blocklab-worker serve --config`: the default config parses back to the defaults.
use super::*;

#[test]
fn default_config_parses_back_to_the_defaults() {
    blocklab_daemon::config::check_default_config::<Cli>(
        &["blocklab-worker", "serve"],
        Some("serve"),
    )
    .expect("config round trip");
}
