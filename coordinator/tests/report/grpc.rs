//! The same results through the coordinator's gRPC service, as the CLI gets them.

use blocklab_coordinator::CoordinatorConfig;
use blocklab_measure::job;
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::*;
use blocklab_report as report;

use crate::fixture::both;

#[tokio::test]
async fn control_rpcs_return_the_statistics() {
    for f in both().await {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(blocklab_coordinator::serve(
            CoordinatorConfig::new(f.location.clone()),
            listener,
            async {
                let _ = stopped.await;
            },
        ));
        let mut client = loop {
            match ControlClient::connect(format!("http://{addr}")).await {
                Ok(c) => break c,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        };

        let r: job::QueryResults = client
            .query_results(QueryResultsRequest {
                job_id: f.job_a.clone(),
                metric: "tps".into(),
            })
            .await
            .expect("QueryResults")
            .into_inner()
            .into();
        crate::check_job_a(&r);
        assert_eq!(
            r.cells,
            crate::results(&f, "tps").await.cells,
            "gRPC and library agree"
        );

        let e: job::JobExport = client
            .export_job(ExportJobRequest {
                job_id: f.job_a.clone(),
                metric: String::new(),
                include_samples: true,
            })
            .await
            .expect("ExportJob")
            .into_inner()
            .into();
        assert_eq!(e.metric, "tps");
        assert_eq!(e.results, r.cells);
        assert_eq!(e.runs.len(), 9);
        assert!(
            e.runs.iter().all(|r| r.samples.len() == 5
                && r.settings.len() == 2
                && r.server_stats.len() == 2)
        );
        assert_eq!(
            e.runs
                .iter()
                .filter(|r| !r.suspect_reasons.is_empty())
                .count(),
            1
        );
        assert_eq!(e.hosts[0].host_id, "db1");
        assert!(e.hosts[0].is_job_db_host && e.hosts[0].facts_json.contains("Test CPU 9000"));
        assert_eq!(e.builds.len(), 3);
        assert_eq!(e.run_order, "interleaved");
        let sequence: Vec<u32> = e.runs.iter().map(|r| r.sequence).collect();
        assert_eq!(sequence, (0..9).collect::<Vec<_>>());
        assert!(report::html::report(&e).contains("<svg "));

        let c = client
            .compare_jobs(CompareJobsRequest {
                job_a: f.job_a.clone(),
                job_b: f.job_b.clone(),
                metric: "tps".into(),
            })
            .await
            .expect("CompareJobs")
            .into_inner();
        assert_eq!(c.cells[1].verdict, "faster");
        let b = client
            .export_job(ExportJobRequest {
                job_id: f.job_b.clone(),
                ..Default::default()
            })
            .await
            .expect("ExportJob B")
            .into_inner();
        assert_eq!(
            (b.seed, b.run_order.as_str()),
            (Some(42), "shuffled(seed=42)")
        );

        let bad = client
            .query_results(QueryResultsRequest {
                job_id: f.job_a.clone(),
                metric: "qps".into(),
            })
            .await
            .expect_err("unknown metric");
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        assert!(
            bad.message().contains("allowed: tps, tps_incl_conn"),
            "{}",
            bad.message()
        );
        let missing = client
            .compare_jobs(CompareJobsRequest {
                job_a: f.job_a.clone(),
                job_b: uuid::Uuid::new_v4().to_string(),
                metric: String::new(),
            })
            .await
            .expect_err("missing job");
        assert_eq!(missing.code(), tonic::Code::NotFound);
        let bad_id = client
            .compare_jobs(CompareJobsRequest {
                job_a: "x".into(),
                job_b: f.job_b.clone(),
                metric: String::new(),
            })
            .await
            .expect_err("bad id");
        assert!(
            bad_id.message().starts_with("job_a:"),
            "{}",
            bad_id.message()
        );

        let _ = stop.send(());
        server.await.expect("join").expect("serve");
    }
}
