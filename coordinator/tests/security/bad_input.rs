//! The table of malformed requests, sent over the authenticated TLS channel.

use super::*;

const GOOD: &str = r#"name = "security-test"
repetitions = 2
[source]
tarball = "/nonexistent/postgresql.tar.bz2"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
clients = [2]
[settings]
shared_buffers = "128MB"
[workload]
duration = "1s"
"#;

/// One bad request.
enum Bad {
    Submit(String),
    GetJob(String, u32),
    Cancel(String),
    Watch(String),
    Results(String, String),
    Export(String, String),
    Compare(String, String),
    Attach(Box<HostMessage>),
}

fn spec(from: &str, to: &str) -> Bad {
    assert!(GOOD.contains(from), "{from}");
    Bad::Submit(GOOD.replacen(from, to, 1))
}

fn hello_with(f: impl FnOnce(&mut Hello)) -> Bad {
    let mut h = Hello {
        host_id: "bad-host".into(),
        role: Role::Agent as i32,
        labels: vec![],
        version: "test".into(),
        address: "127.0.0.1".into(),
        facts_json: "{}".into(),
    };
    f(&mut h);
    Bad::Attach(Box::new(HostMessage {
        kind: Some(host_message::Kind::Hello(h)),
    }))
}

const INVALID: &[Code] = &[Code::InvalidArgument];
const TOO_BIG: &[Code] = &[Code::OutOfRange, Code::ResourceExhausted];

