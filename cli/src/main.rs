//! `blocklab`: submit experiments and read their results.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use blocklab_cli::help::*;
use blocklab_cli::{commands as cli, listings};
use blocklab_daemon::security::{API_TOKEN_ENV, ClientAuth, ClientTls, resolve_token};
use blocklab_proto::v1::*;
use blocklab_report as report;
use blocklab_spec::{JobSpec, JobState};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "blocklab",
    version,
    about = "Run PostgreSQL page-size experiments and read their results"
)]
struct Args {
    /// Coordinator address (host:port or URL); several separated by commas when coordinators
    /// share a catalog (the leader is found among them).
    #[arg(long, global = true, env = "BLOCKLAB_COORDINATOR", default_value = blocklab_daemon::DEFAULT_COORDINATOR)]
    coordinator: String,
    /// CA certificate (PEM) to verify the coordinator's TLS certificate; turns on https.
    #[arg(long, global = true, env = "BLOCKLAB_CA_CERT")]
    ca_cert: Option<PathBuf>,
    /// File holding the API token (else the BLOCKLAB_TOKEN variable, if set).
    #[arg(long, global = true, env = "BLOCKLAB_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a spec and submit it as a job (or only print the plan with --dry-run).
    #[command(after_help = SUBMIT_EXAMPLES)]
    Submit {
        /// The spec file. The script and init SQL files it names (workload.scripts[].file,
        /// [workload.init] sql) are read relative to its directory, checked and sent with it.
        spec: PathBuf,
        /// Validate and print the cells and runs without contacting the coordinator.
        #[arg(long)]
        dry_run: bool,
        /// Follow the job until it finishes, then print its results.
        #[arg(long)]
        watch: bool,
    },
    /// List jobs.
    #[command(after_help = JOBS_EXAMPLES)]
    Jobs {
        #[command(flatten)]
        list: ListOpts,
    },
    /// Show a job and its runs (state, stage, failure reason); --run N details one run.
    #[command(after_help = JOB_EXAMPLES)]
    Job {
        #[command(flatten)]
        job: JobArg,
        /// Run number, from 1 (the `#` of the runs table), to show in detail: server
        /// statistics, settings, suspect reasons, schedule lag, late and skipped counts, the
        /// random seed and per-statement latencies.
        #[arg(long)]
        run: Option<u32>,
        /// Every column of the runs table, as wide as they take; without it the table fits the
        /// terminal (100 columns when piped) and errors are listed under it.
        #[arg(long)]
        wide: bool,
    },
    /// List agents and workers, up or down.
    #[command(after_help = HOSTS_EXAMPLES)]
    Hosts {
        /// Also print every host's facts (CPU, memory, OS, kernel, filesystems, compiler).
        #[arg(long)]
        facts: bool,
        #[command(flatten)]
        list: ListOpts,
    },
    /// List the PostgreSQL builds cached on every attached agent.
    #[command(after_help = BUILDS_EXAMPLES)]
    Builds {
        #[command(flatten)]
        list: ListOpts,
    },
    /// Follow a job until it finishes.
    #[command(after_help = WATCH_EXAMPLES)]
    Watch {
        #[command(flatten)]
        job: JobArg,
    },
    /// Cancel a job: its load and servers stop within seconds, its runs are marked cancelled.
    #[command(after_help = CANCEL_EXAMPLES)]
    Cancel {
        #[command(flatten)]
        job: JobArg,
    },
    /// Submit a job's stored spec and files again (a reproduction); prints the new job id.
    #[command(after_help = RERUN_EXAMPLES)]
    Rerun {
        #[command(flatten)]
        job: JobArg,
        /// Keep the job's run-order and pgbench random seeds (default: new ones).
        #[arg(long)]
        same_seed: bool,
    },
    /// One row per cell: n, mean, 95% CI, % change vs the baseline with its CI, verdict, MDE.
    ///
    /// The table fits the terminal; --wide adds the proven block sizes, stddev, CV, the
    /// model, p-, q- and TOST q-values, rounds to equivalence, what the cell is compared on
    /// and its suspect runs.
    #[command(after_help = RESULTS_EXAMPLES, after_long_help = RESULTS_LONG_HELP)]
    Results {
        #[command(flatten)]
        job: JobArg,
        #[command(flatten)]
        opts: TableOpts,
        /// Also list the statements of pgbench's builtin scripts in the per-statement table
        /// (by default it lists only those of the job's own script files).
        #[arg(long)]
        statements: bool,
    },
    /// The first commit at which a series' effect changed: measures the commits between two
    /// of its points (each step a job of its own), halving the range each time.
    #[command(after_help = BISECT_EXAMPLES)]
    Bisect {
        #[command(flatten)]
        job: JobArg,
        /// The two points (names as in the spec or `results`, or their commits' starts).
        #[arg(long, num_args = 2, value_names = ["A", "B"], required = true)]
        between: Vec<String>,
        /// The comparison to follow, as `results`' series lines name it (default: the first).
        #[arg(long)]
        cell: Option<String>,
    },
    /// Compare like cells of two jobs (same page sizes, clients and varied dimensions):
    /// A's cell is the baseline, B's the treatment, with the same statistics as `results`.
    #[command(after_help = COMPARE_EXAMPLES, after_long_help = COMPARE_LONG_HELP)]
    Compare {
        /// The baseline job: its id or its start, as for `results`.
        job_a: String,
        /// The treatment job: its id or its start.
        job_b: String,
        #[command(flatten)]
        opts: TableOpts,
    },
    /// Write SVG charts: the metric against page size with 95% CI error bars, and per-second
    /// tps traces of every run of each cell.
    #[command(after_help = PLOT_EXAMPLES)]
    Plot {
        #[command(flatten)]
        job: JobArg,
        /// Directory for the SVG files (created if missing).
        #[arg(long, default_value = ".")]
        out: PathBuf,
        /// Metric to chart (as `results --metric`; default: the job's headline).
        #[arg(long, default_value = "", hide_default_value = true)]
        metric: String,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions { shell: clap_complete::Shell },
    /// Write one self-contained HTML report: summary, results, charts, host facts, builds,
    /// runs (order, start times, suspect reasons) and each run's effective settings.
    #[command(after_help = REPORT_EXAMPLES)]
    Report {
        #[command(flatten)]
        job: JobArg,
        /// Output file (default: blocklab-report-<job id>.html).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Metric to chart (as `results --metric`; default: the job's headline).
        #[arg(long, default_value = "", hide_default_value = true)]
        metric: String,
    },
    /// Print a job's export as one JSON document: the job, its spec, cells, runs (with their
    /// results, settings, server statistics and per-second samples), builds, hosts and the
    /// per-cell statistics of a metric.
    #[command(after_help = EXPORT_EXAMPLES)]
    Export {
        #[command(flatten)]
        job: JobArg,
        /// Metric of the per-cell statistics (as `results --metric`; default: the job's
        /// headline).
        #[arg(long, default_value = "", hide_default_value = true)]
        metric: String,
        /// Leave out the runs' per-second samples.
        #[arg(long)]
        no_samples: bool,
    },
}

macro_rules! results_help {
    () => {
        "Statistics: per cell over its runs, n, mean, sample stddev, CV = stddev/mean, the 95% CI \
of the mean (Student t, n-1 df) and its half-width in % of the mean. Against the baseline (the cell \
the plan names for it, shown under 'compared on'; for older jobs the cell with the baseline page \
sizes and the same clients and other dimensions): the % change as a ratio estimated on the log \
scale, 100·(exp(Δ)-1) with Δ = ln(level/baseline level), so no CI passes -100%, with its 95% CI and \
two-sided p-value; 'model' says how: 'rounds' (ln y ~ cell + round: in an interleaved or \
randomized-block job each round is a block, used when 2 rounds or more hold both cells), \
'rounds+hosts' (+ the database host), 'hosts' (ln y ~ cell + host) or 'welch' (Welch's test with the \
delta method, se of a log mean ≈ s/(√n·mean); sequential and shuffled jobs, and compare). Then the \
Benjamini-Hochberg q-value across the job's comparisons (every non-baseline cell x every metric with \
a verdict), and a TOST equivalence test of Δ against ln(1 ± band/100) (default band ±2% of the \
baseline) with its q-value. 'MDE (80%)': the smallest change the comparison finds with 80% power at \
alpha 0.05. 'rounds to equivalence' (inconclusive cells): the more rounds after which the 90% CI \
would fit in the band at the observed variance, or 'cannot' within the job's maximum repetitions \
(1000 without one). Verdict: 'equivalent' when the TOST q < 0.05 (the 90% CI of the change \
inside the band); else faster/slower (higher tps, NOTPM or tup/s, lower latency or seconds is \
faster) when q < 0.05 and the CI excludes 0; else 'inconclusive'. 'too few runs' when either side \
has fewer than 3 runs (below the n the lab has calibrated: the change, its CI and the MDE are shown, \
no verdict). 'insufficient data' when either \
side has fewer than 2 runs; 'identical, zero variance' or 'differs, zero variance' when neither \
side varies (no test); 'no verdict' for counts, shares, sizes and per-transaction costs (the change \
and its CI only). With a target CI (adaptive repetitions) each cell says 'target reached' or 'max \
repetitions reached'. With until = \"decided\" (rounds added until every compared cell is faster, \
slower or equivalent) the verdicts use a sequential boundary: Pocock-type with the Bonferroni bound, \
every look (after each round from min to max, K = max - min + 1 looks) compares the q-values and \
TOST q-values with 0.05 / K, so the chance that any look calls an unchanged cell faster or slower \
stays within 0.05 whatever the correlation between looks; each cell says 'sequential: decided at \
round N', 'sequential: undecided, max repetitions reached (N)' or 'sequential: undecided at round N'.

Suspect runs: a run is suspect when the coordinator flagged it (a checkpoint in the measured \
window, client CPU saturated, errors). By default every completed run enters its cell's \
statistics; suspect runs are shown with their reasons and counted per cell. When the job excludes \
them (the spec's suspect_runs = \"exclude\"), they are left out, unless that would leave the cell with \
fewer than 2 runs (then all are used, marked \"included\"), and 'all runs' columns show the \
statistics over every completed run beside them."
    };
}

macro_rules! layout_help {
    () => {
        "Layout: the table fits the width of the terminal (COLUMNS when it is set; 100 columns \
when stdout is not a terminal): cell, n/runs, mean, 95% CI, the change against the baseline with \
its 95% CI, verdict and MDE. When they do not fit, it leaves out the 95% CI of the mean, then the \
MDE, n/runs, the change's interval and the mean, in that order, and says which; the cell and the \
verdict always stay, and the notes wrap at the width. The per-metric table shows each cell's mean, \
change and verdict, with the cells that do not fit in a further table below. --wide prints every \
column (all the statistics above), as wide as they take."
    };
}

const RESULTS_LONG_HELP: &str = concat!(
    results_help!(),
    "\n\n",
    layout_help!(),
    " The per-statement table (own workload) lists the statements of the job's own script \
files; --statements adds those of pgbench's builtin scripts (tpcb-like, simple-update, \
select-only), whose \\set lines take no time. csv and json always carry every column and \
statement.",
    "\n\nExamples:\n  blocklab results 6f1c\n  blocklab results 6f1c --wide\n  blocklab results 6f1c --metric latency_p99_ms --format csv > p99.csv\n  blocklab results 6f1c --metric new_order.p90_ms   (a TPC-C-like job's metric)"
);
const COMPARE_LONG_HELP: &str = concat!(
    results_help!(),
    "\n\n",
    layout_help!(),
    "\n\nExamples:\n  blocklab compare 6f1c 9a2b\n  blocklab compare 6f1c 9a2b --format markdown"
);

#[derive(clap::Args)]
struct JobArg {
    /// The job's id, or its start (4 characters or more) if no other job's id begins so.
    job_id: String,
}

#[derive(clap::Args)]
struct ListOpts {
    /// Output format.
    #[arg(long, default_value = "table", value_parser = blocklab_report::render::FORMATS)]
    format: String,
}

#[derive(clap::Args)]
struct TableOpts {
    /// Metric to summarise: tps, tps_incl_conn, latency_avg_ms, latency_p50_ms,
    /// latency_p90_ms, latency_p99_ms, latency_p999_ms, latency_max_ms, or a workload metric
    /// of the job (notpm, new_order.p90_ms, q.sel_1_cl, mixed_ir.tup_per_s, maint.restore,
    /// ...). Default: the job's headline (tps; NOTPM for tpcc; tup/s for as3ap; total seconds
    /// for maintenance).
    #[arg(long, default_value = "", hide_default_value = true)]
    metric: String,
    #[arg(long, default_value = "table", value_parser = blocklab_report::render::FORMATS)]
    format: String,
    /// Every column, as wide as it takes (the table format). Without it the table fits the
    /// terminal's width (COLUMNS when set; 100 columns when stdout is not a terminal),
    /// leaving out the 95% CI of the mean, then the MDE, n/runs, the change's interval and the
    /// mean as the width requires, and the notes wrap at that width.
    #[arg(long)]
    wide: bool,
}

/// `print!` through `blocklab_cli::terminal::out`: a reader that has gone is returned as an error.
macro_rules! out {
    ($($t:tt)*) => { blocklab_cli::terminal::out(format_args!($($t)*))? };
}

/// `println!` through `blocklab_cli::terminal::out`.
macro_rules! outln {
    ($($t:tt)*) => { blocklab_cli::terminal::out(format_args!("{}\n", format_args!($($t)*)))? };
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(code) => code,
        // The reader of stdout has gone (`blocklab ... | head`): end as a shell's pipeline
        // member killed by SIGPIPE does, without a word.
        Err(e) if blocklab_cli::terminal::is_broken_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let addr = args.coordinator;
    // The CA and the token are read only by commands that contact the coordinator.
    let (ca_cert, token_file) = (args.ca_cert, args.token_file);
    let connect = async || -> anyhow::Result<ControlClient> {
        let auth = client_auth(ca_cert.as_deref(), token_file.as_deref())?;
        Ok(cli::connect(&addr, &auth).await?)
    };
    match args.command {
        Command::Submit {
            spec,
            dry_run,
            watch,
        } => {
            let loaded = cli::load_spec(&spec)?;
            if dry_run {
                out!("{}", cli::render_job_plan(&loaded.spec));
                if let JobSpec::Benchmark(spec) = &loaded.spec
                    && spec.adaptive.is_some_and(|a| a.budget.is_some())
                {
                    // Only a budget asks the coordinator: for earlier jobs like this one.
                    let history = async {
                        let mut client = connect().await.map_err(|e| e.to_string())?;
                        let earlier = cli::earlier_like(&mut client, spec)
                            .await
                            .map_err(|e| e.to_string())?;
                        Ok(report::pilot::history(spec, &earlier))
                    };
                    let history = tokio::time::timeout(Duration::from_secs(10), history)
                        .await
                        .unwrap_or_else(|_| Err(format!("no answer from {addr} in 10s")));
                    out!("{}", cli::render_history(spec, history));
                }
                return Ok(ExitCode::SUCCESS);
            }
            let mut client = connect().await?;
            let r = cli::answer(
                client
                    .submit_job(SubmitJobRequest {
                        spec_toml: loaded.text,
                        files: loaded.files.into_iter().collect(),
                    })
                    .await,
            )?;
            // The id alone on stdout (`job=$(blocklab submit spec.toml)`), the sentence on stderr.
            outln!("{}", r.job_id);
            eprintln!(
                "submitted job {} ({} cells, {} runs)",
                r.job_id, r.cells, r.runs
            );
            if watch {
                return finish_watch(&mut client, &r.job_id).await;
            }
        }
        Command::Jobs { list } => {
            let format = cli::Format::parse(&list.format)?;
            let mut client = connect().await?;
            let r = cli::answer(client.list_jobs(ListJobsRequest {}).await)?;
            out!("{}", listings::render(&cli::jobs_table(&r.jobs), format));
        }
        Command::Job {
            job: JobArg { job_id },
            run,
            wide,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let width = (!wide).then(blocklab_cli::terminal::width);
            outln!("{}", cli::show_job(&mut client, &job_id, run, width).await?);
        }
        Command::Hosts { facts, list } => {
            let format = cli::Format::parse(&list.format)?;
            if facts && list.format != "table" {
                anyhow::bail!("--facts prints a table of its own; use it with --format table");
            }
            let mut client = connect().await?;
            let r = cli::answer(client.list_hosts(ListHostsRequest {}).await)?;
            out!("{}", listings::render(&cli::hosts_table(&r.hosts), format));
            if facts {
                outln!("{}", cli::render_host_facts(&r.hosts));
            }
        }
        Command::Builds { list } => {
            let format = cli::Format::parse(&list.format)?;
            let mut client = connect().await?;
            let r = cli::answer(client.list_builds(ListBuildsRequest {}).await)?;
            out!(
                "{}",
                listings::render(&cli::builds_table(&r.builds), format)
            );
        }
        Command::Cancel {
            job: JobArg { job_id },
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let request = CancelJobRequest {
                job_id: job_id.clone(),
            };
            let r = cli::answer(client.cancel_job(request).await)?;
            outln!(
                "job {job_id}: {} ({} queued runs cancelled)",
                r.state,
                r.runs_cancelled
            );
        }
        Command::Rerun {
            job: JobArg { job_id },
            same_seed,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let request = RerunJobRequest {
                job_id: job_id.clone(),
                same_seed,
            };
            let r = cli::answer(client.rerun_job(request).await)?;
            outln!("{}", r.job_id);
            eprintln!(
                "submitted job {} (rerun of {job_id}): {} cells, {} runs",
                r.job_id, r.cells, r.runs
            );
        }
        Command::Completions { shell } => {
            let mut cmd = <Args as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "blocklab", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
        }
        Command::Watch {
            job: JobArg { job_id },
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            return finish_watch(&mut client, &job_id).await;
        }
        Command::Results {
            job: JobArg { job_id },
            opts,
            statements,
        } => {
            let format = cli::Format::parse(&opts.format)?;
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            if let Some(probe) = cli::probe_results_if_probe(&mut client, &job_id, format).await? {
                outln!("{probe}");
                return Ok(ExitCode::SUCCESS);
            }
            let request = QueryResultsRequest {
                job_id,
                metric: opts.metric,
            };
            let r = cli::answer(client.query_results(request).await)?.into();
            let view = blocklab_cli::terminal::view(opts.wide, statements);
            out!("{}", cli::render_results_view(&r, format, view));
        }
        Command::Bisect {
            job: JobArg { job_id },
            between,
            cell,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let ends = [between[0].as_str(), between[1].as_str()];
            let b = cli::bisect(
                &mut client,
                &job_id,
                ends,
                cell.as_deref(),
                std::io::stderr(),
            )
            .await?;
            out!("{}", cli::render_bisection(&b));
        }
        Command::Compare { job_a, job_b, opts } => {
            let format = cli::Format::parse(&opts.format)?;
            let mut client = connect().await?;
            let [job_a, job_b] = cli::resolve_job_ids(&mut client, [&job_a, &job_b]).await?;
            let request = CompareJobsRequest {
                job_a,
                job_b,
                metric: opts.metric,
            };
            let r = cli::answer(client.compare_jobs(request).await)?.into();
            let view = blocklab_cli::terminal::view(opts.wide, false);
            out!("{}", cli::render_compare_view(&r, format, view));
        }
        Command::Plot {
            job: JobArg { job_id },
            out,
            metric,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            std::fs::create_dir_all(&out)
                .with_context(|| format!("--out: cannot create {}", out.display()))?;
            let charts = match cli::probe_job(&mut client, &job_id).await? {
                Some(probe) => report::plot::probe_charts(&probe.into()),
                None => report::plot::charts(
                    &cli::job_export(&mut client, &job_id, &metric, true).await?,
                ),
            };
            for chart in charts {
                let path = out.join(&chart.file_name);
                std::fs::write(&path, &chart.svg)
                    .with_context(|| format!("--out: cannot write {}", path.display()))?;
                outln!("{}", path.display());
            }
        }
        Command::Report {
            job: JobArg { job_id },
            out,
            metric,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("blocklab-report-{job_id}.html")));
            let export = cli::job_export(&mut client, &job_id, &metric, true).await?;
            std::fs::write(&out, report::html::report(&export))
                .with_context(|| format!("--out: cannot write {}", out.display()))?;
            outln!("{}", out.display());
        }
        Command::Export {
            job: JobArg { job_id },
            metric,
            no_samples,
        } => {
            let mut client = connect().await?;
            let job_id = cli::resolve_job_id(&mut client, &job_id).await?;
            let export = cli::job_export(&mut client, &job_id, &metric, !no_samples).await?;
            outln!("{}", cli::export_json(&export));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Follows a job (a bar on a terminal, plain lines for pipes and logs), then prints its
/// results; a job that had already finished gets only its final state line. Exits 0 when the
/// job is done, 2 when it ended otherwise.
async fn finish_watch(client: &mut ControlClient, job_id: &str) -> anyhow::Result<ExitCode> {
    let bar = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let watched = cli::watch_job(client, job_id, bar, std::io::stdout()).await?;
    let already = matches!(watched, cli::Watched::AlreadyFinished(_));
    // The job's state, parsed from the wire once.
    let done = watched
        .last()
        .is_some_and(|j| j.state.parse::<JobState>().ok() == Some(JobState::Done));
    let code = ExitCode::from(if done { 0 } else { 2 });
    if already {
        return Ok(code);
    }
    if let Some(probe) = cli::probe_results_if_probe(client, job_id, cli::Format::Table).await? {
        outln!("{probe}");
        return Ok(code);
    }
    let request = QueryResultsRequest {
        job_id: job_id.to_string(),
        ..Default::default()
    };
    let r = cli::answer(client.query_results(request).await)?.into();
    let view = blocklab_cli::terminal::view(false, false);
    out!("{}", cli::render_results_view(&r, cli::Format::Table, view));
    Ok(code)
}

type ControlClient = cli::Client;

/// `--ca-cert` / `BLOCKLAB_CA_CERT` and the API token (`--token-file` or `BLOCKLAB_TOKEN`).
fn client_auth(
    ca_cert: Option<&std::path::Path>,
    token_file: Option<&std::path::Path>,
) -> anyhow::Result<ClientAuth> {
    Ok(ClientAuth {
        tls: ca_cert
            .map(|p| ClientTls::from_ca_file("--ca-cert", p))
            .transpose()?,
        token: resolve_token("--token-file", token_file, API_TOKEN_ENV)?,
    })
}
