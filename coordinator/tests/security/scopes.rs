//! Scoped API tokens: every Control RPC needs a scope (read ⊂ submit ⊂ admin); a token with
//! too small a scope gets PermissionDenied naming the scope needed, and the catalog does not
//! change.

use super::*;
use lab::{ADMIN_TOKEN, READ_TOKEN};

const SPEC: &str = r#"name = "scope-test"
repetitions = 1
[source]
tarball = "/nonexistent/postgresql.tar.bz2"
[matrix]
block_size_kb = [8]
clients = [1]
[workload]
duration = "1s"
"#;

fn submit_request() -> SubmitJobRequest {
    SubmitJobRequest {
        spec_toml: SPEC.into(),
        files: Default::default(),
    }
}

async fn job_state(c: &mut blocklab_cli::Client, job_id: &str) -> String {
    c.get_job(GetJobRequest {
        job_id: job_id.into(),
        run: 0,
    })
    .await
    .expect("get job")
    .into_inner()
    .job
    .expect("job")
    .state
}

#[tokio::test]
async fn a_read_token_reads_but_cannot_submit_or_cancel() {
    let lab = Lab::start().await;
    let mut submitter = lab.client(Some(API_TOKEN)).await.expect("connect");
    let job_id = submitter
        .submit_job(submit_request())
        .await
        .expect("an untagged token is a submit token")
        .into_inner()
        .job_id;
    let mut reader = lab.client(Some(READ_TOKEN)).await.expect("connect");
    // Reading works: listings, the job, hosts, results.
    assert_eq!(list(&mut reader).await.expect("list jobs"), 1);
    let state = job_state(&mut reader, &job_id).await;
    reader
        .list_hosts(ListHostsRequest {})
        .await
        .expect("list hosts");
    let before = counts(&lab.catalog());

    let e = reader
        .submit_job(submit_request())
        .await
        .expect_err("a read token cannot submit");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert_eq!(
        e.message(),
        "SubmitJob needs an API token with scope submit (or higher); this token's scope is read"
    );
    let e = reader
        .cancel_job(CancelJobRequest {
            job_id: job_id.clone(),
        })
        .await
        .expect_err("a read token cannot cancel");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert_eq!(
        e.message(),
        "CancelJob needs an API token with scope submit (or higher); this token's scope is read"
    );
    assert!(!e.message().contains(READ_TOKEN));
    assert_eq!(counts(&lab.catalog()), before, "the catalog changed");
    assert_eq!(job_state(&mut reader, &job_id).await, state);

    // Submit and admin tokens may cancel.
    let mut admin = lab.client(Some(ADMIN_TOKEN)).await.expect("connect");
    let cancelled = admin
        .cancel_job(CancelJobRequest {
            job_id: job_id.clone(),
        })
        .await
        .expect("an admin token cancels")
        .into_inner();
    assert_eq!(cancelled.state, "cancelled");
    let mut second = lab.client(Some(API_TOKEN_2)).await.expect("connect");
    second
        .submit_job(submit_request())
        .await
        .expect("a submit token submits");
    assert_eq!(list(&mut reader).await.expect("list jobs"), 2);
}
