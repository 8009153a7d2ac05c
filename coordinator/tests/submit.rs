//! Bad specs sent over gRPC are refused with InvalidArgument naming the field, and the
//! catalog is byte-for-byte unchanged afterwards; a good spec is stored whole.

use std::time::Duration;

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, QueryResultsRequest, SubmitJobRequest};

const GOOD: &str = r#"
name = "submit-test"
repetitions = 3
[source]
tarball = "/nonexistent/postgresql.tar.bz2"
[matrix]
block_size_kb = [8, 16]
clients = [2]
[workload]
duration = "1s"
"#;

async fn start() -> (
    ControlClient<tonic::transport::Channel>,
    tempfile::TempDir,
    tokio::sync::oneshot::Sender<()>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let config = blocklab_coordinator::CoordinatorConfig::new(dir.path().join("catalog.db"));
    tokio::spawn(async move {
        blocklab_coordinator::serve(config, listener, async {
            let _ = stop_rx.await;
        })
        .await
        .expect("serve");
    });
    let url = format!("http://{addr}");
    for _ in 0..50 {
        if let Ok(mut c) = ControlClient::connect(url.clone()).await
            && c.list_jobs(blocklab_proto::v1::ListJobsRequest {})
                .await
                .is_ok()
        {
            return (c, dir, stop_tx);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("coordinator did not come up");
}

fn counts(db: &std::path::Path) -> Vec<i64> {
    let conn = std::process::Command::new("sqlite3")
        .arg(db)
        .arg("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM cells), (SELECT count(*) FROM runs), (SELECT count(*) FROM results);")
        .output()
        .expect("sqlite3 is installed");
    String::from_utf8_lossy(&conn.stdout)
        .trim()
        .split('|')
        .map(|v| v.parse().expect("count"))
        .collect()
}

#[tokio::test]
async fn bad_specs_are_refused_and_nothing_is_stored() {
    let (mut client, dir, _stop) = start().await;
    let db = dir.path().join("catalog.db");
    let before = counts(&db);
    assert_eq!(before, vec![0, 0, 0, 0]);
    let cases = [
        (
            GOOD.replace("clients = [2]", "clients = [2]\ncolour = \"red\""),
            "matrix.colour",
        ),
        (
            GOOD.replace("[8, 16]", "[8, 12]"),
            "matrix.block_size_kb[1]",
        ),
        (
            GOOD.replace("clients = [2]", "clients = [2]\nwal_block_size_kb = [128]"),
            "matrix.wal_block_size_kb[0]",
        ),
        (
            GOOD.replace("clients = [2]", "clients = [0]"),
            "matrix.clients[0]",
        ),
        (GOOD.replace("\"1s\"", "\"soon\""), "workload.duration"),
        (
            GOOD.replace("[source]", "[source]\nconfigure = [\"--with-x; reboot\"]"),
            "source.configure[0]",
        ),
        ("not toml at all [".to_string(), "spec"),
    ];
    for (text, field) in &cases {
        let err = client
            .submit_job(SubmitJobRequest {
                spec_toml: text.clone(),
                ..Default::default()
            })
            .await
            .expect_err("must be refused");
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{field}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")),
            "message names {field}: {}",
            err.message()
        );
    }
    assert_eq!(counts(&db), before, "nothing stored after bad specs");

    // Files: named but not sent, sent but not named, a script that does not parse.
    let scripted = GOOD.replace(
        "duration = \"1s\"",
        "duration = \"1s\"\nscripts = [{ file = \"mine.sql\" }]",
    );
    let file_cases = [
        (
            scripted.as_str(),
            vec![],
            "workload.scripts[0].file",
            "not sent",
        ),
        (GOOD, vec![("extra.sql", "SELECT 1;")], "files", "extra.sql"),
        (
            scripted.as_str(),
            vec![("mine.sql", "SELECT 1;\n\\set x random(1,\n")],
            "workload.scripts[0].file",
            "mine.sql:2:",
        ),
    ];
    for (text, files, field, words) in file_cases {
        let err = client
            .submit_job(SubmitJobRequest {
                spec_toml: text.to_string(),
                files: files
                    .into_iter()
                    .map(|(k, v): (&str, &str)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .await
            .expect_err("must be refused");
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{field}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")) && err.message().contains(words),
            "message names {field} and {words}: {}",
            err.message()
        );
    }
    assert_eq!(counts(&db), before, "nothing stored after bad files");
    assert_eq!(scripts_stored(&db), 0);

    // A bad job id is a clear error too.
    let err = client
        .get_job(GetJobRequest {
            job_id: "x'; drop table jobs;--".into(),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let err = client
        .get_job(GetJobRequest {
            job_id: uuid_like(),
            ..Default::default()
        })
        .await
        .expect_err("not found");
    assert_eq!(err.code(), tonic::Code::NotFound);

    // The coordinator is still up and stores a good spec whole: 2 cells x 3 repetitions.
    let ok = client
        .submit_job(SubmitJobRequest {
            spec_toml: GOOD.to_string(),
            ..Default::default()
        })
        .await
        .expect("accepted")
        .into_inner();
    assert_eq!((ok.cells, ok.runs), (2, 6));
    let c = counts(&db);
    assert_eq!(&c[..3], &[1, 2, 6]);
    let job = client
        .get_job(GetJobRequest {
            job_id: ok.job_id.clone(),
            ..Default::default()
        })
        .await
        .expect("job")
        .into_inner();
    let seq: Vec<(u32, u32)> = job
        .runs
        .iter()
        .map(|r| (r.cell_index, r.repetition))
        .collect();
    assert_eq!(
        seq,
        vec![(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)],
        "interleaved order is stored"
    );
    let results = client
        .query_results(QueryResultsRequest {
            job_id: ok.job_id,
            ..Default::default()
        })
        .await
        .expect("results")
        .into_inner();
    assert_eq!(results.cells.len(), 2);
    assert!(results.cells[0].is_baseline);
    assert_eq!(results.cells[1].runs_ok, 0);
}

fn scripts_stored(db: &std::path::Path) -> i64 {
    let out = std::process::Command::new("sqlite3")
        .arg(db)
        .arg("SELECT count(*) FROM job_scripts;")
        .output()
        .expect("sqlite3 is installed");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("count")
}

fn uuid_like() -> String {
    "00000000-0000-4000-8000-000000000000".to_string()
}

#[tokio::test]
async fn a_shuffled_job_stores_its_seed_and_order() {
    let (mut client, dir, _stop) = start().await;
    let text = GOOD.replace("repetitions = 3", "repetitions = 4\norder = \"shuffled\"");
    let ok = client
        .submit_job(SubmitJobRequest {
            spec_toml: text.clone(),
            ..Default::default()
        })
        .await
        .expect("accepted")
        .into_inner();
    let out = std::process::Command::new("sqlite3")
        .arg(dir.path().join("catalog.db"))
        .arg(format!(
            "SELECT seed, run_order FROM jobs WHERE job_id = '{}';",
            ok.job_id
        ))
        .output()
        .expect("sqlite3");
    let row = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (seed, order) = row.split_once('|').expect("seed|order");
    let seed: u64 = seed.parse().expect("a seed is stored");
    assert_eq!(order, format!("shuffled(seed={seed})"));
    // The stored run order is the one the seed reproduces.
    let plan = blocklab_spec::Spec::parse_with_seed(&text, Some(seed))
        .expect("valid")
        .plan();
    let job = client
        .get_job(GetJobRequest {
            job_id: ok.job_id,
            ..Default::default()
        })
        .await
        .expect("job")
        .into_inner();
    let stored: Vec<(u32, u32)> = job
        .runs
        .iter()
        .map(|r| (r.cell_index, r.repetition))
        .collect();
    let planned: Vec<(u32, u32)> = plan
        .runs
        .iter()
        .map(|r| (r.cell_index, r.repetition))
        .collect();
    assert_eq!(stored, planned);
    let interleaved: Vec<(u32, u32)> = (0..4).flat_map(|r| (0..2).map(move |c| (c, r))).collect();
    assert_ne!(
        stored, interleaved,
        "8 runs shuffled are (almost surely) not interleaved"
    );
}

/// Axis lengths whose product is far beyond the cell limit are refused by checked
/// arithmetic, off the async threads: the coordinator answers and stays up.
#[tokio::test]
async fn a_matrix_beyond_the_limits_is_refused_and_the_coordinator_stays_up() {
    let (mut client, dir, _stop) = start().await;
    let db = dir.path().join("catalog.db");
    let list = |n: u32| {
        let v: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        format!("[{}]", v.join(","))
    };
    let variants: String = (0..400)
        .map(|i| format!("[settings_variants.v{i}]\nwork_mem = \"{}MB\"\n", i + 1))
        .collect();
    let huge = format!(
        "{}\n{variants}",
        GOOD.replace(
            "clients = [2]",
            &format!("clients = {}\nscale = {}", list(10_000), list(20_000)),
        )
    );
    let started = std::time::Instant::now();
    let err = client
        .submit_job(SubmitJobRequest {
            spec_toml: huge,
            ..Default::default()
        })
        .await
        .expect_err("must be refused");
    eprintln!("refused in {:?}", started.elapsed());
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(
        err.message(),
        "matrix: 400 settings variants x 2 block_size_kb x 10000 clients x 20000 scale make \
         more than 10000 cells"
    );
    assert_eq!(counts(&db), vec![0, 0, 0, 0]);
    let ok = client
        .submit_job(SubmitJobRequest {
            spec_toml: GOOD.to_string(),
            ..Default::default()
        })
        .await
        .expect("the coordinator still takes jobs")
        .into_inner();
    assert_eq!((ok.cells, ok.runs), (2, 6));
}
