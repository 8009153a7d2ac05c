//! `blocklab`: submit experiments and read their results.

use std::path::PathBuf;
use std::process::ExitCode;

use blocklab_coordinator::cli;
use blocklab_proto::v1::*;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "blocklab",
    version,
    about = "Run PostgreSQL page-size experiments and read their results"
)]
struct Args {
    /// Coordinator address (host:port or URL).
    #[arg(long, global = true, env = "BLOCKLAB_COORDINATOR", default_value = blocklab_proto::DEFAULT_COORDINATOR)]
    coordinator: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a spec and submit it as a job (or only print the plan with --dry-run).
    Submit {
        spec: PathBuf,
        /// Validate and print the cells and runs without contacting the coordinator.
        #[arg(long)]
        dry_run: bool,
        /// Follow the job until it finishes, then print its results.
        #[arg(long)]
        watch: bool,
    },
    /// List jobs.
    Jobs,
    /// Show a job and its runs (state, stage, failure reason); --run N details one run.
    Job {
        job_id: String,
        /// Run number (as listed) to show in detail: server statistics, settings, suspect reasons.
        #[arg(long)]
        run: Option<u32>,
    },
    /// List agents and workers, up or down.
    Hosts {
        /// Also print every host's facts (CPU, memory, OS, kernel, filesystems, compiler).
        #[arg(long)]
        facts: bool,
    },
    /// List the PostgreSQL builds cached on every attached agent.
    Builds,
    /// Follow a job until it finishes.
    Watch { job_id: String },
    /// Cancel a job: its load and servers stop within seconds, its runs are marked cancelled.
    Cancel { job_id: String },
    /// One row per cell: proven block sizes, mean tps, % change vs the baseline.
    Results {
        job_id: String,
        #[arg(long, default_value = "table", value_parser = ["table", "csv"])]
        format: String,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let addr = args.coordinator;
    match args.command {
        Command::Submit {
            spec,
            dry_run,
            watch,
        } => {
            let (text, parsed) = cli::load_spec(&spec)?;
            if dry_run {
                print!("{}", cli::render_job_plan(&parsed));
                return Ok(ExitCode::SUCCESS);
            }
            let mut client = cli::connect(&addr).await?;
            let r = client
                .submit_job(SubmitJobRequest { spec_toml: text })
                .await?
                .into_inner();
            println!(
                "submitted job {} ({} cells, {} runs)",
                r.job_id, r.cells, r.runs
            );
            if watch {
                return finish_watch(&mut client, &r.job_id).await;
            }
        }
        Command::Jobs => {
            let mut client = cli::connect(&addr).await?;
            let r = client.list_jobs(ListJobsRequest {}).await?.into_inner();
            println!("{}", cli::render_jobs(&r.jobs));
        }
        Command::Job { job_id, run } => {
            let mut client = cli::connect(&addr).await?;
            let request = GetJobRequest {
                job_id,
                run: run.unwrap_or(0),
            };
            let r = client.get_job(request).await?.into_inner();
            match &r.run_detail {
                Some(d) => println!("{}", cli::render_run_detail(d)),
                None => println!("{}", cli::render_job(&r)),
            }
        }
        Command::Hosts { facts } => {
            let mut client = cli::connect(&addr).await?;
            let r = client.list_hosts(ListHostsRequest {}).await?.into_inner();
            println!("{}", cli::render_hosts(&r.hosts));
            if facts {
                println!("{}", cli::render_host_facts(&r.hosts));
            }
        }
        Command::Builds => {
            let mut client = cli::connect(&addr).await?;
            let r = client.list_builds(ListBuildsRequest {}).await?.into_inner();
            println!("{}", cli::render_builds(&r.builds));
        }
        Command::Cancel { job_id } => {
            let mut client = cli::connect(&addr).await?;
            let r = client
                .cancel_job(CancelJobRequest {
                    job_id: job_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "job {job_id}: {} ({} queued runs cancelled)",
                r.state, r.runs_cancelled
            );
        }
        Command::Watch { job_id } => {
            let mut client = cli::connect(&addr).await?;
            return finish_watch(&mut client, &job_id).await;
        }
        Command::Results { job_id, format } => {
            let mut client = cli::connect(&addr).await?;
            if let Some(probe) = cli::probe_results_if_probe(&mut client, &job_id).await? {
                println!("{probe}");
                return Ok(ExitCode::SUCCESS);
            }
            let r = client
                .query_results(QueryResultsRequest {
                    job_id,
                    ..Default::default()
                })
                .await?
                .into_inner();
            println!("{}", cli::render_results(&r, &format));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn finish_watch(client: &mut ControlClient, job_id: &str) -> anyhow::Result<ExitCode> {
    let last = cli::watch(client, job_id, std::io::stdout()).await?;
    if let Some(probe) = cli::probe_results_if_probe(client, job_id).await? {
        println!("{probe}");
        return Ok(if last.is_some_and(|j| j.state == "done") {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let r = client
        .query_results(QueryResultsRequest {
            job_id: job_id.to_string(),
            ..Default::default()
        })
        .await?
        .into_inner();
    println!("{}", cli::render_results(&r, "table"));
    Ok(match last {
        Some(j) if j.state == "done" => ExitCode::SUCCESS,
        _ => ExitCode::from(2),
    })
}

type ControlClient = control_client::ControlClient<tonic::transport::Channel>;