/// (what, request, accepted codes, text the message must contain: usually the field).
#[rustfmt::skip]
fn cases(job: &str) -> Vec<(&'static str, Bad, &'static [Code], &'static str)> {
    let j = || job.to_string();
    let padding = format!("{GOOD}\n# {}\n", "x".repeat(300 * 1024));
    let tar = "tarball = \"/nonexistent/postgresql.tar.bz2\"";
    let path = "/nonexistent/postgresql.tar.bz2";
    let sb = "shared_buffers = \"128MB\"";
    vec![
        ("repetitions of the wrong type", spec("repetitions = 2", "repetitions = \"five\""), INVALID, "repetitions"),
        ("repetitions = 10^12", spec("repetitions = 2", "repetitions = 1000000000000"), INVALID, "repetitions"),
        ("negative repetitions", spec("repetitions = 2", "repetitions = -1"), INVALID, "repetitions"),
        ("clients = [99999999]", spec("clients = [2]", "clients = [99999999]"), INVALID, "matrix.clients"),
        ("block sizes as a string", spec("[8, 16]", "\"16\""), INVALID, "matrix.block_size_kb"),
        ("a fractional block size", spec("[8, 16]", "[8, 16.5]"), INVALID, "matrix.block_size_kb"),
        ("a huge block size", spec("[8, 16]", "[8, 4294967296]"), INVALID, "matrix.block_size_kb"),
        ("duration as a number", spec("duration = \"1s\"", "duration = 1"), INVALID, "workload.duration"),
        ("a duration of 99999h", spec("\"1s\"", "\"99999h\""), INVALID, "workload.duration"),
        ("scale = 10^12", spec("duration = \"1s\"", "duration = \"1s\"\nscale = 1000000000000"), INVALID, "workload.scale"),
        ("an unknown workload kind", spec("duration = \"1s\"", "duration = \"1s\"\nkind = \"tpc-h\""), INVALID, "workload.kind"),
        ("a tpcc field on pgbench", spec("duration = \"1s\"", "duration = \"1s\"\nkeying_thinking = true"), INVALID, "workload.keying_thinking"),
        ("a tpcc time scale of -1", spec("duration = \"1s\"", "duration = \"1s\"\nkind = \"tpcc\"\ntime_scale = -1.0"), INVALID, "workload.time_scale"),
        ("an as3ap mix with a command", spec("duration = \"1s\"", "duration = \"1s\"\nkind = \"as3ap\"\nmixes = [\"mixed-ir; reboot\"]"), INVALID, "workload.mixes[0]"),
        ("a maintenance step that is SQL", spec("duration = \"1s\"", "duration = \"1s\"\nkind = \"maintenance\"\nsteps = [\"drop database x\"]"), INVALID, "workload.steps[0]"),
        ("maintenance at scale 10^6", spec("duration = \"1s\"", "duration = \"1s\"\nkind = \"maintenance\"\nscale = 1000000"), INVALID, "workload.scale"),
        ("an oversized spec (300 KiB)", Bad::Submit(padding), INVALID, "spec: "),
        ("an unknown key", spec("repetitions = 2", "repetitions = 2\ncolour = \"red\""), INVALID, "colour"),
        ("not TOML", Bad::Submit("\u{0}\u{1}[[[ binary".into()), INVALID, "spec"),
        ("arrays nested 100000 deep", Bad::Submit(format!("{GOOD}x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000))), INVALID, "recursion"),
        ("an empty spec", Bad::Submit(String::new()), INVALID, "name"),
        ("configure: --with-x; rm -rf /", spec("--without-icu", "--with-x; rm -rf /"), INVALID, "source.configure[0]"),
        ("configure: $(reboot)", spec("--without-icu", "$(reboot)"), INVALID, "source.configure[0]"),
        ("configure: backticks", spec("--without-icu", "--with-openssl=`id`"), INVALID, "source.configure[0]"),
        ("configure: a newline", spec("--without-icu", "--with-a\\n--with-b"), INVALID, "source.configure[0]"),
        ("configure: a 200 KiB flag", spec("--without-icu", &format!("--with-{}", "x".repeat(200 * 1024))), INVALID, "source.configure[0]"),
        ("configure: --prefix", spec("--without-icu", "--prefix=/etc"), INVALID, "source.configure[0]"),
        ("configure: --with-blocksize", spec("--without-icu", "--with-blocksize=64"), INVALID, "source.configure[0]"),
        ("a setting value breaking out of its quotes", spec("\"128MB\"", "\"1GB'\\nlisten_addresses='*\""), INVALID, "settings.shared_buffers"),
        ("a setting value of 200 KiB", spec("\"128MB\"", &format!("\"{}\"", "9".repeat(200 * 1024))), INVALID, "settings.shared_buffers"),
        ("a setting name with a space", spec(sb, "\"a b\" = \"1\""), INVALID, "settings.a b"),
        ("a setting name with a newline", spec(sb, "\"x\\ninclude\" = \"/etc/passwd\""), INVALID, "settings."),
        ("a setting that is a table", spec(sb, "shared_buffers = { a = 1 }"), INVALID, "settings.shared_buffers"),
        ("listen_addresses = '*'", spec(sb, "listen_addresses = \"*\""), INVALID, "settings.listen_addresses"),
        ("archive_command runs a shell", spec(sb, "archive_mode = \"on\"\narchive_command = \"rm -rf ~\""), INVALID, "settings.archive_command"),
        ("shared_preload_libraries loads code", spec(sb, "shared_preload_libraries = \"/tmp/evil\""), INVALID, "settings.shared_preload_libraries"),
        ("a tarball path with a shell command", spec(path, "/tmp/x; rm -rf /"), INVALID, "source.tarball"),
        ("a tarball path with $()", spec(path, "/tmp/$(reboot).tar.bz2"), INVALID, "source.tarball"),
        ("a relative tarball path climbing out", spec(path, "../../etc/shadow"), INVALID, "source.tarball"),
        ("a tarball path with ..", spec(path, "/var/cache/../../etc/shadow"), INVALID, "source.tarball"),
        ("a remote tar archive (host:path)", spec(path, "/evil:host/x.tar"), INVALID, "source.tarball"),
        ("a git URL that is an option", spec(tar, "git = \"--upload-pack=touch /tmp/pwned\"\nref = \"main\""), INVALID, "source.git"),
        ("a git ext:: transport", spec(tar, "git = \"ext::/tmp/evil\"\nref = \"main\""), INVALID, "source.git"),
        ("a git ref with a command", spec(tar, "git = \"https://git.example/pg.git\"\nref = \"main; reboot\""), INVALID, "source.ref"),
        ("a file:// source URL", spec(tar, "url = \"file:///etc/passwd\"\nsha256 = \"00\""), INVALID, "source."),
        ("a 5 MiB request", Bad::Submit("#".repeat(5 << 20)), TOO_BIG, "too large"),
        ("job id: SQL injection", Bad::GetJob("'; drop table jobs; --".into(), 0), INVALID, "job_id"),
        ("job id: a path", Bad::GetJob("../../etc/passwd".into(), 0), INVALID, "job_id"),
        ("job id: empty", Bad::GetJob(String::new(), 0), INVALID, "job_id"),
        ("job id: 1 MiB", Bad::GetJob("a".repeat(1 << 20), 0), INVALID, "job_id"),
        ("job id: unknown UUID", Bad::GetJob("00000000-0000-4000-8000-000000000000".into(), 0), &[Code::NotFound], "00000000-0000-4000-8000-000000000000"),
        ("run number out of range", Bad::GetJob(j(), 4_000_000_000), INVALID, "run"),
        ("cancel: SQL injection", Bad::Cancel("1 OR 1=1".into()), INVALID, "job_id"),
        ("watch: not a UUID", Bad::Watch("$(reboot)".into()), INVALID, "job_id"),
        ("results: an unknown metric", Bad::Results(j(), "tps; drop table results".into()), INVALID, "metric"),
        ("results: not a UUID", Bad::Results("x".into(), "tps".into()), INVALID, "job_id"),
        ("export: an unknown metric", Bad::Export(j(), "bogus_metric".into()), INVALID, "metric"),
        ("compare: job_a not a UUID", Bad::Compare("'--".into(), j()), INVALID, "job_a"),
        ("compare: job_b not a UUID, 1 MiB", Bad::Compare(j(), "%".repeat(1 << 20)), INVALID, "job_b"),
        ("fleet: first message not a hello", Bad::Attach(Box::new(HostMessage { kind: Some(host_message::Kind::Heartbeat(Heartbeat { sequence: 1, ..Default::default() })) })), INVALID, "hello"),
        ("fleet: no role", hello_with(|h| h.role = 0), INVALID, "hello.role"),
        ("fleet: an unknown role number", hello_with(|h| h.role = 99), INVALID, "hello.role"),
        ("fleet: a 1000-character host id", hello_with(|h| h.host_id = "h".repeat(1000)), INVALID, "hello.host_id"),
        ("fleet: an empty host id", hello_with(|h| h.host_id.clear()), INVALID, "hello.host_id"),
        ("fleet: an address with a command", hello_with(|h| h.address = "10.0.0.1; reboot".into()), INVALID, "hello.address"),
        ("fleet: facts that are not JSON", hello_with(|h| h.facts_json = "{\"cpus\": 2".into()), INVALID, "hello.facts_json"),
        ("fleet: facts that are a JSON string", hello_with(|h| h.facts_json = "\"cpus\"".into()), INVALID, "hello.facts_json"),
    ]
}

async fn send(lab: &Lab, c: &mut blocklab_cli::Client, bad: Bad) -> Result<(), tonic::Status> {
    match bad {
        Bad::Submit(spec_toml) => c
            .submit_job(SubmitJobRequest {
                spec_toml,
                ..Default::default()
            })
            .await
            .map(drop),
        Bad::GetJob(job_id, run) => c.get_job(GetJobRequest { job_id, run }).await.map(drop),
        Bad::Cancel(job_id) => c.cancel_job(CancelJobRequest { job_id }).await.map(drop),
        Bad::Watch(job_id) => {
            let mut s = c.watch_job(WatchJobRequest { job_id }).await?.into_inner();
            match s.next().await {
                Some(Err(e)) => Err(e),
                _ => Ok(()),
            }
        }
        Bad::Results(job_id, metric) => c
            .query_results(QueryResultsRequest { job_id, metric })
            .await
            .map(drop),
        Bad::Export(job_id, metric) => c
            .export_job(ExportJobRequest {
                job_id,
                metric,
                include_samples: true,
            })
            .await
            .map(drop),
        Bad::Compare(job_a, job_b) => c
            .compare_jobs(CompareJobsRequest {
                job_a,
                job_b,
                metric: "tps".into(),
            })
            .await
            .map(drop),
        Bad::Attach(first) => attach(lab, Some(FLEET_TOKEN), *first).await.map(drop),
    }
}

#[tokio::test]
async fn malformed_requests_get_clear_errors_and_change_nothing() {
    let lab = Lab::start().await;
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    let job = c
        .submit_job(SubmitJobRequest {
            spec_toml: GOOD.into(),
            ..Default::default()
        })
        .await
        .expect("the good spec is accepted")
        .into_inner()
        .job_id;
    let before = counts(&lab.catalog());
    assert_eq!(before, vec![1, 2, 4, 0], "jobs, cells, runs, hosts");

    let cases = cases(&job);
    let total = cases.len();
    let mut failures = Vec::new();
    for (what, bad, codes, needle) in cases {
        match send(&lab, &mut c, bad).await {
            Ok(()) => failures.push(format!("{what}: accepted")),
            Err(e) if !codes.contains(&e.code()) => {
                failures.push(format!("{what}: {:?} {}", e.code(), e.message()))
            }
            Err(e) if !e.message().contains(needle) => {
                failures.push(format!("{what}: message lacks {needle:?}: {}", e.message()))
            }
            Err(_) => {}
        }
        if let Err(e) = list(&mut c).await {
            panic!("the coordinator stopped answering after {what}: {e}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} bad inputs mishandled:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(counts(&lab.catalog()), before, "the catalog is unchanged");
    let stored = c
        .get_job(GetJobRequest {
            job_id: job.clone(),
            run: 0,
        })
        .await
        .expect("the good job")
        .into_inner();
    assert_eq!(stored.spec_toml, GOOD);
    println!("bad inputs tried: {total}; all refused with a clear error, catalog unchanged");
}
