//! The examples `blocklab <command> --help` ends with.

pub const SUBMIT_EXAMPLES: &str = "Examples:\n  blocklab submit deploy/specs/demo.toml --dry-run\n  blocklab submit deploy/specs/demo.toml --watch\n  job=$(blocklab submit spec.toml)   (the job id alone on stdout)\n  BLOCKLAB_COORDINATOR=lab1:7400 blocklab submit spec.toml";
pub const JOBS_EXAMPLES: &str = "Examples:\n  blocklab jobs\n  blocklab jobs --format json\n  blocklab --coordinator lab1:7400 --token-file ~/.blocklab-token jobs";
pub const JOB_EXAMPLES: &str =
    "Examples:\n  blocklab job 6f1c\n  blocklab job 6f1c --wide\n  blocklab job 6f1c --run 3";
pub const HOSTS_EXAMPLES: &str =
    "Examples:\n  blocklab hosts\n  blocklab hosts --format csv\n  blocklab hosts --facts";
pub const BUILDS_EXAMPLES: &str =
    "Examples:\n  blocklab builds\n  blocklab builds --format markdown";
pub const WATCH_EXAMPLES: &str = "Examples:\n  blocklab watch 6f1c\n  blocklab watch 6f1c | tee watch.log   (plain lines when not a terminal)";
pub const RERUN_EXAMPLES: &str = "Examples:\n  blocklab rerun 6f1c\n  blocklab rerun 6f1c --same-seed\n  new=$(blocklab rerun 6f1c) && blocklab compare 6f1c \"$new\"";
pub const CANCEL_EXAMPLES: &str = "Examples:\n  blocklab cancel 6f1c";
pub const PLOT_EXAMPLES: &str = "Examples:\n  blocklab plot 6f1c --out charts/\n  blocklab plot 6f1c --metric latency_p99_ms --out charts/";
pub const REPORT_EXAMPLES: &str = "Examples:\n  blocklab report 6f1c\n  blocklab report 6f1c --metric latency_p99_ms --out report.html";
pub const RESULTS_EXAMPLES: &str = "Examples:\n  blocklab results 6f1c\n  blocklab results 6f1c --wide\n  blocklab results 6f1c --metric latency_p99_ms --format csv > p99.csv\n  blocklab results 6f1c --metric new_order.p90_ms   (a TPC-C-like job's metric)";
pub const COMPARE_EXAMPLES: &str =
    "Examples:\n  blocklab compare 6f1c 9a2b\n  blocklab compare 6f1c 9a2b --format markdown";
pub const EXPORT_EXAMPLES: &str = "Examples:\n  blocklab export 6f1c > job.json\n  blocklab export 6f1c --no-samples | jq '.runs[] | {sequence, state}'";
pub const COMPLETIONS_EXAMPLES: &str = "Examples:\n  blocklab completions bash > /etc/bash_completion.d/blocklab\n  blocklab completions zsh > ~/.zfunc/_blocklab\n  blocklab completions fish > ~/.config/fish/completions/blocklab.fish";
pub const BISECT_EXAMPLES: &str = "Examples:\n  blocklab bisect 6f1c --between p04 p05\n  blocklab bisect 6f1c --between p00-1a2b3c4d5e p08 --cell \"wal=4K c=1 vs wal=8K c=1\"";
